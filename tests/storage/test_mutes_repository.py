"""The mutes table: one owner each, the same terms once, the limit counted where it is added, and a
feed's mutes gone with the feed."""

from __future__ import annotations

import asyncio

import pytest

from storage.db import Database
from storage.repositories.mutes import MuteLimitError, MuteOwner, MuteRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository

PERSON = MuteOwner(user_id=7)


def test_a_mute_has_exactly_one_owner() -> None:
    with pytest.raises(ValueError, match="a person or to a feed"):
        MuteOwner()
    with pytest.raises(ValueError, match="a person or to a feed"):
        MuteOwner(user_id=1, subscription_id=2)


async def test_the_same_terms_are_one_mute_per_owner(db: Database) -> None:
    mutes = MuteRepository(db)
    first, added = await mutes.add(PERSON, "Reinforcement learning", "reinforc learn")
    assert added
    again, added = await mutes.add(PERSON, "reinforced learning", "reinforc learn")
    assert not added
    assert again == first
    other, added = await mutes.add(MuteOwner(user_id=8), "reinforcement learning", "reinforc learn")
    assert added
    assert other.id != first.id
    assert [m.phrase for m in await mutes.mutes(PERSON)] == ["Reinforcement learning"]
    assert await mutes.remove(PERSON, "reinforc learn") == first
    assert await mutes.remove(PERSON, "reinforc learn") is None
    assert await mutes.count() == 1


async def test_adds_at_the_same_moment_never_pass_the_limit(db: Database) -> None:
    mutes = MuteRepository(db)
    results = await asyncio.gather(
        *(mutes.add(PERSON, f"topic {n}", f"topic{n}", limit=3) for n in range(6)), return_exceptions=True
    )
    assert sum(isinstance(r, MuteLimitError) for r in results) == 3
    assert len(await mutes.mutes(PERSON)) == 3


async def test_a_feeds_mutes_go_with_the_feed(db: Database) -> None:
    feeds = SubscriptionRepository(db)
    feed = await feeds.upsert_channel(
        10, 1, ScheduleFields(("rl",), "09:00", "UTC", "daily", 0, 3), created_by=7
    )
    mutes = MuteRepository(db)
    await mutes.add(MuteOwner(subscription_id=feed.id), "diffusion", "diffus")
    assert len(await mutes.mutes(MuteOwner(subscription_id=feed.id))) == 1
    await feeds.delete(feed.id)
    assert await mutes.count() == 0
