"""Writes accepted but not yet in the store, kept in a small SQLite file of their own until they are.

The running bot accepts what people do (a reaction, a rating click, a search listing, the note of
which paper a message it posted shows) into this outbox first: a local file of this process
(`paperbot.db.pending` beside a SQLite store, `paperbot.pending` in the state folder for PostgreSQL;
`Settings.local_file`), so adding to it never waits for the store's write lock, and each addition is on disk (synchronous = FULL) before the bot moves on. A background
task then applies the entries to the store in order and removes each one once the store has it (see
`bot.services.write_behind`). A crash or a stop in between loses nothing: the next start applies
what is left, and every kind of entry is applied idempotently, so one applied twice changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from storage.db import utcnow

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,   -- JSON object
    created_at  TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class PendingWrite:
    id: int
    kind: str
    payload: dict[str, Any]
    created_at: str


class Outbox:
    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    async def open(cls, path: Path) -> Outbox:
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
        await self._conn.close()

    async def add(self, kind: str, payload: dict[str, Any]) -> PendingWrite:
        """Keep one write until `remove`; it is on disk when this returns."""
        created = utcnow()
        async with self._conn.execute(
            "INSERT INTO pending (kind, payload, created_at) VALUES (?, ?, ?)",
            (kind, json.dumps(payload, separators=(",", ":")), created),
        ) as cursor:
            entry_id = cursor.lastrowid
        assert entry_id is not None
        return PendingWrite(entry_id, kind, payload, created)

    async def all(self) -> list[PendingWrite]:
        """Every write not yet removed, oldest first."""
        async with self._conn.execute(
            "SELECT id, kind, payload, created_at FROM pending ORDER BY id"
        ) as cursor:
            rows = await cursor.fetchall()
        return [PendingWrite(int(r[0]), str(r[1]), json.loads(r[2]), str(r[3])) for r in rows]

    async def remove(self, entry_ids: list[int]) -> None:
        """The store has these: forget them."""
        if entry_ids:
            await self._conn.executemany("DELETE FROM pending WHERE id = ?", [(i,) for i in entry_ids])
