"""The tree stays lint-clean, formatted and type-checked (the same checks CONTRIBUTING.md lists)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tree_passes(command: list[str]) -> None:
    tool = BIN / command[0]
    if not tool.exists():
        pytest.skip(f"{command[0]} is not installed (pip install -e '.[dev]')")
    done = subprocess.run([str(tool), *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"


MAX_CLASS_LINES = 600


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


def test_no_class_in_bot_is_too_big_to_live_in() -> None:
    """A class over 600 lines holds several concerns: split it (a module per concept)."""
    classes = _classes(REPO / "bot")
    assert classes, "no classes found: the check is looking in the wrong place"
    too_big = [f"{where} ({lines} lines)" for where, lines in classes if lines > MAX_CLASS_LINES]
    assert not too_big, f"classes over {MAX_CLASS_LINES} lines: " + ", ".join(too_big)
