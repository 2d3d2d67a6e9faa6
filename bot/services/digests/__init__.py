"""Digests: a person's DM digest and a channel's feed, from the subscription to the messages, once.

| module | holds |
|---|---|
| ``timing`` | what a person typed (time, timezone, frequency, count, topics) validated; delivery times in their own zone (DST-safe); the one rule for a period that fell due (:func:`check_due`) |
| ``subscriptions`` | subscribe, unsubscribe, channel feeds, pausing an unreachable recipient and the notice it leaves |
| ``planning`` | the papers a digest would send now, with reasons, and its texts (writes nothing) |
| ``delivery`` | claiming a period and sending it exactly once through a ``DigestSender`` (nonces, resends, resuming) |
| ``leases`` | how this process holds the runs it sends, so that another one takes over the runs of a process that died |
| ``recovery`` | at start and meanwhile: runs a stopped or dead process left half sent, and periods missed while nothing ran |
| ``jobs`` | one APScheduler job per subscription on the bot's process scheduler, retries, pacing between deliveries |
| ``retention`` | how long finished runs and the bot's paper messages are kept (what was sent to whom is kept) |

Nothing here imports discord: the Discord sender is ``bot.digest_sender``; the commands are
``bot.exts.subscriptions`` and ``bot.exts.admin_feeds``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from bot.services.digests.delivery import RESEND_DELAYS, DigestDelivery
from bot.services.digests.leases import DEFAULT_LEASE, Leases
from bot.services.digests.planning import DigestPlanner, FollowedLike, PaperLookup, RecommenderLike
from bot.services.digests.recovery import DigestRecovery
from bot.services.digests.retention import DEFAULT_HISTORY_DAYS, DigestHistory
from bot.services.digests.subscriptions import DEFAULT_FEEDS_PER_SERVER, InterestsLookup, SubscriptionService
from bot.services.digests.timing import Clock, utc_now
from storage.db import Database
from storage.repositories.digests import DigestRepository
from storage.repositories.interests import InterestRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.subscriptions import SubscriptionRepository

#: A digest missed while the bot was down is sent on start-up if it fell due at most this long ago.
DEFAULT_GRACE = timedelta(hours=6)


class Digests:
    """The digest parts of one store, sharing one clock: ``subscriptions``, ``planner``, ``delivery``,
    ``recovery``, ``history`` (kept ``history_days``); ``repository`` holds the runs and what was sent."""

    def __init__(
        self,
        db: Database,
        *,
        papers: PaperLookup,
        recommender: RecommenderLike,
        clock: Clock | None = None,
        grace: timedelta = DEFAULT_GRACE,
        spread: timedelta = timedelta(0),
        calls_per_minute: int = 0,
        min_score: float = 0.0,
        resend_delays: Sequence[float] = RESEND_DELAYS,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        owner: str | None = None,
        lease: timedelta = DEFAULT_LEASE,
        lease_wall: Callable[[], float] = time.time,
        followed: FollowedLike | None = None,
        history_days: int = DEFAULT_HISTORY_DAYS,
        feeds_per_server: int = DEFAULT_FEEDS_PER_SERVER,
        interests: InterestsLookup | None = None,
    ) -> None:
        self.db = db
        self.clock: Clock = clock if clock is not None else utc_now
        self.grace = grace
        self.repository = DigestRepository(db)
        #: how this process (``owner``) holds the runs it sends, for ``lease`` at a time
        self.leases = Leases(self.repository, owner=owner, duration=lease, wall=lease_wall)
        self.subscriptions = SubscriptionService(
            SubscriptionRepository(db),
            clock=self.clock,
            spread=spread,
            calls_per_minute=calls_per_minute,
            feeds_per_server=feeds_per_server,
            interests=interests,
            interest_store=InterestRepository(db),
        )
        self.planner = DigestPlanner(
            self.repository,
            papers=papers,
            recommender=recommender,
            clock=self.clock,
            min_score=min_score,
            followed=followed,
        )
        self.delivery = DigestDelivery(
            self.repository,
            subscriptions=self.subscriptions,
            planner=self.planner,
            papers=papers,
            clock=self.clock,
            leases=self.leases,
            resend_delays=resend_delays,
            sleep=sleep,
        )
        self.recovery = DigestRecovery(
            self.repository,
            subscriptions=self.subscriptions,
            clock=self.clock,
            grace=grace,
            leases=self.leases,
        )
        self.history = DigestHistory(
            self.repository, PostedMessageRepository(db), clock=self.clock, keep=timedelta(days=history_days)
        )
