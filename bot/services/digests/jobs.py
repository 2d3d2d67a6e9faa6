"""Digest jobs on APScheduler 3.x: rebuilt from the subscriptions table at start, one job per subscription.

* The jobs live on the bot's one process scheduler (``bot.scheduler``), an ``AsyncIOScheduler`` with
  the default in-memory job store: the database is the source of truth and
  :meth:`DigestScheduler.sync_all` recreates every job at start (APScheduler's user guide: "if you
  always recreate your jobs at the start of your application, then you can probably go with the
  default (MemoryJobStore)").
* Stable ids ``digest:{subscription_id}``, ``replace_existing=True``, ``coalesce=True``,
  ``max_instances=1`` and a bounded ``misfire_grace_time``; a ``CronTrigger`` in the subscriber's own
  timezone, so DST keeps the local wall-clock time.
* The job claims its period in the database before sending (see ``bot.services.digests.delivery``),
  so a double fire — CronTrigger fires twice at an ambiguous fall-back time — sends once; whether a
  late fire still delivers is the one due rule (``schedule.check_due``).
* At start: interrupted runs are resumed, and a period missed while the bot was down is delivered
  once if still within the grace window, otherwise recorded as skipped and logged
  (``bot.services.digests.recovery``).
* A job fires at the subscription's own minute. When more digests are due in that minute than
  Discord's limits let go out in it, those set up last are moved a minute or more later
  (``SubscriptionService.moved``, worked out once per minute from the store, as the confirmation
  worked it out): a one-off job (``digest-later:``) sends each at its minute.
* Each job catches and logs its own errors (one failing subscriber never stops the others) and
  retries a failed run a few times. At most ``concurrency`` deliveries run at once (the Discord layer
  sizes it to Discord's limits and paces every request its sender makes), so thousands of digests
  due at 09:00 queue up — in turns between servers and people (``fairness``: a server's feeds hold at
  most half the places, and a digest of another server waits behind its own lane's work only).

Nothing here imports discord: the composition root passes the Discord sending adapter (a sender per
subscription) and ``wait_until_ready``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from apscheduler.job import Job
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from bot.clock import Clock
from bot.services.digests import Digests
from bot.services.digests.delivery import DeliveryOutcome, DigestInterruptedError, DigestSender, SentMessage
from bot.services.digests.fairness import FairSlots, lane_of
from bot.services.digests.subscriptions import parse_stamp, subscription_schedule
from bot.services.digests.timing import Period, check_due
from storage.models import Paper, Subscription
from storage.repositories.digests import DigestRun

log = logging.getLogger(__name__)

JOB_PREFIX = "digest:"
RETRY_PREFIX = "digest-retry:"
LATER_PREFIX = "digest-later:"
#: how long the digests moved later at one minute are remembered (longer than any move)
_MOVES_KEPT = timedelta(hours=3)

#: how a digest reaches a subscription's recipient: the Discord sending adapter, in the bot
SenderFactory = Callable[[Subscription], DigestSender]


def job_id(subscription_id: int) -> str:
    return f"{JOB_PREFIX}{subscription_id}"


#: seconds of scheduling at a rebuild between two turns of the event loop, so that a command answered
#: meanwhile waits that long at each of its steps. A count of subscriptions instead (25) took 20 ms on a
#: loaded 2-core machine, and the first search after a start at 10,000 subscriptions 1.8 s (0.9 s at 5)
SYNC_SLICE: Final = 0.003
#: the most a rebuild waits in all for people's commands to be answered (``busy_for``), so that a steady
#: stream of them delays the digests' jobs by seconds, never stops them
SYNC_MOST_DEFERRED: Final = 5.0
#: what a subscription's trigger depends on: its local time, zone, frequency and weekday
ScheduleKey = tuple[str, str, str, int]


def make_trigger(sub: Subscription) -> CronTrigger:
    """At the subscription's local time, in its zone."""
    schedule = subscription_schedule(sub)
    return CronTrigger(timezone=schedule.zone, **schedule.cron_fields())


