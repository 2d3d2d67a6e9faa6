"""The tree keeps its shape: no class too big to live in, CONTRIBUTING.md's map names every module and only
paths that exist. (ruff, mypy and the import contracts are steps of .ci/run of their own.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


MAX_CLASS_LINES = 500


def _classes(folder: Path) -> list[tuple[str, int]]:
    """(where, lines) of every class under ``folder``, decorators and docstring included."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                assert node.end_lineno is not None
                found.append(
                    (f"{path.relative_to(REPO)}:{node.lineno} {node.name}", node.end_lineno - start + 1)
                )
    return found


def test_no_class_is_too_big_to_live_in() -> None:
    """A class over 500 lines holds several concerns: split it (a module per concept)."""
    classes = [found for folder in ("bot", "storage", "paperindex") for found in _classes(REPO / folder)]
    assert classes, "no classes found: the check is looking in the wrong place"
    too_big = [f"{where} ({lines} lines)" for where, lines in classes if lines > MAX_CLASS_LINES]
    assert not too_big, f"classes over {MAX_CLASS_LINES} lines: " + ", ".join(too_big)


def _contributing() -> str:
    return (REPO / "CONTRIBUTING.md").read_text("utf-8")


def test_contributing_names_only_paths_that_exist() -> None:
    """The map and the journeys in CONTRIBUTING.md follow the tree: every path they name is there."""
    named = set(re.findall(r"`((?:bot|storage|paperindex|tests|bench|deploy)/[\w./*-]*)`", _contributing()))
    assert len(named) > 30, "the paths were not found (the check would pass on nothing)"
    # NNNN stands for a migration's number, as in "storage/migrations/NNNN_what_it_does.sql"
    missing = sorted(p for p in named if not list(REPO.glob(p.rstrip("/").replace("NNNN_what_it_does", "*"))))
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"


@pytest.mark.parametrize(
    "folder",
    [
        "paperindex",
        "bot/services",
        "bot/services/search",
        "bot/services/people",
        "bot/services/papers",
        "bot/services/papers/ingest",
        "bot/services/admin",
        "bot/services/digests",
        "bot/ui",
        "bot/exts",
    ],
)
def test_contributing_maps_every_module(folder: str) -> None:
    """Every module of the layers is on CONTRIBUTING.md's map (by its name in backticks)."""
    text = _contributing()
    modules = [p.stem for p in (REPO / folder).glob("*.py") if not p.stem.startswith("__")]
    unmapped = [name for name in modules if f"`{name}`" not in text and f"`{name}.py`" not in text]
    assert not unmapped, f"{folder}: not on CONTRIBUTING.md's map: {unmapped}"
