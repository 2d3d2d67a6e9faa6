"""Users: each person's DM channel id, kept once known, forgotten with them, filled in for people a
paper already reached by DM when the store upgrades."""

from __future__ import annotations

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


async def test_upgrading_fills_in_the_dm_channel_of_everyone_a_paper_reached_by_dm(db: Database) -> None:
    """Migration 0004's backfill, on each engine, over people an older version left behind."""
    async with db.transaction() as conn:
        for user_id in (1, 2, 3):
            await conn.execute("INSERT INTO users (id, created_at) VALUES (?, '2026-01-01')", (user_id,))
        await conn.execute(
            "INSERT INTO papers (id, title, added_at, updated_at) VALUES (1, 'p', '2026-01-01', '2026-01-01')"
        )
        for row in (
            (100, 7001, None, 1, "2026-01-02"),  # user 1's DM
            (101, 7001, None, 1, "2026-01-03"),
            (102, 9000, 42, 2, "2026-01-02"),  # user 2 only in a server channel: no DM known
        ):
            await conn.execute(
                "INSERT INTO posted_messages (message_id, channel_id, guild_id, paper_id, recipient_id, kind,"
                " posted_at) VALUES (?, ?, ?, 1, ?, 'digest', ?)",
                row,
            )
    (migration,) = [m for m in available_migrations(db.dialect) if m.name == "0004_dm_channel_ids.sql"]
    await db.execute(migration.sql[migration.sql.index("UPDATE users") :])
    users = UserRepository(db)
    assert await users.dm_channel(1) == 7001
    assert await users.dm_channel(2) is None
    assert await users.dm_channel(3) is None


async def test_a_topic_is_replaced_in_one_step_and_only_when_it_is_followed(db: Database) -> None:
    users = UserRepository(db)
    await users.add_topic(11, "reinforcement learning")
    await users.add_topic(11, "graphs")
    assert await users.replace_topic(11, "reinforcement learning", "offline reinforcement learning")
    assert sorted(await users.topics(11)) == ["graphs", "offline reinforcement learning"]
    # not followed (any more): nothing written, not even the new topic
    assert not await users.replace_topic(11, "reinforcement learning", "multi-agent reinforcement learning")
    assert sorted(await users.topics(11)) == ["graphs", "offline reinforcement learning"]
    # replacing with a topic already followed leaves it once
    assert await users.replace_topic(11, "graphs", "offline reinforcement learning")
    assert await users.topics(11) == ["offline reinforcement learning"]
