"""Fixtures shared by every test: a fresh store on each engine, and a running sandbox Discord server.

`store` and `db` are parametrised over both engines (`[sqlite]`, `[postgresql]`): a test that takes
either runs once on a SQLite file and once on a PostgreSQL schema of its own (`postgres_stores.py`:
skipped with the reason where no server is reachable, failed under CI).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import postgres_stores
import pytest

from bot.sandbox import SandboxServer
from storage.db import Database
from storage.sqlite import SQLiteDatabase
from storage.store import StoreLocation, open_database


def pytest_configure(config: pytest.Config) -> None:
    """Compile the index's loops once, here, before the workers (``-n``, see tests/README.md) start, as
    the child a start runs after an install does (``python -m paperindex.prepare``): into numba's disk
    cache and into the module compiled ahead of time. In a fresh clone each worker would otherwise
    compile them itself (~40 s of CPU each), and each bot a test starts would answer on the loops'
    numpy twins while a child compiled them. The workers, and the bots they start, then load the module
    (numba not imported), as a start after the first does."""
    if not hasattr(config, "workerinput"):
        env = {**os.environ, "PAPERINDEX_LOOPS": "numba"}
        subprocess.run([sys.executable, "-m", "paperindex.prepare"], env=env, check=False)  # says why not


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """The URL of this session's throwaway PostgreSQL database (skips or fails when there is none)."""
    yield from postgres_stores.session_database()


@pytest.fixture
async def postgres_store(postgres_database: str) -> AsyncIterator[StoreLocation]:
    """An empty PostgreSQL store of this test's own (a schema; migrated already), for what is
    particular to PostgreSQL."""
    schema, url = await postgres_stores.create_store(postgres_database)
    try:
        yield StoreLocation(url=url)
    finally:
        await postgres_stores.drop_store(postgres_database, schema)


@pytest.fixture(params=postgres_stores.ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreLocation:
    """Where an empty store of this test's own is: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return StoreLocation(path=tmp_path / "paperbot.db")
    location: StoreLocation = request.getfixturevalue("postgres_store")
    return location


@pytest.fixture(params=postgres_stores.ENGINES)
async def blank_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreLocation]:
    """A store nothing was ever written to, not even its tables (for migrations from nothing)."""
    if request.param == "sqlite":
        yield StoreLocation(path=tmp_path / "blank.db")
        return
    database = request.getfixturevalue("postgres_database")
    schema, url = await postgres_stores.create_store(database, migrated=False)
    try:
        yield StoreLocation(url=url)
    finally:
        await postgres_stores.drop_store(database, schema)


@pytest.fixture
async def db(store: StoreLocation) -> AsyncIterator[Database]:
    """A migrated store on each engine, closed after the test (an unclosed connection fails it)."""
    database = await open_database(store)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[SQLiteDatabase]:
    """A migrated SQLite store only: for what is particular to SQLite (its file, its locks)."""
    database = await SQLiteDatabase.open(tmp_path / "paperbot.db")
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    """A running SandboxServer with a fresh world (see tests/README.md, "The sandbox")."""
    async with SandboxServer() as server:
        yield server
