"""Fairness between servers: a per-server cap on channel feeds, and due work that takes turns, so one
server's many feeds due at once never hold back another server's feed or a person's digest."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from builders import Clock

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

StartBot = Callable[..., contextlib.AbstractAsyncContextManager["E2E"]]

BERLIN_0900 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # 09:00 CET on Monday 30 November 2026


@pytest.fixture
def clock() -> Clock:
    """The clock every bot started in the test reads."""
    return Clock(BERLIN_0900 - timedelta(hours=2))


def answer(result: Any) -> str:
    return "\n".join(m.content for m in result.messages)


async def test_a_server_at_its_feed_cap_is_told_so_and_nothing_is_stored(start_paperbot: StartBot) -> None:
    """Two feeds allowed per server: a third channel's `/paperadmin feed set` says why and how to make
    room, stores and schedules nothing; changing an existing feed still works; after clearing one, the
    third is set."""
    async with start_paperbot(feeds_per_server=2) as e2e:
        server = e2e.server
        server.set_manage_guild("alice", True)
        channels = [server.add_channel(f"papers-{n}") for n in range(3)]
        for channel in channels[:2]:
            done = await server.run_command(
                "alice", "paperadmin feed set", channel=channel, topics="robotics"
            )
            assert "✅ Feed" in answer(done)
        refused = await server.run_command(
            "alice", "paperadmin feed set", channel=channels[2], topics="robotics"
        )
        assert refused.ephemeral
        assert "already has 2 paper feeds; it may have at most 2" in answer(refused)
        assert "/paperadmin feed clear" in answer(refused)
        subscriptions = e2e.services.digests.subscriptions
        assert await subscriptions.for_channel(channels[2].id) is None
        assert len(await subscriptions.list_feeds(server.guild.id)) == 2
        jobs = [j for j in e2e.bot.digest_jobs.scheduler.get_jobs() if j.id.startswith("digest:")]
        assert len(jobs) == 2

        changed = await server.run_command("alice", "paperadmin feed set", channel=channels[0], count=3)
        assert "✅ Feed" in answer(changed)
        await server.run_command("alice", "paperadmin feed clear", channel=channels[1])
        third = await server.run_command(
            "alice", "paperadmin feed set", channel=channels[2], topics="robotics"
        )
        assert "✅ Feed" in answer(third)


def fire_all(e2e: E2E, subscription_ids: list[int]) -> None:
    """APScheduler runs these subscriptions' jobs now, as at their time."""
    jobs = e2e.bot.digest_jobs
    for sub_id in subscription_ids:
        job = jobs.scheduler.get_job(f"digest:{sub_id}")
        assert job is not None
        job.modify(next_run_time=datetime.now(UTC))
    jobs.scheduler.wakeup()


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: StartBot) -> AsyncIterator[E2E]:
    async with start_paperbot(feeds_per_server=100) as running:
        yield running


async def test_a_servers_sixty_feeds_due_at_once_do_not_hold_back_another_servers_feed_or_a_persons_digest(
    e2e: E2E, clock: Clock
) -> None:
    """Paper Lab has 60 feeds due at 09:00 and they start going out; then Second Lab's one feed and
    carol's DM digest fall due. Each of those two is out while most of Paper Lab's feeds still wait
    their turn — not after them — and every feed and digest arrives once."""
    server = e2e.server
    subscriptions = e2e.services.digests.subscriptions
    alice = server.alice
    busy = []
    for n in range(60):
        channel = server.add_channel(f"lab-feed-{n}")
        sub = await subscriptions.set_feed(
            server.guild.id,
            channel.id,
            created_by=alice.id,
            topics="language models",
            time="09:00",
            timezone="Europe/Berlin",
            count=1,
        )
        e2e.bot.digest_jobs.schedule(sub)
        busy.append(sub.id)
    second_lab = server.add_guild("Second Lab", members={"carol": True})
    elsewhere = server.guild_channel(second_lab, "general")
    other_feed = await subscriptions.set_feed(
        second_lab.id,
        elsewhere.id,
        created_by=server.carol.id,
        topics="reinforcement learning",
        time="09:00",
        timezone="Europe/Berlin",
        count=1,
    )
    digest = await subscriptions.subscribe(
        server.carol.id, topics="quantization", time="09:00", timezone="Europe/Berlin", count=1
    )
    for sub in (other_feed, digest):
        e2e.bot.digest_jobs.schedule(sub)

    busy_channels = {sub.channel_id for sub in await subscriptions.list_feeds(server.guild.id)}
    posted: list[tuple[str, int]] = []  # (whose, channel) of each paper message, in the order created

    def seen(kind: str, message: SandboxMessage) -> None:
        if kind == "create" and message.embeds:
            whose = "busy" if message.channel.id in busy_channels else "other"
            posted.append((whose, message.channel.id))

    unsubscribe = server.subscribe(seen)
    clock.now = BERLIN_0900
    fire_all(e2e, busy)
    await server.eventually(lambda: len(posted) >= 1, timeout=10, what="Paper Lab's feeds going out")
    fire_all(e2e, [other_feed.id, digest.id])
    await server.eventually(lambda: len(posted) == 62, timeout=60, what="every feed's and digest's paper")
    unsubscribe()

    def busy_before(channel_id: int) -> int:
        at = next(i for i, (_, where) in enumerate(posted) if where == channel_id)
        return len([whose for whose, _ in posted[:at] if whose == "busy"])

    carol_dm = server.dm_channel(server.carol).id
    assert busy_before(elsewhere.id) < 15, "Second Lab's feed waited behind Paper Lab's"
    assert busy_before(carol_dm) < 15, "carol's digest waited behind Paper Lab's feeds"
    assert len({where for _, where in posted}) == 62, "a feed or digest went out twice"
