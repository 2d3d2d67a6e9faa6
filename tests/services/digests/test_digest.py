"""Digests (subscriptions, planning, delivery, recovery) with a real migrated database, a scripted recommender and a recording sender."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from builders import Clock
from digest_fakes import FakeRecommender, FakeSender, add_papers, make_service

from bot.errors import InvalidScheduleError
from bot.services.digests import Digests
from bot.services.digests.delivery import (
    NONCE_TRUST,
    ChannelGoneError,
    DeliveryOutcome,
    DMsClosedError,
    SendOutcomeUnknownError,
    SentMessage,
    SentThenDeletedError,
    message_nonce,
)
from bot.services.people.privacy import PrivacyService
from storage.db import Database
from storage.migrate import available_migrations
from storage.models import Paper
from storage.repositories.digests import Recipient
from storage.store import open_database

USER = 111
OTHER = 222

# 09:00 Europe/Berlin on Monday 30 Nov 2026 is 08:00 UTC.
MONDAY_0800Z = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


@pytest.fixture
async def papers(db: Database) -> list[int]:
    ids = list(range(1, 31))
    await add_papers(db, ids)
    return ids


@pytest.fixture
def clock() -> Clock:
    return Clock(MONDAY_0800Z - timedelta(hours=2))


def scores(ids: list[int]) -> dict[int, float]:
    return {pid: 100.0 - pid for pid in ids}


async def test_subscribe_stores_a_validated_schedule(db: Database, clock: Clock, papers: list[int]) -> None:
    """Subscribing stores canonical values and the next delivery is in the user's zone."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(
        USER, topics="kv cache, quantization", time="9:00", timezone="europe/berlin", count=3
    )
    assert (sub.time_local, sub.timezone, sub.frequency, sub.count) == ("09:00", "Europe/Berlin", "daily", 3)
    assert sub.topics == ("kv cache", "quantization")
    assert service.subscriptions.next_delivery(sub).due_utc == MONDAY_0800Z


@pytest.mark.parametrize(
    "options",
    [{"time": "25:00"}, {"timezone": "Berlin"}, {"frequency": "hourly"}, {"count": 11}, {"count": 0}],
)
async def test_invalid_input_stores_nothing(db: Database, clock: Clock, options: dict[str, object]) -> None:
    """A bad time, timezone, frequency or count raises a user-facing error and writes nothing."""
    service = make_service(db, clock, {})
    with pytest.raises(InvalidScheduleError):
        await service.subscriptions.subscribe(USER, **options)  # type: ignore[arg-type]
    assert await db.fetchval("SELECT COUNT(*) FROM subscriptions") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0


async def test_resubscribing_keeps_unset_options_and_resumes(db: Database, clock: Clock) -> None:
    """Running subscribe again changes only the options given, and un-pauses a paused digest."""
    service = make_service(db, clock, {})
    first = await service.subscriptions.subscribe(
        USER, topics="graphs", time="07:30", timezone="Asia/Tokyo", count=4
    )
    await service.subscriptions.repository.pause(first.id, "DMs closed")
    again = await service.subscriptions.subscribe(USER, count=6)
    assert again.id == first.id
    assert (again.topics, again.time_local, again.timezone, again.count) == (
        ("graphs",),
        "07:30",
        "Asia/Tokyo",
        6,
    )
    assert again.active
    assert again.paused_reason is None


async def test_unsubscribe(db: Database, clock: Clock) -> None:
    """Unsubscribing removes the subscription; a second time reports there was none."""
    service = make_service(db, clock, {})
    await service.subscriptions.subscribe(USER)
    removed = await service.subscriptions.unsubscribe(USER)
    assert removed is not None
    assert await service.subscriptions.unsubscribe(USER) is None
    assert await service.subscriptions.for_user(USER) is None


