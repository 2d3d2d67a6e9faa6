"""A server's cap on channel feeds holds even when admins set feeds at the same moment."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from builders import Clock
from digest_fakes import make_service

from bot.services.digests.subscriptions import TooManyFeedsError
from storage.db import Database

GUILD, OTHER_GUILD = 1, 2


async def test_feeds_set_at_once_never_pass_the_servers_cap(db: Database) -> None:
    """Ten channels' feeds set together where three are allowed: three are stored, seven refused; the
    cap is per server, and changing a stored feed is never refused."""
    service = make_service(db, Clock(datetime(2026, 1, 5, tzinfo=UTC)), {}, feeds_per_server=3)
    feeds = service.subscriptions
    results = await asyncio.gather(
        *(feeds.set_feed(GUILD, 100 + n, created_by=9, topics="robotics") for n in range(10)),
        return_exceptions=True,
    )
    stored = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, TooManyFeedsError)]
    assert (len(stored), len(refused)) == (3, 7), results
    assert len(await feeds.list_feeds(GUILD)) == 3
    changed = await feeds.set_feed(GUILD, stored[0].channel_id, created_by=9, count=2)  # type: ignore[union-attr,arg-type]
    assert changed.count == 2
    assert (await feeds.set_feed(OTHER_GUILD, 200, created_by=9, topics="robotics")).guild_id == OTHER_GUILD
    with pytest.raises(TooManyFeedsError, match=r"already has 3 paper feeds; it may have at most 3"):
        await feeds.set_feed(GUILD, 150, created_by=9, topics="robotics")


async def test_a_lowered_cap_keeps_the_feeds_there_are_and_lets_them_change(db: Database) -> None:
    """The operator lowers the cap below what a server has: its feeds stay and can still be changed;
    a new one is refused until it is under the cap."""
    clock = Clock(datetime(2026, 1, 5, tzinfo=UTC))
    before = make_service(db, clock, {}, feeds_per_server=3).subscriptions
    for n in range(3):
        await before.set_feed(GUILD, 100 + n, created_by=9, topics="robotics")
    after = make_service(db, clock, {}, feeds_per_server=2).subscriptions
    assert (await after.set_feed(GUILD, 100, created_by=9, count=4)).count == 4
    with pytest.raises(TooManyFeedsError, match=r"already has 3 paper feeds; it may have at most 2"):
        await after.set_feed(GUILD, 103, created_by=9, topics="robotics")
    assert len(await after.list_feeds(GUILD)) == 3
