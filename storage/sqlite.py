"""The SQLite store (the embedded default): WAL, a write connection, and read connections beside it.

- Writes go one transaction at a time through `transaction()` on the write connection (aiosqlite
  runs a connection's calls on one thread, but transactions on a shared connection would interleave
  between tasks, so they are serialised behind an asyncio lock).
- Reads (`fetchall`, `fetchone`, `fetchval`) use a separate read connection, so they see only
  committed rows, never a transaction still in progress in another task, and never wait behind a
  write that waits for SQLite's lock (WAL readers do not block on writers). Each read runs to its end
  in one step, so it sees every commit made before it started, whatever other tasks read meanwhile.
- `snapshot()` is a read transaction on a third connection: several statements that see one
  committed state (the search index reads rows and the change sequence they belong to together).

Another process (`paperbot ingest`) may hold SQLite's write lock. `transaction()` keeps retrying
BEGIN IMMEDIATE every few milliseconds, so it gets the lock in the first gap between the other
writer's transactions, for up to its patience; after that it raises `StoreBusyError` (nothing was
written). Bulk writers keep their transactions short so those gaps come often.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import aiosqlite

from storage.db import WRITE_PATIENCE_S, Connection, Database, Row, StoreBusyError, is_busy
from storage.leadership import AlwaysLeader, FileLeaderLock, LeaderLock
from storage.migrate import apply_sqlite_migrations
from storage.private_files import create_private_file

log = logging.getLogger(__name__)

#: How long a read waits for SQLite (WAL readers wait only while another connection recovers the WAL).
BUSY_TIMEOUT_MS = 5000
#: One BEGIN IMMEDIATE attempt waits this long for the write lock before it is tried again.
WRITE_ATTEMPT_MS = 20
#: A write that waited this long for the lock says so (once) at WARNING.
SLOW_LOCK_S = 5.0


async def _connect(path: Path, *, busy_ms: int, read_only: bool) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        conn.row_factory = aiosqlite.Row
        await conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute("PRAGMA synchronous = NORMAL")
        # Statement journals (every insert into papers runs triggers) and sorts stay in memory rather
        # than in temporary files: a third of the cost of an ingest otherwise.
        await conn.execute("PRAGMA temp_store = MEMORY")
        if read_only:
            await conn.execute("PRAGMA query_only = ON")
    except BaseException:
        await conn.close()
        raise
    return conn


async def _switch_to_wal(conn: aiosqlite.Connection) -> None:
    """Put the database in WAL mode, waiting for the lock the switch takes. While another connection
    is in the middle of a write, SQLite refuses the switch at once without calling the busy handler
    (as it refuses a read upgrading to a write), so a process opening a new store at the same moment
    as another (a gateway and a worker starting together) got "database is locked" whatever the busy
    timeout: the switch is tried again here until the other lets go, for as long as a read waits."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as error:
            if not is_busy(error) or loop.time() >= deadline:
                raise
            await asyncio.sleep(WRITE_ATTEMPT_MS / 1000 / 4)
            continue
        return


class SQLiteConnection(Connection):
    dialect: ClassVar[str] = "sqlite"

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self._conn.execute(sql, params) as cursor:
            return max(cursor.rowcount, 0)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(sql, rows)

    # A read runs to its end in one step of aiosqlite's thread (``execute_fetchall``): a statement left
    # open between two steps would keep the connection's read snapshot open, and every read beside it
    # on that connection, in any task, would miss what was committed since.

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


