"""One arXiv paper by its id, fetched when someone names a paper the store does not have yet.

A person waits for the answer, so this is quick to give up: one request (``id_list``), a short
timeout, one retry on a 5xx or 429, and at least :data:`~bot.services.papers.arxiv_fetch.REQUEST_SPACING`
between any two requests of this process (arXiv's API terms). The paper is merged into the store as
`paperbot fetch arxiv` merges it; :class:`ArxivUnavailable` says why nothing was stored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import aiohttp

from bot.errors import UserFacingError
from bot.services.papers.arxiv_fetch import (
    REQUEST_SPACING,
    USER_AGENT,
    AiohttpTransport,
    HttpResponse,
    Transport,
)
from bot.services.papers.ingest.arxiv_atom import ArxivApiError, parse_atom
from storage.db import Database
from storage.models import Paper
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

LOOKUP_TIMEOUT = 8.0  # seconds a request may take: the person is waiting
RETRY_AFTER = 2.0


class ArxivUnavailable(UserFacingError):
    """arXiv could not be asked, or did not know the id; str() says which, for the person."""


class ArxivLookup:
    """Fetches single papers from arXiv's API into the store, one request at a time."""

    def __init__(
        self,
        db: Database,
        *,
        url: str,
        http: Transport | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.papers = PaperRepository(db)
        self.url = url
        self._http = http
        self._sleep = sleep
        self._turn = asyncio.Lock()
        self._last_request = -REQUEST_SPACING

    async def fetch(self, arxiv_id: str) -> Paper:
        """The paper with this arXiv id, stored (merged with what the store has) and returned."""
        async with self._turn:
            body = await self._get(arxiv_id)
        try:
            page = parse_atom(body, source=f"arXiv {arxiv_id}")
        except (ArxivApiError, ValueError) as error:
            raise ArxivUnavailable(f"arXiv did not return arXiv {arxiv_id} ({error}).") from None
        records = [r for r in page.records if r.arxiv_id == arxiv_id]
        if not records:
            raise ArxivUnavailable(f"arXiv has no paper arXiv {arxiv_id}.")
        await self.papers.upsert_many(records[:1])
        paper = await self.papers.find_by_external(arxiv_id)
        if paper is None:  # pragma: no cover - the upsert above stores or merges it
            raise ArxivUnavailable(f"arXiv {arxiv_id} could not be stored.")
        log.info("fetched arXiv %s as paper %d", arxiv_id, paper.id)
        return paper

    async def _get(self, arxiv_id: str) -> bytes:
        params = {"id_list": arxiv_id, "max_results": "1"}
        failure = ""
        for attempt in range(2):
            if attempt:
                await self._sleep(RETRY_AFTER)
            wait = self._last_request + REQUEST_SPACING - time.monotonic()
            if wait > 0:
                await self._sleep(wait)
            self._last_request = time.monotonic()
            try:
                response = await self._request(params)
            except (TimeoutError, OSError, aiohttp.ClientError) as error:
                failure = type(error).__name__
                continue
            if response.status >= 500 or response.status == 429:
                failure = f"HTTP {response.status}"
                continue
            return response.body
        raise ArxivUnavailable(f"arXiv could not be reached ({failure}).")

    async def _request(self, params: dict[str, str]) -> HttpResponse:
        if self._http is not None:
            return await self._http(self.url, params)
        async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
            return await AiohttpTransport(session, timeout=LOOKUP_TIMEOUT)(self.url, params)
