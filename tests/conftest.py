"""Fixtures shared by every test: a fresh migrated database, closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "paperbot.db")
    try:
        yield database
    finally:
        await database.close()
