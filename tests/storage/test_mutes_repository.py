"""The mutes table: the same terms once a person, the limit counted where it is added; and a feed's
mutes, kept beside its topics."""

from __future__ import annotations

import asyncio

from storage.db import Database
from storage.repositories.mutes import MuteLimitError, MuteRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository

PERSON = 7


async def test_the_same_terms_are_one_mute_per_person(db: Database) -> None:
    mutes = MuteRepository(db)
    first, added = await mutes.add(PERSON, "Reinforcement learning", "reinforc learn")
    assert added
    again, added = await mutes.add(PERSON, "reinforced learning", "reinforc learn")
    assert not added
    assert again == first
    other, added = await mutes.add(8, "reinforcement learning", "reinforc learn")
    assert added
    assert other.id != first.id
    assert [m.phrase for m in await mutes.mutes(PERSON)] == ["Reinforcement learning"]
    assert await mutes.remove(PERSON, "reinforc learn") == first
    assert await mutes.remove(PERSON, "reinforc learn") is None


async def test_adds_at_the_same_moment_never_pass_the_limit(db: Database) -> None:
    mutes = MuteRepository(db)
    results = await asyncio.gather(
        *(mutes.add(PERSON, f"topic {n}", f"topic{n}", limit=3) for n in range(6)), return_exceptions=True
    )
    assert sum(isinstance(r, MuteLimitError) for r in results) == 3
    assert len(await mutes.mutes(PERSON)) == 3


async def test_a_feeds_mutes_change_together_and_stay_with_the_feed(db: Database) -> None:
    feeds = SubscriptionRepository(db)
    fields = ScheduleFields(("rl",), "09:00", "UTC", "daily", 0, 3)
    feed = await feeds.upsert_channel(10, 1, fields, created_by=7)
    assert feed.mutes == ()
    changes = [feeds.change_mutes(feed.id, lambda m, n=n: (*m, f"topic {n}")) for n in range(5)]
    await asyncio.gather(*changes)
    again = await feeds.for_channel(10)
    assert again is not None
    assert sorted(again.mutes) == [f"topic {n}" for n in range(5)]  # no change lost another
    assert await feeds.change_mutes(feed.id + 100, lambda m: m) is None
