"""Searches go on while segments merge: a merge holds no lock a search needs, and what searches see
during and after it are rank-bm25's exact scores over every document added so far.

Each test holds a merge at its start (in the worker thread that added the papers, as the bot's index
refresh does) and searches, removes and adds from the test's own thread meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from builders import compact
from rank_bm25 import BM25Okapi

import paperindex.index as index_module
import paperindex.titles as titles_module
from paperindex.documents import Document as IndexRow
from paperindex.engine import SearchEngine, document_tokens, query_weights
from paperindex.index import BM25Index

WORDS = [
    "cache",
    "quantization",
    "attention",
    "kernel",
    "memory",
    "graph",
    "neural",
    "network",
    "policy",
    "gradient",
    "robot",
    "diffusion",
    "image",
    "sampling",
    "decoding",
    "speculative",
    "token",
    "language",
    "model",
    "retrieval",
    "dense",
    "sparse",
    "index",
    "transformer",
    "layer",
    "pruning",
    "distillation",
    "federated",
    "privacy",
    "optimizer",
    "convergence",
    "bandit",
    "reward",
    "agent",
    "planning",
    "molecule",
    "protein",
    "fold",
    "vision",
    "segmentation",
    "detection",
]
HELD = 30.0  # seconds a step may wait for the other thread before the test fails (a hang guard)


class HeldMerge:
    """Wraps a merge function so that its first call waits at the start until :meth:`release`."""

    def __init__(self, real: Callable[..., Any], *, holds: Callable[..., bool] = lambda *_: True) -> None:
        self.real, self.holds = real, holds
        self.started, self.released = threading.Event(), threading.Event()

    def __call__(self, *args: Any) -> Any:
        if not self.started.is_set() and self.holds(*args):
            self.started.set()
            assert self.released.wait(HELD), "the test never let the merge go on"
        return self.real(*args)

    def release(self) -> None:
        self.released.set()


def corpus(n: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[str(w) for w in rng.choice(WORDS, size=int(rng.integers(1, 30)))] for _ in range(n)]


def scores_by_id(index: BM25Index, query: list[str]) -> dict[int, float]:
    """The index's score of every live document for ``query``."""
    scores = index.score_array(query)
    alive = index.alive
    return dict(zip(index.slot_ids[alive].tolist(), scores[alive].tolist(), strict=True))


