"""Turns between lanes (servers, people): round robin between lanes, in order within one, at most
`per_lane` places held by one lane, and a cancelled waiter never keeps a place."""

from __future__ import annotations

import asyncio

import pytest

from bot.services.digests.fairness import FairSlots, lane_of
from storage.models import Subscription


async def _queue(slots: FairSlots, lane: str, name: str, order: list[str], hold: asyncio.Event) -> None:
    async with slots.slot(lane):
        order.append(name)
        await hold.wait()


async def test_a_lane_arriving_behind_a_long_one_is_served_next_not_last() -> None:
    """Five of server A's waiting, then one of server B: B is let in second, then A's in order."""
    slots = FairSlots(1)
    order: list[str] = []
    go = asyncio.Event()
    go.set()  # each holder lets go at once
    await slots.acquire("A")
    tasks = [asyncio.create_task(_queue(slots, "A", f"a{n}", order, go)) for n in range(5)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(_queue(slots, "B", "b0", order, go)))
    await asyncio.sleep(0)
    slots.release("A")
    await asyncio.gather(*tasks)
    assert order == ["a0", "b0", "a1", "a2", "a3", "a4"]


async def test_one_lane_holds_at_most_its_share_so_another_finds_a_place_at_once() -> None:
    slots = FairSlots(4, per_lane=2)
    hold = asyncio.Event()
    order: list[str] = []
    busy = [asyncio.create_task(_queue(slots, "A", f"a{n}", order, hold)) for n in range(10)]
    await asyncio.sleep(0.01)
    assert order == ["a0", "a1"]
    other = asyncio.create_task(_queue(slots, "B", "b0", order, hold))
    await asyncio.sleep(0.01)
    assert order == ["a0", "a1", "b0"]
    hold.set()
    await asyncio.gather(*busy, other)
    assert sorted(order) == sorted([f"a{n}" for n in range(10)] + ["b0"])


async def test_a_cancelled_waiter_keeps_no_place() -> None:
    slots = FairSlots(1)
    await slots.acquire("A")
    waiter = asyncio.create_task(slots.acquire("B"))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    slots.release("A")
    await asyncio.wait_for(slots.acquire("C"), 1)  # the place is free, not kept by the cancelled one


async def test_a_place_given_as_its_waiter_is_cancelled_is_passed_on() -> None:
    slots = FairSlots(1)
    await slots.acquire("A")
    first = asyncio.create_task(slots.acquire("B"))
    second = asyncio.create_task(slots.acquire("C"))
    await asyncio.sleep(0)
    slots.release("A")  # B's turn is given...
    first.cancel()  # ...as B gives up
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)


def test_a_feed_takes_its_servers_turn_and_a_dm_digest_its_persons() -> None:
    common = dict(
        topics=(),
        time_local="09:00",
        timezone="UTC",
        frequency="daily",
        weekday=0,
        count=5,
        active=True,
        paused_reason=None,
        created_by=None,
        created_at="",
        updated_at="",
    )
    feed = Subscription(id=1, kind="channel", user_id=None, guild_id=7, channel_id=70, **common)  # type: ignore[arg-type]
    digest = Subscription(id=2, kind="user", user_id=5, guild_id=7, channel_id=None, **common)  # type: ignore[arg-type]
    assert lane_of(feed) == ("server", 7)
    assert lane_of(digest) == ("person", 5)
