"""What `/paperadmin stats` (one server) and `paperbot stats` (the whole store) show: counts, the last
arXiv fetch, each live source's last fetch and count, and the next digest deliveries. A server's admins see their own server only: the papers
(shared by every server) and that server's people, subscriptions, feeds, reactions and next digests.

Next deliveries are computed from the subscriptions table with the same schedule rules the digest
scheduler's CronTriggers follow (`bot.services.digests.timing.next_delivery`), so they are right whether or
not the scheduler of this process is running (the CLI has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.services.digests.subscriptions import subscription_schedule
from bot.services.digests.timing import next_delivery
from bot.services.write_behind import OutboxState
from storage.db import Database
from storage.models import SourceFetch
from storage.repositories.source_fetches import SourceFetchRepository
from storage.repositories.stats import StoreCounts, guild_counts, store_counts
from storage.repositories.subscriptions import SubscriptionRepository


@dataclass(frozen=True, slots=True)
class NextDigest:
    subscription_id: int
    kind: str  # 'user' or 'channel'
    guild_id: int | None
    channel_id: int | None
    due_utc: datetime


@dataclass(frozen=True, slots=True)
class DigestOutlook:
    """Upcoming deliveries of every active subscription, soonest first."""

    upcoming: tuple[NextDigest, ...]
    due_within_day: int

    @property
    def next(self) -> NextDigest | None:
        return self.upcoming[0] if self.upcoming else None

    def feeds_of(self, guild_id: int) -> tuple[NextDigest, ...]:
        """The channel feeds of one server, soonest first."""
        return tuple(d for d in self.upcoming if d.kind == "channel" and d.guild_id == guild_id)


@dataclass(frozen=True, slots=True)
class AdminStats:
    counts: StoreCounts
    digests: DigestOutlook
    #: the answering process's outbox: reactions and clicks it accepted that the store does not have yet
    outbox: OutboxState | None = None
    #: each live source's last fetch and counts (`paperbot fetch SOURCE`, the daily fetch), by name
    sources: tuple[SourceFetch, ...] = ()


async def digest_outlook(db: Database, now: datetime, *, guild_id: int | None = None) -> DigestOutlook:
    """The next delivery of each active subscription after `now` (aware); with `guild_id`, only those
    set up in that server (its channel feeds and the DM digests started there)."""
    upcoming = sorted(
        (
            NextDigest(
                subscription_id=sub.id,
                kind=sub.kind,
                guild_id=sub.guild_id,
                channel_id=sub.channel_id,
                due_utc=next_delivery(subscription_schedule(sub), now).due_utc,
            )
            for sub in await SubscriptionRepository(db).active()
            if guild_id is None or sub.guild_id == guild_id
        ),
        key=lambda d: (d.due_utc, d.subscription_id),
    )
    horizon = now + timedelta(days=1)
    return DigestOutlook(tuple(upcoming), sum(1 for d in upcoming if d.due_utc <= horizon))


async def gather_admin_stats(db: Database, now: datetime) -> AdminStats:
    """Everything, for the host (`paperbot stats`)."""
    return AdminStats(
        counts=await store_counts(db),
        digests=await digest_outlook(db, now),
        sources=tuple(await SourceFetchRepository(db).all()),
    )


async def gather_guild_stats(
    db: Database, guild_id: int, now: datetime, *, outbox: OutboxState | None = None
) -> AdminStats:
    """One server's view (`/paperadmin stats`): nothing about other servers or their people (the
    outbox's counts are the answering process's, of every server: no one's content)."""
    return AdminStats(
        counts=await guild_counts(db, guild_id),
        digests=await digest_outlook(db, now, guild_id=guild_id),
        outbox=outbox,
        sources=tuple(await SourceFetchRepository(db).all()),
    )