async def test_scheduled_digest_sends_header_then_one_message_per_paper(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A due period sends a header and `count` papers with reasons, each recorded for reactions."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(
        USER, topics="kv cache", time="09:00", timezone="Europe/Berlin", count=3
    )
    clock.set(MONDAY_0800Z)
    sender = FakeSender()
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert outcome.status == "sent"
    assert outcome.period_key == "2026-11-30"
    assert len(sender.headers) == 1
    assert "Monday 30 November (Europe/Berlin)" in sender.headers[0]
    assert "3 new papers" in sender.headers[0]
    assert sender.paper_ids == [1, 2, 3]
    assert all(reason.startswith("matched:") for _, reason in sender.papers)
    rows = await db.fetchall("SELECT paper_id, recipient_id, kind FROM posted_messages ORDER BY paper_id")
    assert [tuple(r) for r in rows] == [(1, USER, "digest"), (2, USER, "digest"), (3, USER, "digest")]
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "sent"
    assert await service.repository.sent_paper_ids(Recipient(user_id=USER)) == {1, 2, 3}
    recommender = service.planner.recommender
    assert isinstance(recommender, FakeRecommender)
    assert recommender.calls[-1]["topics"] == ("kv cache",)
    assert recommender.calls[-1]["mark_shown"] is False


