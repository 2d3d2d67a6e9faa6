"""What the repositories see of the store, whichever engine holds it: a `Database` and its `Connection`s.

Two engines implement it: SQLite (`storage.sqlite`, a file: the embedded default, enough for one
server) and PostgreSQL (`storage.postgres`, a server several processes share); `storage.store` opens
the one a location names. Repositories write one SQL for both:

- `?` placeholders (the PostgreSQL backend numbers them `$1, $2, …`), `INSERT … ON CONFLICT …`,
  `RETURNING`, `CASE WHEN` rather than boolean arithmetic, a named subquery in `FROM`;
- times are ISO-8601 UTC text and flags are integers 0/1 on both, so comparisons mean the same;
- `rowid` is SQLite's insertion order; the PostgreSQL tables that are ordered by it spell it out as a
  column of that name;
- where a statement must differ (a row lock only PostgreSQL needs), the repository branches on
  `conn.dialect` ("sqlite" or "postgresql").

A `Database` offers:

- `transaction()` — one write transaction (a `Connection`), committed at the end of the block, rolled
  back on any error or cancellation;
- `snapshot()` — a read transaction: every statement sees one committed state;
- `fetchall` / `fetchone` / `fetchval` — committed rows, never another task's transaction in progress;
- `execute` / `executemany` — one write statement in a transaction of its own.
"""

from __future__ import annotations

import abc
import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

if TYPE_CHECKING:
    from storage.leadership import LeaderLock

#: A write gives up (StoreBusyError) when the store stayed locked by other writers this long.
WRITE_PATIENCE_S = 300.0


class StoreBusyError(Exception):
    """The store could not take the write now (another writer kept it locked, or the server was
    unreachable or restarting); nothing was written, and the same write may be tried again later."""


class WriteRefusedError(Exception):
    """The store will never take this write, however often it is tried; nothing was written."""


class PersonForgottenError(WriteRefusedError):
    """The write is about a person who asked to be forgotten after it began (`/paper forget-me`), or
    began too long ago to tell: storing it would bring them back."""


def utcnow() -> str:
    """Now as the ISO-8601 UTC string stored in every time column."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def utcnow_precise() -> str:
    """Now as ISO-8601 UTC to the microsecond: when a write began, to compare with when a person asked
    to be forgotten (`storage.repositories.users.forgotten_since`), which seconds cannot order."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def is_busy(error: BaseException) -> bool:
    """Whether an error means "the store cannot take this now; try again later" rather than a bad write."""
    if isinstance(error, StoreBusyError):
        return True
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return bool(code & 0xFF == sqlite3.SQLITE_BUSY)
    return "database is locked" in str(error)


def is_refused(error: BaseException) -> bool:
    """Whether the store said this write can never be stored: `WriteRefusedError`, or a constraint it
    breaks (a paper or message it names is gone: SQLite's IntegrityError, PostgreSQL's class 23)."""
    if isinstance(error, WriteRefusedError | sqlite3.IntegrityError):
        return True
    sqlstate = getattr(error, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate.startswith("23")


def describe_error(error: BaseException) -> str:
    """An error as a log line may name it: its kind and the store's code, never its message (which may
    quote the values written: a paper id, a query)."""
    code = getattr(error, "sqlstate", None) or getattr(error, "sqlite_errorname", None)
    named = f"{type(error).__name__} ({code})" if code else type(error).__name__
    cause = error.__cause__
    return named if cause is None else f"{named}: {describe_error(cause)}"


class Row(Protocol):
    """A result row: by position (`row[0]`) or column name (`row["id"]`)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(abc.ABC):
    """Statements inside one transaction (`Database.transaction()` or `snapshot()`)."""

    dialect: ClassVar[str]

    @abc.abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the rows it changed."""

    @abc.abstractmethod
    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""

    @abc.abstractmethod
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


class Database(abc.ABC):
    """One store, opened by `storage.store.open_database`; close it (or use `async with`)."""

    dialect: ClassVar[str]

    @abc.abstractmethod
    async def migrate(self) -> list[int]:
        """Apply pending numbered migrations; returns the versions applied."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @abc.abstractmethod
    def transaction(
        self, *, patience: float = WRITE_PATIENCE_S
    ) -> contextlib.AbstractAsyncContextManager[Connection]:
        """One write transaction. Waits for other writers' locks up to `patience` seconds, then raises
        StoreBusyError (nothing written). Keep the body short: other writers may wait on it."""

    @abc.abstractmethod
    def snapshot(self) -> contextlib.AbstractAsyncContextManager[Connection]:
        """A read transaction: every statement on the connection it yields sees the same committed
        state, whatever other connections commit meanwhile. Read only."""

    @abc.abstractmethod
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement in its own transaction; returns the rows changed."""
        async with self.transaction() as conn:
            return await conn.execute(sql, params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        async with self.transaction() as conn:
            await conn.executemany(sql, rows)

    @abc.abstractmethod
    async def leader_lock(self) -> LeaderLock:
        """This store's leader lock (`storage.leadership`), not taken yet."""

    @abc.abstractmethod
    async def data_version(self) -> int:
        """A number that changes whenever papers may have been committed by any connection or process,
        and costs (almost) no read: whether the search index should look for changes."""
