"""The papers the sandbox starts on: the newest papers of an arXiv category when asked (``paperbot start
--arxiv cs.LG``, or the categories of ``PAPERBOT_ARXIV_CATEGORIES``), else the shipped corpus.

The arXiv part is the fetch ``paperbot fetch arxiv`` runs (:mod:`bot.services.papers.arxiv_fetch`: the
same query, parser and merge), asked for one page of the category's newest submissions, and failing
fast: where arXiv cannot be reached or is busy, the sandbox says so at once and starts on the shipped
abstracts instead of retrying for a minute and a half as the daily fetch does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiohttp

from bot.services.papers.arxiv_fetch import (
    REQUEST_SPACING,
    USER_AGENT,
    AiohttpTransport,
    FetchSummary,
    HttpResponse,
    Transport,
    fetch_arxiv,
)
from storage.db import Database

#: how many of the category's newest papers the sandbox takes: about a day of cs.LG, in one request
NEWEST = 100
#: how long the sandbox waits for arXiv's answer before starting on the shipped corpus
TIMEOUT_S = 20.0
#: "every submission, however old": the page of the newest is what bounds the fetch
_ALL_DAYS = 36_500


class ArxivUnreachable(Exception):
    """arXiv did not answer (no network, a timeout, or busy); str() says what happened."""


@dataclass(frozen=True, slots=True)
class Listing:
    category: str
    summary: FetchSummary

    @property
    def papers(self) -> int:
        return self.summary.added + self.summary.merged + self.summary.unchanged

    def describe(self) -> str:
        papers = self.papers
        span = (
            f", submitted {self.summary.oldest} to {self.summary.newest}"
            if self.summary.oldest and self.summary.oldest != self.summary.newest
            else f", submitted {self.summary.newest}"
            if self.summary.newest
            else ""
        )
        return f"the {papers:,} newest {self.category} papers on arXiv{span}"


class _FailFast:
    """A transport that turns what the fetch would retry (a connection error, a timeout, 5xx, 429)
    into :class:`ArxivUnreachable`, so that the sandbox starts at once on the shipped corpus."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        try:
            response = await self._http(url, params)
        except (TimeoutError, OSError, aiohttp.ClientError) as error:
            raise ArxivUnreachable(f"{type(error).__name__}: {error}".rstrip(": ")) from None
        if response.status >= 500 or response.status == 429:
            raise ArxivUnreachable(f"arXiv answered HTTP {response.status}")
        return response


async def _polite_sleep(seconds: float) -> None:
    """The fetch's spacing between requests, never its backoff (that is a retry: fail fast instead)."""
    if seconds > REQUEST_SPACING:
        raise ArxivUnreachable("arXiv asked to wait before trying again")
    await asyncio.sleep(seconds)


async def fetch_newest(
    db: Database,
    category: str,
    *,
    count: int = NEWEST,
    http: Transport | None = None,
    sleep: Callable[[float], Awaitable[object]] = _polite_sleep,
) -> Listing:
    """Store the ``count`` newest papers of ``category`` (titles, authors, links). Raises
    :class:`ArxivUnreachable` when arXiv does not answer, ``ArxivFetchError`` for a category arXiv
    does not know."""
    if http is not None:
        summary = await fetch_arxiv(  # one page: the fetch stops once max_papers are in
            db, categories=[category], days=_ALL_DAYS, http=_FailFast(http), sleep=sleep,
            page_size=count, max_papers=1,
        )  # fmt: skip
        return Listing(category, summary)
    async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
        return await fetch_newest(
            db, category, count=count, http=AiohttpTransport(session, timeout=TIMEOUT_S), sleep=sleep
        )
