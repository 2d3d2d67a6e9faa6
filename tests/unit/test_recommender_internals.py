"""What the fast recommender reads from the index: per-document term weights and term ids."""

from __future__ import annotations

import numpy as np
import pytest

from bot.services.index import BM25Index
from bot.services.search import SearchEngine

DOCS = {
    10: ["kv", "cache", "cache", "quantiz"],
    11: ["robot", "polici", "gradient", "robot", "robot"],
    12: ["graph", "neural", "network", "messag"],
    13: ["kv", "cache", "attent", "kernel", "memori"],
}


def test_doc_weights_are_each_terms_one_word_bm25_score() -> None:
    """Weight of (document, term) == the document's score for a query of that one term."""
    index = BM25Index()
    index.add(list(DOCS), list(DOCS.values()))
    indptr, ids, weights = index.doc_weights([13, 10, 11])
    assert list(np.diff(indptr)) == [len(set(DOCS[d])) for d in (13, 10, 11)]
    terms = sorted({t for doc in DOCS.values() for t in doc})
    id_of = dict(zip(terms, index.term_ids(terms).tolist(), strict=True))
    assert index.term_ids(["never-seen"]).tolist() == [-1]
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
