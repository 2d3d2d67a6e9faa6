"""The PostgreSQL store: an asyncpg pool that several paperbot processes share.

- Repositories' `?` placeholders become `$1, $2, …` (`numbered`), once per statement text.
- `transaction()` lends a pooled connection inside a READ COMMITTED transaction; writers in this and
  other processes run side by side and wait only for the rows they both lock. A lock still taken
  after the transaction's patience raises `StoreBusyError`, as does a server that cannot be reached
  or is restarting (connection refused or lost, too many connections, shutting down), a deadlock or
  a serialisation failure: nothing was written and the same write can be tried again.
- Reads take any pooled connection and see what was committed; `snapshot()` is a REPEATABLE READ
  read-only transaction.
- `data_version()` reads the paper change sequence (one row): it moves whenever papers are committed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, ClassVar

import asyncpg

from storage.db import WRITE_PATIENCE_S, Connection, Database, Row, StoreBusyError
from storage.leadership import LeaderLock, PostgresLeaderLock, advisory_key
from storage.migrate import apply_postgres_migrations

log = logging.getLogger(__name__)

#: Connections one process keeps to the server at most.
POOL_SIZE = 10

#: SQLSTATEs meaning "not now" rather than "this write is wrong": lock not available (lock_timeout),
#: serialization failure, deadlock, too many connections, the server shutting down or starting.
_TRANSIENT_STATES = frozenset(
    {"55P03", "40001", "40P01", "53300", "57P01", "57P02", "57P03", "08000", "08003", "08006"}
)


@functools.lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`?` placeholders as PostgreSQL's `$1, $2, …` (never inside quotes or comments)."""
    out: list[str] = []
    number = 0
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in ("'", '"'):
            end = i + 1
            while end < n:
                if sql[end] == char:
                    if end + 1 < n and sql[end + 1] == char:  # a doubled quote inside the literal
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end])
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
        elif char == "?":
            number += 1
            out.append(f"${number}")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _rows_changed(status: str) -> int:
    """The row count at the end of a command tag ("UPDATE 3", "INSERT 0 1", "DELETE 0")."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def is_transient(error: BaseException) -> bool:
    if isinstance(error, asyncpg.PostgresError):
        return getattr(error, "sqlstate", None) in _TRANSIENT_STATES
    return isinstance(error, OSError | asyncpg.InterfaceError | TimeoutError)


@contextlib.contextmanager
def _busy_when_unavailable(where: str) -> Iterator[None]:
    """A server that cannot take the statement now (see the module docstring) raises StoreBusyError."""
    try:
        yield
    except StoreBusyError:
        raise
    except Exception as error:
        if is_transient(error):
            raise StoreBusyError(f"the PostgreSQL store {where} cannot take it now: {error}") from error
        raise


class PostgresConnection(Connection):
    dialect: ClassVar[str] = "postgresql"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return _rows_changed(await self._conn.execute(numbered(sql), *params))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(row) for row in rows]
        if batch:
            await self._conn.executemany(numbered(sql), batch)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        rows: list[Row] = await self._conn.fetch(numbered(sql), *params)
        return rows


class PostgresDatabase(Database):
    dialect: ClassVar[str] = "postgresql"

    def __init__(self, pool: Any, url: str, name: str) -> None:
        self._pool = pool
        self._url = url
        self.name = name  # the URL without its password, for messages

    @classmethod
    async def open(cls, url: str, *, name: str, migrate: bool = True) -> PostgresDatabase:
        with _busy_when_unavailable(name):
            pool = await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                server_settings={"application_name": "paperbot", "lock_timeout": f"{int(WRITE_PATIENCE_S)}s"},
            )
        db = cls(pool, url, name)
        try:
            if migrate:
                await db.migrate()
        except BaseException:
            await db.close()
            raise
        return db

    def __str__(self) -> str:
        return self.name

    async def migrate(self) -> list[int]:
        with _busy_when_unavailable(self.name):
            async with self._pool.acquire() as conn:
                return await apply_postgres_migrations(conn)

    async def close(self) -> None:
        await self._pool.close()

    @contextlib.asynccontextmanager
    async def transaction(self, *, patience: float = WRITE_PATIENCE_S) -> AsyncIterator[Connection]:
        with _busy_when_unavailable(self.name):
            async with self._pool.acquire() as conn, conn.transaction():
                if patience != WRITE_PATIENCE_S:
                    await conn.execute(f"SET LOCAL lock_timeout = '{max(1, int(patience * 1000))}ms'")
                yield PostgresConnection(conn)

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Connection]:
        with _busy_when_unavailable(self.name):
            async with (
                self._pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                yield PostgresConnection(conn)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with _busy_when_unavailable(self.name):
            rows: list[Row] = await self._pool.fetch(numbered(sql), *params)
            return rows

    async def leader_lock(self) -> LeaderLock:
        """An advisory lock keyed by this store's own id, on a connection of its own."""
        store_id = str(await self.fetchval("SELECT store_id FROM paper_changes WHERE id = 1"))
        return PostgresLeaderLock(self._url, advisory_key(store_id))

    async def data_version(self) -> int:
        return int(await self.fetchval("SELECT seq FROM paper_changes WHERE id = 1") or 0)
