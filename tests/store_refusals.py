"""Stores that refuse writes for a reason other than "busy", as production stores do: PostgreSQL made
read-only (what a replica promoted late, or a primary demoted in a failover, answers: SQLSTATE 25006)
and SQLite's "database or disk is full" (SQLITE_FULL).

`RefusingStore.open(store)` says where to open the store (`location`) and has two switches for a
`Database` opened there: `refuse(db)` (from now on its writes are refused) and `accept(db)` (they are
taken again).

- PostgreSQL: `location` logs in as a role of its own; `refuse` sets that role's sessions read-only
  (`ALTER ROLE … SET default_transaction_read_only = on`) and cuts its open connections, as a
  failover does, so the pool reconnects read-only; `accept` undoes both.
- SQLite: `refuse` caps the store at the pages it has (`PRAGMA max_page_count`, a setting of the
  connection that writes, so it is set through ``db``'s own write transaction) and fills the `users`
  table's last page with placeholder rows (small ids) until SQLite answers SQLITE_FULL, so the first
  write of a person with a real-sized id needs a page it cannot have; `accept` lifts the cap and
  deletes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sqlite3
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from storage.db import Database
from storage.store import StoreLocation

#: ids of the placeholder rows that fill SQLite's `users` table (below every real snowflake)
_FILLER_IDS = range(1, 100_000)


class RefusingStore:
    def __init__(
        self, location: StoreLocation, admin_url: str | None = None, role: str | None = None
    ) -> None:
        #: where to open the store that `refuse` and `accept` switch
        self.location = location
        self._admin_url, self._role = admin_url, role
        self._fillers = 0

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, store: StoreLocation) -> AsyncIterator[RefusingStore]:
        if store.url is None:
            yield cls(store)
            return
        role = f"paperbot_ro_{secrets.token_hex(4)}"
        await _admin(store.url, f'CREATE ROLE "{role}" LOGIN SUPERUSER')
        try:
            yield cls(StoreLocation(url=_as_role(store.url, role)), store.url, role)
        finally:
            await _admin(store.url, _CUT.format(role=role))
            await _admin(store.url, f'DROP ROLE IF EXISTS "{role}"')

    async def refuse(self, db: Database) -> None:
        if self._role is not None:
            await self._set_read_only(True)
            return
        async with db.transaction() as conn:
            pages = await conn.fetchval("PRAGMA page_count")
            await conn.fetchval(f"PRAGMA max_page_count = {int(pages)}")
        for user_id in _FILLER_IDS:
            try:
                await db.execute(
                    "INSERT INTO users (id, created_at) VALUES (?, '2020-01-01T00:00:00+00:00')", (user_id,)
                )
            except sqlite3.OperationalError as error:
                if error.sqlite_errorname != "SQLITE_FULL":
                    raise
                self._fillers = user_id - 1
                return
        raise AssertionError("the store never filled up")

    async def accept(self, db: Database) -> None:
        if self._role is not None:
            await self._set_read_only(False)
            return
        async with db.transaction() as conn:
            await conn.fetchval("PRAGMA max_page_count = 1073741823")
            await conn.execute("DELETE FROM users WHERE id <= ?", (self._fillers,))

    async def _set_read_only(self, read_only: bool) -> None:
        assert self._admin_url is not None
        setting = (
            "SET default_transaction_read_only = on" if read_only else "RESET default_transaction_read_only"
        )
        await _admin(self._admin_url, f'ALTER ROLE "{self._role}" {setting}')
        await _admin(self._admin_url, _CUT.format(role=self._role))
        # Let the pools see their connections closed (as they do seconds into a real failover): a
        # statement sent on one in the same instant fails on the client's side, not the server's.
        await asyncio.sleep(1.0)


_CUT = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"


def _as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


async def _admin(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()
