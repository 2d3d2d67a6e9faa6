"""The store on either engine: migrations from empty (one set per engine, the same numbers and names),
rollback, transactions that do not interleave, reads that never see another task's uncommitted rows
and always see what was committed before them, the data version another connection's commit moves, cascades. What is particular to one engine is in
test_sqlite.py and test_postgres.py."""

from __future__ import annotations

import asyncio
import sqlite3

import asyncpg
import pytest

from storage.db import Database
from storage.migrate import DIALECTS, available_migrations
from storage.store import StoreLocation, open_database

TABLES = {"papers", "users", "feedback", "subscriptions", "digest_runs", "posted_messages", "paper_changes"}


def test_both_engines_have_the_same_migrations() -> None:
    """A migration added for one engine and not the other fails here, before any store runs it."""
    names = {dialect: [m.name for m in available_migrations(dialect)] for dialect in DIALECTS}
    assert names["sqlite"] == names["postgresql"]


async def _tables(db: Database) -> set[str]:
    if db.dialect == "sqlite":
        rows = await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = await db.fetchall("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    return {str(row[0]) for row in rows}


async def test_migrates_an_empty_database_to_the_latest_version(blank_store: StoreLocation) -> None:
    async with await open_database(blank_store, migrate=False) as empty:
        assert await empty.migrate() == list(range(1, len(available_migrations(empty.dialect)) + 1))
        assert await _tables(empty) >= TABLES


async def test_reopening_applies_nothing_twice(blank_store: StoreLocation) -> None:
    async with await open_database(blank_store):
        pass
    async with await open_database(blank_store) as db:
        assert await db.migrate() == []


async def test_processes_starting_together_migrate_once(blank_store: StoreLocation) -> None:
    """Two processes opening one new store at the same moment (a deploy starting its gateway and its
    worker): each migration is applied once, and both open it."""
    first, second = await asyncio.gather(open_database(blank_store), open_database(blank_store))
    try:
        assert await first.fetchval("SELECT COUNT(*) FROM paper_changes") == 1
        assert await first.migrate() == await second.migrate() == []
    finally:
        await first.close()
        await second.close()


async def test_a_database_newer_than_the_code_is_refused(blank_store: StoreLocation) -> None:
    async with await open_database(blank_store):
        pass
    if blank_store.path is not None:
        with sqlite3.connect(blank_store.path) as conn:
            conn.execute("PRAGMA user_version = 999")
        conn.close()
    else:
        conn = await asyncpg.connect(blank_store.url)
        await conn.execute("UPDATE schema_version SET version = 999")
        await conn.close()
    with pytest.raises(RuntimeError, match="newer than this paperbot"):
        await open_database(blank_store)


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


async def test_a_snapshot_sees_one_committed_state(db: Database) -> None:
    async with db.snapshot() as conn:
        before = await conn.fetchval("SELECT COUNT(*) FROM users")
        await db.execute("INSERT INTO users (id, created_at) VALUES (3, 'now')")  # committed meanwhile
        assert await conn.fetchval("SELECT COUNT(*) FROM users") == before
    assert await db.fetchval("SELECT COUNT(*) FROM users") == before + 1


async def test_data_version_changes_when_another_connection_commits_papers(
    db: Database, store: StoreLocation
) -> None:
    before = await db.data_version()
    assert await db.data_version() == before  # nothing committed: the same number, no data read
    async with await open_database(store) as other:  # another process, as far as the store knows
        await other.execute(
            "INSERT INTO papers (title, added_at, updated_at) VALUES ('Elsewhere', 'now', 'now')"
        )
    after = await db.data_version()
    assert after != before
    await db.execute("INSERT INTO papers (title, added_at, updated_at) VALUES ('Here', 'now', 'now')")
    assert await db.data_version() != after  # this process's writer too


async def test_foreign_keys_cascade_when_a_user_is_deleted(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO users (id, created_at) VALUES (7, 'now')")
        await conn.execute(
            "INSERT INTO interests (user_id, kind, key, topic, added_at) VALUES (7, 'topic', 'topic:rl', 'rl', 'now')"
        )
    await db.execute("DELETE FROM users WHERE id = 7")
    assert await db.fetchval("SELECT COUNT(*) FROM interests") == 0


async def test_discord_ids_and_returning_round_trip(db: Database) -> None:
    """Snowflakes need 64 bits; an insert's RETURNING gives the id the store picked."""
    snowflake = 1_234_567_890_123_456_789
    await db.execute("INSERT INTO users (id, created_at) VALUES (?, 'now')", (snowflake,))
    assert await db.fetchval("SELECT id FROM users") == snowflake
    async with db.transaction() as conn:
        first = await conn.fetchval(
            "INSERT INTO papers (title, added_at, updated_at) VALUES ('A', 'now', 'now') RETURNING id"
        )
        second = await conn.fetchval(
            "INSERT INTO papers (title, added_at, updated_at) VALUES ('B', 'now', 'now') RETURNING id"
        )
    assert second == first + 1


async def test_a_committed_write_is_seen_by_the_next_read_while_other_reads_run(db: Database) -> None:
    """Read your own write: a row committed is found by the read that follows it, however many other
    tasks read meanwhile. (On SQLite, a statement left open on the read connection between two of its
    steps would hold that connection's snapshot from before the commit for every read beside it: a
    digest planned and stored, then read back as nothing, went out as "nothing new today".)"""
    await db.executemany("INSERT INTO users (id, created_at) VALUES (?, 'now')", [(n,) for n in range(1, 20)])

    async def others_reading() -> None:
        for _ in range(100):
            await db.fetchall("SELECT id FROM users")
            await db.fetchone("SELECT id FROM users")

    async def write_then_read(user_id: int) -> bool:
        await db.execute("INSERT INTO users (id, created_at) VALUES (?, 'now')", (user_id,))
        return await db.fetchone("SELECT id FROM users WHERE id = ?", (user_id,)) is not None

    results = await asyncio.gather(
        *(others_reading() for _ in range(8)), *(write_then_read(1000 + n) for n in range(300))
    )
    found = results[8:]
    assert found.count(False) == 0, f"{found.count(False)} of {len(found)} committed rows not found"
