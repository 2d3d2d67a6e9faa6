"""arXiv behind the `Source` interface: one category's papers submitted in the range, newest first,
through `export.arxiv.org/api/query`, paged by `start`; the page reaching papers older than the range
is the last. A listing's version (v2) is an update of the paper, not a new one. `paperbot fetch
arxiv` (`bot.services.papers.arxiv_fetch`) reads its pages through this source too.

arXiv sometimes answers a page in the middle of a result set with no entries: it is asked again
after a backoff (6, 12, 24, 48 s); when the empty pages keep coming, the last page carries the
cursor of the one that stayed empty, so the next fetch resumes there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import date

from bot.services.papers.arxiv_taxonomy import UnknownCategoryError, arxiv_category
from bot.services.papers.ingest.arxiv_atom import ArxivApiError, parse_atom
from bot.services.papers.sources.base import Cursor, SourceError, SourcePage
from bot.services.papers.sources.http import BACKOFF_MAX, PoliteClient

API_URL = "https://export.arxiv.org/api/query"
PAGE_SIZE = 100
REQUEST_SPACING = 3.0  # seconds between requests: arXiv's API terms
MAX_RETRIES = 4  # of a failed request, and of an empty page inside the results
BACKOFF_BASE = 6.0  # first retry waits this long, then doubles (at most BACKOFF_MAX)


class ArxivSource:
    """One arXiv category (see the module docstring)."""

    def __init__(self, category: str, *, url: str = API_URL, page_size: int = PAGE_SIZE) -> None:
        try:
            self.category = arxiv_category(category)
        except UnknownCategoryError as unknown:
            raise SourceError(str(unknown)) from None
        self.url = url
        self.page_size = page_size
        self.name = f"arxiv:{self.category}"
        self.service = "arXiv's API"

    async def pages(
        self, client: PoliteClient, since: date, until: date, cursor: Cursor | None
    ) -> AsyncGenerator[SourcePage, None]:
        start = int(cursor["start"]) if cursor else 0
        cutoff = since.isoformat()
        empty_pages = 0
        while True:
            params = {
                "search_query": f"cat:{self.category}",
                "sortBy": "submittedDate",
                "sortOrder": "descending",
                "start": str(start),
                "max_results": str(self.page_size),
            }
            response = await client.get(self.url, params, what=self.category)
            try:
                page = parse_atom(response.body, source=f"arxiv {self.category}", status=response.status)
            except ArxivApiError as error:
                raise SourceError(str(error)) from None
            entries = len(page.records) + len(page.rejected)
            total = page.total_results or 0
            if entries == 0 and start < total:
                if empty_pages < MAX_RETRIES:
                    empty_pages += 1
                    await client.sleep(min(BACKOFF_BASE * 2 ** (empty_pages - 1), BACKOFF_MAX))
                    continue
                yield SourcePage([], [], {"start": start})  # still empty: the next fetch resumes here
                return
            empty_pages = 0
            fresh = [r for r in page.records if r.published is None or r.published >= cutoff]
            older = len(page.records) - len(fresh)
            problems = [
                f"{r.where(f'arxiv {self.category} start {start}')}: {r.reason}" for r in page.rejected
            ]
            start += entries
            more = entries > 0 and older == 0 and start < total
            yield SourcePage(fresh, problems, {"start": start} if more else None, older)
            if not more:
                return
