"""What is particular to the SQLite store: WAL and its PRAGMAs, one writer at a time and the wait for
another process's write lock (reads never wait for it, a write takes the first gap, gives up cleanly
after its patience, and a cancelled wait leaves no transaction open), the online backup (beside an open
transaction too), files owner-only whatever the umask, and a leaked connection failing its test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.db import StoreBusyError
from storage.sqlite import SQLiteDatabase


async def test_connection_uses_wal_foreign_keys_and_a_busy_timeout(sqlite_db: SQLiteDatabase) -> None:
    assert await sqlite_db.fetchval("PRAGMA journal_mode") == "wal"
    assert await sqlite_db.fetchval("PRAGMA foreign_keys") == 1
    assert await sqlite_db.fetchval("PRAGMA busy_timeout") >= 1000


@pytest.mark.parametrize(
    "held",
    [
        pytest.param("BEGIN EXCLUSIVE", id="locked-for-its-first-write"),
        pytest.param(
            "CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)", id="writing-before-wal"
        ),
    ],
)
async def test_opening_a_store_waits_for_another_process_holding_it(tmp_path: Path, held: str) -> None:
    """A process starting while another holds the file's lock, as when two processes open a new store
    together, waits for it and opens the store rather than failing with "database is locked" (the
    first pragma reads the schema, and the switch to WAL takes its lock without SQLite's busy timeout:
    both gave up at once before)."""
    path = tmp_path / "new.db"
    other = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in held.split("; "):
            other.execute(statement)
        asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
        db = await SQLiteDatabase.open(path)
    finally:
        other.close()
    try:
        assert await db.fetchval("PRAGMA journal_mode") == "wal"
        assert await db.fetchval("SELECT COUNT(*) FROM paper_changes") == 1
    finally:
        await db.close()


async def test_reads_do_not_wait_while_another_process_holds_the_write_lock(
    sqlite_db: SQLiteDatabase,
) -> None:
    """A write waiting for the lock (here: another connection's open transaction) holds up no read."""
    other = sqlite3.connect(sqlite_db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO users (id, created_at) VALUES (2, 'now')")
        waiting = asyncio.create_task(
            sqlite_db.execute("INSERT INTO users (id, created_at) VALUES (3, 'now')")
        )
        await asyncio.sleep(0.2)
        assert not waiting.done()
        assert await asyncio.wait_for(sqlite_db.fetchval("SELECT COUNT(*) FROM users"), 1.0) == 0
        other.execute("COMMIT")
        assert await asyncio.wait_for(waiting, 5.0) == 1  # it got the lock once the other let go
    finally:
        other.close()
    assert await sqlite_db.fetchval("SELECT COUNT(*) FROM users") == 2


async def test_a_write_gives_up_cleanly_when_the_lock_stays_taken(sqlite_db: SQLiteDatabase) -> None:
    other = sqlite3.connect(sqlite_db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreBusyError, match="locked by another writer"):
            async with sqlite_db.transaction(patience=0.3) as conn:
                await conn.execute("INSERT INTO users (id, created_at) VALUES (4, 'now')")
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert await sqlite_db.fetchval("SELECT COUNT(*) FROM users") == 0
    await sqlite_db.execute("INSERT INTO users (id, created_at) VALUES (5, 'now')")  # and the store works on


async def test_a_write_cancelled_while_it_waits_for_the_lock_leaves_no_transaction_open(
    sqlite_db: SQLiteDatabase,
) -> None:
    """aiosqlite still runs a statement whose caller was cancelled: the BEGIN that went through just as
    the caller gave up is rolled back, not left holding the lock for the whole process."""
    other = sqlite3.connect(sqlite_db.path, isolation_level=None)
    try:
        for delay in (0.0, 0.005, 0.02, 0.05):
            other.execute("BEGIN IMMEDIATE")
            waiting = asyncio.create_task(
                sqlite_db.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
            )
            await asyncio.sleep(0.05)
            other.execute("COMMIT")  # the lock is free: the next BEGIN attempt may succeed ...
            await asyncio.sleep(delay)
            waiting.cancel()  # ... just as the caller gives up
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            await sqlite_db.execute("DELETE FROM users")  # the store takes writes: no transaction left open
            assert await asyncio.wait_for(sqlite_db.fetchval("SELECT COUNT(*) FROM users"), 1) == 0
    finally:
        other.close()


async def test_a_write_gets_the_lock_between_another_writers_short_transactions(
    sqlite_db: SQLiteDatabase,
) -> None:
    """Another process committing batch after batch (as `paperbot ingest` does) leaves gaps; a write
    waiting for the lock takes the first one instead of waiting for the other writer to finish."""
    stop = False

    def bulk_writer() -> int:
        other = sqlite3.connect(sqlite_db.path, isolation_level=None, timeout=5)
        batches = 0
        try:
            while not stop:
                other.execute("BEGIN IMMEDIATE")
                other.execute(
                    "INSERT INTO app_state (key, value, updated_at) VALUES (?, 'x', 'now')", (f"k{batches}",)
                )
                time.sleep(0.2)  # the lock held for a batch
                other.execute("COMMIT")
                batches += 1
                time.sleep(0.03)  # the pause between batches
        finally:
            other.close()
        return batches

    bulk = asyncio.create_task(asyncio.to_thread(bulk_writer))
    await asyncio.sleep(0.1)
    waits = []
    for user in range(10):
        started = time.perf_counter()
        await sqlite_db.execute("INSERT INTO users (id, created_at) VALUES (?, 'now')", (user,))
        waits.append(time.perf_counter() - started)
        await asyncio.sleep(0.1)
    stop = True
    assert await bulk >= 3
    assert max(waits) < 1.5, waits  # a batch or two, not the whole run


async def test_online_backup_is_a_complete_consistent_copy(sqlite_db: SQLiteDatabase, tmp_path: Path) -> None:
    async with sqlite_db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO users (id, created_at) VALUES (?, 'now')", [(n,) for n in range(50)]
        )
    await sqlite_db.backup(tmp_path / "backup" / "copy.db")
    copy = sqlite3.connect(tmp_path / "backup" / "copy.db")
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert copy.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 50
    finally:
        copy.close()


BACKUP_BESIDE_A_TRANSACTION = """
import asyncio, sys
from pathlib import Path
from storage.store import open_database

async def main(folder):
    folder = Path(folder)
    async with await open_database(folder / "paperbot.db") as db:
        await db.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO users (id, created_at) VALUES (2, 'now')")
            await db.backup(folder / "backup.db")
            print("backed up", flush=True)
        print("committed", await db.fetchval("SELECT COUNT(*) FROM users"), flush=True)

asyncio.run(main(sys.argv[1]))
"""


def test_a_backup_while_a_write_transaction_is_open_neither_waits_nor_blocks_writes(tmp_path: Path) -> None:
    """A backup taken while this process has a write transaction open copies what was committed and
    returns, and the transaction then commits (in a child process: a backup stuck behind the open
    transaction would hang the process that took it)."""
    repo = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            [sys.executable, "-c", BACKUP_BESIDE_A_TRANSACTION, str(tmp_path)],
            cwd=repo, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as stuck:
        pytest.fail(f"the backup never finished while a transaction was open ({stuck.stdout!r})")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["backed up", "committed 2"]
    copy = sqlite3.connect(tmp_path / "backup.db")
    try:
        assert copy.execute("SELECT id FROM users").fetchall() == [(1,)], "only what was committed"
    finally:
        copy.close()


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_store_and_its_backups_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    """Under the usual umask 022 (not systemd's): the database, its -wal and -shm, a backup, and the
    folders made for them, are the bot user's alone."""
    with umask(0o022):
        async with await SQLiteDatabase.open(tmp_path / "data" / "paperbot.db") as db:
            await db.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
            await db.backup(tmp_path / "backups" / "daily" / "copy.db")
            made = sorted((tmp_path / "data").iterdir())
            assert [p.name for p in made] == ["paperbot.db", "paperbot.db-shm", "paperbot.db-wal"]
            for path in [*made, tmp_path / "backups" / "daily" / "copy.db"]:
                assert mode(path) == 0o600, f"{path.name} is {mode(path):o}"
    for folder in (tmp_path / "data", tmp_path / "backups", tmp_path / "backups" / "daily"):
        assert mode(folder) == 0o700, f"{folder.name} is {mode(folder):o}"


def test_a_test_that_leaks_a_connection_fails(tmp_path: Path) -> None:
    """pytest's settings (warnings are errors) make a forgotten close() fail the test that leaked it."""
    repo = Path(__file__).resolve().parents[2]
    leaky = tmp_path / "test_leaky.py"
    leaky.write_text(
        "from storage.store import open_database\n\n"
        "async def test_leaks(tmp_path):\n"
        "    db = await open_database(tmp_path / 'x.db')\n"
        "    assert db\n"
    )
    # The leaked connection's thread also keeps the inner pytest from exiting, so read its summary
    # line and stop it there.
    with subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(repo / "pyproject.toml"),
         "--rootdir", str(repo), str(leaky)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=repo,
    ) as inner:  # fmt: skip
        output: list[str] = []
        try:
            assert inner.stdout is not None
            for line in inner.stdout:
                output.append(line)
                if " failed" in line or " passed" in line:
                    break
        finally:
            inner.kill()
    summary = output[-1] if output else ""
    assert "1 failed" in summary, "".join(output[-40:])
    assert "Unraisable" in "".join(output) or "ResourceWarning" in "".join(output)
