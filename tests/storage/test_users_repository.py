"""Users: each person's DM channel id, kept once known, forgotten with them, filled in for people a
paper already reached by DM when the store upgrades."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storage.db import Database
from storage.migrate import available_migrations
from storage.repositories.users import UserRepository, forget_user


async def test_a_dm_channel_is_kept_replaced_and_forgotten(db: Database) -> None:
    users = UserRepository(db)
    assert await users.dm_channel(11) is None
    await users.set_dm_channel(11, 5001)  # a person the store did not know yet
    assert await users.dm_channel(11) == 5001
    await users.set_dm_channel(11, 5002)
    assert await users.dm_channel(11) == 5002
    await users.set_dm_channel(11, None)
    assert await users.dm_channel(11) is None
    await users.set_dm_channel(12, None)  # forgetting an unknown person stores nothing
    assert await users.get(12) is None


async def test_forget_me_deletes_the_dm_channel_too(db: Database) -> None:
    users = UserRepository(db)
    await users.set_dm_channel(11, 5001)
    await forget_user(db, 11)
    assert await users.dm_channel(11) is None


async def test_upgrading_fills_in_the_dm_channel_of_everyone_a_paper_reached_by_dm(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = [m for m in available_migrations() if m.name < "0004"]
    with sqlite3.connect(path) as conn:
        for migration in before:
            conn.executescript(migration.sql)
        conn.execute(f"PRAGMA user_version = {len(before)}")
        conn.executemany("INSERT INTO users (id, created_at) VALUES (?, '2026-01-01')", [(1,), (2,), (3,)])
        conn.execute(
            "INSERT INTO papers (id, title, added_at, updated_at) VALUES (1, 'p', '2026-01-01', '2026-01-01')"
        )
        conn.executemany(
            "INSERT INTO posted_messages (message_id, channel_id, guild_id, paper_id, recipient_id, kind,"
            " posted_at) VALUES (?, ?, ?, 1, ?, 'digest', ?)",
            [
                (100, 7001, None, 1, "2026-01-02"),  # user 1's DM
                (101, 7001, None, 1, "2026-01-03"),
                (102, 9000, 42, 2, "2026-01-02"),  # user 2 only in a server channel: no DM known
            ],
        )
    conn.close()
    async with await Database.open(path) as db:
        users = UserRepository(db)
        assert await users.dm_channel(1) == 7001
        assert await users.dm_channel(2) is None
        assert await users.dm_channel(3) is None
