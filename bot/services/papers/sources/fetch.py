"""A source's papers into the store: the range to fetch, each page merged as `paperbot ingest` merges
(the same repository, so the same dedup across files and sources), resumable, and its state kept.

The range: from the day the last finished fetch of this source reached (one day of overlap: a day's
listing can fill in late, and what comes twice is merged, not duplicated), else the last `days` days
(`DEFAULT_DAYS` on a first fetch); `days` given explicitly wins. Each page's papers and the cursor of
the next page are written in one transaction (`source_fetches`), so a fetch killed at any point, or
stopped by an unreachable service, resumes at the next page on the next run (within `CURSOR_MAX_AGE`;
an older cursor is stale and the fetch starts over). A failure is recorded for `/paperadmin stats`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from bot.services.papers.sources.base import Source, SourceError
from bot.services.papers.sources.http import PoliteClient, SourceUnreachableError
from storage.db import Database
from storage.models import IngestSummary
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository

log = logging.getLogger(__name__)

DEFAULT_DAYS = 2
MAX_DAYS = 3650
CURSOR_MAX_AGE = timedelta(days=2)
MAX_PROBLEMS_LISTED = 50


@dataclass
class SourceFetchSummary:
    """What one fetch of one source did."""

    source: str
    since: str
    until: str
    requests: int = 0
    added: int = 0
    merged: int = 0
    unchanged: int = 0
    rejected: int = 0
    older: int = 0
    resumed: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        return self.added + self.merged + self.unchanged

    def as_ingest(self) -> IngestSummary:
        """The same counts as an ingest's (the exit status follows the same rules)."""
        return IngestSummary(
            added=self.added,
            merged=self.merged,
            unchanged=self.unchanged,
            rejected=self.rejected,
            problems=tuple(self.problems),
        )

    def describe(self) -> str:
        line = (
            f"{self.source} {self.since} to {self.until}: {self.added} added, {self.merged} merged, "
            f"{self.unchanged} unchanged, {self.rejected} rejected ({self.requests} requests)"
        )
        if self.older:
            line += f"; {self.older} older entries left out"
        if self.resumed:
            line += "; resumed an interrupted fetch"
        return line


def _now() -> datetime:
    return datetime.now(UTC)


def fetch_range(today: date, fetched_until: str | None, days: int | None) -> tuple[date, date]:
    """(since, until) of the next fetch (see the module docstring)."""
    if days is not None:
        if not 1 <= days <= MAX_DAYS:
            raise SourceError(f"days must be between 1 and {MAX_DAYS}, got {days}")
        return today - timedelta(days=days), today
    if fetched_until:
        try:
            last = date.fromisoformat(fetched_until)
        except ValueError:
            last = today - timedelta(days=DEFAULT_DAYS)
        return min(last - timedelta(days=1), today - timedelta(days=1)), today
    return today - timedelta(days=DEFAULT_DAYS), today


async def fetch_source(
    db: Database, source: Source, client: PoliteClient, *, days: int | None = None
) -> SourceFetchSummary:
    """Fetch `source` into the store; raises `SourceError` / `SourceUnreachableError` (recorded first)."""
    fetches = SourceFetchRepository(db)
    papers = PaperRepository(db)
    backfilled = await papers.backfill_title_keys()  # once per store: papers stored before these keys
    if backfilled:
        log.info("gave %d papers stored before their title + first-author key", backfilled)
    now = client.clock()
    state = await fetches.get(source.name)
    cursor = None
    started = now.isoformat(timespec="seconds")
    since, until = fetch_range(now.date(), state.fetched_until if state else None, days)
    if state and state.cursor and days is None:
        try:
            saved = json.loads(state.cursor)
            if now - datetime.fromisoformat(saved["started"]) <= CURSOR_MAX_AGE:
                since, until = date.fromisoformat(saved["since"]), date.fromisoformat(saved["until"])
                cursor, started = saved["page"], str(saved["started"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s: ignoring an unreadable cursor %r", source.name, state.cursor)
    summary = SourceFetchSummary(
        source.name, since.isoformat(), until.isoformat(), resumed=cursor is not None
    )
    try:
        async for page in source.pages(client, since, until, cursor):
            summary.rejected += len(page.problems)
            summary.older += page.older
            room = MAX_PROBLEMS_LISTED - len(summary.problems)
            summary.problems += page.problems[: max(room, 0)]
            async with db.transaction() as conn:
                counts = await papers.upsert_many(page.records, conn=conn)
                summary.added += counts.added
                summary.merged += counts.merged
                summary.unchanged += counts.unchanged
                if page.cursor is not None:
                    saved = {
                        "since": summary.since,
                        "until": summary.until,
                        "started": started,
                        "page": page.cursor,
                    }
                    await fetches.save_cursor(conn, source.name, json.dumps(saved))
                else:
                    await fetches.finish(
                        conn,
                        source.name,
                        until=summary.until,
                        at=client.clock().isoformat(timespec="seconds"),
                        records=summary.records + summary.rejected,
                        added=summary.added,
                    )
            log.info(
                "%s: a page of %d records, %d rejected: %d added, %d merged",
                source.name,
                len(page.records),
                len(page.problems),
                counts.added,
                counts.merged,
            )
    except (SourceError, SourceUnreachableError) as error:
        summary.requests = client.requests
        await fetches.failed(source.name, error=str(error), at=client.clock().isoformat(timespec="seconds"))
        raise
    summary.requests = client.requests
    return summary
