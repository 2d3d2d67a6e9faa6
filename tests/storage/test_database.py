"""The store: migrations from empty, PRAGMAs, serialised transactions, rollback, online backup, reads beside
the writer (never another task's uncommitted rows, never waiting for the write lock), another writer's lock."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage.db import Database, StoreBusyError
from storage.migrate import available_migrations


async def test_migrates_an_empty_database_to_the_latest_version(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "new.db") as db:
        assert await db.fetchval("PRAGMA user_version") == len(available_migrations())
        tables = {row[0] for row in await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"papers", "users", "feedback", "subscriptions", "digest_runs", "posted_messages"} <= tables


async def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "x.db"):
        pass
    async with await Database.open(tmp_path / "x.db") as db:
        assert await db.migrate() == []


async def test_connection_uses_wal_foreign_keys_and_a_busy_timeout(db: Database) -> None:
    assert await db.fetchval("PRAGMA journal_mode") == "wal"
    assert await db.fetchval("PRAGMA foreign_keys") == 1
    assert await db.fetchval("PRAGMA busy_timeout") >= 1000


async def test_a_failed_transaction_writes_nothing(db: Database) -> None:
    async def insert_then_fail() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await insert_then_fail()
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0


async def test_concurrent_transactions_do_not_interleave(db: Database) -> None:
    async def writer(user_id: int) -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO users (id, created_at) VALUES (?, 'now')", (user_id,))
            await asyncio.sleep(0.01)
            await conn.execute("UPDATE users SET learning_paused = 1 WHERE id = ?", (user_id,))

    await asyncio.gather(*(writer(n) for n in range(1, 11)))
    assert await db.fetchval("SELECT COUNT(*) FROM users WHERE learning_paused = 1") == 10


async def test_reads_never_see_another_tasks_uncommitted_rows(db: Database) -> None:
    inserted, checked = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
            inserted.set()
            await checked.wait()  # still uncommitted while the other task reads

    task = asyncio.create_task(writer())
    await inserted.wait()
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0
    checked.set()
    await task
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 1  # committed: visible at once


async def test_reads_do_not_wait_while_another_process_holds_the_write_lock(db: Database) -> None:
    """A write waiting for the lock (here: another connection's open transaction) holds up no read."""
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO users (id, created_at) VALUES (2, 'now')")
        waiting = asyncio.create_task(db.execute("INSERT INTO users (id, created_at) VALUES (3, 'now')"))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        assert await asyncio.wait_for(db.fetchval("SELECT COUNT(*) FROM users"), 1.0) == 0
        other.execute("COMMIT")
        assert await asyncio.wait_for(waiting, 5.0) == 1  # it got the lock once the other let go
    finally:
        other.close()
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 2


async def test_a_write_gives_up_cleanly_when_the_lock_stays_taken(db: Database) -> None:
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreBusyError, match="locked by another writer"):
            async with db.transaction(patience=0.3) as conn:
                await conn.execute("INSERT INTO users (id, created_at) VALUES (4, 'now')")
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0
    await db.execute("INSERT INTO users (id, created_at) VALUES (5, 'now')")  # and the store works on


async def test_a_write_cancelled_while_it_waits_for_the_lock_leaves_no_transaction_open(db: Database) -> None:
    """aiosqlite still runs a statement whose caller was cancelled: the BEGIN that went through just as
    the caller gave up is rolled back, not left holding the lock for the whole process."""
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        for delay in (0.0, 0.005, 0.02, 0.05):
            other.execute("BEGIN IMMEDIATE")
            waiting = asyncio.create_task(db.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')"))
            await asyncio.sleep(0.05)
            other.execute("COMMIT")  # the lock is free: the next BEGIN attempt may succeed ...
            await asyncio.sleep(delay)
            waiting.cancel()  # ... just as the caller gives up
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            await db.execute("DELETE FROM users")  # the store takes writes: no transaction left open
            assert await asyncio.wait_for(db.fetchval("SELECT COUNT(*) FROM users"), 1) == 0
    finally:
        other.close()


async def test_a_write_gets_the_lock_between_another_writers_short_transactions(db: Database) -> None:
    """Another process committing batch after batch (as `paperbot ingest` does) leaves gaps; a write
    waiting for the lock takes the first one instead of waiting for the other writer to finish."""
    stop = False

    def bulk_writer() -> int:
        other = sqlite3.connect(db.path, isolation_level=None, timeout=5)
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
        await db.execute("INSERT INTO users (id, created_at) VALUES (?, 'now')", (user,))
        waits.append(time.perf_counter() - started)
        await asyncio.sleep(0.1)
    stop = True
    assert await bulk >= 3
    assert max(waits) < 1.5, waits  # a batch or two, not the whole run


async def test_data_version_changes_when_another_connection_commits(db: Database) -> None:
    before = await db.data_version()
    assert await db.data_version() == before  # nothing committed: the same number, no data read
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("INSERT INTO users (id, created_at) VALUES (9, 'now')")
    finally:
        other.close()
    after = await db.data_version()
    assert after != before
    await db.execute("INSERT INTO users (id, created_at) VALUES (10, 'now')")  # this process's writer too
    assert await db.data_version() != after


async def test_foreign_keys_cascade_when_a_user_is_deleted(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO users (id, created_at) VALUES (7, 'now')")
        await conn.execute("INSERT INTO user_topics (user_id, topic, added_at) VALUES (7, 'rl', 'now')")
    await db.execute("DELETE FROM users WHERE id = 7")
    assert await db.fetchval("SELECT COUNT(*) FROM user_topics") == 0


async def test_a_database_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(RuntimeError, match="newer than this paperbot"):
        await Database.open(path)


async def test_online_backup_is_a_complete_consistent_copy(db: Database, tmp_path: Path) -> None:
    async with db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO users (id, created_at) VALUES (?, 'now')", [(n,) for n in range(50)]
        )
    await db.backup(tmp_path / "backup" / "copy.db")
    copy = sqlite3.connect(tmp_path / "backup" / "copy.db")
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert copy.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 50
    finally:
        copy.close()


def test_a_test_that_leaks_a_connection_fails(tmp_path: Path) -> None:
    """pytest's settings (warnings are errors) make a forgotten close() fail the test that leaked it."""
    repo = Path(__file__).resolve().parents[2]
    leaky = tmp_path / "test_leaky.py"
    leaky.write_text(
        "from storage.db import Database\n\n"
        "async def test_leaks(tmp_path):\n"
        "    db = await Database.open(tmp_path / 'x.db')\n"
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
