"""A source fetched over the network (the command line and the daily job)."""

from __future__ import annotations

import aiohttp

from bot.services.papers.arxiv_fetch import AiohttpTransport
from bot.services.papers.sources.fetch import SourceFetchSummary, fetch_source
from bot.services.papers.sources.http import USER_AGENT, PoliteClient
from bot.services.papers.sources.specs import SourceSpec
from storage.db import Database


async def fetch_live(db: Database, spec: SourceSpec, *, days: int | None = None) -> SourceFetchSummary:
    """`fetch_source` of the source `spec` names, through aiohttp, spaced as that service asks."""
    source = spec.build()
    async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
        client = PoliteClient(AiohttpTransport(session), service=source.service, spacing=spec.spacing)
        return await fetch_source(db, source, client, days=days)
