"""A server's cap on channel feeds holds even when admins set feeds at the same moment."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from digest_fakes import FakeClock, make_service

from bot.services.digests.subscriptions import TooManyFeedsError
from storage.db import Database

GUILD, OTHER_GUILD = 1, 2


async def test_feeds_set_at_once_never_pass_the_servers_cap(db: Database) -> None:
    """Ten channels' feeds set together where three are allowed: three are stored, seven refused; the
    cap is per server, and changing a stored feed is never refused."""
    service = make_service(db, FakeClock(datetime(2026, 1, 5, tzinfo=UTC)), {}, feeds_per_server=3)
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
    with pytest.raises(TooManyFeedsError, match=r"already has 3 paper feeds"):
        await feeds.set_feed(GUILD, 150, created_by=9, topics="robotics")
