"""Digest history past its retention: old finished runs, their planned papers and the bot's paper
messages go; what was sent to whom stays, so a paper still never goes out twice; the open runs the
process running the digests looks for every few seconds are found through an index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from builders import Clock
from digest_fakes import FakeSender, add_papers, make_service

from bot.services.digests.retention import DigestHistory
from storage.db import Database
from storage.repositories.digests import DigestRepository
from storage.repositories.messages import PostedMessageRepository

USER = 111
DAY_ONE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


async def test_history_past_its_retention_goes_and_no_paper_is_sent_twice(db: Database) -> None:
    """Kept 30 days: a digest from 40 days ago loses its run, planned papers and messages (a reaction on
    those messages names no paper any more); yesterday's is untouched, and the next digest still leaves
    out every paper either sent."""
    await add_papers(db, list(range(1, 21)))
    clock = Clock(DAY_ONE)
    service = make_service(db, clock, {pid: 100.0 - pid for pid in range(1, 21)}, history_days=30)
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=3)
    old = FakeSender()
    assert (await service.delivery.deliver_period(sub.id, old)).status == "sent"
    clock.advance(days=39)
    recent = FakeSender()
    assert (await service.delivery.deliver_period(sub.id, recent)).status == "sent"
    clock.advance(days=1)
    messages = PostedMessageRepository(db)

    pruned = await service.history.prune()
    assert (pruned.runs, pruned.items, pruned.messages) == (1, 3, 3)
    assert [run.period_key for run in await service.repository.runs(sub.id)] == ["2026-02-13"]
    assert [await messages.paper_for(m) for m in _paper_messages(old)] == [None, None, None]
    assert [await messages.paper_for(m) for m in _paper_messages(recent)] == recent.paper_ids
    assert await db.fetchval("SELECT COUNT(*) FROM digest_sent") == 6

    clock.advance(days=1)
    later = FakeSender()
    await service.delivery.deliver_period(sub.id, later)
    assert len(later.paper_ids) == 3
    assert not set(later.paper_ids) & set(old.paper_ids + recent.paper_ids), "a paper was sent twice"
    assert await service.history.prune() == type(pruned)()  # nothing more to delete


def _paper_messages(sender: FakeSender) -> list[int]:
    return [sender.history[paper_id].message_id for paper_id in sender.paper_ids]


async def test_a_run_still_in_progress_is_kept_however_old(db: Database) -> None:
    await add_papers(db, [1, 2])
    clock = Clock(DAY_ONE)
    service = make_service(db, clock, {1: 1.0, 2: 0.5}, history_days=14)
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=2)
    run = await service.repository.claim_run(sub.id, "2026-01-05", at=clock().isoformat())
    assert run is not None
    clock.advance(days=100)
    assert (await service.history.prune()).runs == 0
    assert await service.repository.get_run(run.id) is not None


def test_history_is_kept_longer_than_a_weekly_period_and_its_grace() -> None:
    with pytest.raises(ValueError, match="at least 14 days"):
        DigestHistory(
            DigestRepository(None),  # type: ignore[arg-type]
            PostedMessageRepository(None),  # type: ignore[arg-type]
            clock=lambda: DAY_ONE,
            keep=timedelta(days=13),
        )


async def test_the_open_runs_are_read_through_an_index(db: Database) -> None:
    """The process running the digests asks for the runs in progress every few seconds: the store
    answers from an index holding only those, not by reading every run ever sent."""
    sql = "SELECT id FROM digest_runs WHERE status = 'claimed' ORDER BY id"
    async with db.transaction() as conn:
        if conn.dialect == "postgresql":
            await conn.execute("SET LOCAL enable_seqscan = off")  # as on a table of millions of runs
        plan = " ".join(
            str(row[-1])
            for row in await conn.fetchall(
                f"EXPLAIN QUERY PLAN {sql}" if conn.dialect == "sqlite" else f"EXPLAIN {sql}"
            )
        )
    assert "digest_runs_claimed" in plan, plan
