"""What the fast recommender reads from the index: per-document term weights and term ids."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from builders import Rater, compact

from bot.services.recommend.profile import indexed_vector
from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from paperindex.index import BM25Index
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository

DOCS = {
    10: ["kv", "cache", "cache", "quantiz"],
    11: ["robot", "polici", "gradient", "robot", "robot"],
    12: ["graph", "neural", "network", "messag"],
    13: ["kv", "cache", "attent", "kernel", "memori"],
}


@pytest.mark.parametrize("segments", [1, 2])
def test_doc_weights_are_each_terms_one_word_bm25_score(segments: int) -> None:
    """Weight of (document, term) == the document's score for a query of that one term."""
    index = BM25Index()
    filler = {100 + i: [f"w{i}", f"w{i + 1}", "kv"] for i in range(30)}
    index.add([10, 11, 12, *filler], [DOCS[10], DOCS[11], DOCS[12], *filler.values()])
    index.add([13], [DOCS[13]])  # a second segment: documents are gathered across segments
    if segments == 1:
        compact(index)
    assert index.n_segments == segments
    indptr, ids, weights = index.doc_weights([13, 10, 11])
    assert list(np.diff(indptr)) == [len(set(DOCS[d])) for d in (13, 10, 11)]
    terms = sorted({t for doc in DOCS.values() for t in doc})
    id_of = dict(zip(terms, index.term_ids(terms).tolist(), strict=True))
    assert index.term_ids(["never-seen"]).tolist() == [-1]
    assert index.doc_freqs(index.term_ids(["kv", "robot", "never-seen"])).tolist() == [
        index.df("kv"),
        1,
        0,
    ]
    for n, doc_id in enumerate((13, 10, 11)):
        lo, hi = indptr[n], indptr[n + 1]
        got = dict(zip(ids[lo:hi].tolist(), weights[lo:hi].tolist(), strict=True))
        assert set(got) == {id_of[t] for t in DOCS[doc_id]}
        for term in set(DOCS[doc_id]):
            assert got[id_of[term]] == pytest.approx(index.scores({term: 1.0})[doc_id], rel=1e-12)
    empty_indptr, empty_ids, _ = index.doc_weights([])
    assert empty_indptr.tolist() == [0]
    assert len(empty_ids) == 0
    with pytest.raises(KeyError):
        index.doc_weights([99])


def test_weighted_without_matched_terms_ranks_the_same() -> None:
    """matched=False skips the readable words only: same papers, same scores, same order."""
    engine = SearchEngine.build(
        [
            (1, "KV cache quantization", "We quantize the key value cache.", (), None, 2024),
            (2, "Cache eviction", "Which tokens of the cache to keep.", (), None, 2023),
            (3, "Robot locomotion", "Policy gradients for robots.", (), None, 2021),
        ]
    )
    query = {t: 1.0 for t in engine.validate_query("kv cache quantization")}
    full = engine.weighted(query, limit=5)
    bare = engine.weighted(query, limit=5, matched=False)
    assert [(h.paper_id, h.score) for h in full] == [(h.paper_id, h.score) for h in bare]
    assert full[0].matched_terms
    assert all(h.matched_terms == () for h in bare)


# -- the recommender's memory of papers and its re-rank ------------------------------------------

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
USER = 5

PAPERS = [
    (
        "Grasping objects with reinforcement learning",
        "A robot arm learns grasping of cluttered objects with reinforcement learning and tactile feedback.",
        2023,
    ),
    (
        "Tactile grasping for robot arms",
        "Tactile sensing guides a robot arm grasping cluttered objects; reinforcement learning fine-tunes the grasp.",
        2022,
    ),
    (
        "Reinforcement learning for board games",
        "Reinforcement learning agents master board games: reinforcement learning with self-play and search in games.",
        2022,
    ),
    (
        "Graph neural networks for molecules",
        "Message passing graph neural networks predict molecular properties from atom graphs.",
        2022,
    ),
    (
        "KV cache quantization",
        "We quantize the key value cache of transformers to 2 bits for long context inference.",
        2024,
    ),
    (
        "Language model pretraining at scale",
        "Scaling laws for pretraining language models on web text.",
        2021,
    ),
    ("Protein structure prediction", "Predicting protein folding from amino acid sequences.", 2021),
    ("Federated optimisation", "Clients train a shared model without sending their data to a server.", 2023),
    ("Diffusion models for images", "Denoising diffusion generates images from noise step by step.", 2023),
    ("Speech recognition with transducers", "Streaming speech recognition with neural transducers.", 2020),
]


@pytest.fixture
async def product(db: Database) -> tuple[Recommender, Rater, SearchEngine, dict[str, int]]:
    papers = PaperRepository(db)
    await papers.upsert_many(PaperRecord(title=t, abstract=a, year=y, venue="TestConf") for t, a, y in PAPERS)
    rows = await db.fetchall("SELECT id, title FROM papers")
    ids = {str(r[1]): int(r[0]) for r in rows}
    engine = SearchEngine.build(await papers.iter_index_rows())
    return (
        Recommender(db, engine, engine.index, clock=lambda: NOW),
        Rater(db, clock=lambda: NOW),
        engine,
        ids,
    )


