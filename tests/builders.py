"""Builders every test folder shares (import them as ``from builders import ...``): one settable
clock, a bare bot, a paper; ratings stored as the outbox stores them; waiting for the digest jobs to be
done; an index compacted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.app import PaperBot
    from bot.services.digests.jobs import DigestScheduler
    from bot.settings import Settings
    from paperindex.index import BM25Index
    from paperindex.merges import MergeJob
    from paperindex.segments import Segment
    from storage.db import Database
    from storage.models import Paper, Signal
    from storage.repositories.feedback import Rated


class Clock:
    """A wall clock a test sets: what the services read as "now" (``open_services(clock=...)``, or a
    service's ``clock=``), moved with ``clock.now = ...``, ``set`` or ``advance``."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def set(self, now: datetime) -> None:
        self.now = now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def bare_bot(settings: Settings | None = None, services: Any = None) -> PaperBot:
    """A PaperBot on no store and without the Discord parts `bot.runtime.build_bot` attaches: its
    commands, tree and hooks, never started (``services``: whatever the test needs of them)."""
    from bot.app import PaperBot
    from bot.discord_limits import RequestPacer
    from bot.scheduler import ProcessScheduler
    from bot.settings import Settings

    return PaperBot(
        settings=settings or Settings(),
        services=services if services is not None else SimpleNamespace(),
        pacer=RequestPacer(),
        scheduler=ProcessScheduler(),
    )


def paper(paper_id: int = 1, **fields: Any) -> Paper:
    """A stored paper as a service returns it: a title, an abstract and two authors at ICML 2024;
    ``fields`` set the rest (every other one None)."""
    from storage.models import Paper

    values: dict[str, Any] = dict.fromkeys(Paper.__dataclass_fields__)
    values |= {
        "id": paper_id,
        "title": f"Paper number {paper_id}",
        "title_derived": False,
        "abstract": "An abstract.",
        "authors": ("A. Author", "B. Author"),
        "venue": "ICML 2024",
        "year": 2024,
        "added_at": "2024-01-01T00:00:00+00:00",
    }
    return Paper(**(values | fields))


class Ticker:
    """A monotonic clock a test moves (``ticker.now += 61``): what limits and retries read."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def stored_papers(db: Database, n: int = 3) -> list[int]:
    """``n`` papers ("Paper number 0", …) stored in ``db``; their ids in order."""
    from storage.models import PaperRecord
    from storage.repositories.papers import PaperRepository

    await PaperRepository(db).upsert_many(
        PaperRecord(title=f"Paper number {i}", abstract=f"Abstract {i} about topic {i} and more words {i}.")
        for i in range(n)
    )
    return [int(r[0]) for r in await db.fetchall("SELECT id FROM papers ORDER BY id")]


class Rater:
    """A person's 👍 👎 🔖 stored as the write-behind stores one (`FeedbackRepository.rate`), at the
    clock's time: like and dislike replace each other, a like or dislike while learning is paused is
    not recorded, a take-back always is."""

    def __init__(self, db: Database, *, clock: Callable[[], datetime] | None = None) -> None:
        from storage.repositories.feedback import FeedbackRepository

        self.feedback = FeedbackRepository(db)
        self.clock = clock or (lambda: datetime.now(UTC))

    async def set(self, user_id: int, paper_id: int, signal: Signal, *, guild_id: int | None = None) -> Rated:
        at = self.clock().astimezone(UTC).isoformat(timespec="seconds")
        return await self.feedback.rate(user_id, paper_id, signal, added=True, guild_id=guild_id, at=at)

    async def unset(self, user_id: int, paper_id: int, signal: Signal) -> Rated:
        return await self.feedback.rate(user_id, paper_id, signal, added=False, guild_id=None)


async def wait_idle(jobs: DigestScheduler) -> None:
    """Wait for the background work ``jobs`` started and for its deliveries in progress."""
    while jobs._tasks or jobs._active:
        await asyncio.gather(*list(jobs._tasks), return_exceptions=True)
        await jobs._idle.wait()


def compact(index: BM25Index) -> None:
    """Merge every segment of ``index`` into one, the postings of removed and replaced documents dropped,
    as the index's own merges do (after a merge in progress in another thread)."""

    def next_job() -> MergeJob[Segment] | None:
        segs = index._segments
        if len(segs) >= 2:
            return index._merge_job(segs[-2], segs[-1])
        if segs and len(index._dead) and not index._alive[segs[0].all_postings()].all():
            return index._merge_job(segs[0], None)
        return None

    with index._merging:
        while True:
            with index.lock:
                job = next_job()
            if job is None:
                return
            merged = job.build()
            with index.lock:
                index._install(job, merged)
