"""A person's interests in the store, on each engine: added once, removed as a tombstone, paused,
narrowed, counted by the picks they brought, read in one go, and taken over from the topics before."""

from __future__ import annotations

import pytest

from storage.db import Database
from storage.migrate import available_migrations
from storage.repositories.digests import DigestRepository, Recipient
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.interests import (
    InterestLimitError,
    InterestRepository,
    PickCounts,
    paper_key,
    topic_key,
)
from storage.repositories.users import forget_user

PERSON = 7


async def _papers(db: Database, *ids: int) -> None:
    for paper_id in ids:
        await db.execute(
            "INSERT INTO papers (id, title, added_at, updated_at) VALUES (?, ?, '2026-01-01', '2026-01-01')",
            (paper_id, f"paper {paper_id}"),
        )


async def test_an_interest_is_added_once_removed_as_a_tombstone_and_comes_back_as_it_was(
    db: Database,
) -> None:
    await _papers(db, 1)
    repo = InterestRepository(db)
    rl, added = await repo.add(PERSON, "topic", topic_key("offline RL"), topic="offline RL", at="2026-01-01")
    assert added
    assert rl.kind == "topic"
    assert rl.topic == "offline RL"
    assert rl.active
    again, added = await repo.add(PERSON, "topic", topic_key("offline RL"), topic="offline RL")
    assert (again.id, added) == (rl.id, False)
    paper, _ = await repo.add(PERSON, "paper", paper_key(1), paper_id=1)
    assert [i.id for i in await repo.interests(PERSON)] == [rl.id, paper.id]
    assert await repo.topics(PERSON) == ["offline RL"]

    assert await repo.remove(PERSON, rl.id)
    assert not await repo.remove(PERSON, rl.id)  # removed already
    assert not await repo.remove(PERSON + 1, paper.id)  # not theirs
    assert [i.id for i in await repo.interests(PERSON)] == [paper.id]
    assert [i.removed_at is not None for i in await repo.interests(PERSON, removed=True)] == [True, False]
    back, added = await repo.add(PERSON, "topic", topic_key("offline RL"), topic="offline RL")
    assert (back.id, added, back.active) == (rl.id, True, True)


async def test_pausing_and_narrowing_touch_only_that_interest(db: Database) -> None:
    repo = InterestRepository(db)
    rl, _ = await repo.add(
        PERSON, "topic", topic_key("reinforcement learning"), topic="reinforcement learning"
    )
    kv, _ = await repo.add(PERSON, "topic", topic_key("kv cache"), topic="kv cache")
    assert await repo.set_paused(PERSON, kv.id, True, at="2026-02-01T00:00:00+00:00")
    assert not await repo.set_paused(PERSON, kv.id, True)  # paused already: its moment stays
    rows = {i.id: i for i in await repo.interests(PERSON)}
    assert rows[kv.id].paused_at == "2026-02-01T00:00:00+00:00"
    assert rows[rl.id].paused_at is None
    assert await repo.retopic(PERSON, rl.id, "offline reinforcement learning")
    assert not await repo.retopic(PERSON, rl.id, "kv cache")  # followed already, as another interest
    assert await repo.topics(PERSON) == ["offline reinforcement learning", "kv cache"]
    assert await repo.set_paused(PERSON, kv.id, False)
    assert all(i.active for i in await repo.interests(PERSON))


async def test_a_topic_is_narrowed_by_a_paper_and_outlives_it(db: Database) -> None:
    await _papers(db, 1, 2)
    repo = InterestRepository(db)
    ml, _ = await repo.add(PERSON, "topic", topic_key("machine learning"), topic="machine learning")
    named, _ = await repo.add(PERSON, "paper", paper_key(2), paper_id=2)
    assert ml.narrowed_by is None
    assert await repo.narrow_by(PERSON, ml.id, 1)
    assert not await repo.narrow_by(PERSON + 1, ml.id, 1)  # not theirs
    assert not await repo.narrow_by(PERSON, named.id, 1)  # only a typed topic is narrowed
    rows = {i.id: i for i in await repo.interests(PERSON)}
    assert (rows[ml.id].narrowed_by, rows[named.id].narrowed_by) == (1, None)
    await db.execute("DELETE FROM papers WHERE id = 1")  # the paper goes; the topic stays, as typed
    assert [(i.topic, i.narrowed_by) for i in await repo.interests(PERSON)] == [
        ("machine learning", None),
        (None, None),
    ]


async def test_a_paper_given_to_a_topic_leaves_the_interest_it_started_and_the_topic_it_narrowed(
    db: Database,
) -> None:
    await _papers(db, 1, 2)
    repo = InterestRepository(db)
    ml, _ = await repo.add(PERSON, "topic", topic_key("machine learning"), topic="machine learning")
    cv, _ = await repo.add(PERSON, "topic", topic_key("computer vision"), topic="computer vision")
    started, _ = await repo.add(PERSON, "paper", paper_key(1), paper_id=1)
    other, _ = await repo.add(PERSON, "paper", paper_key(2), paper_id=2)
    assert await repo.narrow_by(PERSON, cv.id, 1)
    assert not await repo.give_paper(PERSON + 1, ml.id, 1)  # not theirs: nothing changes
    assert not await repo.give_paper(PERSON, started.id, 1)  # only a typed topic takes a paper
    assert len(await repo.interests(PERSON)) == 4
    assert await repo.give_paper(PERSON, ml.id, 1)
    rows = {i.id: i for i in await repo.interests(PERSON)}
    assert started.id not in rows  # the interest the paper had started
    assert (rows[ml.id].narrowed_by, rows[cv.id].narrowed_by, rows[other.id].paper_id) == (1, None, 2)


