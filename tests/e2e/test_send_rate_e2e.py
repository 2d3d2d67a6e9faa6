"""Digests, feeds and paper messages under Discord's own rate limits (the sandbox with DISCORD_RATES).

The bot keeps each limit itself instead of learning it from refusals: a burst of DM opens answered
40003 turns into a paused queue (never a storm of refused opens) and every digest still arrives; the
reactions it adds in a channel keep to that channel's bucket (one per 0.25 s) although the headers
promise more, so no reaction is refused; a global 429 holds all its paced sending for the wait
Discord named.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from builders import Clock, wait_idle

from bot.sandbox import DISCORD_RATES, RateRules, SandboxServer

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.recorder import RecordedRequest

MONDAY_0900 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
#: Discord's limits, with a DM-open limit small enough to trip in a test (3 opens in any 2 s).
RATES = RateRules(**{**dataclasses.asdict(DISCORD_RATES), "dm_opens": (3, 2.0)})


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    async with SandboxServer(rates=RATES) as server:
        yield server


@pytest.fixture
def clock() -> Clock:
    """The clock every bot started in the test reads."""
    return Clock(MONDAY_0900 - timedelta(hours=1))


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: object) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:  # type: ignore[operator]
        yield running


def refused(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if r.status >= 400]


async def test_a_burst_of_dm_opens_answered_40003_pauses_the_opens_and_every_digest_arrives(
    e2e: E2E, clock: Clock
) -> None:
    """Six people whose DM the bot has never seen are due at 09:00 together. Opening their DMs trips
    Discord's 40003; every open then waits out a pause that doubles while Discord refuses, one open at a
    time, and each person gets their digest exactly once. Their DM channels are kept: the next day's
    rush opens none."""
    server = e2e.server
    dm = e2e.bot.sending.dm_channels
    dm.open_interval, dm.base_cooldown, dm.cooldown = 0.2, 1.0, 1.0  # Discord's pace, shortened
    people = [server.add_user(f"reader{n}") for n in range(6)]
    subscriptions = e2e.services.digests.subscriptions
    for person in people:  # stored as an upgrade finds them: no DM known yet
        sub = await subscriptions.subscribe(person.id, topics="quantization", time="09:00", count=2)
        e2e.bot.digest_jobs.schedule(sub)

    clock.now = MONDAY_0900
    await asyncio.gather(*(_fire(e2e, person.id) for person in people))
    await server.eventually(
        lambda: all(len(_papers(server, person)) == 2 for person in people),
        timeout=30,
        what="every person's two papers",
    )
    await wait_idle(e2e.bot.digest_jobs)

    opens = server.requests_matching("POST /users/@me/channels")
    too_fast = [r for r in opens if r.error_code == 40003]
    assert too_fast, "the burst tripped Discord's DM-open limit"
    assert len([r for r in opens if r.status == 200]) == len(people)
    assert len(too_fast) <= 3, "a refused open is followed by a pause, not by another open at once"
    for earlier, later in itertools.pairwise(opens):
        gap = later.at - earlier.at
        assert gap >= (0.9 if earlier.error_code == 40003 else 0.15), "opens went out faster than paced"
    for person in people:
        assert len(_papers(server, person)) == 2, "a digest went out twice or not at all"
        assert await e2e.db.fetchval("SELECT dm_channel_id FROM users WHERE id = ?", (person.id,)) == (
            server.dm_channel(person).id
        )
    assert not refused(server.requests_matching("POST /channels/*/messages"))

    clock.now = MONDAY_0900 + timedelta(days=1)
    before = len(opens)
    await asyncio.gather(*(_fire(e2e, person.id) for person in people))
    await server.eventually(
        lambda: all(len(_papers(server, person)) == 4 for person in people),
        timeout=30,
        what="the next day's digests",
    )
    assert len(server.requests_matching("POST /users/@me/channels")) == before, "a stored DM was opened again"


async def test_the_bots_reactions_keep_to_each_channels_bucket_without_a_429(e2e: E2E, clock: Clock) -> None:
    """A channel feed of three papers and two /paper show answers in the same channel at once: every
    paper gets the bot's 👍 👎 🔖, one reaction per 0.25 s in that channel, none refused — although the
    reaction route's headers promise room for more. Meanwhile a paper shown in another channel gets its
    reactions at that channel's own pace, without waiting behind the busy one's."""
    server = e2e.server
    channel = server.add_channel("reading-group")
    elsewhere = server.add_channel("journal-club")
    server.set_manage_guild("alice", True)
    await server.run_command(
        "alice", "paperadmin feed set", channel=channel, topics="quantization", time="09:00", count=3
    )
    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    clock.now = MONDAY_0900
    await _fire_job(e2e, feed.id)
    shows = await asyncio.gather(
        server.run_command("bob", "paper show", paper="1", where=channel),
        server.run_command("carol", "paper show", paper="2", where=channel),
    )
    other = await server.run_command("bob", "paper show", paper="3", where=elsewhere)

    def rated(where: object, papers: int) -> bool:
        shown = [m for m in server.messages_in(where) if m.embeds]  # type: ignore[arg-type]
        return len(shown) == papers and all(len(m.reactions.get(e, [])) == 1 for m in shown for e in "👍👎🔖")

    await server.eventually(
        lambda: rated(channel, 5) and rated(elsewhere, 1),
        timeout=20,
        what="the bot's 👍 👎 🔖 on five papers in one channel and one in the other",
    )
    puts = server.requests_matching(f"PUT /channels/{channel.id}/messages/*/reactions/**")
    assert len(puts) == 15
    assert not refused(puts), "a reaction was refused: the bot trusted the headers"
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(puts)]
    assert min(gaps) >= 0.25 - 0.02
    assert all(show.message is not None for show in shows)

    there = server.requests_matching(f"PUT /channels/{elsewhere.id}/messages/*/reactions/**")
    assert len(there) == 3
    assert not refused(there)
    assert min(later.at - earlier.at for earlier, later in itertools.pairwise(there)) >= 0.25 - 0.02
    assert other.message is not None
    assert puts[0].at < there[0].at < puts[-1].at, "the busy channel was still reacting"
    nearest = min(abs(a.at - b.at) for a in puts for b in there)
    assert nearest < 0.2, "the other channel's reactions waited their turn behind the busy channel's"
    assert server.rates.invalid_total == 0


async def test_a_global_429_holds_every_paced_send_for_the_wait_discord_named(e2e: E2E, clock: Clock) -> None:
    """Discord refuses a digest's first message with its global limit: 429, `"global": true`,
    `Retry-After: 1` (the body's `retry_after` 0.05 s). discord.py sends that message again after
    0.05 s on its own; the bot's paced sends (the digest's papers) wait until the second Discord
    named is over, and the digest then arrives whole, each paper once."""
    server = e2e.server
    person = server.add_user("reader")
    sub = await e2e.services.digests.subscriptions.subscribe(
        person.id, topics="quantization", time="09:00", count=3
    )
    e2e.bot.digest_jobs.schedule(sub)
    server.faults.add("POST /channels/*/messages", "429", retry_after=0.05, is_global=True)

    clock.now = MONDAY_0900
    await _fire(e2e, person.id)
    await server.eventually(lambda: len(_papers(server, person)) == 3, timeout=15, what="the three papers")
    await wait_idle(e2e.bot.digest_jobs)

    posts = server.requests_matching(f"POST /channels/{server.dm_channel(person).id}/messages")
    refused_at = [r.at for r in posts if r.status == 429]
    assert len(refused_at) == 1
    answered = [r for r in posts if r.status == 200]
    assert len(answered) == 4, "the header once and each of the three papers once"
    retry, *papers = answered
    assert retry.at - refused_at[0] < 0.9, "discord.py sent the refused message again after its own 0.05 s"
    assert min(r.at for r in papers) - refused_at[0] >= 0.95, "a paper went out inside Discord's wait"


def _papers(server: SandboxServer, person: object) -> list[object]:
    return [m for m in server.dm_messages(person) if m.embeds]  # type: ignore[arg-type]


async def _fire(e2e: E2E, user_id: int) -> None:
    sub = await e2e.services.digests.subscriptions.for_user(user_id)
    assert sub is not None
    await _fire_job(e2e, sub.id)


async def _fire_job(e2e: E2E, sub_id: int) -> None:
    jobs = e2e.bot.digest_jobs
    job = jobs.scheduler.get_job(f"digest:{sub_id}")
    assert job is not None
    job.modify(next_run_time=datetime.now(UTC))
    jobs.scheduler.wakeup()
