"""What is particular to the PostgreSQL store: `?` numbered as `$n` (never inside quotes or comments),
writers that wait for each other's rows and give up cleanly after their patience, a server that cannot
be reached raising StoreBusyError (try again later) rather than losing anything, the schema version
row, and the location parsed from `PAPERBOT_DB`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from storage.db import Database, StoreBusyError, is_busy
from storage.postgres import numbered
from storage.store import StoreLocation, open_database


def test_placeholders_are_numbered_outside_quotes_and_comments() -> None:
    assert numbered("SELECT ? , ?") == "SELECT $1 , $2"
    assert (
        numbered("WHERE a = '?' AND b = ? -- what?\nAND c = ?")
        == "WHERE a = '?' AND b = $1 -- what?\nAND c = $2"
    )
    assert numbered("""SELECT 'it''s ?', "col?", ? /* ? */""") == """SELECT 'it''s ?', "col?", $1 /* ? */"""
    assert numbered("LIKE ? ESCAPE '\\'") == "LIKE $1 ESCAPE '\\'"


def test_locations_are_a_sqlite_path_or_a_postgresql_url() -> None:
    assert StoreLocation.parse("./paperbot.db") == StoreLocation(path=Path("paperbot.db"))
    url = "postgresql://paperbot:s3cret@db.internal:5432/paperbot"
    assert StoreLocation.parse(url).url == url
    assert str(StoreLocation.parse(url)) == "postgresql://paperbot:***@db.internal:5432/paperbot"
    assert StoreLocation.parse("postgres://u@h/d").url is not None
    with pytest.raises(ValueError, match="postgresql:// URL, got a mysql:// URL"):
        StoreLocation.parse("mysql://u@h/d")
    with pytest.raises(ValueError, match="must name the PostgreSQL server"):
        StoreLocation.parse("postgresql:///paperbot")
    assert StoreLocation.parse(url).local_file(".pending", Path("/var/lib/paperbot")) == Path(
        "/var/lib/paperbot/paperbot.pending"
    )
    assert StoreLocation.parse(url).local_file(".pending") == Path("paperbot.pending")  # the working dir
    assert StoreLocation.parse("/data/p.db").local_file(".pending") == Path("/data/p.db.pending")
    assert StoreLocation.parse("/data/p.db").local_file(".pending", Path("/run/a")) == Path(
        "/run/a/p.db.pending"
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://paperbot:hunter2-pw@127.0.0.1:1/paperbot",
        "postgresql://paperbot@127.0.0.1:1/paperbot?password=hunter2-pw",
    ],
)
async def test_an_unreachable_store_is_named_without_its_password(url: str) -> None:
    with pytest.raises(StoreBusyError) as refused:
        await open_database(url)
    assert "127.0.0.1:1/paperbot" in str(refused.value)
    assert "hunter2" not in str(refused.value)


@pytest.fixture
async def pg(postgres_store: StoreLocation) -> AsyncIterator[Database]:
    async with await open_database(postgres_store) as db:
        yield db


async def test_the_version_is_kept_in_schema_version(pg: Database) -> None:
    from storage.migrate import available_migrations

    assert await pg.fetchval("SELECT version FROM schema_version") == len(available_migrations("postgresql"))


async def test_a_writer_waits_for_another_transactions_row_then_gives_up_cleanly(
    pg: Database, postgres_store: StoreLocation
) -> None:
    await pg.execute("INSERT INTO users (id, created_at) VALUES (1, 'now')")
    other = await asyncpg.connect(postgres_store.url)
    try:
        await other.execute("BEGIN")
        await other.execute("UPDATE users SET learning_paused = 1 WHERE id = 1")  # holds the row
        with pytest.raises(StoreBusyError, match="cannot take it now"):
            async with pg.transaction(patience=0.3) as conn:
                await conn.execute("UPDATE users SET pending_notice = 'x' WHERE id = 1")
        waiting = asyncio.create_task(pg.execute("UPDATE users SET pending_notice = 'y' WHERE id = 1"))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # waits for the row, not for the whole store
        assert await pg.fetchval("SELECT COUNT(*) FROM users") == 1  # reads never wait
        await other.execute("COMMIT")
        assert await asyncio.wait_for(waiting, 5) == 1
    finally:
        await other.close()
    assert await pg.fetchval("SELECT pending_notice FROM users") == "y"


async def test_an_unreachable_server_is_busy_not_lost() -> None:
    """A store that cannot be reached says so as StoreBusyError: callers keep the write and retry."""
    with pytest.raises(StoreBusyError) as raised:
        await open_database("postgresql://nobody@127.0.0.1:9/paperbot")
    assert is_busy(raised.value)


async def test_a_lost_connection_mid_transaction_is_busy_and_writes_nothing(
    pg: Database, postgres_store: StoreLocation
) -> None:
    admin = await asyncpg.connect(postgres_store.url)

    async def write_while_the_server_drops_the_connection() -> None:
        async with pg.transaction() as conn:
            await conn.execute("INSERT INTO users (id, created_at) VALUES (5, 'now')")
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            await admin.execute("SELECT pg_terminate_backend($1)", pid)  # the server restarts, say
            await conn.execute("INSERT INTO users (id, created_at) VALUES (6, 'now')")

    try:
        with pytest.raises(StoreBusyError):
            await write_while_the_server_drops_the_connection()
    finally:
        await admin.close()
    assert await pg.fetchval("SELECT COUNT(*) FROM users") == 0
    await pg.execute("INSERT INTO users (id, created_at) VALUES (7, 'now')")  # the pool recovers
    assert await pg.fetchval("SELECT COUNT(*) FROM users") == 1
