"""The bot's one process scheduler: every timed job and every loop that runs beside the gateway.

An APScheduler 3.x ``AsyncIOScheduler`` (in memory: every job is recreated at start) holds the digest
jobs (one per subscription, :mod:`bot.services.digests.jobs`), the daily arXiv fetch and the daily
prune of old searches; following the store (indexing papers another process commits, seconds
later) is a loop it starts and cancels with the rest. ``PaperBot`` owns it: it starts in
``setup_hook`` and stops in ``close()``, after the digests stopped between two papers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC

from apscheduler.job import Job
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

log = logging.getLogger(__name__)

ARXIV_JOB_ID = "arxiv:daily"
SOURCES_JOB_ID = "sources:daily"
PRUNE_JOB_ID = "privacy:prune"
CLUB_JOB_ID = "club:steps"
#: how often the leader looks for reading-group steps that fell due (a poll to open, a winner to
#: announce, a thread to remind)
CLUB_EVERY_SECONDS = 30


class ProcessScheduler:
    def __init__(self) -> None:
        #: where the timed jobs live (the digest jobs too)
        self.jobs = AsyncIOScheduler(timezone=UTC)
        self._loops: dict[str, asyncio.Task[None]] = {}

    def start(self) -> None:
        """Start running the jobs (inside the running event loop)."""
        if not self.jobs.running:
            self.jobs.start()

    def daily(
        self,
        job_id: str,
        job: Callable[[], Awaitable[object]],
        *,
        time_utc: str,
        misfire_grace_seconds: int,
    ) -> Job:
        """``job`` once a day at HH:MM UTC: one instance at a time, and a late start within the grace
        still runs it."""
        hour, minute = (int(part) for part in time_utc.split(":"))
        return self.jobs.add_job(
            job,
            CronTrigger(hour=hour, minute=minute, timezone=UTC),
            id=job_id,
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=misfire_grace_seconds,
        )

    def daily_fetch(self, job: Callable[[], Awaitable[object]], *, time_utc: str) -> Job:
        """The daily arXiv fetch (a late start within an hour still runs)."""
        return self.daily(ARXIV_JOB_ID, job, time_utc=time_utc, misfire_grace_seconds=3600)

    def daily_sources(self, job: Callable[[], Awaitable[object]], *, time_utc: str) -> Job:
        """The daily fetch of `PAPERBOT_SOURCES` (a late start within an hour still runs)."""
        return self.daily(SOURCES_JOB_ID, job, time_utc=time_utc, misfire_grace_seconds=3600)

    def daily_prune(self, job: Callable[[], Awaitable[object]], *, time_utc: str = "04:00") -> Job:
        """Delete data past its retention (old search listings) once a day."""
        return self.daily(PRUNE_JOB_ID, job, time_utc=time_utc, misfire_grace_seconds=6 * 3600)

    def every(self, job_id: str, job: Callable[[], Awaitable[object]], *, seconds: float) -> Job:
        """``job`` every ``seconds`` (one instance at a time; a late run is run once, not caught up)."""
        return self.jobs.add_job(
            job,
            IntervalTrigger(seconds=seconds, timezone=UTC),
            id=job_id,
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=int(seconds * 10),
        )

    def loop(self, name: str, run: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``run`` (a coroutine that loops until cancelled) beside the jobs, until :meth:`stop`."""

        async def runner() -> None:
            await run()

        task = asyncio.get_running_loop().create_task(runner(), name=name)
        self._loops[name] = task
        return task

    async def stop_loop(self, name: str) -> None:
        """Cancel one loop and wait for it to end (nothing if it is not running)."""
        task = self._loops.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def remove_daily_jobs(self) -> None:
        """Take the daily arXiv fetch, the prune and the reading groups' steps off the scheduler (another process runs them now)."""
        for job_id in (ARXIV_JOB_ID, SOURCES_JOB_ID, PRUNE_JOB_ID, CLUB_JOB_ID):
            with contextlib.suppress(JobLookupError):
                self.jobs.remove_job(job_id)

    async def stop_loops(self) -> None:
        """Cancel the loops and wait for them to end."""
        loops, self._loops = list(self._loops.values()), {}
        for task in loops:
            task.cancel()
        for task in loops:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def stop(self) -> None:
        """Cancel the loops and stop the jobs (a job running now is not waited for)."""
        await self.stop_loops()
        if self.jobs.running:
            self.jobs.shutdown(wait=False)
