"""BM25Index gives exactly rank-bm25's BM25Okapi scores, including after incremental adds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from builders import compact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from paperindex import segments
from paperindex.index import BM25Index

# A small vocabulary makes terms found in more than half the documents (negative idf, floored to
# epsilon · average idf) common; "unknown" never occurs in a corpus.
VOCAB = [f"t{i}" for i in range(8)]
term = st.sampled_from(VOCAB)
document = st.lists(term, min_size=0, max_size=12)


def reference_order(scores: np.ndarray, corpus: list[list[str]], query: list[str]) -> list[int]:
    """Documents holding a query term, by rank-bm25 score descending, then id (= position)."""
    matched = [i for i, doc in enumerate(corpus) if set(doc) & set(query)]
    return sorted(matched, key=lambda i: (-scores[i], i))


@st.composite
def corpus_and_batches(draw: st.DrawFn) -> tuple[list[list[str]], list[int]]:
    corpus = draw(st.lists(document, min_size=1, max_size=14))
    if not any(corpus):  # rank-bm25 divides by the vocabulary size
        corpus[0] = [draw(term)]
    cuts = sorted(draw(st.lists(st.integers(0, len(corpus)), max_size=3)))
    return corpus, cuts


def build(corpus: list[list[str]], cuts: list[int]) -> BM25Index:
    index = BM25Index()
    bounds = [0, *cuts, len(corpus)]
    for lo, hi in itertools.pairwise(bounds):
        index.add(list(range(lo, hi)), corpus[lo:hi])
    return index


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=corpus_and_batches(),
    queries=st.lists(
        st.lists(st.one_of(term, st.just("unknown")), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ),
)
def test_scores_equal_rank_bm25_for_every_document(
    data: tuple[list[list[str]], list[int]], queries: list[list[str]]
) -> None:
    corpus, cuts = data
    index = build(corpus, cuts)  # added in up to four batches
    reference = BM25Okapi(corpus)  # built once over the union
    assert len(index) == len(corpus)
    for query in queries:  # repeated terms add again, as in rank-bm25
        expected = reference.get_scores(query)
        got = index.scores(query)
        ours = np.array([got.get(i, 0.0) for i in range(len(corpus))])
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9)
        dense = index.score_array(query)
        np.testing.assert_allclose(dense, expected, rtol=0, atol=1e-9)
        ranked = index.top_k(query, len(corpus))
        assert [doc for doc, _ in ranked] == reference_order(expected, corpus, query)
        for doc, score in ranked:
            assert score == pytest.approx(expected[doc], abs=1e-9)
    for word in VOCAB:
        if word in reference.idf:
            assert index.idf(word) == pytest.approx(reference.idf[word], abs=1e-12)
        else:
            assert index.idf(word) == 0.0


@settings(max_examples=150, deadline=None)
@given(
    corpus=st.lists(document, min_size=2, max_size=10),
    replaced=st.lists(st.tuples(st.integers(0, 9), document), min_size=1, max_size=3),
    query=st.lists(st.one_of(term, st.just("unknown")), min_size=1, max_size=5),
)
def test_replacing_documents_equals_rebuilding(
    corpus: list[list[str]], replaced: list[tuple[int, list[str]]], query: list[str]
) -> None:
    index = BM25Index()
    index.add(list(range(len(corpus))), corpus)
    live = dict(enumerate(corpus))  # id → document, in rank-bm25 corpus order
    for doc_id, doc in replaced:
        doc_id %= len(corpus)
        index.add([doc_id], [doc])
        del live[doc_id]
        live[doc_id] = doc  # a replaced document moves last
    if not any(live.values()):
        return
    reference = BM25Okapi(list(live.values()))
    expected = dict(zip(live, reference.get_scores(query), strict=True))
    got = index.scores(query)
    for doc_id, score in expected.items():
        assert got.get(doc_id, 0.0) == pytest.approx(score, abs=1e-9)
    assert len(index) == len(corpus)
    compact(index)  # compaction drops the replaced postings without changing anything
    got = index.scores(query)
    for doc_id, score in expected.items():
        assert got.get(doc_id, 0.0) == pytest.approx(score, abs=1e-9)


@pytest.mark.parametrize("stretch", [1 << 22, 7])
def test_scores_are_bit_identical_on_a_real_sized_corpus(
    stretch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also when a merge places its postings a few at a time (:data:`paperindex.segments.MERGE_STRETCH`)."""
    monkeypatch.setattr(segments, "MERGE_STRETCH", stretch)
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, 401)  # Zipf-like: some terms in most documents
    weights /= weights.sum()
    corpus = [list(rng.choice(words, size=int(rng.integers(5, 80)), p=weights)) for _ in range(600)]
    index = BM25Index()
    for lo in range(0, 600, 97):  # seven batches: segments get merged along the way
        index.add(list(range(lo, min(lo + 97, 600))), corpus[lo : lo + 97])
    reference = BM25Okapi(corpus)
    for n in range(30):
        query = list(rng.choice(words[:60], size=1 + n % 6))
        assert np.array_equal(index.score_array(query), reference.get_scores(query))


