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

from dataclasses import dataclass
from datetime import timedelta

from bot.clock import Clock
from bot.services.digests.delivery import DigestDelivery
from bot.services.digests.leases import Leases
from bot.services.digests.planning import DigestPlanner
from bot.services.digests.recovery import DigestRecovery
from bot.services.digests.retention import DigestHistory
from bot.services.digests.subscriptions import SubscriptionService
from storage.repositories.digests import DigestRepository

#: A digest missed while the bot was down is sent on start-up if it fell due at most this long ago.
DEFAULT_GRACE = timedelta(hours=6)


@dataclass(frozen=True)
class Digests:
    """The digest parts of one store, sharing one clock (built by the composition root,
    ``bot.runtime.build_digests``): ``subscriptions``, ``planner``, ``delivery``, ``recovery``,
    ``history``; ``repository`` holds the runs and what was sent, ``leases`` how this process holds
    the runs it sends."""

    clock: Clock
    grace: timedelta
    repository: DigestRepository
    leases: Leases
    subscriptions: SubscriptionService
    planner: DigestPlanner
    delivery: DigestDelivery
    recovery: DigestRecovery
    history: DigestHistory
