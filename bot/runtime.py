"""The composition root: open the database, build every service, close them in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

from bot.services.digest import DigestService
from bot.services.feedback import FeedbackService
from bot.services.ingest.runner import ensure_shipped_corpus
from bot.services.privacy import PrivacyService
from bot.services.profile import ProfileService
from bot.services.recommender import Recommender
from bot.services.search import SearchEngine
from bot.settings import Settings
from storage.db import Database
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything the Discord layer and the CLI use; built once per process."""

    settings: Settings
    db: Database
    papers: PaperRepository
    search: SearchEngine
    # reactions, profiles, recommendations, forget-me (issue 5): built from db and search
    messages: PostedMessageRepository = field(init=False)
    feedback: FeedbackService = field(init=False)
    recommender: Recommender = field(init=False)
    profiles: ProfileService = field(init=False)
    privacy: PrivacyService = field(init=False)
    # digests and channel feeds (issue 6)
    digest: DigestService = field(init=False)

    def __post_init__(self) -> None:
        self.messages = PostedMessageRepository(self.db)
        self.feedback = FeedbackService(self.db)
        self.recommender = Recommender(self.db, self.search, self.search.index)
        self.profiles = self.recommender.profiles
        self.privacy = PrivacyService(self.db)
        self.digest = DigestService(
            self.db,
            papers=self.papers,
            recommender=self.recommender,
            grace=timedelta(hours=self.settings.digest_grace_hours),
        )

    async def refresh_index(self, *, since: str) -> int:
        """Put every paper added or changed since `since` (a `utcnow()` stamp) into the running index.

        Used after `/paperadmin ingest` and the daily arXiv fetch: new papers are searchable at once,
        without a rebuild.
        """
        ids = await self.papers.changed_since(since)
        if not ids:
            return 0
        rows = await self.papers.iter_index_rows(ids=ids)
        await asyncio.to_thread(self.search.add, rows)
        return len(rows)


async def build_search_engine(papers: PaperRepository) -> SearchEngine:
    started = time.perf_counter()
    rows = await papers.iter_index_rows()
    engine = await asyncio.to_thread(SearchEngine.build, rows)
    log.info("search index: %d papers in %.2fs", len(engine), time.perf_counter() - started)
    return engine


@contextlib.asynccontextmanager
async def open_services(settings: Settings, *, load_shipped_corpus: bool = True) -> AsyncIterator[Services]:
    """Open the store (migrating it), load the shipped corpus into an empty one, build the index."""
    db = await Database.open(settings.db_path)
    try:
        if load_shipped_corpus:
            summary = await ensure_shipped_corpus(db)
            if summary is not None:
                log.info("empty database: loaded the shipped corpus (%d papers)", summary.added)
        papers = PaperRepository(db)
        search = await build_search_engine(papers)
        yield Services(settings=settings, db=db, papers=papers, search=search)
    finally:
        await db.close()