def test_weighted_query_is_the_weighted_sum_of_term_scores() -> None:
    corpus = [["a", "b", "b"], ["b", "c"], ["c", "d", "d", "d"], ["a", "e"], ["e"]]
    index = BM25Index()
    index.add(range(5), corpus)  # type: ignore[arg-type]
    reference = BM25Okapi(corpus)
    weights = {"a": 2.0, "c": 0.5, "d": -1.0, "zzz": 3.0}
    expected = sum(w * reference.get_scores([t]) for t, w in weights.items())
    got = index.scores(weights)
    np.testing.assert_allclose([got.get(i, 0.0) for i in range(5)], expected, atol=1e-12)
    # Only documents with a positively weighted term are ranked: doc 2 has c (+) and d (−).
    ranked = index.top_k(weights, 10)
    assert {doc for doc, _ in ranked} == {0, 1, 2, 3}
    assert [doc for doc, _ in ranked] == sorted({0, 1, 2, 3}, key=lambda i: (-expected[i], i))
    assert ranked[-1][0] == 2
    assert ranked[-1][1] < 0


def test_top_k_filters_excludes_pages_and_breaks_ties_by_id() -> None:
    index = BM25Index()
    docs = [["x", "y"], ["x"], ["x", "y"], ["z"], ["x", "y"], ["q"]]
    index.add([50, 40, 30, 20, 10, 60], docs)
    index.add(range(100, 110), [["filler"]] * 10)  # keeps x and y rare (positive idf)
    ranked = index.top_k(["x", "y"], 10)
    # 50, 30 and 10 tie (same document): id ascending.
    assert [doc for doc, _ in ranked] == [10, 30, 50, 40]
    assert index.rank(["x", "y"], 2, offset=1) == (ranked[1:3], 4)
    assert [d for d, _ in index.top_k(["x"], 10, exclude={10, 999})] == [40, 30, 50]
    assert [d for d, _ in index.top_k(["x"], 10, allowed={30, 20})] == [30]
    mask = np.zeros(index.n_slots, dtype=bool)
    mask[index.slot_of(50)] = True
    assert [d for d, _ in index.top_k(["x", "y"], 10, allowed=mask)] == [50]
    assert index.top_k(["nothing"], 10) == []
    assert index.rank(["x"], 0) == ([], 4)
    with pytest.raises(ValueError, match="allowed mask"):
        index.top_k(["x"], 3, allowed=np.ones(3, dtype=bool))


def test_top_k_ranks_matches_even_when_every_idf_is_negative() -> None:
    # Two documents sharing every term: idf < 0 and a negative mean, so scores are negative.
    corpus = [["a", "b"], ["a", "b", "b"]]
    index = BM25Index()
    index.add([1, 2], corpus)
    expected = BM25Okapi(corpus).get_scores(["b"])
    assert (expected < 0).all()
    ranked = index.top_k(["b"], 5)
    assert [doc for doc, _ in ranked] == [1 + int(i) for i in np.argsort(-expected, kind="stable")]
    assert [score for _, score in ranked] == pytest.approx(sorted(expected, reverse=True))


def test_holding_finds_the_live_documents_with_every_term_whatever_their_idf() -> None:
    """A term in exactly half the documents has idf 0 (its documents score 0): they hold it all the
    same; a removed document holds nothing, and ``start`` skips the slots before it."""
    index = BM25Index()
    index.add([1, 2, 3, 4], [["a", "b"], ["a", "c"], ["c"], ["d", "a", "b"]])
    assert index.idf("b") == 0.0
    assert index.holding(["a", "b"]).tolist() == [True, False, False, True]
    assert index.holding(["b"], start=2).tolist() == [False, True]
    assert not index.holding(["a", "unknown"]).any()
    index.remove([4])
    assert index.holding(["a", "b"]).tolist() == [True, False, False, False]


