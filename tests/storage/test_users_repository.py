"""Users: each person's DM channel id, kept once known, forgotten with them, filled in for people a
paper already reached by DM when the store upgrades; forgetting a person, so that nothing about them
comes back from a write that began before they asked."""

from __future__ import annotations

import asyncio

import pytest

from storage.db import Database, PersonForgottenError, utcnow_precise
from storage.migrate import available_migrations
from storage.repositories.digests import DigestRepository, Recipient
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.interests import InterestRepository, topic_key
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.searches import SearchRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository
from storage.repositories.users import UserRepository, ensure_user, forget_user, prune_forgotten


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


# ---- forgetting: nothing about a person comes back from a write that began before they asked -------

PERSON, PAPER = 11, 1


async def _with_a_paper(db: Database) -> None:
    await db.execute(
        "INSERT INTO papers (id, title, added_at, updated_at) VALUES (?, 'p', '2026-01-01', '2026-01-01')",
        (PAPER,),
    )


async def _rows_about(db: Database, user_id: int) -> dict[str, int]:
    counts = {
        table: await db.fetchval(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (user_id,))
        for table, column in (
            ("users", "id"),
            ("interests", "user_id"),
            ("feedback", "user_id"),
            ("digest_sent", "user_id"),
            ("posted_messages", "recipient_id"),
            ("searches", "user_id"),
        )
    }
    return {table: int(count) for table, count in counts.items() if count}


async def test_a_write_that_began_before_its_person_forgot_is_refused_and_one_after_is_stored(
    db: Database,
) -> None:
    """Every write that creates or touches a person's rows and says when it began (a reaction waiting
    in an outbox, a digest in flight) is refused once they asked to be forgotten after that; what they
    do after asking is stored: they may come back."""
    await _with_a_paper(db)
    before = utcnow_precise()
    await InterestRepository(db).add(PERSON, "topic", topic_key("graph networks"), topic="graph networks")
    await forget_user(db, PERSON)
    feedback, digests = FeedbackRepository(db), DigestRepository(db)
    with pytest.raises(PersonForgottenError):
        await feedback.set_signal(PERSON, PAPER, "save", guild_id=None, since=before)
    with pytest.raises(PersonForgottenError):
        await SearchRepository(db).save(kind="search", query="q", page_size=5, user_id=PERSON, since=before)
    with pytest.raises(PersonForgottenError):
        await PostedMessageRepository(db).record(1, 2, None, PAPER, PERSON, since=before)
    with pytest.raises(PersonForgottenError):
        await UserRepository(db).set_dm_channel(PERSON, 5001, since=before)
    assert not await digests.reserve_item(None, PAPER, Recipient(user_id=PERSON), since=before)
    await digests.record_message(
        None,
        PAPER,
        message_id=3,
        channel_id=4,
        guild_id=None,
        recipient_id=PERSON,
        kind="digest",
        since=before,
    )
    assert await _rows_about(db, PERSON) == {}

    after = utcnow_precise()
    await feedback.set_signal(PERSON, PAPER, "save", guild_id=None, since=after)
    assert await digests.reserve_item(None, PAPER, Recipient(user_id=PERSON), since=after)
    assert await _rows_about(db, PERSON) == {"users": 1, "feedback": 1, "digest_sent": 1}


async def test_a_forgetting_waits_for_a_write_in_flight_and_then_deletes_it(db: Database) -> None:
    """A write about the person holds its transaction open when they ask to be forgotten (in another
    process, on PostgreSQL: only the person's lock orders the two): the forgetting waits and removes it."""
    await _with_a_paper(db)
    began = utcnow_precise()
    entered, go_on = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with db.transaction() as conn:
            await ensure_user(conn, PERSON, since=began)
            entered.set()
            await go_on.wait()
            await conn.execute(
                "INSERT INTO feedback (user_id, paper_id, signal, created_at) VALUES (?, ?, 'like', ?)",
                (PERSON, PAPER, began),
            )

    writing = asyncio.create_task(write())
    await entered.wait()
    forgetting = asyncio.create_task(forget_user(db, PERSON))
    await asyncio.sleep(0.3)  # the forgetting has started and waits
    go_on.set()
    await writing
    await forgetting
    assert await _rows_about(db, PERSON) == {}


async def test_a_paused_digest_leaves_no_notice_for_someone_forgotten_meanwhile(db: Database) -> None:
    """The digest that finds DMs closed (or a feed's channel gone) pauses it; the notice goes to the
    person the store names now: none, once the subscriber (or the feed's creator) was forgotten."""
    subscriptions = SubscriptionRepository(db)
    fields = ScheduleFields(("graph networks",), "09:00", "UTC", "daily", 0, 3)
    digest = await subscriptions.upsert_user(PERSON, fields)
    feed = await subscriptions.upsert_channel(900, 77, fields, created_by=PERSON)
    await subscriptions.pause(feed.id, "channel gone", notice="Your feed is paused")
    assert (await UserRepository(db).get(PERSON)).pending_notice == "Your feed is paused"  # type: ignore[union-attr]
    await forget_user(db, PERSON)
    await subscriptions.pause(digest.id, "DMs closed", notice="Your digest is paused")
    await subscriptions.pause(feed.id, "channel gone", notice="Your feed is paused")
    assert await _rows_about(db, PERSON) == {}
    assert not (await subscriptions.get(feed.id)).active  # type: ignore[union-attr]


async def test_notes_of_old_forgettings_are_deleted_and_writes_older_than_the_oldest_kept_are_refused(
    db: Database,
) -> None:
    await _with_a_paper(db)
    await forget_user(db, 12, at="2026-01-01T00:00:00.000000+00:00")
    await forget_user(db, 13, at="2026-06-01T00:00:00.000000+00:00")
    assert await prune_forgotten(db, "2026-03-01T00:00:00.000000+00:00") == 1
    assert await prune_forgotten(db, "2026-02-01T00:00:00.000000+00:00") == 0  # never back in time
    assert [int(r[0]) for r in await db.fetchall("SELECT user_id FROM forgotten_users")] == [13]
    feedback = FeedbackRepository(db)
    with pytest.raises(PersonForgottenError):  # whether they asked before March is no longer known
        await feedback.set_signal(PERSON, PAPER, "like", guild_id=None, since="2026-02-15T00:00:00+00:00")
    await feedback.set_signal(PERSON, PAPER, "like", guild_id=None, since="2026-03-02T00:00:00+00:00")
    assert await _rows_about(db, PERSON) == {"users": 1, "feedback": 1}
