"""Live arXiv: recent papers of some categories through the arXiv API, politely, resumably.

`paperbot fetch arxiv --category cs.LG --days 2` asks `export.arxiv.org/api/query` for
`cat:cs.LG` sorted by submission date, newest first, one page (`PAGE_SIZE` entries) per request, and
stops at the first page that reaches papers submitted before the cut-off. Politeness and failure:

- at most one request every `REQUEST_SPACING` (3) seconds, as arXiv's API terms ask, also between
  retries and categories;
- HTTP 5xx, 429, timeouts and connection errors are retried with exponential backoff (6, 12, 24,
  48 s); arXiv's occasional empty page in the middle of a result set is retried the same way;
- the arXiv error feed (HTTP 400, "incorrect id format …") is not retried: it is a bad query;
- a category is checked against arXiv's taxonomy (:mod:`arxiv_taxonomy`) before any request, and a
  machine that cannot reach arXiv at all (its name does not resolve, no route to it: offline) is
  told so at the first attempt (:class:`ArxivUnreachableError`) rather than after minutes of retries.

Each page is merged into the store exactly as `paperbot ingest` merges (same repository, same
rules) in one transaction together with the paging cursor (`app_state` key `arxiv:<category>`),
so a fetch killed at any point resumes from the next page on the next run instead of starting
over. A finished category clears its cursor and records `arxiv:last_fetch` (and
`arxiv:last_fetch:<category>`).

The requests, their pages read and the empty pages retried are the arXiv source's
(:class:`~bot.services.papers.sources.arxiv.ArxivSource`, what `PAPERBOT_SOURCES` `arxiv:CATEGORY`
fetches too); the spacing, the retries with backoff and the offline check are those of every source
(:class:`~bot.services.papers.sources.http.PoliteClient`), worded here as arXiv's own errors. What is
this module's own: several categories in one run, the cut-off of `--days`, at most `MAX_PAPERS` a
category, the cursor in `app_state` and the summary `paperbot fetch arxiv` prints. The
HTTP transport is injectable (`http`), and so are `sleep` and `clock`, so tests run on recorded
responses without a network and check the spacing and the backoff without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import aiohttp

from bot.errors import UserFacingError
from bot.services.papers.arxiv_taxonomy import UnknownCategoryError, arxiv_category
from bot.services.papers.sources.arxiv import API_URL as API_URL
from bot.services.papers.sources.arxiv import BACKOFF_BASE as BACKOFF_BASE
from bot.services.papers.sources.arxiv import MAX_RETRIES as MAX_RETRIES
from bot.services.papers.sources.arxiv import PAGE_SIZE as PAGE_SIZE
from bot.services.papers.sources.arxiv import REQUEST_SPACING as REQUEST_SPACING
from bot.services.papers.sources.arxiv import ArxivSource
from bot.services.papers.sources.base import SourceError

# the HTTP pieces arXiv's callers (the lookup, the sandbox, tests) import from here: their home is
# sources.http, where every source's polite client lives
from bot.services.papers.sources.http import AiohttpTransport as AiohttpTransport
from bot.services.papers.sources.http import HttpResponse as HttpResponse
from bot.services.papers.sources.http import PoliteClient, Wording
from bot.services.papers.sources.http import Transport as Transport
from storage.db import Database
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository
from storage.repositories.state import StateRepository

log = logging.getLogger(__name__)

MAX_PAPERS = 10_000  # per category and run: a guard against a runaway --days
CURSOR_MAX_AGE = timedelta(hours=24)  # an older cursor is stale: start over
LAST_FETCH_KEY = "arxiv:last_fetch"
USER_AGENT = "paperbot/0.1 (research paper digest bot; polite arXiv API client)"


class ArxivFetchError(UserFacingError):
    """The fetch could not finish (arXiv refused the query or kept failing); str() says why."""


class ArxivUnreachableError(ArxivFetchError):
    """arXiv could not be reached (offline, or it kept failing): nothing more was fetched, what was
    stored stays and the next run resumes."""


#: how `paperbot fetch arxiv` words a request that gave up (`{what}` is the category)
_ARXIV_WORDING = Wording(
    ArxivUnreachableError,
    offline="cannot reach arXiv ({failure}): this machine seems to be offline; nothing was fetched. "
    "Run it again once it has a network.",
    exhausted="arXiv did not answer for {what} after {attempts} attempts ({failure})",
)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _CategoryResult:
    category: str
    requests: int = 0
    added: int = 0
    merged: int = 0
    unchanged: int = 0
    rejected: int = 0
    newest: str | None = None
    oldest: str | None = None
    resumed_at: int | None = None
    complete: bool = True


@dataclass(frozen=True, slots=True)
class FetchSummary:
    """What a fetch did, per category and in total."""

    categories: tuple[str, ...]
    requests: int
    added: int
    merged: int
    unchanged: int
    rejected: int
    newest: str | None = None  # submission dates (YYYY-MM-DD) of the papers seen
    oldest: str | None = None
    resumed: tuple[str, ...] = ()  # categories that continued an interrupted fetch
    incomplete: tuple[str, ...] = ()  # categories stopped early; the next run resumes them
    details: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """A few lines for the terminal or an admin."""
        lines = [
            f"arXiv {' '.join(self.categories)}: {self.added} added, {self.merged} merged, "
            f"{self.unchanged} unchanged, {self.rejected} rejected ({self.requests} requests)"
        ]
        if self.newest and self.oldest:
            lines.append(f"  submitted {self.oldest} to {self.newest}")
        lines.extend(f"  {line}" for line in self.details)
        return "\n".join(lines)


class _Fetcher:
    def __init__(
        self,
        db: Database,
        http: Transport,
        sleep: Callable[[float], Awaitable[object]],
        clock: Callable[[], datetime],
        page_size: int,
        max_papers: int,
        url: str,
    ) -> None:
        self.db = db
        self.client = PoliteClient(
            http,
            service="arXiv",
            spacing=REQUEST_SPACING,
            retries=MAX_RETRIES,
            backoff=BACKOFF_BASE,
            sleep=sleep,
            clock=clock,
            wording=_ARXIV_WORDING,
        )
        self.sleep = sleep
        self.clock = clock
        self.page_size = page_size
        self.max_papers = max_papers
        self.url = url
        self.papers = PaperRepository(db)
        self.state = StateRepository(db)
        self.fetches = SourceFetchRepository(db)

    @property
    def requests(self) -> int:
        """HTTP requests made so far, retries included."""
        return self.client.requests

    async def fetch_category(self, category: str, days: int) -> _CategoryResult:
        result = _CategoryResult(category)
        key = f"arxiv:{category}"
        now = self.clock()
        start, cutoff = 0, (now - timedelta(days=days)).date().isoformat()
        started_at = now.isoformat(timespec="seconds")
        saved = await self.state.get(key)
        if saved:
            try:
                cursor = json.loads(saved)
                started = datetime.fromisoformat(cursor["started"])
                if now - started <= CURSOR_MAX_AGE and int(cursor["days"]) == days:
                    start, cutoff, started_at = int(cursor["start"]), str(cursor["cutoff"]), cursor["started"]
                    result.resumed_at = start
                    log.info("arXiv %s: resuming an interrupted fetch at entry %d", category, start)
            except (ValueError, KeyError, TypeError):
                log.warning("arXiv %s: ignoring an unreadable cursor %r", category, saved)

        source = ArxivSource(category, url=self.url, page_size=self.page_size)
        pages = source.pages(self.client, date.fromisoformat(cutoff), now.date(), {"start": start})
        requests = self.client.requests
        fetched = 0
        try:
            async with contextlib.aclosing(pages):
                async for page in pages:
                    result.requests = self.client.requests - requests
                    for record in page.records:
                        if record.published:
                            result.newest = max(result.newest or record.published, record.published)
                            result.oldest = min(result.oldest or record.published, record.published)
                    fetched += len(page.records)
                    finished = page.cursor is None or fetched >= self.max_papers
                    async with self.db.transaction() as conn:
                        counts = await self.papers.upsert_many(page.records, conn=conn)
                        if finished:
                            await self.state.delete(key, conn=conn)
                            stamp = self.clock().isoformat(timespec="seconds")
                            await self.state.set(LAST_FETCH_KEY, stamp, conn=conn)
                            await self.state.set(f"{LAST_FETCH_KEY}:{category}", stamp, conn=conn)
                            # what `/paperadmin stats` lists beside the other sources (the same name as
                            # `arxiv:CATEGORY` in PAPERBOT_SOURCES)
                            await self.fetches.finish(
                                conn,
                                source.name,
                                until=self.clock().date().isoformat(),
                                at=stamp,
                                records=result.added
                                + result.merged
                                + result.unchanged
                                + result.rejected
                                + len(page.problems)
                                + counts.added
                                + counts.merged
                                + counts.unchanged,
                                added=result.added + counts.added,
                            )
                        else:
                            assert page.cursor is not None
                            cursor = {
                                "start": int(page.cursor["start"]),
                                "cutoff": cutoff,
                                "days": days,
                                "started": started_at,
                            }
                            await self.state.set(key, json.dumps(cursor), conn=conn)
                    result.added += counts.added
                    result.merged += counts.merged
                    result.unchanged += counts.unchanged
                    result.rejected += len(page.problems)
                    log.info(
                        "arXiv %s: %d new enough, %d rejected, %d added, %d merged",
                        category,
                        len(page.records),
                        len(page.problems),
                        counts.added,
                        counts.merged,
                    )
                    if finished:
                        return result
        except SourceError as error:
            raise ArxivFetchError(str(error)) from None
        result.complete = False  # empty pages kept coming: the next run resumes at the page they took
        return result


async def fetch_arxiv(
    db: Database,
    *,
    categories: Sequence[str],
    days: int,
    http: Transport,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], datetime] = _now,
    page_size: int = PAGE_SIZE,
    max_papers: int = MAX_PAPERS,
    url: str = API_URL,
) -> FetchSummary:
    """Fetch the last `days` days of each category into the store (see the module docstring)."""
    try:
        wanted = list(dict.fromkeys(arxiv_category(c) for c in categories if c.strip()))
    except UnknownCategoryError as unknown:
        raise ArxivFetchError(str(unknown)) from None
    if not wanted:
        raise ArxivFetchError("name at least one arXiv category, e.g. cs.LG")
    if days < 1:
        raise ArxivFetchError("days must be at least 1")
    fetcher = _Fetcher(db, http, sleep, clock, page_size, max_papers, url)
    results = [await fetcher.fetch_category(category, days) for category in wanted]
    newest = max((r.newest for r in results if r.newest), default=None)
    oldest = min((r.oldest for r in results if r.oldest), default=None)
    details = []
    for r in results:
        line = f"{r.category}: {r.added} added, {r.merged} merged, {r.unchanged} unchanged in {r.requests} requests"
        if r.resumed_at is not None:
            line += f" (resumed at entry {r.resumed_at})"
        if not r.complete:
            line += " (arXiv kept returning empty pages; the next run resumes here)"
        details.append(line)
    return FetchSummary(
        categories=tuple(wanted),
        requests=fetcher.requests,
        added=sum(r.added for r in results),
        merged=sum(r.merged for r in results),
        unchanged=sum(r.unchanged for r in results),
        rejected=sum(r.rejected for r in results),
        newest=newest,
        oldest=oldest,
        resumed=tuple(r.category for r in results if r.resumed_at is not None),
        incomplete=tuple(r.category for r in results if not r.complete),
        details=tuple(details)
        if len(results) > 1 or any(r.resumed_at is not None or not r.complete for r in results)
        else (),
    )


async def fetch_arxiv_live(db: Database, *, categories: Sequence[str], days: int) -> FetchSummary:
    """`fetch_arxiv` over the network (the CLI and the daily job)."""
    async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
        return await fetch_arxiv(
            db, categories=categories, days=days, http=AiohttpTransport(session), url=API_URL
        )


async def last_fetch(db: Database) -> str | None:
    """When the last arXiv fetch finished (ISO-8601 UTC), or None if there has been none."""
    return await StateRepository(db).get(LAST_FETCH_KEY)
