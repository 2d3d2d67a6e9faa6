"""Fixtures shared by every test: a fresh migrated database, closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import Database

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared/, or skip the test when this checkout has none (a user's fresh clone)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/{'/'.join(parts)} (research data kept beside the repo, not shipped)")
    return path


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "paperbot.db")
    try:
        yield database
    finally:
        await database.close()
