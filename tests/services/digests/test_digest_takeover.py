"""Two processes on one store, one digest run (bot.services.digests.leases): when the process sending a
run dies or stalls past its lease, the process running the digests takes the run over and sends the
rest — the paper that was going out again under its nonce, so Discord posts it once — and a stalled
process that wakes up sends nothing more. No paper twice, none missing, on both engines."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from builders import Clock, wait_idle
from digest_fakes import FakeSender, add_papers, make_service

from bot.services.digests import Digests
from bot.services.digests.delivery import DigestInterruptedError, SentMessage
from bot.services.digests.jobs import DigestScheduler
from storage.db import Database
from storage.models import Paper
from storage.store import StoreLocation, open_database

USER = 111
SCORES = {pid: 100.0 - pid for pid in range(1, 11)}


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))


@pytest.fixture
async def two(db: Database, store: StoreLocation, clock: Clock) -> AsyncIterator[tuple[Digests, Digests]]:
    """The digests of two processes, each with its own connection to the store."""
    await add_papers(db, range(1, 11))
    async with await open_database(store) as other:
        yield make_service(db, clock, SCORES), make_service(other, clock, SCORES)


class StallsAtPaper(FakeSender):
    """Stops before posting its `at`-th paper (0-based) until `go` is set: a process frozen mid-send."""

    def __init__(self, at: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.at = at
        self.stalled = asyncio.Event()
        self.go = asyncio.Event()

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        if self.attempts == self.at:
            self.stalled.set()
            await self.go.wait()
        return await super().send_paper(paper, reason, nonce=nonce)


async def test_a_process_stalled_past_its_lease_loses_the_run_and_the_other_sends_the_rest(
    two: tuple[Digests, Digests], clock: Clock, db: Database
) -> None:
    first, second = two
    sub = await first.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=4)
    discord: dict[str, SentMessage] = {}  # what Discord remembers of nonces, whoever sends
    frozen = StallsAtPaper(2, posted=discord)
    sending = asyncio.create_task(first.delivery.deliver_period(sub.id, frozen))
    await frozen.stalled.wait()  # papers 1 and 2 are out, paper 3 reserved and going out

    clock.advance(seconds=31)  # the first process's lease ran out
    (run,) = await second.recovery.runs_to_resume()
    rest = FakeSender(posted=discord)
    outcome = await second.delivery.resume(run, rest)
    assert (outcome.status, rest.paper_ids) == ("sent", [3, 4])  # paper 3 again, under its nonce

    frozen.go.set()  # the first process wakes up: its paper 3 is the message Discord has, then it stops
    with pytest.raises(DigestInterruptedError, match="another process took over"):
        await sending
    assert frozen.attempts == 3  # it sent nothing after the paper it was frozen in
    assert frozen.paper_ids + rest.paper_ids == [1, 2, 3, 4]  # each posted once
    finished = await second.repository.get_run(run.id)
    assert finished is not None
    assert finished.status == "sent"
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 4


async def test_the_process_running_the_digests_resumes_a_dead_processs_run_once_its_lease_ran_out(
    two: tuple[Digests, Digests], clock: Clock, db: Database
) -> None:
    """The dead process (its task cancelled mid-send, as a kill leaves it) stops renewing; the other
    process's digest loop finds the run within a few looks after the lease ran out and finishes it."""
    first, second = two
    sub = await first.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=4)
    discord: dict[str, SentMessage] = {}
    dying = StallsAtPaper(2, posted=discord)
    sending = asyncio.create_task(first.delivery.deliver_period(sub.id, dying))
    await dying.stalled.wait()
    sending.cancel()  # killed while paper 3 was going out
    with contextlib.suppress(asyncio.CancelledError):
        await sending

    rest = FakeSender(posted=discord)
    jobs = DigestScheduler(second, lambda s: rest, clock=second.clock)
    await jobs.start(recover=False)
    following = asyncio.create_task(jobs.follow_store(every=0.05))
    try:
        await asyncio.sleep(0.3)
        assert rest.papers == []  # the lease still holds: the dead process might be alive
        clock.advance(seconds=31)
        for _ in range(100):
            if len(rest.papers) == 2:
                break
            await asyncio.sleep(0.05)
        await wait_idle(jobs)
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await jobs.stop()
    assert dying.paper_ids + rest.paper_ids == [1, 2, 3, 4]
    assert await db.fetchval("SELECT status FROM digest_runs") == "sent"