class SQLiteDatabase(Database):
    """A write connection (serialised transactions), a read connection, and a snapshot connection.

    An in-memory database (":memory:", for experiments) is one connection for all three, as SQLite
    cannot share it: there, reads run on the write connection.
    """

    dialect: ClassVar[str] = "sqlite"

    def __init__(
        self,
        conn: aiosqlite.Connection,
        path: Path,
        *,
        reader: aiosqlite.Connection | None = None,
        snapshots: aiosqlite.Connection | None = None,
    ) -> None:
        self._conn = conn
        self._writer = SQLiteConnection(conn)
        self._reader = reader
        self._snapshots = snapshots
        self.path = path
        self._write_lock = asyncio.Lock()
        self._snapshot_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True) -> SQLiteDatabase:
        path = Path(path)
        in_memory = str(path) == ":memory:"
        create_private_file(path)  # (its -wal and -shm files take its permissions)
        # Until the store is in WAL mode and migrated, another process starting beside this one may
        # hold the lock for a while: everything here waits for it (the schema read the first pragma
        # does, the migrations' BEGIN IMMEDIATE) as a reader would.
        conn = await _connect(path, busy_ms=BUSY_TIMEOUT_MS, read_only=False)
        db = cls(conn, path)
        try:
            if not in_memory:
                await _switch_to_wal(conn)
            if migrate:
                await db.migrate()
            await conn.execute(f"PRAGMA busy_timeout = {WRITE_ATTEMPT_MS}")
            if not in_memory:
                db._reader = await _connect(path, busy_ms=BUSY_TIMEOUT_MS, read_only=True)
                db._snapshots = await _connect(path, busy_ms=BUSY_TIMEOUT_MS, read_only=True)
        except BaseException:
            await db.close()
            raise
        return db

    def __str__(self) -> str:
        return str(self.path)

    async def migrate(self) -> list[int]:
        async with self._write_lock:
            # The migration script begins its own transaction: let SQLite itself wait for the lock.
            await self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            try:
                return await apply_sqlite_migrations(self._conn)
            finally:
                await self._conn.execute(f"PRAGMA busy_timeout = {WRITE_ATTEMPT_MS}")

    async def close(self) -> None:
        for conn in (self._snapshots, self._reader, self._conn):
            if conn is not None:
                await conn.close()
        self._snapshots = self._reader = None

    # ------------------------------------------------------------------ writing

    async def _settled(self, sql: str) -> None:
        """Run one statement on the write connection to its end, even if the caller is cancelled
        meanwhile (aiosqlite runs a queued statement anyway): a cancelled caller must know whether
        its BEGIN, COMMIT or ROLLBACK happened, or a transaction would be left open."""
        statement = asyncio.ensure_future(self._conn.execute(sql))
        try:
            await asyncio.shield(statement)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await statement
            raise

    async def _begin_when_free(self, *, patience: float) -> None:
        """BEGIN IMMEDIATE, retried until the write lock is free (StoreBusyError after `patience`)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        warned = False
        while True:
            try:
                await self._settled("BEGIN IMMEDIATE")
            except asyncio.CancelledError:
                if self._conn.in_transaction:  # it began just as the caller gave up
                    await self._settled("ROLLBACK")
                raise
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
                waited = loop.time() - started
                if waited >= patience:
                    raise StoreBusyError(
                        f"the database {self.path} stayed locked by another writer for {waited:.0f} s"
                    ) from error
                if waited >= SLOW_LOCK_S and not warned:
                    log.warning("waiting for the database lock (another process writing) for %.0f s", waited)
                    warned = True
                continue
            return

    @contextlib.asynccontextmanager
    async def transaction(self, *, patience: float = WRITE_PATIENCE_S) -> AsyncIterator[Connection]:
        """BEGIN IMMEDIATE … COMMIT (ROLLBACK on any error or cancellation), one at a time."""
        async with self._write_lock:
            await self._begin_when_free(patience=patience)
            try:
                yield self._writer
            except BaseException:
                if self._conn.in_transaction:  # (statements still queued run first: aiosqlite is FIFO)
                    await self._settled("ROLLBACK")
                raise
            else:
                await self._settled("COMMIT")

    # ------------------------------------------------------------------ reading

    @property
    def _read_conn(self) -> SQLiteConnection:
        return self._writer if self._reader is None else SQLiteConnection(self._reader)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return await self._read_conn.fetchall(sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return await self._read_conn.fetchone(sql, params)

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Connection]:
        if self._snapshots is None:
            yield self._writer
            return
        async with self._snapshot_lock:
            await self._snapshots.execute("BEGIN")
            try:
                yield SQLiteConnection(self._snapshots)
            finally:
                await self._snapshots.execute("COMMIT")

    async def data_version(self) -> int:
        """SQLite's `PRAGMA data_version` of the snapshot connection: it changes whenever any other
        connection (this process's writer or another process) commits, and costs no read of the data."""
        if self._snapshots is None:
            async with self._conn.execute("PRAGMA data_version") as cursor:
                row = await cursor.fetchone()
        else:
            async with self._snapshot_lock, self._snapshots.execute("PRAGMA data_version") as cursor:
                row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def leader_lock(self) -> LeaderLock:
        """A flock on `paperbot.db.leader` beside the database file, which every process on it shares."""
        if str(self.path) == ":memory:":
            return AlwaysLeader()
        return FileLeaderLock(self.path.with_name(self.path.name + ".leader"))

    async def backup(self, target: Path | str) -> None:
        """Online backup (SQLite's backup API) into `target` (created owner-only): consistent even while
        this or another process writes, and never in their way.

        It reads the file through a connection of its own: SQLite refuses a backup step on a
        connection that is inside a write transaction (SQLITE_BUSY, which Python retries for ever), so
        one taken on the write connection while a transaction was open would wait for a COMMIT queued
        behind it, on that connection's one thread — every write stopped for good. In WAL mode a
        reader takes its copy beside the writers. (An in-memory database has only its one connection:
        the backup then waits for the write lock.)"""
        target = Path(target)
        create_private_file(target)
        async with aiosqlite.connect(target) as dest:
            if str(self.path) == ":memory:":
                async with self._write_lock:
                    await self._conn.backup(dest)
                return
            source = await _connect(self.path, busy_ms=BUSY_TIMEOUT_MS, read_only=True)
            try:
                await source.backup(dest)
            finally:
                await source.close()