def test_liked_paper_vectors_keep_shared_distinctive_words_at_unit_length() -> None:
    """A word no other paper has finds nothing: it is left out; the rest is scaled to length 1."""
    engine = SearchEngine.build([(i + 1, t, a, (), None, y) for i, (t, a, y) in enumerate(PAPERS)])
    vector = indexed_vector(1, engine.index, top_k=40, shown=engine.vocabulary.form)
    assert "tactil" in vector.weights  # shared with paper 2
    assert "clutter" in vector.weights
    assert "feedback" not in vector.weights  # only paper 1 says it
    assert sum(w * w for w in vector.weights.values()) == pytest.approx(1.0)
    assert vector.words["tactil"] == "tactile"
    assert len(indexed_vector(1, engine.index, top_k=2).weights) == 2


async def test_a_like_lifts_the_paper_closest_to_it_over_a_stronger_keyword_match(product) -> None:  # type: ignore[no-untyped-def]
    """Topic alone: the paper repeating the topic words wins and the liked paper's neighbour is not
    among the first two; after a like, that neighbour is (the typed words stay the interest's prior,
    so the paper repeating them may keep its place), and its reason names the liked paper."""
    recommender, feedback, _, ids = product
    await recommender.profiles.add_topic(USER, "reinforcement learning")
    games, tactile = ids["Reinforcement learning for board games"], ids["Tactile grasping for robot arms"]
    before = [p.paper_id for p in await recommender.recommend(USER, count=5, mark_shown=False)]
    assert before[0] == games
    assert tactile not in before[:2]
    await feedback.set(USER, ids["Grasping objects with reinforcement learning"], "like")
    after = await recommender.recommend(USER, count=3, mark_shown=False)
    lifted = next(p for p in after[:2] if p.paper_id == tactile)
    assert "like: Grasping objects with reinforcement learning" in lifted.reason


async def test_dates_and_titles_are_read_once_and_again_only_for_changed_papers(
    product, db: Database
) -> None:  # type: ignore[no-untyped-def]
    """The first ranking reads every indexed paper's date and title (a page of ids at a time); later
    ones read nothing, until a paper is re-indexed (changed): then that paper alone, and its new date
    counts."""
    recommender, _, engine, ids = product
    every = sorted(engine.index.slot_ids[: engine.index.n_slots].tolist())
    reads: list[object] = []
    original = recommender.facts.papers.dates_and_titles

    async def counted(paper_ids=None):  # type: ignore[no-untyped-def]
        reads.append(None if paper_ids is None else sorted(paper_ids))
        return await original(paper_ids)

    recommender.facts.papers.dates_and_titles = counted  # type: ignore[method-assign]
    first = {
        p.paper_id: p.score for p in await recommender.recommend(None, count=3, topics=["graph molecules"])
    }
    again = {
        p.paper_id: p.score for p in await recommender.recommend(None, count=3, topics=["graph molecules"])
    }
    assert reads == [every]
    assert first == again
    graphs = ids["Graph neural networks for molecules"]
    await db.execute("UPDATE papers SET published = '2026-02-28' WHERE id = ?", (graphs,))
    engine.add(await PaperRepository(db).iter_index_rows(ids=[graphs]))  # as refresh_changed does
    newer = {
        p.paper_id: p.score for p in await recommender.recommend(None, count=3, topics=["graph molecules"])
    }
    assert reads == [every, [graphs]]
    assert newer[graphs] > first[graphs]  # published yesterday: full recency instead of 2022's


async def test_learning_inputs_is_the_three_reads_in_one(product, db: Database) -> None:  # type: ignore[no-untyped-def]
    """Topics (oldest first), reactions (oldest first) and every paper not to show again, in one read."""
    recommender, feedback, _, ids = product
    repo, users = recommender.feedback, recommender.profiles
    await recommender.profiles.add_topic(USER, "reinforcement learning")
    await recommender.profiles.add_topic(USER, "graph molecules")
    await feedback.set(USER, ids["KV cache quantization"], "like")
    await feedback.set(USER, ids["Diffusion models for images"], "dislike")
    shown = {p.paper_id for p in await recommender.recommend(USER, count=2)}  # marks two papers shown
    assert len(shown) == 2
    sent = next(
        pid
        for pid in ids.values()
        if pid not in shown and pid not in {ids["KV cache quantization"], ids["Diffusion models for images"]}
    )
    await db.execute("INSERT INTO digest_sent (user_id, paper_id, sent_at) VALUES (?, ?, 'x')", (USER, sent))
    topics, signals, seen = await repo.learning_inputs(USER)
    assert topics == await users.topics(USER) == ["reinforcement learning", "graph molecules"]
    assert signals == await repo.signals_for(USER)
    assert seen == await repo.seen_ids(USER)
    assert len(seen) == 5
    assert await repo.learning_inputs(USER + 1) == ([], [], set())
