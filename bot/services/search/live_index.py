"""The search engine kept level with the store: loaded from its snapshot or built at start, then
following every paper any process commits, and saved again once a burst of changes is over."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Final

from paperindex.engine import TITLE_WEIGHT, SearchEngine
from storage.models import IndexRow
from storage.repositories.papers import IndexPosition, PaperRepository
from storage.store import StoreLocation, open_database

log = logging.getLogger(__name__)

#: Papers added to the search index under one hold of its lock (searches wait for it meanwhile).
INDEX_BATCH = 1000
#: A store this large is indexed by a child process at a first start (:meth:`LiveIndex.open`).
CHILD_BUILD_PAPERS: Final = 50_000


def index_fingerprint(position: IndexPosition) -> str:
    """What a snapshot holds: this store's papers up to change `seq`, that many, with this title weight,
    and their arXiv / OpenReview ids and DOIs (for autocomplete; snapshots saved before held none)."""
    return (
        f"store={position.store_id} seq={position.seq} papers={position.papers} title_weight={TITLE_WEIGHT} "
        "ids=arxiv,openreview,doi"
    )


async def _build(papers: PaperRepository, snapshot: Path | None) -> tuple[SearchEngine, IndexPosition]:
    """An engine over every stored paper, saved to ``snapshot`` (when given and writable)."""
    engine = SearchEngine()
    async with papers.index_pages_at() as (position, pages):
        async for rows in pages:  # a page at a time: never every paper's text at once
            await asyncio.to_thread(engine.add, rows)
    if snapshot is not None:
        try:
            await asyncio.to_thread(engine.save, snapshot, index_fingerprint(position))
        except OSError as error:
            log.warning("could not save the search snapshot %s: %s", snapshot, error)
    return engine, position


def _build_snapshot(store: StoreLocation, snapshot: Path) -> tuple[IndexPosition, str]:
    """In a child process: build the index of the store's papers and save it; the position it holds,
    and the child's peak resident memory, as the system tells it (for the log)."""

    async def build() -> IndexPosition:
        db = await open_database(store, migrate=False)
        try:
            _, position = await _build(PaperRepository(db), snapshot)
            return position
        finally:
            await db.close()

    position = asyncio.run(build())
    try:
        peak = next(
            line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM")
        )
    except (OSError, StopIteration):  # not Linux
        peak = "VmHWM: unknown"
    return position, peak.split(":", 1)[1].strip()


async def _build_in_child(store: StoreLocation, snapshot: Path) -> IndexPosition | None:
    """:func:`_build_snapshot` in a fresh process; None (logged) when it could not be done there."""
    log.info("building the search index in a child process (a first start over this store)")
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as child:
        try:
            position, peak = await asyncio.get_running_loop().run_in_executor(
                child, _build_snapshot, store, snapshot
            )
        except Exception:
            log.exception("could not build the search index in a child process: building it here")
            return None
    log.info(
        "the child process built the search index of %d papers (its peak resident memory: %s)",
        position.papers,
        peak,
    )
    return position


class LiveIndex:
    """``engine`` holds every stored paper up to ``position`` (the store's change sequence)."""

    def __init__(
        self, engine: SearchEngine, papers: PaperRepository, position: IndexPosition, snapshot: Path | None
    ) -> None:
        self.engine = engine
        self.papers = papers
        self.position = position
        self.snapshot = snapshot
        self._refreshing = asyncio.Lock()
        self._saved_seq = position.seq  # `open` loaded or saved the snapshot at this position

    @classmethod
    async def open(
        cls, papers: PaperRepository, snapshot: Path | None = None, *, store: StoreLocation | None = None
    ) -> LiveIndex:
        """The index over every stored paper: loaded from the snapshot when it was saved for exactly this
        store state, else built (and saved). With ``store`` (where ``papers`` are) a store of at least
        ``CHILD_BUILD_PAPERS`` papers is built and saved by a child process, and the snapshot read in
        place here: the build's temporaries (gigabytes at 1M papers) are freed in among what lives on,
        and the fragments kept a first start 0.5 GB larger than a later one for good."""
        started = time.perf_counter()
        position = await papers.index_position()
        engine = None
        if snapshot is not None:
            engine = await asyncio.to_thread(SearchEngine.load, snapshot, index_fingerprint(position))
        if (
            engine is None
            and snapshot is not None
            and store is not None
            and position.papers >= CHILD_BUILD_PAPERS
        ):
            built = await _build_in_child(store, snapshot)
            if built is not None:
                position = built
                engine = await asyncio.to_thread(SearchEngine.load, snapshot, index_fingerprint(position))
        if engine is None:
            engine, position = await _build(papers, snapshot)
            # the saved one is read in place: a first start then holds what a later one does
            if snapshot is not None:
                saved = await asyncio.to_thread(SearchEngine.load, snapshot, index_fingerprint(position))
                engine = saved or engine
        log.info("search index: %d papers in %.2fs", len(engine), time.perf_counter() - started)
        return cls(engine, papers, position, snapshot)

    async def refresh(self) -> int:
        """Index every paper added or changed since the index last looked: after `/paperadmin ingest`
        and the daily arXiv fetch, and whenever another process (`paperbot ingest`) committed papers.
        Returns how many papers that was.

        Follows the store's change sequence, so a paper committed while this runs is picked up next
        time, whatever its timestamps say. On an error (raised) the position stays where it was, and
        the next call indexes the same changes again (a paper indexed twice is replaced, not doubled).

        The papers go in `INDEX_BATCH` at a time: each batch holds the index's lock, and a search on
        the event loop waits for it, so one add of a whole ingest's papers (tens of thousands while
        `paperbot ingest` runs beside the bot) held every interaction for seconds on a busy machine.
        """
        async with self._refreshing:
            changes = await self.papers.changes_after(self.position.seq)
            if changes.changed:
                await asyncio.to_thread(self._index_in_batches, changes.changed)
            self.position = self.position._replace(seq=changes.seq, papers=len(self.engine))
        return len(changes.changed)

    def _index_in_batches(self, rows: list[IndexRow]) -> None:
        for start in range(0, len(rows), INDEX_BATCH):
            self.engine.add(rows[start : start + INDEX_BATCH])

    async def save_snapshot(self) -> bool:
        """Save the index if it holds more than the saved snapshot; True if saved.

        The snapshot records exactly what the index holds (store, change sequence, paper count), so
        the next start loads it only for the very same store state.
        """
        if self.snapshot is None or self._saved_seq == self.position.seq:
            return False
        async with self._refreshing:
            position = self.position
            try:
                await asyncio.to_thread(self.engine.save, self.snapshot, index_fingerprint(position))
            except OSError as error:
                log.warning("could not save the search snapshot %s: %s", self.snapshot, error)
                return False
            self._saved_seq = position.seq
            return True
