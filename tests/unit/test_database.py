"""The store: migrations from empty, PRAGMAs, serialised transactions, rollback, online backup."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from storage.db import Database
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