def test_many_small_adds_keep_few_segments_and_exact_scores() -> None:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(50)]
    corpus = [list(rng.choice(words, size=int(rng.integers(1, 20)))) for _ in range(300)]
    index = BM25Index()
    for i, doc in enumerate(corpus):
        index.add([i], [doc])
        if i % 50 == 0:  # queries between adds see the new N and avgdl
            query = list(rng.choice(words, 3))
            assert np.array_equal(index.score_array(query), BM25Okapi(corpus[: i + 1]).get_scores(query))
    assert index.n_segments <= 6
    query = ["w1", "w2", "w2", "w49"]
    assert np.array_equal(index.score_array(query), BM25Okapi(corpus).get_scores(query))


def test_document_accessors() -> None:
    index = BM25Index()
    index.add([7, 8, 9], [["a", "b", "a"], ["b", "c"], ["c"]])
    assert len(index) == 3
    assert 7 in index
    assert 1 not in index
    assert index.doc_terms(7) == {"a": 2, "b": 1}
    assert index.doc_length(7) == 3
    assert index.df("b") == 2
    assert index.df("zzz") == 0
    assert index.idf("zzz") == 0.0
    assert index.matched_terms(8, ["c", "a", "c", "b"]) == ["c", "b"]
    assert index.avgdl == pytest.approx(2.0)
    index.remove([8, 12345])
    assert len(index) == 2
    assert 8 not in index
    assert index.scores(["c"]) == pytest.approx({9: BM25Okapi([["a", "b", "a"], ["c"]]).get_scores(["c"])[1]})
    with pytest.raises(KeyError):
        index.doc_terms(8)
    index.add([8], [["z"]])  # a removed id can come back
    assert index.doc_terms(8) == {"z": 1}
    assert index.doc_ids == [7, 9, 8]


def test_rejects_strings_where_term_lists_are_expected() -> None:
    index = BM25Index()
    with pytest.raises(TypeError):
        index.add([1], ["not tokens"])
    index.add([1], [["a"]])
    with pytest.raises(TypeError):
        index.scores("a")
    with pytest.raises(ValueError, match="ids"):
        index.add([1, 2], [["a"]])
    with pytest.raises(ValueError, match="positive"):
        index.add_counts([1, 3], [{"b": 2}, {"c": 0}])
    assert index.doc_terms(1) == {"a": 1}  # nothing changed
    assert index.top_k(["a"], 5) == [(1, pytest.approx(BM25Okapi([["a"]]).get_scores(["a"])[0]))]


def test_empty_index_and_empty_documents() -> None:
    index = BM25Index()
    assert index.top_k(["a"], 5) == []
    assert index.scores(["a"]) == {}
    index.add([1, 2], [[], ["a"]])
    assert index.doc_terms(1) == {}
    assert index.top_k(["a"], 5) == [(2, pytest.approx(BM25Okapi([[], ["a"]]).get_scores(["a"])[1]))]


@pytest.mark.parametrize("seed", range(4))
def test_top_k_on_thousands_of_documents_equals_sorting_every_score(seed: int) -> None:
    # Large enough for the column-maximum cut (slots / 128 columns ≥ k) with many ties.
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    corpus = [list(rng.choice(words, size=int(rng.integers(1, 6)))) for _ in range(5000)]
    ids = rng.permutation(100_000)[:5000].tolist()
    index = BM25Index()
    index.add(ids, corpus)
    reference = BM25Okapi(corpus).get_scores
    for k, offset in [(1, 0), (10, 0), (10, 25), (39, 0), (200, 0)]:
        query = list(rng.choice(words, size=int(rng.integers(1, 4))))
        scores = reference(query)
        matched = [i for i, doc in enumerate(corpus) if set(doc) & set(query)]
        expected = sorted(matched, key=lambda i: (-scores[i], ids[i]))[offset : offset + k]
        ranked, total = index.rank(query, k, offset=offset)
        assert total == len(matched)
        assert [doc for doc, _ in ranked] == [ids[i] for i in expected]
        allowed = rng.random(index.n_slots) < 0.3
        ranked, total = index.rank(query, k, allowed=allowed)
        kept = [i for i in matched if allowed[index.slot_of(ids[i])]]
        assert total == len(kept)
        assert [doc for doc, _ in ranked] == [
            ids[i] for i in sorted(kept, key=lambda i: (-scores[i], ids[i]))[:k]
        ]


