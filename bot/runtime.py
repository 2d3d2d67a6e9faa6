"""The composition root: open the database, build every service, close them in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from bot.services.digest import DigestService
from bot.services.feedback import FeedbackService
from bot.services.ingest.runner import ensure_shipped_corpus
from bot.services.privacy import PrivacyService
from bot.services.profile import ProfileService
from bot.services.recommender import Recommender
from bot.services.search import SearchEngine, corpus_fingerprint
from bot.settings import Settings
from storage.db import Database, utcnow
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
    #: papers changed at or after this `utcnow()` stamp may not be in the index yet
    index_stamp: str = field(default_factory=utcnow)

    def __post_init__(self) -> None:
        self.messages = PostedMessageRepository(self.db)
        self.feedback = FeedbackService(self.db)
        self.recommender = Recommender(self.db, self.search, self.search.index)
        self.profiles = self.recommender.profiles
        self.privacy = PrivacyService(self.db, search_retention_days=self.settings.search_retention_days)
        self.digest = DigestService(
            self.db,
            papers=self.papers,
            recommender=self.recommender,
            grace=timedelta(hours=self.settings.digest_grace_hours),
        )

    async def refresh_changed(self) -> int:
        """Index what changed since the last look (e.g. `paperbot ingest` run beside the bot)."""
        since, self.index_stamp = self.index_stamp, utcnow()
        try:
            return await self.refresh_index(since=since)
        except Exception:
            self.index_stamp = since  # try the same window again next time
            log.exception("could not refresh the search index")
            return 0

    async def refresh_index(self, *, since: str) -> int:
        """Put every paper added or changed since `since` (a `utcnow()` stamp) into the running index.

        Used after `/paperadmin ingest`, the daily arXiv fetch, and periodically for papers another
        process (`paperbot ingest`) stored: new papers become searchable without a rebuild. The snapshot
        is saved again so the next start need not rebuild either.
        """
        ids = await self.papers.changed_since(since)
        if not ids:
            return 0
        rows = await self.papers.iter_index_rows(ids=ids)
        await asyncio.to_thread(self.search.add, rows)
        snapshot = snapshot_path(self.settings)
        if snapshot is not None:
            everything = await self.papers.iter_index_rows()
            try:
                await asyncio.to_thread(self.search.save, snapshot, corpus_fingerprint(everything))
            except OSError as error:
                log.warning("could not save the search snapshot %s: %s", snapshot, error)
        return len(rows)


def snapshot_path(settings: Settings) -> Path | None:
    """Where the search index is saved between runs: beside the database (None for an in-memory one)."""
    if str(settings.db_path) == ":memory:":
        return None
    return settings.db_path.with_name(settings.db_path.name + ".search-index")


async def build_search_engine(papers: PaperRepository, snapshot: Path | None = None) -> SearchEngine:
    """The index over every stored paper: loaded from the snapshot when it matches the store, else built."""
    started = time.perf_counter()
    rows = await papers.iter_index_rows()
    if snapshot is None:
        engine = await asyncio.to_thread(SearchEngine.build, rows)
    else:
        engine = await asyncio.to_thread(SearchEngine.load_or_build, rows, snapshot)
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
        stamp = utcnow()  # before reading: a paper stored while the index builds is picked up later
        search = await build_search_engine(papers, snapshot_path(settings))
        yield Services(settings=settings, db=db, papers=papers, search=search, index_stamp=stamp)
    finally:
        await db.close()
