"""`/paperadmin stats` counts one server; `paperbot stats` counts everything."""

from __future__ import annotations

from datetime import UTC, datetime

from builders import Rater

from bot.services.admin.stats import gather_admin_stats, gather_guild_stats
from bot.services.digests.subscriptions import SubscriptionService
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository
from storage.repositories.subscriptions import SubscriptionRepository

HERE, THERE = 100, 200
NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


async def test_a_servers_counts_leave_other_servers_and_dms_out(db: Database) -> None:
    await PaperRepository(db).upsert_many(
        PaperRecord(title=f"Paper {i}", abstract=f"Abstract number {i} about things {i}.") for i in range(3)
    )
    papers = [int(r[0]) for r in await db.fetchall("SELECT id FROM papers ORDER BY id")]
    feedback = Rater(db)
    await feedback.set(1, papers[0], "like", guild_id=HERE)
    await feedback.set(1, papers[1], "save", guild_id=HERE)
    await feedback.set(2, papers[0], "like", guild_id=THERE)
    await feedback.set(3, papers[2], "save", guild_id=None)  # in a DM
    subscriptions = SubscriptionService(SubscriptionRepository(db), clock=lambda: datetime.now(UTC))
    await subscriptions.subscribe(4, topics="llm", guild_id=HERE)
    await subscriptions.subscribe(5, topics="rl", guild_id=THERE)
    await subscriptions.subscribe(4, time="10:00")  # changed from a DM: still set up here
    await subscriptions.set_feed(channel_id=77, guild_id=THERE, topics="vision", created_by=9)

    here = await gather_guild_stats(db, HERE, NOW)
    assert (here.counts.papers, here.counts.users, here.counts.feedback) == (3, 2, 2)
    assert (here.counts.subscriptions, here.counts.channel_feeds) == (1, 0)
    assert [d.subscription_id for d in here.digests.upcoming] == [1]

    there = await gather_guild_stats(db, THERE, NOW)
    assert (there.counts.users, there.counts.feedback) == (2, 1)
    assert (there.counts.subscriptions, there.counts.channel_feeds) == (1, 1)
    assert len(there.digests.upcoming) == 2

    everything = await gather_admin_stats(db, NOW)
    assert (everything.counts.users, everything.counts.feedback) == (5, 4)
    assert len(everything.digests.upcoming) == 3
