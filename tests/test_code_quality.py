"""The tree stays lint-clean, formatted and type-checked (the same checks CONTRIBUTING.md lists)."""

from __future__ import annotations

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
