"""Writes accepted but not yet in the store, kept in a small SQLite file of their own until they are.

The running bot accepts what people do (a reaction, a rating click, a search listing, the note of
which paper a message it posted shows) into this outbox first: a local file of this process
(`paperbot.db.pending` beside a SQLite store, `paperbot.pending` in the state folder for PostgreSQL;
`Settings.local_file`), so adding to it never waits for the store's write lock, and each addition is on
disk (synchronous = FULL) before the bot moves on. Additions that come while one is being written
(a burst of searches, each keeping its listing) are written together, in one transaction: one sync
to disk for all of them instead of one each, in turn. A background
task then applies the entries to the store in order and removes each one once the store has it (see
`bot.services.write_behind`). A crash or a stop in between loses nothing: the next start applies
what is left, and every kind of entry is applied idempotently, so one applied twice changes nothing.

An entry the store kept refusing for long is moved to the dead letter (`bury`): the `dead_letter`
table of the same file, with what the store answered (its kind and code, never the entry's content).
It is still tried, less often, and leaves the file only once the store has it (or says it never can):
nothing is deleted unseen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from storage.db import utcnow, utcnow_precise
from storage.private_files import create_private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,   -- JSON object
    created_at  TEXT NOT NULL    -- when it was accepted (ISO-8601 UTC, to the microsecond)
);
CREATE TABLE IF NOT EXISTS dead_letter (
    id             INTEGER PRIMARY KEY,  -- its id in pending (AUTOINCREMENT never gives one twice)
    kind           TEXT NOT NULL,
    payload        TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    failing_since  TEXT NOT NULL,        -- when the store first refused it
    error          TEXT NOT NULL,        -- what the store answered last: its kind and code
    buried_at      TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class PendingWrite:
    id: int
    kind: str
    payload: dict[str, Any]
    created_at: str
    #: in the dead letter: what the store answered when it was moved there
    dead_error: str | None = None

    @property
    def dead(self) -> bool:
        return self.dead_error is not None


_INSERT = "INSERT INTO pending (kind, payload, created_at) VALUES (?, ?, ?)"
_CHUNK = 500  # ids per DELETE


class Outbox:
    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        #: additions not written yet: (kind, payload as JSON, created_at, what their add awaits)
        self._waiting: list[tuple[str, str, str, asyncio.Future[int]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one transaction at a time on the connection

    @classmethod
    async def open(cls, path: Path) -> Outbox:
        create_private_file(path)  # what people did: readable by the bot's user only
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = FULL")
            await conn.executescript(_SCHEMA)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, path)

    async def close(self) -> None:
        """Close the file, once what was added has been written."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        await self._conn.close()

    async def add(self, kind: str, payload: dict[str, Any]) -> PendingWrite:
        """Keep one write until `remove`; it is on disk when this returns."""
        created = utcnow_precise()
        written: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting.append((kind, json.dumps(payload, separators=(",", ":")), created, written))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_waiting(), name="outbox-writer")
        return PendingWrite(await written, kind, payload, created)

    async def _write_waiting(self) -> None:
        """Write what is waiting, all of it in one transaction, until nothing is."""
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                async with self._lock:
                    ids = await self._insert([entry[:3] for entry in batch])
            except BaseException as error:
                failed = (
                    error if isinstance(error, Exception) else RuntimeError("the outbox writer was stopped")
                )
                for *_, written in batch:
                    if not written.done():
                        written.set_exception(failed)
                if failed is not error:
                    raise
                continue
            for (*_, written), entry_id in zip(batch, ids, strict=True):
                if not written.done():  # (its add may have been cancelled)
                    written.set_result(entry_id)

    async def _insert(self, rows: list[tuple[str, str, str]]) -> list[int]:
        if len(rows) == 1:
            async with self._conn.execute(_INSERT, rows[0]) as cursor:
                assert cursor.lastrowid is not None
                return [cursor.lastrowid]
        ids: list[int] = []
        async with self._transaction():
            for row in rows:
                async with self._conn.execute(_INSERT, row) as cursor:
                    assert cursor.lastrowid is not None
                    ids.append(cursor.lastrowid)
        return ids

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            await asyncio.shield(self._conn.execute("ROLLBACK"))
            raise
        await self._conn.execute("COMMIT")

    async def all(self) -> list[PendingWrite]:
        """Every write not yet removed, the dead letter's too, oldest first."""
        sql = (
            "SELECT id, kind, payload, created_at, NULL FROM pending "
            "UNION ALL SELECT id, kind, payload, created_at, error FROM dead_letter ORDER BY 1"
        )
        async with self._lock, self._conn.execute(sql) as cursor:
            rows = await cursor.fetchall()
        return [PendingWrite(int(r[0]), str(r[1]), json.loads(r[2]), str(r[3]), r[4]) for r in rows]

    async def bury(self, entry_id: int, *, failing_since: str, error: str) -> None:
        """Move an entry the store keeps refusing to the dead letter (it stays until `remove`)."""
        async with self._lock, self._transaction():
            await self._conn.execute(
                "INSERT INTO dead_letter (id, kind, payload, created_at, failing_since, error, buried_at) "
                "SELECT id, kind, payload, created_at, ?, ?, ? FROM pending WHERE id = ?",
                (failing_since, error, utcnow(), entry_id),
            )
            await self._conn.execute("DELETE FROM pending WHERE id = ?", (entry_id,))

    async def remove(self, entry_ids: list[int]) -> None:
        """The store has these (or never can have them): forget them, from the dead letter too (one
        transaction, one sync to disk, per 500)."""
        async with self._lock:
            for start in range(0, len(entry_ids), _CHUNK):
                chunk = entry_ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                async with self._transaction():
                    await self._conn.execute(f"DELETE FROM pending WHERE id IN ({marks})", chunk)
                    await self._conn.execute(f"DELETE FROM dead_letter WHERE id IN ({marks})", chunk)
