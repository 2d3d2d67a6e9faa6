"""A store with something in every table, written through the repositories as the bot would, and each
table's rows for comparing two stores (tests of moving a store between engines)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storage.db import Database
from storage.models import ClubRow
from storage.repositories.clubs import ClubRepository
from storage.repositories.digests import DigestRepository, Recipient
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.follows import FollowRepository, FollowRow
from storage.repositories.interests import InterestRepository, topic_key
from storage.repositories.library_texts import LibraryText, LibraryTextRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.mutes import MuteRepository
from storage.repositories.searches import SearchRepository
from storage.repositories.source_fetches import SourceFetchRepository
from storage.repositories.state import StateRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository
from storage.repositories.users import UserRepository, forget_user

#: Columns each store fills itself: not compared between stores.
OWN_COLUMNS = frozenset({"rowid", "change_seq"})
GUILD, CHANNEL = 77, 900_000_000_000_000_001
PEOPLE = (7, 8, 1_191_168_914_227_200_009)  # the last a real-sized snowflake
FORGOTTEN = 9


async def fill_people(db: Database, paper_ids: Sequence[int]) -> None:
    """Topics, muted topics (a person's, a feed's), library papers kept as text, reactions (some taken back), recommendations shown, followed authors (a name, one group
    under a name), a DM digest and a channel feed with runs half and wholly sent, posted messages,
    searches, operational state, and someone who asked to be forgotten."""
    interests, feedback = InterestRepository(db), FeedbackRepository(db)
    subscriptions, digests = SubscriptionRepository(db), DigestRepository(db)
    fields = ScheduleFields(("graph networks", "rl"), "09:00", "Europe/Berlin", "daily", 0, 3)
    for n, person in enumerate(PEOPLE):
        await interests.add(person, "topic", topic_key("graph networks"), topic="graph networks")
        await interests.add(person, "topic", topic_key(f"topic {n}"), topic=f"topic {n}")
        for k, paper in enumerate(paper_ids[n : n + 6]):
            signal = ("like", "dislike", "save")[k % 3]
            await feedback.set_signal(
                person, paper, signal, guild_id=GUILD if k % 2 else None, at=f"2026-01-0{k + 1}"
            )
        await feedback.set_signal(person, paper_ids[n], "dislike", guild_id=GUILD)  # a like turned round
        await feedback.mark_shown(person, paper_ids[10 + n : 13 + n])
        sub = await subscriptions.upsert_user(person, fields, guild_id=GUILD)
        run = await digests.claim_run(sub.id, "2026-11-30")
        assert run is not None
        items = await digests.plan_items(run.id, [(p, f"because {p}") for p in paper_ids[20 + n : 23 + n]])
        for item in items[:2]:
            assert await digests.reserve_item(run.id, item.paper_id, Recipient(user_id=person))
            await digests.record_message(
                run.id, item.paper_id, message_id=10_000 * (n + 1) + item.paper_id, channel_id=5000 + n,
                guild_id=None, recipient_id=person, kind="digest",
            )  # fmt: skip
        await SearchRepository(db).save(kind="search", query=f"query {n}", page_size=5, user_id=person)
        follows = FollowRepository(db)
        at = f"2026-02-0{n + 1}T09:00:00+00:00"
        await follows.add(person, FollowRow("Ada Lovelace", "ada lovelace", None, None, at), limit=50)
        group = FollowRow("Wei Wang", "wei wang", paper_ids[n], "with Alan Turing · ICML 2024", at)
        await follows.add(person, group, limit=50)
        await MuteRepository(db).add(person, "Reinforcement learning", "reinforc learn")
        kept = LibraryText(f"a paper of mine {n}", f"A paper of mine {n}", "Its abstract." if n else None)
        await LibraryTextRepository(db).add_many(person, [kept])
    await UserRepository(db).set_learning_paused(PEOPLE[1], True)
    feed = await subscriptions.upsert_channel(CHANNEL, GUILD, fields, created_by=PEOPLE[0])
    await subscriptions.change_mutes(feed.id, lambda mutes: (*mutes, "diffusion"))
    clubs = ClubRepository(db)  # a reading group with a week in its poll, a proposal and a vote
    await clubs.save(ClubRow(CHANNEL, GUILD, 2, "18:00", "Europe/Berlin", "graph networks", PEOPLE[0], True))
    assert await clubs.open_week(CHANNEL, "2026-12-02T17:00:00+00:00", list(paper_ids[:3]))
    await clubs.propose(CHANNEL, paper_ids[5], PEOPLE[1], limit=10)
    week = "2026-12-02T17:00:00+00:00"
    assert await clubs.advance(CHANNEL, week, frm="poll_sending", to="polling", poll_message_id=7, buttons=1)
    assert await clubs.vote(CHANNEL, week, PEOPLE[0], 1) == "voted"
    run = await digests.claim_run(feed.id, "2026-11-30")
    assert run is not None
    await digests.finish_run(run.id, "empty")
    await PostedMessageRepository(db).record(123_456, CHANNEL, GUILD, paper_ids[0])
    await StateRepository(db).set("arxiv:last_fetch", "2026-11-30T06:00:00+00:00")
    # a live source's fetch state, and another key of the first paper (its journal version's DOI)
    async with db.transaction() as conn:
        await SourceFetchRepository(db).finish(
            conn,
            "biorxiv:neuroscience",
            until="2026-11-30",
            at="2026-11-30T06:00:09+00:00",
            records=31,
            added=30,
        )
        await conn.execute(
            "INSERT INTO paper_aliases (kind, value, paper_id) VALUES ('doi', '10.1038/journal.1', ?)",
            (paper_ids[0],),
        )
    await interests.add(FORGOTTEN, "topic", topic_key("graph networks"), topic="graph networks")
    await forget_user(db, FORGOTTEN, at="2026-11-30T10:00:00.000001+00:00")


async def table_rows(db: Database, table: str) -> list[tuple[Any, ...]]:
    """Every row of `table` (the columns both stores share), in a stable order."""
    rows = await db.fetchall(f"SELECT * FROM {table}")
    if not rows:
        return []
    keep = [key for key in rows[0].keys() if key not in OWN_COLUMNS]  # noqa: SIM118 - a Row, not a dict
    return sorted((tuple(row[key] for key in keep) for row in rows), key=repr)