def rank_bm25_by_id(docs: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """rank-bm25's scores over ``docs`` in their order (the order the index holds them in)."""
    reference = BM25Okapi(list(docs.values()))
    return dict(zip(docs, reference.get_scores(query).tolist(), strict=True))


@pytest.fixture
def adder() -> Iterator[Callable[[Callable[[], None]], threading.Thread]]:
    """Runs a function in a worker thread, joined (and its error raised) at the test's end."""
    threads: list[tuple[threading.Thread, list[BaseException]]] = []

    def start(work: Callable[[], None]) -> threading.Thread:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                work()
            except BaseException as error:  # surfaced by the fixture
                errors.append(error)

        thread = threading.Thread(target=run, daemon=True)
        threads.append((thread, errors))
        thread.start()
        return thread

    yield start
    for thread, errors in threads:
        thread.join(HELD)
        assert not thread.is_alive(), "the merging thread never finished"
        assert errors == []


QUERIES = [["cache", "quantization"], ["robot", "policy", "policy", "gradient"], ["graph"], ["never-seen"]]


def test_the_index_answers_exactly_while_a_merge_is_held(
    monkeypatch: pytest.MonkeyPatch, adder: Callable[[Callable[[], None]], threading.Thread]
) -> None:
    docs = corpus(400, seed=3)
    live = dict(enumerate(docs))
    index = BM25Index()
    index.add(range(300), docs[:300])
    held = HeldMerge(index_module.merge)
    monkeypatch.setattr(index_module, "merge", held)

    adding = adder(lambda: index.add(list(range(300, 400)), docs[300:]))  # 100 to 300: a merge is due
    try:
        assert held.started.wait(HELD)
        assert index.lock.acquire(blocking=False), "the merge holds the lock searches take"
        index.lock.release()
        assert index.n_segments == 2  # the new papers are in, their segment not yet merged
        for query in QUERIES:
            assert scores_by_id(index, query) == rank_bm25_by_id(live, query)
        top = index.top_k(["cache", "quantization"], 10)
        expected = rank_bm25_by_id(live, ["cache", "quantization"])
        assert top == sorted(((i, s) for i, s in expected.items() if s > 0), key=lambda p: (-p[1], p[0]))[:10]

        # Removing, replacing and adding meanwhile only wait for the lock, not for the merge.
        index.remove([5])
        del live[5]
        replacement = ["robot", "robot", "policy", "cache"]
        index.add([17], [replacement])
        del live[17]
        live[17] = replacement  # a replaced document moves last, as rebuilding would put it
        index.add([400], [["graph", "neural", "network"]])
        live[400] = ["graph", "neural", "network"]
        for query in QUERIES:
            assert scores_by_id(index, query) == rank_bm25_by_id(live, query)
    finally:
        held.release()
    adding.join(HELD)
    assert not adding.is_alive()

    assert index.n_segments == 2  # the held merge, then the two one-paper segments added meanwhile
    assert all(seg.impacts is not None for seg in index._segments)  # merged with impacts: top k stays bounded
    for query in QUERIES:
        assert scores_by_id(index, query) == rank_bm25_by_id(live, query)
    compact(index)
    assert index.n_segments == 1
    assert index.n_postings == sum(len(set(doc)) for doc in live.values())  # the removed ones' dropped
    for query in QUERIES:
        assert scores_by_id(index, query) == rank_bm25_by_id(live, query)


def rows(n: int, seed: int, first_id: int = 1) -> list[IndexRow]:
    titles, abstracts = corpus(n, seed), corpus(n, seed + 1)
    return [
        IndexRow(first_id + k, " ".join(title[:8]), " ".join(abstract), ("Ada Lovelace",), "TestConf", 2024)
        for k, (title, abstract) in enumerate(zip(titles, abstracts, strict=True))
    ]


@pytest.mark.parametrize("held_merge", ["postings", "titles"])
def test_a_search_completes_while_the_engine_merges(
    held_merge: str,
    monkeypatch: pytest.MonkeyPatch,
    adder: Callable[[Callable[[], None]], threading.Thread],
) -> None:
    """The bot's path: a worker thread adds a batch and merges; /paper search and autocomplete on
    another thread answer meanwhile, over every paper added, with rank-bm25's scores."""
    old, new = rows(300, seed=11), rows(100, seed=21, first_id=301)
    engine = SearchEngine.build(old)
    if held_merge == "postings":
        held = HeldMerge(index_module.merge)
        monkeypatch.setattr(index_module, "merge", held)
    else:  # a title segment spanning more than the new batch is a merge of two
        held = HeldMerge(
            titles_module._build_title_segment, holds=lambda _, start, stop: stop - start > len(new)
        )
        monkeypatch.setattr(titles_module, "_build_title_segment", held)

    adding = adder(lambda: engine.add(new))
    try:
        assert held.started.wait(HELD)
        reference = BM25Okapi([document_tokens(r.title, r.abstract) for r in old + new])
        for query in ["cache quantization", "robot policy gradient", new[7].title]:
            expected = sum(
                (w * reference.get_scores([t]) for t, w in query_weights(query).items()), np.zeros(400)
            )
            results = engine.search(query, limit=10)
            order = sorted(range(400), key=lambda i: (-expected[i], i))[:10]
            assert [h.paper_id for h in results.hits] == [i + 1 for i in order]
            assert [h.score for h in results.hits] == pytest.approx([expected[i] for i in order], abs=1e-9)
        assert new[7].paper_id in [pid for pid, _ in engine.autocomplete(new[7].title)]
    finally:
        held.release()
    adding.join(HELD)
    assert engine.index.n_segments == 1
    assert [h.paper_id for h in engine.search(new[7].title, limit=1).hits] == [new[7].paper_id]
    assert new[7].paper_id in [pid for pid, _ in engine.autocomplete(new[7].title)]
