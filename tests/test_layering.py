"""The layers stay apart: storage and business logic never import discord; SQL stays in storage."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DISCORD_FREE = [REPO / "storage", REPO / "bot" / "services"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(*folders: Path) -> list[Path]:
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(*DISCORD_FREE), ids=lambda p: str(p.relative_to(REPO)))
def test_business_logic_and_storage_do_not_import_discord(path: Path) -> None:
    offending = {name for name in _imports(path) if name == "discord" or name.startswith("discord.")}
    assert not offending, f"{path.relative_to(REPO)} imports {offending}"


@pytest.mark.parametrize("path", _modules(REPO / "storage"), ids=lambda p: str(p.relative_to(REPO)))
def test_storage_does_not_import_the_application(path: Path) -> None:
    offending = {name for name in _imports(path) if name == "bot" or name.startswith("bot.")}
    assert not offending, f"{path.relative_to(REPO)} imports {offending}"


@pytest.mark.parametrize(
    "path", _modules(REPO / "bot" / "exts", REPO / "bot" / "ui"), ids=lambda p: str(p.relative_to(REPO))
)
def test_discord_code_holds_no_sql(path: Path) -> None:
    text = path.read_text("utf-8")
    for keyword in ("SELECT ", "INSERT INTO", "DELETE FROM", "UPDATE ", "CREATE TABLE"):
        assert keyword not in text, (
            f"{path.relative_to(REPO)} has SQL ({keyword.strip()}); move it to storage/"
        )
