"""deploy/sources.env.example, the daily multi-source set-up an operator copies: settings the code
reads, each line explained, and a configuration that loads with every source it names."""

from __future__ import annotations

from pathlib import Path

from dotenv import dotenv_values

from bot.settings import declarations, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "sources.env.example"


def test_the_multi_source_example_loads_with_every_source() -> None:
    values = {k: v for k, v in dotenv_values(EXAMPLE).items() if v is not None}
    assert set(values) <= {d.variable for _, d in declarations()}
    settings = load_settings(environ={}, env_file=EXAMPLE)
    assert settings.sources == tuple(values["PAPERBOT_SOURCES"].split())
    assert {spec.split(":")[0] for spec in settings.sources} == {"rss", "biorxiv", "medrxiv", "openreview"}
    assert settings.arxiv_categories == ("q-bio.NC", "cs.LG")


def test_every_line_of_the_example_is_explained() -> None:
    lines = EXAMPLE.read_text("utf-8").splitlines()
    for index, line in enumerate(lines):
        if line.strip() and not line.startswith("#"):
            assert lines[index - 1].startswith("#"), f"no comment explains {line.split('=')[0]}"