def test_matched_terms_many_agrees_with_each_document() -> None:
    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(40)]
    corpus = [list(rng.choice(words, size=int(rng.integers(0, 12)))) for _ in range(400)]
    index = BM25Index()
    index.add(range(400), corpus)  # type: ignore[arg-type]
    query = ["w3", "unknown", "w1", "w3", *words[10:30]]
    many = index.matched_terms_many(list(range(400)), query)  # vectorised path
    for doc, found in zip(corpus, many, strict=True):
        assert found == [t for t in dict.fromkeys(query) if t in doc]
    assert index.matched_terms(5, query) == many[5]  # small path


@pytest.mark.parametrize("stretch", [1 << 22, 2])
def test_term_frequencies_past_one_byte_keep_exact_scores_across_segments(
    stretch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment keeps each posting's tf in four bits and those past 15 beside (index_tf); merged, the
    scores stay rank-bm25's (also when the merge places its postings a few at a time)."""
    monkeypatch.setattr(segments, "MERGE_STRETCH", stretch)
    small = [["a", "b", "c"], ["a", "a", "d"], ["b", "d", "d", "e"]]
    large = [["a"] * 300 + ["b"], ["c"] * 256 + ["e", "e"], ["a", "d"]]
    index = BM25Index()
    index.add([0, 1, 2], small)  # a segment of small tfs …
    index.add([3, 4, 5], large)  # … then one of large ones, merged with it (the second is not 4× smaller)
    reference = BM25Okapi(small + large)
    for query in (["a"], ["c", "e"], ["a", "b", "d", "a"], ["e", "c", "c"]):
        expected = reference.get_scores(query)
        np.testing.assert_array_equal(index.score_array(query), expected)
        ranked = index.top_k(query, 6)
        assert [doc for doc, _ in ranked] == reference_order(expected, small + large, query)
        assert [score for _, score in ranked] == [expected[doc] for doc, _ in ranked]


def test_ids_of_any_size_find_their_documents_as_the_table_grows_or_turns_into_a_dict() -> None:
    index = BM25Index()
    index.add([1, 2, 3], [["a", "b"], ["b"], ["c"]])
    index.add([5000], [["a"]])  # past the table: it grows
    assert index.slot_of(5000) == 3
    assert 4999 not in index
    index.add([-7, 10**15], [["a", "c"], ["d"]])  # a negative and a huge id: a dict from now on
    index.remove([2])
    index.add([3], [["a", "a"]])  # replaced: moves to a new slot
    corpus = {1: ["a", "b"], 5000: ["a"], -7: ["a", "c"], 10**15: ["d"], 3: ["a", "a"]}
    assert set(index.doc_ids) == set(corpus)
    assert len(index) == 5
    assert 2 not in index
    assert "1" not in index
    assert index.doc_terms(10**15) == {"d": 1}
    assert index.doc_terms(-7) == {"a": 1, "c": 1}
    reference = BM25Okapi(list(corpus.values())).get_scores(["a"])
    expected = sorted(
        ((i, s) for i, s in zip(corpus, reference, strict=True) if "a" in corpus[i]),
        key=lambda p: (-p[1], p[0]),
    )
    assert index.top_k(["a"], 10) == [(i, float(s)) for i, s in expected]
    assert [d for d, _ in index.top_k(["a"], 10, exclude={-7, 3})] == [
        i for i, _ in expected if i not in (-7, 3)
    ]


@pytest.mark.parametrize("ids", [[1, 2, 3, 5000], [1, 2, -7, 10**15]], ids=["table", "dict"])
def test_doc_weights_of_many_ids_at_once_and_an_unknown_id_named(ids: list[int]) -> None:
    """The slots of many ids are looked up at once, from the table or the dict; an id that is not
    indexed (absent, or past the table) is a KeyError naming it, as one at a time."""
    index = BM25Index()
    index.add(ids, [["a", "b"], ["b"], ["c", "a"], ["a"]])
    indptr, terms, _ = index.doc_weights([ids[3], ids[0]])
    assert [index.term_name(t) for t in terms[indptr[0] : indptr[1]]] == ["a"]
    assert sorted(index.term_name(t) for t in terms[indptr[1] : indptr[2]]) == ["a", "b"]
    for missing in (4, 10**6):
        with pytest.raises(KeyError, match=str(missing)):
            index.doc_weights([ids[0], missing])
