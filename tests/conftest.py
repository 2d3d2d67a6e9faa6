"""Fixtures shared by every test: a fresh migrated database, and a running sandbox Discord server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox import SandboxServer
from storage.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "paperbot.db")
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    """A running SandboxServer with a fresh world (see tests/README.md, "The sandbox")."""
    async with SandboxServer() as server:
        yield server
