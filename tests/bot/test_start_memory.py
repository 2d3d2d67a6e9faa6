"""A later start holds no copy of the paper table in Python objects, and computes nothing it saved.

The bot starts over a store it has started on before: it loads the search snapshot and the paper space
saved beside the database, reads the author names and the papers' dates and titles. What that leaves
allocated, and its peak, is measured with tracemalloc per paper of a store the test fills itself;
the ceilings hold with a margin today. Before, a later start recomputed the paper space (a peak of
6.6 KB a paper here, over 1 GB at 100k) and kept every paper's (id, published, year, title) row of the
first read of ranking's facts, five Python objects a paper, in the store's reading thread; and until
the snapshot's strings stayed packed (paperindex.packed), every title, author list, external id and
index term was a Python string, and the author directory dicts of them.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc
from pathlib import Path

import pytest

from bot.runtime import Services, open_services, space_path
from bot.settings import Settings
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository
from storage.store import StoreLocation, open_database

PAPERS = 3000
#: Measured at 3,000 papers, a paper: 2.8 blocks and 646 B kept, a peak of 1,032 B (the index's arrays,
#: the author directory's, the top k's impacts). With every string a Python object (main at dd468df):
#: 12.8 blocks and 1,600 B kept, a peak of 1,741 B; before the paper space was saved and ranking's facts
#: read in pages: 18.5 blocks and 2,668 B kept, a peak of 6,562 B.
KEPT_BLOCKS_PER_PAPER = 4.0
KEPT_BYTES_PER_PAPER = 900
PEAK_BYTES_PER_PAPER = 1400


def _records(n: int) -> list[PaperRecord]:
    """Papers whose words follow a field's: titles from a few hundred words, so that the vocabulary
    grows with the papers as a real one does (about 3 terms a paper at 100k), not by a term a word."""
    rng = random.Random(7)
    words = [
        f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{k}" for k in range(3000)
    ]
    topics, methods = words[:40], words[40:80]
    people = [f"Author {k} Surname{k % 97}" for k in range(1500)]
    return [
        PaperRecord(
            title=f"{rng.choice(methods)} {rng.choice(topics)} for {rng.choice(topics)} {rng.choice(topics)}",
            abstract=" ".join(rng.choices(words, weights=[1 / (k + 1) for k in range(3000)], k=120)),
            authors=tuple(rng.sample(people, 3)),
            venue=rng.choice(["ICML", "NeurIPS", "ICLR"]),
            year=rng.choice([2022, 2023, 2024]),
            published=f"{rng.choice([2022, 2023, 2024])}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
            arxiv_id=f"24{k // 1000:02d}.{k % 1000:05d}",
            source="test",
        )
        for k in range(n)
    ]


async def _started(services: Services) -> None:
    """Until the work beside the start is done: the paper space placed, the author names read, and
    ranking's facts (dates, title keys) read as the first digest reads them."""
    space = services.recommender.space
    while services._placing.locked() or space.placed < services.search.index.n_slots:
        await services.place_papers()
        await asyncio.sleep(0.01)
    await services.authors.refresh()
    await services.recommender.facts.sync()


async def test_a_later_start_keeps_no_python_object_per_paper_and_recomputes_nothing(tmp_path: Path) -> None:
    store = StoreLocation.parse(str(tmp_path / "papers.db"))
    async with await open_database(store) as db:
        await PaperRepository(db).upsert_many(_records(PAPERS))
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings, load_shipped_corpus=False) as services:  # the first start saves
        await _started(services)
        assert len(services.search) == PAPERS
    saved = space_path(settings)
    assert saved is not None
    assert saved.exists()

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        async with open_services(settings, load_shipped_corpus=False) as services:
            await _started(services)
            gc.collect()
            after = tracemalloc.take_snapshot()
            _, peak = tracemalloc.get_traced_memory()
            assert len(services.search) == PAPERS
    finally:
        tracemalloc.stop()
    grown = after.compare_to(before, "filename")
    kept_blocks = sum(stat.count_diff for stat in grown) / PAPERS
    kept_bytes = sum(stat.size_diff for stat in grown) / PAPERS
    where = ", ".join(
        f"{s.traceback[0].filename.rsplit('/', 2)[-1]} {s.size_diff / PAPERS:.0f} B" for s in grown[:5]
    )
    assert kept_blocks <= KEPT_BLOCKS_PER_PAPER, f"{kept_blocks:.1f} blocks a paper kept ({where})"
    assert kept_bytes <= KEPT_BYTES_PER_PAPER, f"{kept_bytes:.0f} B a paper kept ({where})"
    assert peak / PAPERS <= PEAK_BYTES_PER_PAPER, f"a peak of {peak / PAPERS:.0f} B a paper ({where})"


@pytest.fixture(autouse=True)
def _no_foreign_tracing() -> None:
    if tracemalloc.is_tracing():
        pytest.skip("another tool traces allocations already")