async def test_a_period_is_sent_once_even_when_fired_twice(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A double fire (or a second process) finds the period claimed and sends nothing."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=2)
    clock.set(MONDAY_0800Z)
    first, second = FakeSender(), FakeSender()
    results = await asyncio.gather(
        service.delivery.deliver_period(sub.id, first), service.delivery.deliver_period(sub.id, second)
    )
    assert sorted(r.status for r in results) == ["already", "sent"]
    assert len(first.papers) + len(second.papers) == 2
    assert len(first.headers) + len(second.headers) == 1
    clock.advance(minutes=30)
    third = FakeSender()
    assert (await service.delivery.deliver_period(sub.id, third)).status == "already"
    assert third.headers == third.papers == third.nothing == []


async def test_next_digest_never_repeats_a_paper(db: Database, clock: Clock, papers: list[int]) -> None:
    """The next day's digest leaves out everything sent before (the recommender is told to exclude it)."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=5)
    seen: list[int] = []
    for day in range(4):
        clock.set(MONDAY_0800Z + timedelta(days=day))
        sender = FakeSender()
        outcome = await service.delivery.deliver_period(sub.id, sender)
        assert outcome.status == "sent"
        assert not set(sender.paper_ids) & set(seen)
        seen += sender.paper_ids
    assert len(seen) == len(set(seen)) == 20


async def test_recommender_repeats_are_filtered_anyway(db: Database, clock: Clock, papers: list[int]) -> None:
    """Even if a recommender ignored `exclude`, an already-sent paper is not sent again."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    await service.delivery.deliver_period(sub.id, FakeSender())

    class Stubborn(FakeRecommender):
        async def recommend(self, user_id, *, count, topics=(), exclude=(), now=None, mark_shown=True):  # type: ignore[no-untyped-def]
            return await super().recommend(user_id, count=count, topics=topics, exclude=(), now=now)

    service.planner.recommender = Stubborn(scores(papers))
    clock.advance(days=1)
    sender = FakeSender()
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert sender.paper_ids == []
    assert outcome.status == "empty"


async def test_nothing_new_is_said_in_one_short_message(db: Database, clock: Clock) -> None:
    """With nothing above the bar, one message says so (never silence) and the run is 'empty'."""
    service = make_service(db, clock, {})
    sub = await service.subscriptions.subscribe(
        USER, topics="obscure topic", time="09:00", timezone="Europe/Berlin"
    )
    clock.set(MONDAY_0800Z)
    sender = FakeSender()
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert outcome.status == "empty"
    assert sender.headers == []
    assert len(sender.nothing) == 1
    text = sender.nothing[0]
    assert "Nothing new" in text
    assert "obscure topic" in text
    assert "Tuesday 1 December 2026 at 09:00 CET" in text
    assert len(text) < 400
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "empty"


async def test_low_scores_count_as_nothing(db: Database, clock: Clock, papers: list[int]) -> None:
    """Picks at or below the bar are not sent."""
    service = make_service(db, clock, {1: 0.0, 2: 0.5}, min_score=0.5)
    sub = await service.subscriptions.subscribe(USER, count=5)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = FakeSender()
    assert (await service.delivery.deliver_period(sub.id, sender)).status == "empty"


async def test_crash_mid_digest_resumes_with_unsent_papers_only(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A failure after two papers leaves the run open; resuming sends the other three, no header again."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=5)
    clock.set(MONDAY_0800Z)
    sender = FakeSender(fail_at={2: RuntimeError("network down")})
    with pytest.raises(RuntimeError):
        await service.delivery.deliver_period(sub.id, sender)
    assert sender.paper_ids == [1, 2]
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "claimed"
    # The failed paper was released: it is still to be sent.
    assert [item.paper_id for item in await service.repository.unsent_items(run.id)] == [3, 4, 5]

    clock.advance(minutes=10)
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (open_run,) = await service.recovery.runs_to_resume()
    resumed = FakeSender()
    outcome = await service.delivery.resume(open_run, resumed)
    assert outcome.status == "sent"
    assert resumed.headers == []
    assert resumed.paper_ids == [3, 4, 5]
    # A fire of the same period later (e.g. after a restart) sends nothing more.
    assert (await service.delivery.deliver_period(sub.id, FakeSender())).status == "already"
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 5


async def crash_while_sending_the_second_paper(service: Digests, sub_id: int) -> FakeSender:
    """The process dies while paper 2 is going out: it stays reserved without a message id."""
    sender = FakeSender(fail_at={1: asyncio.CancelledError()})
    with pytest.raises(asyncio.CancelledError):
        await service.delivery.deliver_period(sub_id, sender)
    (run,) = await service.repository.open_runs()
    items = await service.repository.items(run.id)
    assert [(i.paper_id, i.delivered, i.in_doubt) for i in items] == [
        (1, True, False),
        (2, False, True),
        (3, False, False),
    ]
    return sender


async def test_a_paper_in_doubt_is_sent_again_with_its_nonce_while_discord_dedupes_it(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Resumed within NONCE_TRUST, the paper the crash interrupted is sent again with the same nonce
    (Discord returns the message if it had gone out), the header not again."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    first = await crash_while_sending_the_second_paper(service, sub.id)
    clock.advance(seconds=NONCE_TRUST.total_seconds() - 10)
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (run,) = await service.recovery.runs_to_resume()
    resumed = FakeSender(posted=first.posted)
    outcome = await service.delivery.resume(run, resumed)
    assert (outcome.status, outcome.in_doubt) == ("sent", 0)
    assert resumed.paper_ids == [2, 3]
    assert resumed.headers == []
    assert resumed.nonces[0] == first.nonces[-1], "paper 2 went out again with its first nonce"
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 3


async def test_a_paper_in_doubt_is_not_sent_again_once_its_nonce_may_be_forgotten(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Past NONCE_TRUST, Discord may create a second message: resume skips the paper (never twice)."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    await crash_while_sending_the_second_paper(service, sub.id)
    clock.advance(seconds=NONCE_TRUST.total_seconds() + 60)
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (run,) = await service.recovery.runs_to_resume()
    resumed = FakeSender()
    outcome = await service.delivery.resume(run, resumed)
    assert resumed.paper_ids == [3]
    assert resumed.headers == []
    assert outcome.in_doubt == 1


async def test_a_paper_posted_without_an_answer_is_found_and_recorded_once_its_nonce_may_be_forgotten(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Every attempt at paper 2 went out without an answer; resumed past NONCE_TRUST, the run finds it
    among the channel's latest messages and records it (a reaction on it counts), never posting it again."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    first = FakeSender(lose_answer_at={1, 2, 3, 4})  # paper 2 and its three repeats
    with pytest.raises(SendOutcomeUnknownError):
        await service.delivery.deliver_period(sub.id, first)
    assert first.paper_ids == [1, 2]
    clock.advance(seconds=NONCE_TRUST.total_seconds() + 60)
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (run,) = await service.recovery.runs_to_resume()
    resumed = FakeSender(history=first.history)
    outcome = await service.delivery.resume(run, resumed)
    assert (outcome.status, outcome.in_doubt) == ("sent", 0)
    assert resumed.paper_ids == [3]
    rows = await db.fetchall("SELECT paper_id, message_id FROM posted_messages ORDER BY paper_id")
    assert [(r[0], r[1]) for r in rows][1] == (2, first.history[2].message_id)
    assert [r[0] for r in rows] == [1, 2, 3]


async def test_a_paper_whose_reactions_fail_stays_sent_and_recorded(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Adding the 👍 👎 🔖 after a paper's message fails (the connection dropped): the paper stays out
    and recorded, the rest of the digest goes on, and nothing is sent twice."""

    class ReactionsFail(FakeSender):
        async def finish_paper(self, message: SentMessage) -> None:
            await super().finish_paper(message)
            raise ConnectionResetError("connection reset by peer")

    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = ReactionsFail()
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert (outcome.status, outcome.sent) == ("sent", 3)
    assert len(sender.finished) == 3
    rows = await db.fetchall("SELECT message_id FROM posted_messages ORDER BY paper_id")
    assert [r[0] for r in rows] == sender.finished, "each message recorded before its reactions"
    assert await service.delivery.deliver_period(sub.id, FakeSender()) == DeliveryOutcome(
        "already", period_key="2026-11-30"
    )


async def test_a_lost_answer_is_sent_again_with_the_same_nonce_and_each_paper_goes_out_once(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Paper 2 is posted but its answer lost (a timeout): sent again at once with the same nonce, Discord
    returns that message: one message per paper, each recorded once, one header."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = FakeSender(lose_answer_at={1})
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert (outcome.status, outcome.sent) == ("sent", 3)
    assert sender.paper_ids == [1, 2, 3]
    assert len(sender.headers) == 1
    assert sender.nonces[2] == sender.nonces[3], "the repeat carried the same nonce"
    assert len(set(sender.nonces)) == 4  # header + three papers
    rows = await db.fetchall("SELECT paper_id, message_id FROM posted_messages ORDER BY paper_id")
    assert [r[0] for r in rows] == [1, 2, 3]
    assert rows[1][1] == sender.posted[sender.nonces[2]].message_id


async def test_a_header_whose_answer_was_lost_goes_out_once(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=2)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = FakeSender(lose_header_answers=1)
    assert (await service.delivery.deliver_period(sub.id, sender)).status == "sent"
    assert len(sender.headers) == 1
    assert sender.paper_ids == [1, 2]
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.header_message_id == sender.posted[sender.nonces[0]].message_id


async def test_a_retry_after_the_first_paper_failed_does_not_send_the_header_twice(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """The header went out, the first paper failed (released): the retry sends the papers, no header."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=2)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    first = FakeSender(fail_at={0: RuntimeError("Discord 400")})
    with pytest.raises(RuntimeError):
        await service.delivery.deliver_period(sub.id, first)
    assert len(first.headers) == 1
    clock.advance(minutes=10)  # the scheduler's retry, long after any nonce is remembered
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (run,) = await service.recovery.runs_to_resume()
    retry = FakeSender()
    assert (await service.delivery.resume(run, retry)).status == "sent"
    assert retry.headers == []
    assert retry.paper_ids == [1, 2]


async def test_a_send_that_never_answers_stays_reserved_and_the_resume_sends_it_once(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Every repeat loses its answer too: the run stops with the paper reserved (not released, it may
    be out), and the resume a minute later sends it with the same nonce: still one message."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=2)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    attempts = len(service.delivery.resend_delays) + 1
    sender = FakeSender(lose_answer_at=set(range(attempts)))
    with pytest.raises(SendOutcomeUnknownError):
        await service.delivery.deliver_period(sub.id, sender)
    assert sender.paper_ids == [1]
    assert sender.nonces[1:] == [sender.nonces[1]] * attempts
    (run,) = await service.repository.open_runs()
    assert [(i.paper_id, i.in_doubt) for i in await service.repository.items(run.id)] == [
        (1, True),
        (2, False),
    ]
    assert await service.repository.sent_paper_ids(Recipient(user_id=USER)) == {1}  # still reserved
    clock.advance(minutes=1)
    resumed = FakeSender(posted=sender.posted)
    assert (await service.delivery.resume(run, resumed)).status == "sent"
    assert sender.paper_ids + resumed.paper_ids == [1, 2]
    assert resumed.headers == []
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 2


async def test_a_paper_deleted_before_its_repeat_is_not_sent_again(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Discord answers a repeated nonce of a deleted message with Unknown Message: it went out, so the
    digest moves on to the next paper."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    await crash_while_sending_the_second_paper(service, sub.id)
    clock.advance(seconds=31)  # the crashed process's lease runs out
    service = make_service(db, clock, scores(papers))  # the next start: another process
    (run,) = await service.recovery.runs_to_resume()
    resumed = FakeSender(fail_at={0: SentThenDeletedError("Unknown Message")})
    outcome = await service.delivery.resume(run, resumed)
    assert (outcome.status, outcome.sent) == ("sent", 1)
    assert resumed.paper_ids == [3]


async def test_a_run_interrupted_before_the_upgrade_gets_no_second_header(tmp_path: Path) -> None:
    """A run left claimed by the previous version (header and paper 1 out) resumes after the migration
    with the other papers only, even right away."""
    path = tmp_path / "old.db"
    claimed = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).isoformat()
    with sqlite3.connect(path) as conn:
        conn.executescript(available_migrations()[0].sql)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO users (id, created_at) VALUES (?, ?)", (USER, claimed))
        conn.executemany(
            "INSERT INTO papers (id, title, abstract, added_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            [(pid, f"Paper {pid}", "An abstract.", claimed, claimed) for pid in (1, 2)],
        )
        conn.execute(
            "INSERT INTO subscriptions (id, kind, user_id, count, created_at, updated_at) "
            "VALUES (1, 'user', ?, 2, ?, ?)",
            (USER, claimed, claimed),
        )
        conn.execute(
            "INSERT INTO digest_runs (id, subscription_id, period_key, claimed_at) VALUES (1, 1, '2026-11-30', ?)",
            (claimed,),
        )
        conn.executemany(
            "INSERT INTO digest_items (run_id, paper_id, position, message_id, sent_at) VALUES (1, ?, ?, ?, ?)",
            [(1, 0, 9001, claimed), (2, 1, None, None)],
        )
        conn.execute("INSERT INTO digest_sent (user_id, paper_id, sent_at) VALUES (?, 1, ?)", (USER, claimed))
    conn.close()
    async with await open_database(path) as db:
        service = make_service(db, Clock(datetime(2026, 11, 30, 9, 0, 30, tzinfo=UTC)), {1: 2.0, 2: 1.0})
        (run,) = await service.recovery.runs_to_resume()
        resumed = FakeSender()
        assert (await service.delivery.resume(run, resumed)).status == "sent"
        assert resumed.headers == []
        assert resumed.paper_ids == [2]


def test_message_nonces_fit_discord_and_name_one_message_each() -> None:
    alice, feed = Recipient(user_id=USER), Recipient(channel_id=555)
    nonces = {
        message_nonce(who, sub, period, part)
        for who in (alice, feed)
        for sub in (1, 2, None)
        for period in ("2026-11-30", "2026-12-01", "manual:2026-11-30T09:00:00.000001+00:00")
        for part in ("header", "paper:1", "paper:2")
    }
    assert len(nonces) == 2 * 3 * 3 * 3
    assert all(len(nonce) <= 25 for nonce in nonces)
    assert message_nonce(alice, 1, "2026-11-30", "paper:1") == message_nonce(
        alice, 1, "2026-11-30", "paper:1"
    )


async def test_interrupted_runs_beyond_grace_are_closed_not_resumed(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A run interrupted long ago is marked failed instead of arriving a day late."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    with pytest.raises(RuntimeError):
        await service.delivery.deliver_period(sub.id, FakeSender(fail_at={0: RuntimeError("boom")}))
    clock.advance(hours=7)
    service = make_service(db, clock, scores(papers))  # the next start: another process
    assert await service.recovery.runs_to_resume() == []
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "failed"


async def test_closed_dms_pause_and_leave_a_notice(db: Database, clock: Clock, papers: list[int]) -> None:
    """Discord 50007 pauses the subscription, records why, and leaves a notice for the next command."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = FakeSender(fail_header=DMsClosedError("Cannot send messages to this user", code=50007))
    outcome = await service.delivery.deliver_period(sub.id, sender)
    assert outcome.status == "unreachable"
    paused = await service.subscriptions.get(sub.id)
    assert paused is not None
    assert not paused.active
    assert paused.paused_reason is not None
    assert "DMs closed" in paused.paused_reason
    notice = await db.fetchval("SELECT pending_notice FROM users WHERE id = ?", (USER,))
    assert "paused" in notice
    assert "/paper subscribe" in notice
    assert "Direct Messages" in notice
    assert await service.repository.sent_paper_ids(Recipient(user_id=USER)) == set()
    # Paused subscriptions are not delivered (nor caught up) until the user resubscribes.
    clock.advance(days=1)
    assert (await service.delivery.deliver_period(sub.id, FakeSender())).status == "inactive"
    assert await service.recovery.missed_periods() == []
    await service.subscriptions.subscribe(USER)
    resumed = await service.subscriptions.get(sub.id)
    assert resumed is not None
    assert resumed.active


async def test_dms_closed_mid_digest_keeps_sent_papers_sent(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """If DMs close after one paper, that paper stays sent and the rest are released."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=3)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    sender = FakeSender(fail_at={1: DMsClosedError("closed", code=50007)})
    assert (await service.delivery.deliver_period(sub.id, sender)).status == "unreachable"
    assert await service.repository.sent_paper_ids(Recipient(user_id=USER)) == {1}


async def test_channel_feed_delivers_and_pauses_when_the_channel_is_gone(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A feed posts to its channel (reactions there train the reacting person: recipient NULL)."""
    service = make_service(db, clock, scores(papers))
    with pytest.raises(InvalidScheduleError, match="topics"):
        await service.subscriptions.set_feed(7, 700, created_by=OTHER, time="09:00")
    feed = await service.subscriptions.set_feed(
        7,
        700,
        created_by=OTHER,
        topics="llm efficiency",
        time="09:00",
        timezone="Europe/Berlin",
        frequency="weekdays",
    )
    assert [f.channel_id for f in await service.subscriptions.list_feeds(7)] == [700]
    assert await service.subscriptions.list_feeds(8) == []
    clock.set(MONDAY_0800Z)
    sender = FakeSender(channel_id=700, guild_id=7)
    outcome = await service.delivery.deliver_period(feed.id, sender)
    assert outcome.status == "sent"
    assert "Paper feed" in sender.headers[0]
    rows = await db.fetchall("SELECT channel_id, guild_id, recipient_id, kind FROM posted_messages")
    assert {tuple(r) for r in rows} == {(700, 7, None, "feed")}
    assert await service.repository.sent_paper_ids(Recipient(channel_id=700)) == set(sender.paper_ids)
    recommender = service.planner.recommender
    assert isinstance(recommender, FakeRecommender)
    assert recommender.calls[-1]["user_id"] is None

    clock.advance(days=1)
    gone = FakeSender(fail_header=ChannelGoneError("Unknown Channel", code=10003))
    assert (await service.delivery.deliver_period(feed.id, gone)).status == "unreachable"
    notice = await db.fetchval("SELECT pending_notice FROM users WHERE id = ?", (OTHER,))
    assert "<#700>" in notice
    assert "/paperadmin feed set" in notice
    assert await service.subscriptions.clear_feed(8, 700) is None  # another server cannot clear it
    assert await service.subscriptions.clear_feed(7, 700) is not None
    assert await service.subscriptions.list_feeds(7) == []


async def test_digest_now_is_not_a_scheduled_period_and_never_repeats(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """/paper digest sends now without using up today's period, and the 09:00 digest has other papers."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=3)
    clock.set(MONDAY_0800Z - timedelta(minutes=5))
    manual = FakeSender()
    outcome = await service.delivery.deliver_now(USER, manual)
    assert outcome.status == "sent"
    assert "(on demand)" in manual.headers[0]
    assert await service.repository.run_for(sub.id, "2026-11-30") is None
    clock.set(MONDAY_0800Z)
    scheduled = FakeSender()
    assert (await service.delivery.deliver_period(sub.id, scheduled)).status == "sent"
    assert set(manual.paper_ids).isdisjoint(scheduled.paper_ids)
    again = FakeSender()
    await service.delivery.deliver_now(USER, again)
    assert set(again.paper_ids).isdisjoint(manual.paper_ids + scheduled.paper_ids)


async def test_digest_now_without_a_subscription(db: Database, clock: Clock, papers: list[int]) -> None:
    """A user without a subscription still gets a preview from their profile (default count)."""
    service = make_service(db, clock, scores(papers))
    sender = FakeSender()
    outcome = await service.delivery.deliver_now(OTHER, sender)
    assert outcome.status == "sent"
    assert len(sender.paper_ids) == 5
    second = FakeSender()
    await service.delivery.deliver_now(OTHER, second)
    assert set(second.paper_ids).isdisjoint(sender.paper_ids)
    with pytest.raises(DMsClosedError):
        await service.delivery.deliver_now(
            OTHER, FakeSender(fail_header=DMsClosedError("closed", code=50007))
        )


@pytest.mark.parametrize("subscribed", [False, True], ids=["on-demand", "subscribed"])
async def test_forget_me_while_a_digest_goes_out_stops_it_and_leaves_nothing_of_the_person(
    db: Database, clock: Clock, papers: list[int], subscribed: bool
) -> None:
    """`/paper digest` (with and without a subscription): the person asks to be forgotten after the
    second paper went out; no paper follows, and the store holds nothing about them afterwards (no
    row, no sent records, no posted messages)."""
    service = make_service(db, clock, scores(papers))
    if subscribed:
        await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=5)
    privacy = PrivacyService(db, clock=clock)

    @dataclass
    class ForgottenMidway(FakeSender):
        async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
            message = await super().send_paper(paper, reason, nonce=nonce)
            if len(self.papers) == 2:
                clock.advance(seconds=1)
                await privacy.forget(USER)
            return message

    sender = ForgottenMidway()
    await service.delivery.deliver_now(USER, sender)
    assert len(sender.papers) == 2
    for table, column in (("users", "id"), ("digest_sent", "user_id"), ("posted_messages", "recipient_id")):
        assert await db.fetchval(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (USER,)) == 0, table


async def test_missed_period_within_grace_is_caught_up_once(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Down at 09:00, back at 11:00: the 09:00 digest is due once; after delivery it is not due again."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin", count=2)
    clock.set(MONDAY_0800Z + timedelta(hours=2))
    missed = await service.recovery.missed_periods()
    assert [(s.id, p.key) for s, p in missed] == [(sub.id, "2026-11-30")]
    sender = FakeSender()
    await service.delivery.deliver_period(sub.id, sender, period=missed[0][1])
    assert len(sender.paper_ids) == 2
    assert await service.recovery.missed_periods() == []


async def test_missed_period_beyond_grace_is_skipped_and_logged(
    db: Database, clock: Clock, papers: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    """Back after the grace window: nothing is sent late; the skip is recorded and logged once, in one
    warning for every subscription that missed one (each named at INFO)."""
    caplog.set_level(logging.INFO, logger="bot.services.digests.recovery")
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin")
    clock.set(MONDAY_0800Z + timedelta(hours=7))
    assert await service.recovery.missed_periods() == []
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "skipped"
    assert "missed its 2026-11-30 digest" in caplog.text
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"1 subscription(s) missed a digest that fell due more than 6.0 h ago (the grace period) while no"
        f" process was sending: skipped, not sent late (subscriptions {sub.id})"
    ]
    caplog.clear()
    assert await service.recovery.missed_periods() == []
    assert "missed" not in caplog.text


async def test_subscribing_after_todays_time_does_not_count_as_missed(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """Subscribing at 10:00 for 09:00 starts tomorrow; a restart does not send today's."""
    service = make_service(db, clock, scores(papers))
    clock.set(MONDAY_0800Z + timedelta(hours=1))
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="Europe/Berlin")
    assert service.subscriptions.next_delivery(sub).key == "2026-12-01"
    clock.advance(minutes=30)
    assert await service.recovery.missed_periods() == []


async def test_build_writes_nothing(db: Database, clock: Clock, papers: list[int]) -> None:
    """Building a digest (the CLI dry run, the bench) records nothing."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=4)
    plan = await service.planner.build(sub)
    assert [p.paper.id for p in plan.papers] == [1, 2, 3, 4]
    for table in ("digest_runs", "digest_items", "digest_sent", "posted_messages"):
        assert await db.fetchval(f"SELECT COUNT(*) FROM {table}") == 0


async def test_unsubscribing_mid_digest_stops_the_rest(db: Database, clock: Clock, papers: list[int]) -> None:
    """If the user unsubscribes (or is forgotten) while their digest goes out, nothing more is sent or
    stored about them."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(USER, count=4)
    clock.set(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))

    class ForgetsAfterOne(FakeSender):
        async def send_paper(self, paper, reason, *, nonce):  # type: ignore[no-untyped-def]
            sent = await super().send_paper(paper, reason, nonce=nonce)
            if len(self.papers) == 1:
                await db.execute("DELETE FROM users WHERE id = ?", (USER,))  # what forget-me does
            return sent

    sender = ForgetsAfterOne()
    await service.delivery.deliver_period(sub.id, sender)
    assert sender.paper_ids == [1]
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM digest_sent") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM subscriptions") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 0


async def test_a_header_names_a_few_interests_and_counts_the_rest(
    db: Database, clock: Clock, papers: list[int]
) -> None:
    """A person's digest names the interests its papers came from; with many, the first three and how
    many more, so the header stays one short line within Discord's 2,000 characters."""
    service = make_service(db, clock, scores(papers))
    sub = await service.subscriptions.subscribe(
        USER, time="09:00", timezone="Europe/Berlin", topics="kv cache"
    )
    two = service.planner.texts(sub, 5, manual=False, interests=["kv cache", "offline RL"]).header
    assert "5 new papers on *kv cache, offline RL*" in two
    names = [f"“{'A long paper title ' * 3}{n}”" for n in range(25)]
    many = service.planner.texts(sub, 5, manual=False, interests=names).header
    assert f"on *{names[0]}, {names[1]}, {names[2]}, 22 more of your interests*" in many
    assert len(many) < 400
    assert "on *kv cache*" in service.planner.texts(sub, 5, manual=False).header  # no interests: its topics