@dataclass
class StartupReport:
    """What :meth:`DigestScheduler.recover` did at start."""

    resumed: list[DeliveryOutcome] = field(default_factory=list)
    caught_up: list[DeliveryOutcome] = field(default_factory=list)


class DigestScheduler:
    def __init__(
        self,
        digests: Digests,
        sender_for: SenderFactory,
        *,
        clock: Clock | None = None,
        wait_until_ready: Callable[[], Awaitable[object]] | None = None,
        concurrency: int = 4,
        misfire_grace: timedelta | None = None,
        retry_delay: timedelta = timedelta(minutes=5),
        max_retries: int = 3,
        scheduler: AsyncIOScheduler | None = None,
        on_idle: Callable[[], object] | None = None,
        idle_delay: float = 5.0,
        busy_for: Callable[[], float] | None = None,
    ) -> None:
        self.digests = digests
        #: how long the bot's foreground (a command being answered) asks the rebuild to wait
        self.busy_for = busy_for
        self.sender_for = sender_for
        self._clock = clock
        self.wait_until_ready = wait_until_ready
        grace = misfire_grace if misfire_grace is not None else digests.grace
        # Bounded: a late fire is still useful up to the grace window, never longer (and at least 1 min).
        self.misfire_grace_seconds = max(60, int(grace.total_seconds()))
        self.retry_delay = retry_delay
        self.max_retries = max_retries
        #: the process scheduler the jobs live on (one of its own when none is given; then this starts
        #: and stops it)
        self.scheduler = scheduler or AsyncIOScheduler(timezone=UTC)
        self._owns_scheduler = scheduler is None
        self._slots = FairSlots(max(1, concurrency), per_lane=max(1, concurrency // 2))
        self._attempts: dict[int, int] = {}
        #: the subscriptions whose jobs are on the scheduler, and the version (updated_at) each was made
        #: from; empty until start() and after stop(): then this process schedules nothing
        self._scheduled: dict[int, str] = {}
        self._running = False
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()
        #: called once the deliveries have all finished and none started for ``idle_delay`` seconds
        #: (the process gives back the memory a run of digests freed): once per busy spell, not per digest
        self._on_idle = on_idle
        self._idle_delay = idle_delay
        self._idle_call: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        #: the digests moved past each minute they fell due at, worked out once for all of them
        self._moves: dict[datetime, asyncio.Future[dict[int, timedelta]]] = {}

    def clock(self) -> datetime:
        """The injected clock, else the digests' own."""
        return self._clock() if self._clock is not None else self.digests.clock()

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self, *, recover: bool = True, in_background: bool = False) -> int:
        """Start the scheduler (inside the running loop), rebuild every job, then recover in the background.

        Returns the number of jobs scheduled. Recovery (resume + catch-up) waits for ``wait_until_ready``
        in a task of its own, so calling this from ``setup_hook`` never blocks the login. With
        ``in_background`` the jobs are rebuilt in that task too, once ready (returns 0): with thousands
        of subscriptions that takes a second or two of the event loop, which the gateway handshake would
        share, and anything due meanwhile is caught up by the recovery that follows.
        """
        if self._owns_scheduler and not self.scheduler.running:
            self.scheduler.start()
        self._running = True
        self.digests.delivery.resume_work()
        if in_background:
            self.spawn(self._sync_then_recover(recover), name="digest-startup")
            return 0
        count = await self.sync_all()
        if recover:
            self.spawn(self.recover(), name="digest-recovery")
        return count

    async def _sync_then_recover(self, recover: bool) -> None:
        if self.wait_until_ready is not None:
            await self.wait_until_ready()
        await self.sync_all()
        if recover:
            await self.recover()

    @contextlib.asynccontextmanager
    async def _in_flight(self) -> AsyncIterator[None]:
        self._active += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()
                self._when_idle()

    def _when_idle(self) -> None:
        """Call ``on_idle`` ``idle_delay`` seconds from now unless a delivery starts meanwhile."""
        if self._on_idle is None:
            return
        if self._idle_call is not None:
            self._idle_call.cancel()
        self._idle_call = asyncio.get_running_loop().call_later(self._idle_delay, self._still_idle)

    def _still_idle(self) -> None:
        self._idle_call = None
        if self._active == 0 and self._on_idle is not None:
            try:
                self._on_idle()
            except Exception:
                log.exception("the digests' idle hook failed")

    async def stop(self, *, wait_seconds: float = 10.0) -> None:
        """Graceful shutdown: deliveries stop at the next paper boundary (their runs resume at the next
        start), wait up to ``wait_seconds`` for them, then stop the scheduler. A message is never cut off
        mid-send, so a restart leaves nothing "in doubt"."""
        self.digests.delivery.request_stop()
        if self._active:
            try:
                await asyncio.wait_for(self._idle.wait(), wait_seconds)
            except TimeoutError:
                log.warning(
                    "%d digest(s) still sending after %.0f s; stopping anyway", self._active, wait_seconds
                )
        self.shutdown()

    def shutdown(self) -> None:
        """Cancel the background work started here and take the jobs off the scheduler (and stop the
        scheduler if it is this one's own)."""
        self._running = False
        if self._idle_call is not None:
            self._idle_call.cancel()
            self._idle_call = None
        for subscription_id in list(self._scheduled):
            self.unschedule(subscription_id)
        if self._owns_scheduler and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        for task in list(self._tasks):
            task.cancel()

    def spawn(self, coro: Awaitable[object], *, name: str) -> asyncio.Task[object]:
        """A background task that is kept referenced and whose failure is logged, never lost."""

        async def runner() -> object:
            return await coro

        task: asyncio.Task[object] = asyncio.get_running_loop().create_task(runner(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    # ---- jobs ----------------------------------------------------------------------------------

    async def sync_all(self) -> int:
        """Make the jobs exactly the active subscriptions (stale jobs removed). Returns how many."""
        subs = await self.digests.subscriptions.active()
        wanted = {sub.id for sub in subs}
        for job in self.scheduler.get_jobs():
            if job.id.startswith(JOB_PREFIX) and int(job.id[len(JOB_PREFIX) :]) not in wanted:
                self.unschedule(int(job.id[len(JOB_PREFIX) :]))
        for subscription_id in set(self._scheduled) - wanted:
            self.unschedule(subscription_id)
        # one trigger and first fire time per schedule, shared by the subscriptions that have it (most
        # of the rebuild's time at 10,000 subscriptions went to making and asking each one's own)
        shared: dict[ScheduleKey, tuple[CronTrigger, datetime | None]] = {}
        now = datetime.now(UTC)
        turned = time.perf_counter()
        deferred = 0.0
        for sub in subs:
            if time.perf_counter() - turned >= SYNC_SLICE:
                # let the gateway and commands run between slices; while a command is being answered,
                # let it run alone
                wait = max(0.0, min(self.busy_for(), SYNC_MOST_DEFERRED - deferred)) if self.busy_for else 0.0
                deferred += wait
                await asyncio.sleep(wait)
                turned = time.perf_counter()
            self._schedule_logged(sub, shared, now)
        log.info("digest scheduler: %d subscription jobs", len(self._scheduled))
        return len(self._scheduled)

    async def follow_store(self, *, every: float) -> None:
        """Run until cancelled: every `every` seconds, what other processes did meanwhile. Schedule the
        subscriptions they created or changed (a `/paper subscribe` answered by a gateway process) and
        drop the jobs of those removed — a new one whose period fell due before it was seen is
        delivered now — and resume the runs a process that died left half sent (its lease ran out)."""
        while True:
            await asyncio.sleep(every)
            if not self._running:
                continue
            try:
                await self._follow_subscriptions()
                runs = await self.digests.recovery.runs_to_resume()
                if runs:
                    log.info("resuming %d digest run(s) another process left half sent", len(runs))
                    await asyncio.gather(*(self.resume(run) for run in runs))
            except Exception:
                log.exception(
                    "could not follow the subscriptions and runs in the store; trying again shortly"
                )

    async def _follow_subscriptions(self) -> None:
        subs = await self.digests.subscriptions.active()
        wanted = {sub.id for sub in subs}
        for subscription_id in set(self._scheduled) - wanted:
            self.unschedule(subscription_id)
        changed = [sub for sub in subs if self._scheduled.get(sub.id) != sub.updated_at]
        for sub in changed:
            self._schedule_logged(sub)
        missed = await self.digests.recovery.missed_periods(changed) if changed else []
        if missed:
            await self.deliver_many(missed)

    def _schedule_logged(
        self,
        sub: Subscription,
        shared: dict[ScheduleKey, tuple[CronTrigger, datetime | None]] | None = None,
        now: datetime | None = None,
    ) -> None:
        try:
            if shared is None or now is None:
                self.schedule(sub)
                return
            key = (sub.time_local, sub.timezone, sub.frequency, sub.weekday)
            if key not in shared:
                trigger = make_trigger(sub)
                shared[key] = (trigger, trigger.get_next_fire_time(None, now))
            self.schedule(sub, *shared[key])
        except Exception:
            log.exception("could not schedule subscription %s", sub.id)
            log.debug("subscription %s: %s %s", sub.id, sub.time_local, sub.timezone)

    def schedule(
        self, sub: Subscription, trigger: CronTrigger | None = None, first_run: datetime | None = None
    ) -> Job | None:
        """Add or replace a subscription's job (removes it when the subscription is paused). Nothing
        while this process does not run the digests (before start(), after stop()): the process that
        does picks the subscription up from the store. ``trigger``: the subscription's own
        (:func:`make_trigger`), and ``first_run`` its next fire time, when the caller worked them out."""
        if not self._running:
            return None
        if not sub.active:
            self.unschedule(sub.id)
            return None
        first = {} if first_run is None else {"next_run_time": first_run}
        job = self.scheduler.add_job(
            self.run_job,
            trigger=trigger or make_trigger(sub),
            args=[sub.id],
            id=job_id(sub.id),
            name=f"digest for subscription {sub.id}",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=self.misfire_grace_seconds,
            **first,
        )
        self._scheduled[sub.id] = sub.updated_at
        return job

    def unschedule(self, subscription_id: int) -> bool:
        removed = False
        for jid in (
            job_id(subscription_id),
            f"{RETRY_PREFIX}{subscription_id}",
            f"{LATER_PREFIX}{subscription_id}",
        ):
            with contextlib.suppress(JobLookupError):
                self.scheduler.remove_job(jid)
                removed = True
        self._attempts.pop(subscription_id, None)
        self._scheduled.pop(subscription_id, None)
        return removed

    def next_run_time(self, subscription_id: int) -> datetime | None:
        job = self.scheduler.get_job(job_id(subscription_id))
        return None if job is None else job.next_run_time

    # ---- running ---------------------------------------------------------------------------------

    async def run_job(self, subscription_id: int) -> DeliveryOutcome | None:
        """The scheduled job: deliver the period that just fell due. Never raises."""
        fired_at = self.clock()
        try:
            sub = await self.digests.subscriptions.get(subscription_id)
            if sub is None or not sub.active:
                self.unschedule(subscription_id)
                return None
            due = check_due(
                subscription_schedule(sub),
                fired_at,
                self.digests.grace,
                set_up_at=parse_stamp(sub.updated_at),
            )
            period = due.period
            if due.before_setup:
                log.info("subscription %s: no period due since it was set up (fired %s)", sub.id, fired_at)
                return None
            if due.too_late:
                log.warning(
                    "subscription %s fired %s after its period %s: skipped", sub.id, fired_at, period.key
                )
                return None
            moved = await self._moved(sub, period)
            if moved and fired_at < period.due_utc + moved:
                self._deliver_later(sub, period, period.due_utc + moved)
                return None
            if self.wait_until_ready is not None:
                await self.wait_until_ready()
            return await self.deliver(sub, period)
        except Exception:
            log.exception("digest job for subscription %s failed before delivery", subscription_id)
            return None

    async def _moved(self, sub: Subscription, period: Period) -> timedelta:
        """How much later than ``period`` fell due this subscription's digest goes out: worked out once
        for every digest due at that minute (again for one set up since)."""
        instant = period.due_utc
        for old in [moment for moment in self._moves if moment < instant - _MOVES_KEPT]:
            del self._moves[old]
        moves = self._moves.get(instant)
        if moves is None or (
            moves.done()
            and (moves.cancelled() or moves.exception() is not None or sub.id not in moves.result())
        ):
            moves = asyncio.ensure_future(self.digests.subscriptions.moved_at(instant))
            self._moves[instant] = moves
        try:
            return (await asyncio.shield(moves)).get(sub.id, timedelta(0))
        except Exception:
            self._moves.pop(instant, None)
            raise

    def _deliver_later(self, sub: Subscription, period: Period, when: datetime) -> None:
        """Send ``period`` at ``when`` (a minute after it fell due or later: more was due then)."""
        self.scheduler.add_job(
            self.later_job,
            trigger=DateTrigger(run_date=when, timezone=UTC),
            args=[sub.id, period],
            id=f"{LATER_PREFIX}{sub.id}",
            name=f"digest for subscription {sub.id}, moved later",
            replace_existing=True,
            misfire_grace_time=self.misfire_grace_seconds,
        )
        log.info(
            "subscription %s: period %s moved to %s (more due then than Discord allows)",
            sub.id,
            period.key,
            when,
        )

    async def later_job(self, subscription_id: int, period: Period) -> DeliveryOutcome | None:
        """A digest moved past its minute: deliver the period it was moved from. Never raises."""
        try:
            sub = await self.digests.subscriptions.get(subscription_id)
            if sub is None or not sub.active:
                return None
            if self.wait_until_ready is not None:
                await self.wait_until_ready()
            return await self.deliver(sub, period)
        except Exception:
            log.exception("moved digest for subscription %s failed before delivery", subscription_id)
            return None

    async def deliver(self, sub: Subscription, period: Period | None = None) -> DeliveryOutcome | None:
        """One delivery, paced and guarded: errors are logged (and retried), never raised."""
        what = f"digest for subscription {sub.id} (period {period.key if period else '?'})"
        return await self._guarded(
            sub, lambda sender: self.digests.delivery.deliver_period(sub.id, sender, period=period), what
        )

    async def resume(self, run: DigestRun) -> DeliveryOutcome | None:
        sub = await self.digests.subscriptions.get(run.subscription_id)
        if sub is None:
            return await self.digests.delivery.resume(run, _NoSender())
        what = f"resuming digest run {run.id} (subscription {sub.id})"
        return await self._guarded(sub, lambda sender: self.digests.delivery.resume(run, sender), what)

    async def _guarded(
        self,
        sub: Subscription,
        send: Callable[[DigestSender], Awaitable[DeliveryOutcome]],
        what: str,
    ) -> DeliveryOutcome | None:
        """Run ``send`` with the subscription's sender in one of ``concurrency`` delivery slots, in turn
        with the other servers and people (its lane: :func:`~bot.services.digests.fairness.lane_of`).
        A failure is logged as ``what`` and retried later; a shutdown stops it quietly. Never raises."""
        async with self._slots.slot(lane_of(sub)), self._in_flight():
            try:
                outcome = await send(self.sender_for(sub))
            except DigestInterruptedError as stop:
                log.info("digest for subscription %s: %s", sub.id, stop)
                return None
            except Exception:
                log.exception("%s failed", what)
                self._schedule_retry(sub.id)
                return None
            self._attempts.pop(sub.id, None)
            self._log_outcome(sub, outcome)
            return outcome

    def _schedule_retry(self, subscription_id: int) -> None:
        attempt = self._attempts.get(subscription_id, 0) + 1
        if attempt > self.max_retries:
            log.error("subscription %s: giving up after %d retries", subscription_id, self.max_retries)
            self._attempts.pop(subscription_id, None)
            return
        self._attempts[subscription_id] = attempt
        if not self.scheduler.running:
            return
        when = self.clock() + self.retry_delay
        self.scheduler.add_job(
            self.retry_job,
            trigger=DateTrigger(run_date=when, timezone=UTC),
            args=[subscription_id],
            id=f"{RETRY_PREFIX}{subscription_id}",
            replace_existing=True,
            misfire_grace_time=self.misfire_grace_seconds,
        )
        log.info("subscription %s: retry %d scheduled at %s", subscription_id, attempt, when.isoformat())

    async def retry_job(self, subscription_id: int) -> None:
        """Resume the subscription's interrupted runs (the papers not yet sent). Never raises."""
        try:
            for run in await self.digests.repository.open_runs():
                if run.subscription_id == subscription_id:
                    await self.resume(run)  # (another process sending it keeps it)
        except Exception:
            log.exception("retry for subscription %s failed", subscription_id)

    async def deliver_many(self, subs: Iterable[tuple[Subscription, Period | None]]) -> list[DeliveryOutcome]:
        """Deliver several at once (bounded by the semaphore); one failure never stops the rest."""
        results = await asyncio.gather(*(self.deliver(sub, period) for sub, period in subs))
        return [outcome for outcome in results if outcome is not None]

    async def recover(self) -> StartupReport:
        """At start: resume runs a stopped process left unfinished, then catch up missed periods."""
        report = StartupReport()
        if self.wait_until_ready is not None:
            await self.wait_until_ready()
        try:
            runs = await self.digests.recovery.runs_to_resume()
        except Exception:
            log.exception("could not look for interrupted digests")
            runs = []
        for outcome in await asyncio.gather(*(self.resume(run) for run in runs)):
            if outcome is not None:
                report.resumed.append(outcome)
        try:
            missed = await self.digests.recovery.missed_periods()
        except Exception:
            log.exception("could not look for missed digests")
            missed = []
        if missed:
            log.info("catching up %d digest(s) missed while the bot was down", len(missed))
        report.caught_up = await self.deliver_many(missed)
        return report

    def _log_outcome(self, sub: Subscription, outcome: DeliveryOutcome) -> None:
        target = f"channel {sub.channel_id}" if sub.is_channel else f"user {sub.user_id}"
        if outcome.status in ("sent", "empty"):
            log.info(
                "digest %s for %s (subscription %s): %s, %d papers",
                outcome.period_key,
                target,
                sub.id,
                outcome.status,
                outcome.sent,
            )
        elif outcome.status == "unreachable":
            log.warning("digest for %s (subscription %s) paused: %s", target, sub.id, outcome.detail)
            self.unschedule(sub.id)
        else:
            log.info("digest for %s (subscription %s): %s", target, sub.id, outcome.status)


class _NoSender:
    """For runs whose subscription is gone: resume() closes them without sending."""

    async def send_header(self, text: str, *, nonce: str) -> SentMessage:  # pragma: no cover - never called
        raise RuntimeError("subscription removed")

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:  # pragma: no cover
        raise RuntimeError("subscription removed")

    async def send_nothing_today(self, text: str, *, nonce: str) -> SentMessage:  # pragma: no cover
        raise RuntimeError("subscription removed")

    async def finish_paper(self, message: SentMessage) -> None:  # pragma: no cover - never called
        raise RuntimeError("subscription removed")

    async def find_paper(self, paper_id: int) -> SentMessage | None:  # pragma: no cover - never called
        raise RuntimeError("subscription removed")
