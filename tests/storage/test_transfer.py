"""Moving a SQLite store into PostgreSQL (`storage.transfer`): every table whole, row for row, in the
same order; ids the target picks next come after the copied ones; a rerun finds it done; a target
holding other data is refused; a row PostgreSQL refuses rolls the whole copy back."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from store_contents import fill_people, table_rows

from storage.db import Database
from storage.models import PaperRecord
from storage.postgres import PostgresDatabase
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.papers import PaperRepository
from storage.sqlite import SQLiteDatabase
from storage.store import StoreLocation
from storage.transfer import TransferError, copy_store


@pytest.fixture
async def postgres(postgres_store: StoreLocation) -> AsyncIterator[PostgresDatabase]:
    assert postgres_store.url is not None
    async with await PostgresDatabase.open(postgres_store.url, name="target") as db:
        yield db


async def _filled(db: Database) -> None:
    records = [
        PaperRecord(title=f"Paper {n}", abstract=f"Paper {n} studies problem {n} with method {n} in depth.")
        for n in range(30)
    ]
    await PaperRepository(db).upsert_many(records)
    ids = [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")]
    await fill_people(db, ids)


async def test_every_table_arrives_row_for_row(sqlite_db: SQLiteDatabase, postgres: PostgresDatabase) -> None:
    await _filled(sqlite_db)
    seen: list[tuple[str, int]] = []
    report = await copy_store(sqlite_db, postgres, progress=lambda table, rows: seen.append((table, rows)))
    assert not report.already_done
    assert report.counts["papers"] == 30
    assert all(report.counts[table] > 0 for table in report.counts), {
        t: n for t, n in report.counts.items() if not n
    }
    assert dict(seen) == report.counts
    for table in report.counts:
        assert await table_rows(postgres, table) == await table_rows(sqlite_db, table), table
    # reactions keep their order (what learning reads oldest first)
    assert await FeedbackRepository(postgres).signals_for(7) == await FeedbackRepository(
        sqlite_db
    ).signals_for(7)
    # the target picks new ids after the copied ones, and numbers its papers' changes itself
    async with postgres.transaction() as conn:
        new = await conn.fetchval(
            "INSERT INTO papers (title, added_at, updated_at) VALUES ('After', 'now', 'now') RETURNING id"
        )
    assert new == 31
    assert await postgres.fetchval("SELECT seq FROM paper_changes") == 31


async def test_a_rerun_finds_it_done_and_changes_nothing(
    sqlite_db: SQLiteDatabase, postgres: PostgresDatabase
) -> None:
    await _filled(sqlite_db)
    first = await copy_store(sqlite_db, postgres)
    before = {table: await table_rows(postgres, table) for table in first.counts}
    again = await copy_store(sqlite_db, postgres)
    assert again.already_done
    assert again.counts == first.counts
    assert {table: await table_rows(postgres, table) for table in first.counts} == before


async def test_a_target_holding_other_data_is_refused_and_left_alone(
    sqlite_db: SQLiteDatabase, postgres: PostgresDatabase
) -> None:
    await _filled(sqlite_db)
    await PaperRepository(postgres).upsert_many([PaperRecord(title="Someone else's", abstract="x " * 80)])
    with pytest.raises(
        TransferError, match=r"target already holds other data \(papers 1 rows, not this store's counts\)"
    ):
        await copy_store(sqlite_db, postgres)
    assert await postgres.fetchval("SELECT COUNT(*) FROM papers") == 1
    assert await postgres.fetchval("SELECT COUNT(*) FROM users") == 0


async def test_a_row_postgresql_refuses_rolls_everything_back(
    sqlite_db: SQLiteDatabase, postgres: PostgresDatabase
) -> None:
    """SQLite keeps a text in an integer column; PostgreSQL does not. The copy says which table and
    row, and the target stays empty, so the copy can be run again once the row is fixed."""
    await _filled(sqlite_db)
    await sqlite_db.execute("UPDATE feedback SET guild_id = 'not a number' WHERE rowid = 2")
    with pytest.raises(
        TransferError, match=r"feedback: one of the rows with rowid \d+–\d+ could not be copied"
    ):
        await copy_store(sqlite_db, postgres)
    assert await postgres.fetchval("SELECT COUNT(*) FROM papers") == 0
    await sqlite_db.execute("UPDATE feedback SET guild_id = 77 WHERE rowid = 2")
    report = await copy_store(sqlite_db, postgres)
    assert report.counts["feedback"] == await sqlite_db.fetchval("SELECT COUNT(*) FROM feedback")
