"""Digests a stopped or dead process left half sent, and periods that fell due while nothing ran.

A half-sent run within the grace window is resumed (the papers not yet sent); an older one is closed
as failed. A period missed entirely is delivered once if the one due rule
(:func:`bot.services.digests.timing.check_due`) says so, otherwise recorded as skipped and logged,
so it is neither sent late nor reported again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, timedelta

from bot.clock import Clock
from bot.services.digests.leases import Leases
from bot.services.digests.subscriptions import SubscriptionService, parse_stamp, subscription_schedule
from bot.services.digests.timing import Period, check_due
from storage.models import Subscription
from storage.repositories.digests import DigestRepository, DigestRun

log = logging.getLogger(__name__)


class DigestRecovery:
    def __init__(
        self,
        digests: DigestRepository,
        *,
        subscriptions: SubscriptionService,
        clock: Clock,
        grace: timedelta,
        leases: Leases,
    ) -> None:
        self.digests = digests
        self.subscriptions = subscriptions
        self.clock = clock
        self.grace = grace
        self.leases = leases

    def _stamp(self) -> str:
        return self.clock().astimezone(UTC).isoformat(timespec="seconds")

    async def runs_to_resume(self) -> list[DigestRun]:
        """Runs left ``claimed`` by a stopped or dead process (let go of, or their lease ran out; never
        this process's own): those within the grace window are returned to be resumed; older ones are
        closed as failed (too late to be useful), with a log line."""
        now = self.clock()
        resumable: list[DigestRun] = []
        for run in await self.digests.open_runs(takeable_by=self.leases.owner, now=self.leases.now()):
            if now - parse_stamp(run.claimed_at) <= self.grace:
                resumable.append(run)
            else:
                log.warning(
                    "digest run %s (subscription %s, period %s) was interrupted too long ago: giving up",
                    run.id,
                    run.subscription_id,
                    run.period_key,
                )
                await self.digests.finish_run(
                    run.id, "failed", "interrupted; beyond the grace window", at=self._stamp()
                )
        return resumable

    async def missed_periods(
        self, subs: Sequence[Subscription] | None = None
    ) -> list[tuple[Subscription, Period]]:
        """Periods that fell due while the bot was down (or before a process running the digests saw
        the subscription: ``subs``, else every active one) and were never claimed.

        Within the grace window they are returned (deliver them once now); older ones are recorded as
        ``skipped`` and logged, so they are neither sent late nor reported again.
        """
        now = self.clock()
        missed: list[tuple[Subscription, Period]] = []
        skipped: list[int] = []
        for sub in await self.subscriptions.active() if subs is None else subs:
            due = check_due(
                subscription_schedule(sub), now, self.grace, set_up_at=parse_stamp(sub.updated_at)
            )
            period = due.period
            if due.before_setup:
                continue  # due before the subscription was set up in this form
            if await self.digests.run_for(sub.id, period.key) is not None:
                continue
            if due.deliver:
                missed.append((sub, period))
                continue
            if await self.digests.claim_run(
                sub.id, period.key, status="skipped", detail="missed; beyond grace", at=self._stamp()
            ):
                skipped.append(sub.id)
                log.info(
                    "subscription %s missed its %s digest (due %s, %.1f h ago > %.1f h grace): skipped",
                    sub.id,
                    period.key,
                    period.due_utc.isoformat(),
                    due.late.total_seconds() / 3600,
                    self.grace.total_seconds() / 3600,
                )
        if skipped:  # one line, not one per subscriber, after a long stop of a big server
            shown = ", ".join(map(str, skipped[:5])) + (", …" if len(skipped) > 5 else "")
            log.warning(
                "%d subscription(s) missed a digest that fell due more than %.1f h ago (the grace period)"
                " while no process was sending: skipped, not sent late (subscriptions %s)",
                len(skipped),
                self.grace.total_seconds() / 3600,
                shown,
            )
        return missed
