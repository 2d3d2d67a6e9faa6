"""The one SQLite connection paperbot owns: WAL, foreign keys, busy timeout, serialised writes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from storage.migrate import apply_migrations

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000


def utcnow() -> str:
    """Now as the ISO-8601 UTC string stored in every time column."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class Database:
    """Owns one aiosqlite connection; write transactions go one at a time through `transaction()`.

    aiosqlite runs every call of a connection on one thread, but transactions on a shared connection
    interleave between tasks, so writes are serialised behind an asyncio lock.
    """

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True) -> Database:
        path = Path(path)
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            conn.row_factory = aiosqlite.Row
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            await conn.execute("PRAGMA synchronous = NORMAL")
            db = cls(conn, path)
            if migrate:
                await db.migrate()
        except BaseException:
            await conn.close()
            raise
        return db

    async def migrate(self) -> list[int]:
        """Apply pending numbered migrations; returns the versions applied."""
        async with self._write_lock:
            return await apply_migrations(self._conn)

    async def close(self) -> None:
        await self._conn.close()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error)."""
        async with self._write_lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            else:
                await self._conn.execute("COMMIT")

    # Reads need no lock: they run on the same connection thread, one statement at a time.
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        async with self._conn.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        async with self._conn.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def fetchval(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement in its own transaction; returns the rows changed."""
        async with self.transaction() as conn, conn.execute(sql, params) as cursor:
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        async with self.transaction() as conn:
            await conn.executemany(sql, rows)

    async def backup(self, target: Path | str) -> None:
        """Online backup (SQLite's backup API): consistent even while the bot writes."""
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        async with aiosqlite.connect(target) as dest:
            await self._conn.backup(dest)
