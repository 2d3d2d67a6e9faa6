"""arXiv behind the `Source` interface: one category's papers submitted in the range, newest first,
through `export.arxiv.org/api/query` (the same requests, spacing and parser as `paperbot fetch arxiv`:
`bot.services.papers.arxiv_fetch`), paged by `start`; the page reaching papers older than the range
is the last. A listing's version (v2) is an update of the paper, not a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date

from bot.services.papers.arxiv_fetch import API_URL, PAGE_SIZE, REQUEST_SPACING
from bot.services.papers.arxiv_taxonomy import UnknownCategoryError, arxiv_category
from bot.services.papers.ingest.arxiv_atom import ArxivApiError, parse_atom
from bot.services.papers.sources.base import Cursor, SourceError, SourcePage
from bot.services.papers.sources.http import PoliteClient

SPACING = REQUEST_SPACING  # arXiv's API terms: one request every 3 seconds


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
    ) -> AsyncIterator[SourcePage]:
        start = int(cursor["start"]) if cursor else 0
        cutoff = since.isoformat()
        while True:
            params = {
                "search_query": f"cat:{self.category}",
                "sortBy": "submittedDate",
                "sortOrder": "descending",
                "start": str(start),
                "max_results": str(self.page_size),
            }
            response = await client.get(self.url, params)
            try:
                page = parse_atom(response.body, source=f"arxiv {self.category}", status=response.status)
            except ArxivApiError as error:
                raise SourceError(str(error)) from None
            entries = len(page.records) + len(page.rejected)
            fresh = [r for r in page.records if r.published is None or r.published >= cutoff]
            older = len(page.records) - len(fresh)
            problems = [
                f"{r.where(f'arxiv {self.category} start {start}')}: {r.reason}" for r in page.rejected
            ]
            start += entries
            more = entries > 0 and older == 0 and start < (page.total_results or 0)
            yield SourcePage(fresh, problems, {"start": start} if more else None, older)
            if not more:
                return
