"""/paper subscribe makes sense: it asks for a topic when a digest would have nothing to go by, and a
digest comes at the minute chosen — later only when more is due then than Discord's limits let go out
in that minute, which the confirmation then says. A rush of 200 at one minute still goes out at the pace
of Discord's global limit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from builders import Clock, wait_idle

from bot.sandbox import DISCORD_RATES, SandboxServer
from storage.repositories.users import UserRepository

if TYPE_CHECKING:
    from paperbot_e2e import E2E

MONDAY_0900 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
#: Discord's global limit, requests a second (the floor of a rush: its requests / this)
GLOBAL_LIMIT = 50


@pytest.fixture
def clock() -> Clock:
    """The clock every bot started in the test reads."""
    return Clock(MONDAY_0900 - timedelta(hours=1))


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: object) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:  # type: ignore[operator]
        yield running


def _text(result: object) -> str:
    return "\n".join(m.content for m in result.messages)  # type: ignore[attr-defined]


async def test_subscribe_without_a_topic_or_interests_asks_for_one_and_stores_nothing(e2e: E2E) -> None:
    server = e2e.server
    answer = await server.run_command("bob", "paper subscribe", time="09:00")
    assert answer.ephemeral
    assert "Give a topic" in answer.text
    assert "/paper subscribe topics:" in answer.text
    assert "Nothing was stored" in answer.text
    assert await e2e.services.digests.subscriptions.for_user(server.bob.id) is None
    assert not [job for job in e2e.bot.digest_jobs.scheduler.get_jobs() if job.id.startswith("digest")]
    # once something tells what bob reads, no topic is needed: his interests are used
    await server.run_command("bob", "paper interests add", topic="quantization")
    again = await server.run_command("bob", "paper subscribe", time="09:00")
    assert "Subscribed" in _text(again)
    assert "your interests and reactions" in _text(again)


async def test_two_subscribers_at_nine_get_their_digest_at_nine(e2e: E2E, clock: Clock) -> None:
    """Before, every 09:00 digest went out at its own place in the 10 minutes after 09:00 (09:06 for
    one of two people); now both are told 09:00, their jobs fire at 09:00 and the digests go out then."""
    server = e2e.server
    answers = [
        await server.run_command(person, "paper subscribe", topics="quantization", time="09:00", count=2)
        for person in ("alice", "bob")
    ]
    for answer in answers:
        text = _text(answer)
        assert "Next digest: **Monday 30 November 2026 at 09:00 UTC**" in text, text
        assert "yours comes at" not in text
    jobs = e2e.bot.digest_jobs
    for person in (server.alice, server.bob):
        sub = await e2e.services.digests.subscriptions.for_user(person.id)
        assert sub is not None
        fires = jobs.next_run_time(sub.id)  # (APScheduler runs on real time: the next real 09:00)
        assert fires is not None
        assert f"{fires.astimezone(UTC):%H:%M:%S}" == "09:00:00"
    clock.now = MONDAY_0900
    for person in (server.alice, server.bob):
        sub = await e2e.services.digests.subscriptions.for_user(person.id)
        assert sub is not None
        outcome = await jobs.run_job(sub.id)
        assert outcome is not None
        assert outcome.status == "sent"
        assert len([m for m in server.dm_messages(person) if m.embeds]) == 2
    assert not [job for job in jobs.scheduler.get_jobs() if job.id.startswith("digest-later:")]


async def test_a_digest_due_when_the_minute_is_full_is_moved_and_the_confirmation_says_so(e2e: E2E) -> None:
    """450 five-paper digests are due at 09:00 (2,700 requests: what the bot may send in a minute under
    Discord's global limit). Carol's, set up after them, cannot go out in that minute: her confirmation
    says 451 are due at 09:00 and that hers comes at 09:01."""
    subscriptions = e2e.services.digests.subscriptions
    for user_id in range(10**17, 10**17 + 450):
        await subscriptions.subscribe(user_id, topics="quantization", time="09:00", count=5)
    answer = await e2e.server.run_command(
        "carol", "paper subscribe", topics="kv cache", time="09:00", count=5
    )
    text = _text(answer)
    assert "Next digest: **Monday 30 November 2026 at 09:01 UTC**" in text, text
    assert "451 digests are due at 09:00, more than Discord lets a bot send in one minute" in text
    assert "yours comes at 09:01" in text


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    async with SandboxServer(rates=DISCORD_RATES) as server:
        yield server


@pytest.mark.timeout(180)
async def test_a_rush_of_200_at_one_minute_goes_out_at_the_pace_of_discords_global_limit(
    e2e: E2E, clock: Clock
) -> None:
    """200 people due at 09:00 with the settings paperbot ships (their DM channels known): nothing is
    moved, every digest is whole, and the rush takes at most 1.3 times the floor Discord's global limit
    sets for its requests (requests / 50 s)."""
    server = e2e.server
    subscriptions = e2e.services.digests.subscriptions
    users = UserRepository(e2e.db)
    people = [server.add_user(f"reader{n}") for n in range(200)]
    subs = []
    for person in people:
        sub = await subscriptions.subscribe(person.id, topics="quantization", time="09:00", count=1)
        await users.set_dm_channel(person.id, server.dm_channel(person).id)
        subs.append(sub)
        e2e.bot.digest_jobs.schedule(sub)
    arrivals = await subscriptions.arrivals(subs)
    assert {a.moved for a in arrivals.values()} == {timedelta(0)}

    clock.now = MONDAY_0900
    jobs = e2e.bot.digest_jobs
    before = len(server.requests)
    started = time.monotonic()
    for sub in subs:
        job = jobs.scheduler.get_job(f"digest:{sub.id}")
        assert job is not None
        job.modify(next_run_time=datetime.now(UTC))
    jobs.scheduler.wakeup()
    await server.eventually(
        lambda: all(any(m.embeds for m in server.dm_messages(p)) for p in people),
        timeout=120,
        what="every one of the 200 digests",
    )
    await wait_idle(jobs)
    assert time.monotonic() - started < 120
    rush = [
        r
        for r in server.requests[before:]
        if r.path.startswith("/api/v10/channels/") or "/channels/" in r.path
    ]
    assert all(r.status < 400 for r in rush), "a request was refused"
    took = rush[-1].at - rush[0].at
    floor = len(rush) / GLOBAL_LIMIT
    assert len(rush) == 200 * 2, "a header and one paper each"
    assert took <= 1.3 * floor, f"{len(rush)} requests in {took:.1f} s; the floor is {floor:.1f} s"
    for person in people:
        assert len([m for m in server.dm_messages(person) if m.embeds]) == 1
    assert not [j for j in jobs.scheduler.get_jobs() if j.id.startswith("digest-later:")]
    await asyncio.sleep(0)
