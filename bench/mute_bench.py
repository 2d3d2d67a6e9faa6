"""What a muted topic costs: the papers a phrase hides, found the first time (the index finds the papers
holding every word, their texts say whether the words stand together) and then kept, over the
multivenue corpus (35,712 papers, ../shared/data/multivenue).

    .venv/bin/python bench/mute_bench.py [--repeat 20]

Prints, for each phrase, the papers holding all its words, the papers holding the phrase, and the
time of the first match (cold) and of a person's whole muted set once kept (warm, median of
``--repeat``), and the time one new paper adds to a kept phrase.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_common import MULTIVENUE, load_average, multivenue_rows
from bot.services.people.mutes import MuteMatcher, mute_terms
from paperindex.engine import SearchEngine
from storage.models import Paper

PHRASES = (
    "reinforcement learning",
    "graph neural networks",
    "large language models",
    "diffusion",
    "kv cache",
)


def _paper(paper_id: int, title: str, abstract: str) -> Paper:
    return Paper(
        paper_id, title, False, abstract, (), None, None, None, None, None, None, None, None, None, None, None,
        None, "",
    )  # fmt: skip


class Texts:
    """The papers' titles and abstracts, in memory (the store's ``get_many``)."""

    def __init__(self, papers: dict[int, Paper]) -> None:
        self.papers = papers

    async def get_many(self, ids: Sequence[int]) -> dict[int, Paper]:
        return {i: self.papers[i] for i in ids if i in self.papers}


async def main(repeat: int) -> None:
    if not MULTIVENUE.exists():
        print(f"skipped: {MULTIVENUE} is absent")
        return
    rows = multivenue_rows()
    papers = {n: _paper(n, r.get("title") or "", r.get("abstract") or "") for n, r in enumerate(rows, 1)}
    engine = SearchEngine.build([(p.id, p.title, p.abstract or "") for p in papers.values()])
    print(f"{len(papers):,} papers; load {load_average()}")
    matcher = MuteMatcher(engine.index, Texts(papers))
    print("phrase | papers with every word | papers saying it | first match (ms)")
    for phrase in PHRASES:
        terms = mute_terms(phrase)
        start = time.perf_counter()
        found = await matcher.papers(terms)
        cold = (time.perf_counter() - start) * 1000
        every = len(matcher._holding_all(terms, 0)[1])
        print(f"{phrase} | {every:,} | {len(found):,} | {cold:.1f}")
    warm = []
    for _ in range(repeat):
        start = time.perf_counter()
        union: frozenset[int] = frozenset()
        for phrase in PHRASES:
            union |= await matcher.papers(mute_terms(phrase))
        warm.append((time.perf_counter() - start) * 1000)
    print(
        f"a person's {len(PHRASES)} mutes, kept: {statistics.median(warm):.2f} ms median ({len(union):,} papers)"
    )
    new_id = len(papers) + 1
    papers[new_id] = _paper(new_id, "Offline reinforcement learning", "A new one.")
    engine.add([(new_id, papers[new_id].title, "A new one.")])
    start = time.perf_counter()
    for phrase in PHRASES:
        await matcher.papers(mute_terms(phrase))
    print(
        f"after one new paper, all {len(PHRASES)} phrases followed it in {(time.perf_counter() - start) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    asyncio.run(main(parser.parse_args().repeat))
