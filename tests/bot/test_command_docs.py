"""Every /paper command is in README.md's command table, in `/paper help`, and each journey in the
sandbox demo script: a new command cannot ship undocumented."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from builders import bare_bot
from discord import app_commands

from bot.app import PaperBot
from bot.sandbox.console import DEMO_SCRIPT
from bot.ui.help import help_embed

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture
async def bot() -> AsyncIterator[PaperBot]:
    made = bare_bot()
    await made.load_commands()
    yield made
    await made.close()


def _paper_commands(bot: PaperBot) -> list[str]:
    return sorted(
        command.qualified_name
        for command in bot.command_groups.paper.walk_commands()
        if isinstance(command, app_commands.Command)
    )


def _table_rows() -> list[str]:
    return [line for line in README.read_text("utf-8").splitlines() if line.startswith("| `/paper")]


async def test_every_paper_command_is_in_the_readme_table_and_in_help(bot: PaperBot) -> None:
    rows = _table_rows()
    help_text = help_embed(bot.command_groups.paper).description or ""
    for name in _paper_commands(bot):
        words = name.split()
        if len(words) == 3:  # "/paper interests show·add·…" lists a group's commands on one row
            row = [r for r in rows if f"`/paper {words[1]} " in r]
            assert row, f"README.md has no row for /paper {words[1]}"
            assert re.search(rf"[ ·]{words[2]}[·`]", row[0]), f"README.md's row misses /{name}"
        else:
            assert any(re.search(rf"`/{name}[ `]", r) for r in rows), f"README.md's table misses /{name}"
        assert f"`/{name}" in help_text, f"/paper help misses /{name}"


def test_the_demo_script_walks_through_each_journey() -> None:
    lines = [line.strip() for line in DEMO_SCRIPT.read_text("utf-8").splitlines()]
    steps = ("/paper help", "/paper digest", 'click "Full abstract"', "/paper saved", 'click "RIS"')
    steps += ("/paper interests add paper:", 'click "More like this"', "/paper follow author:")
    for step in steps:
        assert any(line.startswith(step) for line in lines), f"the demo script does not show {step!r}"