async def test_the_cap_counts_interests_of_every_kind(db: Database) -> None:
    await _papers(db, 1)
    repo = InterestRepository(db)
    await repo.add(PERSON, "topic", topic_key("a"), topic="a", limit=2)
    await repo.add(PERSON, "paper", paper_key(1), paper_id=1, limit=2)
    with pytest.raises(InterestLimitError):
        await repo.add(PERSON, "topic", topic_key("b"), topic="b", limit=2)


async def test_what_each_interest_brought_is_read_with_the_reactions_and_counted(db: Database) -> None:
    await _papers(db, 1, 2, 3, 4)
    repo, feedback = InterestRepository(db), FeedbackRepository(db)
    rl, _ = await repo.add(PERSON, "topic", topic_key("rl"), topic="rl")
    kv, _ = await repo.add(PERSON, "topic", topic_key("kv"), topic="kv")
    await feedback.mark_shown(PERSON, [1, 2], brought={1: rl.id, 2: kv.id})
    assert await DigestRepository(db).reserve_item(None, 3, Recipient(user_id=PERSON), interest_id=kv.id)
    await feedback.set_signal(PERSON, 2, "like", guild_id=None)
    await feedback.set_signal(PERSON, 4, "dislike", guild_id=None)  # from a search: nobody brought it
    inputs = await repo.inputs(PERSON)
    assert [i.id for i in inputs.interests] == [rl.id, kv.id]
    assert [(s.paper_id, s.signal) for s in inputs.signals] == [(2, "like"), (4, "dislike")]
    assert inputs.seen == {1, 2, 3, 4}
    assert dict(inputs.brought) == {1: rl.id, 2: kv.id, 3: kv.id}
    assert not inputs.learning_paused
    assert await repo.pick_counts(PERSON) == {rl.id: PickCounts(1, 0), kv.id: PickCounts(2, 1)}


async def test_a_planned_digest_notes_the_interest_of_each_paper_until_it_is_sent(db: Database) -> None:
    await _papers(db, 1)
    repo, digests = InterestRepository(db), DigestRepository(db)
    rl, _ = await repo.add(PERSON, "topic", topic_key("rl"), topic="rl")
    async with db.transaction() as conn:
        sub_id = await conn.fetchval(
            "INSERT INTO subscriptions (kind, user_id, created_at, updated_at) "
            "VALUES ('user', ?, 'x', 'x') RETURNING id",
            (PERSON,),
        )
    run = await digests.claim_run(int(sub_id), "2026-03-01")
    assert run is not None
    await digests.plan_items(run.id, [(1, "for your interest in rl")], brought={1: rl.id})
    assert await digests.reserve_item(run.id, 1, Recipient(user_id=PERSON))
    assert dict((await repo.inputs(PERSON)).brought) == {1: rl.id}


async def test_forget_me_deletes_every_interest(db: Database) -> None:
    repo = InterestRepository(db)
    interest, _ = await repo.add(PERSON, "topic", topic_key("rl"), topic="rl")
    await repo.remove(PERSON, interest.id)
    counts = await forget_user(db, PERSON)
    assert counts.topics == 1
    assert await db.fetchval("SELECT COUNT(*) FROM interests") == 0


async def test_upgrading_makes_every_topic_an_interest(db: Database) -> None:
    """Migration 0012's take-over, on each engine, of the topics an older version kept (followed, and
    given to a digest)."""
    migration = next(m for m in available_migrations(db.dialect) if m.name == "0012_interests.sql")
    rowid = "" if db.dialect == "sqlite" else ", rowid BIGINT GENERATED ALWAYS AS IDENTITY"
    async with db.transaction() as conn:
        await conn.execute(
            f"CREATE TABLE user_topics (user_id BIGINT NOT NULL, topic TEXT NOT NULL, added_at TEXT NOT NULL{rowid})"
        )
        await conn.execute("INSERT INTO users (id, created_at) VALUES (?, '2026-01-01')", (PERSON,))
        for topic, at in (("kv cache", "2026-01-02"), ("offline RL", "2026-01-01")):
            await conn.execute(
                "INSERT INTO user_topics (user_id, topic, added_at) VALUES (?, ?, ?)", (PERSON, topic, at)
            )
        await conn.execute(
            "INSERT INTO subscriptions (kind, user_id, topics, created_at, updated_at) "
            "VALUES ('user', ?, '[\"KV cache\", \"graphs\"]', '2026-01-03', '2026-01-03')",
            (PERSON,),
        )
    start = migration.sql.index("INSERT INTO interests")
    end = migration.sql.index("ALTER TABLE recommendations_shown")
    for statement in migration.sql[start:end].split(";"):
        code = "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--"))
        if code.strip():
            await db.execute(code)
    rows = await InterestRepository(db).interests(PERSON)
    assert [(r.kind, r.topic, r.key, r.origin) for r in rows] == [
        ("topic", "offline RL", "topic:offline RL", "interests"),
        ("topic", "kv cache", "topic:kv cache", "interests"),
        ("topic", "graphs", "topic:graphs", "subscribe"),  # the digest's "KV cache" was followed already
    ]
