"""/paper digest in a process that does not (or no longer) run the scheduled digests, and at shutdown."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from builders import Clock
from digest_fakes import FakeSender, add_papers, make_service

from bot.services.digests import Digests
from bot.services.digests.delivery import DigestInterruptedError, SentMessage
from storage.db import Database
from storage.models import Paper

USER = 111
OTHER = 222
MONDAY_0800Z = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


@pytest.fixture
async def service(db: Database) -> Digests:
    await add_papers(db, list(range(1, 21)))
    clock = Clock(MONDAY_0800Z)
    return make_service(db, clock, {pid: 100.0 - pid for pid in range(1, 21)})


class ShutdownAfterFirstPaper(FakeSender):
    """Sends like Discord; the process starts shutting down as the first paper goes out."""

    shutting_down: bool = False

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        sent = await super().send_paper(paper, reason, nonce=nonce)
        self.shutting_down = True
        return sent

    def stopping(self) -> bool:
        return self.shutting_down


async def test_a_process_that_stopped_running_the_digests_still_sends_an_on_demand_one(
    service: Digests,
) -> None:
    """Stepping down stops the scheduled digests between papers; someone's /paper digest goes on."""
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=3)
    service.delivery.request_stop()  # another process leads now
    on_demand = FakeSender()
    assert (await service.delivery.deliver_now(USER, on_demand)).status == "sent"
    assert len(on_demand.paper_ids) == 3
    without_subscription = FakeSender()
    assert (await service.delivery.deliver_now(OTHER, without_subscription)).status == "sent"
    assert len(without_subscription.paper_ids) == 5
    with pytest.raises(DigestInterruptedError):
        await service.delivery.deliver_period(sub.id, FakeSender())


async def test_a_shutdown_stops_an_on_demand_digest_and_the_next_process_sends_the_rest_once(
    db: Database, service: Digests
) -> None:
    """At shutdown /paper digest stops after the paper going out; its run is let go of at once, and the
    process running the digests sends the rest: every paper once, one header."""
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=3)
    sender = ShutdownAfterFirstPaper()
    with pytest.raises(DigestInterruptedError) as stopped:
        await service.delivery.deliver_now(USER, sender, stopping=sender.stopping)
    assert stopped.value.resumes
    assert len(sender.paper_ids) == 1
    (run,) = await service.repository.runs(sub.id)
    assert (run.status, run.claimed_by) == ("claimed", None), "let go of, for the leader to resume"

    leader = make_service(db, service.clock, {pid: 100.0 - pid for pid in range(1, 21)})  # type: ignore[arg-type]
    (resumable,) = await leader.recovery.runs_to_resume()
    rest = FakeSender(posted=sender.posted)
    assert (await leader.delivery.resume(resumable, rest)).status == "sent"
    assert len(sender.paper_ids + rest.paper_ids) == len(set(sender.paper_ids + rest.paper_ids)) == 3
    assert sender.headers
    assert not rest.headers


async def test_a_shutdown_during_an_on_demand_digest_without_a_subscription_says_nothing_resumes(
    service: Digests,
) -> None:
    sender = ShutdownAfterFirstPaper()
    with pytest.raises(DigestInterruptedError) as stopped:
        await service.delivery.deliver_now(OTHER, sender, stopping=sender.stopping)
    assert not stopped.value.resumes


async def test_a_failed_on_demand_digest_is_let_go_of_for_the_process_running_the_digests(
    db: Database, service: Digests
) -> None:
    """A /paper digest that fails midway (the store or Discord away) is not left held by this process:
    the process running the digests resumes it at once, sending what did not go out."""
    sub = await service.subscriptions.subscribe(USER, time="09:00", timezone="UTC", count=3)
    sender = FakeSender(fail_at={1: ConnectionRefusedError("Discord unreachable")})
    with pytest.raises(ConnectionRefusedError):
        await service.delivery.deliver_now(USER, sender)
    (run,) = await service.repository.runs(sub.id)
    assert (run.status, run.claimed_by) == ("claimed", None)
    leader = make_service(db, service.clock, {pid: 100.0 - pid for pid in range(1, 21)})  # type: ignore[arg-type]
    (resumable,) = await leader.recovery.runs_to_resume()
    rest = FakeSender(posted=sender.posted)
    assert (await leader.delivery.resume(resumable, rest)).status == "sent"
    assert sorted(sender.paper_ids + rest.paper_ids) == [1, 2, 3]
