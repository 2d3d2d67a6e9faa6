"""SearchEngine: what /paper search, show, similar and the recommender get from it."""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from shared_data import shared_path

from paperindex.documents import Document as IndexRow
from paperindex.engine import (
    MAX_QUERY_CHARS,
    PHRASE_WEIGHT,
    TITLE_WEIGHT,
    SearchEngine,
    document_terms,
    document_tokens,
    fold,
    query_weights,
)
from paperindex.errors import QueryError, SearchError, UnknownPaperError
from paperindex.tokenizer import tokenize

ROWS = [
    IndexRow(
        1,
        "KIVI: 2bit Quantization for KV Cache",
        "We quantize the key-value cache of large language models to 2 bits without tuning.",
        ("Zirui Liu", "Jiayi Yuan"),
        "ICML",
        2024,
        ("arXiv:2402.02750v2",),
    ),
    IndexRow(
        2,
        "Attention Is All You Need",
        "The dominant sequence transduction models are based on recurrent networks. We propose "
        "the Transformer, based solely on attention mechanisms.",
        ("Ashish Vaswani", "Noam Shazeer"),
        "NeurIPS",
        2017,
    ),
    IndexRow(
        3,
        "Efficient Memory Management for Large Language Model Serving",
        "High throughput serving of LLMs needs batching; the KV cache memory of each request is "
        "huge. PagedAttention manages cache memory in pages.",
        ("Woosuk Kwon", "Ángel Díaz"),
        "SOSP",
        2023,
    ),
    IndexRow(
        4,
        "Denoising Diffusion Probabilistic Models",
        "We present high quality image synthesis results using diffusion probabilistic models.",
        ("Jonathan Ho",),
        "NeurIPS",
        2020,
    ),
    IndexRow(
        5,
        "Graph Attention Networks",
        "We present graph attention networks, operating on graph-structured data with masked "
        "self-attention layers.",
        ("Petar Veličković",),
        "ICLR",
        2018,
    ),
    IndexRow(6, "QLoRA: Efficient Finetuning of Quantized LLMs", "We quantize and finetune.", (), None, None),
]


@pytest.fixture
def engine() -> SearchEngine:
    return SearchEngine.build(ROWS)


def ids(results: object) -> list[int]:
    return [hit.paper_id for hit in results.hits]  # type: ignore[attr-defined]


def test_it_tells_whether_a_paper_has_an_author_of_a_name(engine: SearchEngine) -> None:
    """Whole names, folded: not a part of one, nor a query of words."""
    assert engine.names_author("ashish  VASWANI")
    assert engine.names_author("Zirui Liu")
    assert not any(engine.names_author(text) for text in ("Ashish", "shish Vaswani", "kv cache", ""))


def test_search_ranks_the_paper_about_the_query_first(engine: SearchEngine) -> None:
    results = engine.search("kv cache quantization", limit=5)
    assert ids(results)[0] == 1
    assert set(ids(results)) == {1, 3, 6}  # every paper with a query term, nothing else
    assert results.total == 3
    assert results.terms == ("kv", "cach", "quantiz")
    assert results.words == ("kv", "cache", "quantization")
    first = results.hits[0]
    assert first.matched_terms == ("kv", "cache", "quantization")
    assert results.hits[1].paper_id == 3  # kv + cache, twice each, beats quantized alone
    assert results.hits[1].matched_terms == ("kv", "cache")
    assert [h.score for h in results.hits] == sorted((h.score for h in results.hits), reverse=True)


def test_matched_terms_use_the_words_the_user_typed(engine: SearchEngine) -> None:
    results = engine.search("Quantized KV-Caches", limit=2)
    assert results.hits[0].matched_terms == ("Quantized", "KV", "Caches")


def test_a_search_without_matched_terms_ranks_the_same_papers(engine: SearchEngine) -> None:
    full = engine.search("kv cache quantization", limit=5)
    bare = engine.search("kv cache quantization", limit=5, matched=False)
    assert [(h.paper_id, h.score) for h in bare.hits] == [(h.paper_id, h.score) for h in full.hits]
    assert (bare.total, bare.terms, bare.words) == (full.total, full.terms, full.words)
    assert all(h.matched_terms == () for h in bare.hits)


def rank_bm25_scores(reference: BM25Okapi, query: str) -> np.ndarray:
    """rank-bm25's scores for the weighted tokens a search asks for: Σ weight · get_scores([token])."""
    return sum(
        (weight * reference.get_scores([token]) for token, weight in query_weights(query).items()),
        np.zeros(len(reference.doc_len)),
    )


def test_scores_equal_rank_bm25_over_the_tokens_chosen(engine: SearchEngine) -> None:
    reference = BM25Okapi([document_tokens(r.title, r.abstract) for r in ROWS])
    for query in ["kv cache quantization", "attention graph", "diffusion models", "KV cache KV"]:
        expected = rank_bm25_scores(reference, query)
        results = engine.search(query, limit=10)
        assert results.hits
        for hit in results.hits:
            assert hit.score == pytest.approx(expected[hit.paper_id - 1], abs=1e-9)


def test_document_terms_weight_the_title_and_hold_its_phrases(engine: SearchEngine) -> None:
    counts = document_terms("KV cache", "The cache is big.")
    assert counts == {"kv": TITLE_WEIGHT, "cach": TITLE_WEIGHT + 1, "big": 1, "kv cach": 1}
    assert counts == Counter(document_tokens("KV cache", "The cache is big."))
    assert engine.index.doc_terms(6)["quantiz"] == TITLE_WEIGHT + 1
    assert "kv cach" not in engine.index.doc_terms(1)  # phrases rank, but are not a paper's words


def test_a_short_query_asks_for_its_phrases_and_a_long_one_does_not() -> None:
    assert query_weights("graph neural networks") == {
        "graph": 1.0,
        "neural": 1.0,
        "network": 1.0,
        "graph neural": PHRASE_WEIGHT,
        "neural network": PHRASE_WEIGHT,
    }
    sentence = "graph neural networks learn molecular properties from atoms and bonds"
    assert all(" " not in term for term in query_weights(sentence))


def test_a_title_holding_the_phrase_ranks_above_one_with_its_words_apart() -> None:
    same = "We compare graph kernels with neural networks."
    engine = SearchEngine.build(
        [
            IndexRow(1, "Graph kernels and neural networks", same),
            IndexRow(2, "Graph neural networks for molecules", same),
            *(
                IndexRow(n, f"Unrelated paper {n}", "Speculative decoding of language models.")
                for n in (3, 4, 5)
            ),
        ]
    )
    assert ids(engine.search("graph neural networks")) == [2, 1]
    assert ids(engine.search("graph kernels and neural networks learn molecular properties")) == [1, 2]


def test_paging_walks_through_all_matches_without_repeats(engine: SearchEngine) -> None:
    everything = engine.search("attention models", limit=10)
    assert everything.total == len(everything.hits) == 5
    pages = [engine.search("attention models", limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert [ids(p) for p in pages] == [ids(everything)[i : i + 2] for i in (0, 2, 4, 6)]
    assert all(p.total == 5 for p in pages)
    assert pages[3].hits == []


def test_a_repeated_query_word_counts_again_as_in_rank_bm25(engine: SearchEngine) -> None:
    once = engine.search("attention graph", limit=10)
    twice = engine.search("attention graph graph", limit=10)
    assert twice.terms == once.terms == ("attent", "graph")
    assert twice.hits[0].score > once.hits[0].score


def test_filters_author_venue_year(engine: SearchEngine) -> None:
    assert ids(engine.search("attention", author="VASWANI")) == [2]
    assert ids(engine.search("cache", author="angel diaz")) == [3]  # accents optional
    assert ids(engine.search("cache", author="Ángel")) == [3]
    assert ids(engine.search("attention", venue="neurips")) == [2]
    assert ids(engine.search("attention", venue="iclr", year=2018)) == [5]
    results = engine.search("models", year=2020)
    assert ids(results) == [4]
    assert results.filtered == 1
    assert engine.search("models").filtered is None


def test_filters_that_match_nothing_give_empty_results(engine: SearchEngine) -> None:
    results = engine.search("attention", author="nobody at all")
    assert results.hits == []
    assert results.total == 0
    assert results.filtered == 0
    # The filter matches papers, the query does not match them.
    results = engine.search("diffusion", author="vaswani")
    assert (results.total, results.filtered) == (0, 1)
    # An author filter cannot match across two authors' names.
    assert engine.search("cache", author="liu jiayi").total == 0


def test_exclude_leaves_papers_out(engine: SearchEngine) -> None:
    assert ids(engine.search("kv cache", exclude={1})) == [3]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", r"empty"),
        ("   \t\n ", r"empty"),
        ("🙂🚀🔥", r"no words .*emoji"),
        ("?!... ---", r"no words"),
        ("the of and", r"very common words"),
        ("x y", r"single letters"),
        ("a" * 3000, rf"3000 characters long; the limit is {MAX_QUERY_CHARS}"),
    ],
)
def test_bad_queries_get_a_specific_message(engine: SearchEngine, query: str, message: str) -> None:
    with pytest.raises(QueryError, match=message) as caught:
        engine.search(query)
    assert isinstance(caught.value, SearchError)
    with pytest.raises(QueryError):
        engine.validate_query(query)


def test_a_query_at_the_length_limit_is_accepted(engine: SearchEngine) -> None:
    query = ("kv cache " * 40)[:MAX_QUERY_CHARS]
    assert engine.search(query).hits
    assert engine.validate_query("kv cache") == ("kv", "cach")


def test_bad_page_arguments_are_programming_errors(engine: SearchEngine) -> None:
    with pytest.raises(ValueError, match="limit"):
        engine.search("cache", limit=0)
    with pytest.raises(ValueError, match="offset"):
        engine.search("cache", offset=-1)


def test_similar_ranks_against_the_papers_own_text_and_leaves_it_out(engine: SearchEngine) -> None:
    results = engine.similar(1, limit=5)
    assert 1 not in ids(results)
    assert ids(results)[0] == 3  # the other KV-cache paper
    assert "cach" in results.terms
    assert "cache" in results.words
    assert "cache" in results.hits[0].matched_terms
    query = engine.index.doc_terms(1)
    tokens = [t for t, n in query.items() for _ in range(n)]
    expected = engine.index.scores(tokens)
    assert results.hits[0].score == pytest.approx(expected[3], abs=1e-9)
    assert 5 not in ids(engine.similar(1, limit=5, exclude={5}))
    assert ids(engine.similar(1, limit=5, venue="sosp")) == [3]


def test_similar_for_an_unknown_paper(engine: SearchEngine) -> None:
    with pytest.raises(UnknownPaperError, match="#999"):
        engine.similar(999)


def test_weighted_query_for_recommendations(engine: SearchEngine) -> None:
    hits = engine.weighted({"cach": 1.0, "quantiz": 0.5}, limit=5)
    assert [h.paper_id for h in hits][:2] == [1, 3]
    # Matched terms come back as readable words of the corpus, strongest weight first.
    assert [tokenize(word) for word in hits[0].matched_terms] == [["cach"], ["quantiz"]]
    assert hits[0].matched_terms[0] in {"cache", "caches", "caching"}
    # A disliked term lowers a paper; papers holding only disliked terms never come back.
    down = engine.weighted({"cach": 1.0, "page": -3.0, "attent": -1.0}, limit=5)
    assert [h.paper_id for h in down] == [1, 3]
    assert down[1].score < 0
    assert [h.paper_id for h in engine.weighted({"cach": 1.0}, limit=5, exclude={1})] == [3]
    assert [h.paper_id for h in engine.weighted({"cach": 1.0}, limit=5, allowed={3, 4})] == [3]


def test_adding_and_replacing_papers(engine: SearchEngine) -> None:
    engine.add([IndexRow(7, "Speculative Decoding with Medusa Heads", "Medusa adds heads.", ("T. Cai",))])
    assert ids(engine.search("medusa")) == [7]
    assert len(engine) == 7
    # Re-ingesting a richer record replaces the old text, title and metadata.
    engine.add(
        [IndexRow(7, "Medusa 2", "A different abstract about sampling.", ("New Author",), "ICML", 2024)]
    )
    assert len(engine) == 7
    assert ids(engine.search("heads")) == []
    assert ids(engine.search("sampling", author="new author", year=2024)) == [7]
    assert engine.title(7) == "Medusa 2"
    assert engine.autocomplete("medusa") == [(7, "Medusa 2")]
    engine.remove([7])
    assert 7 not in engine
    assert engine.search("sampling").total == 0


def test_autocomplete_by_title_words_prefixes_and_ids(engine: SearchEngine) -> None:
    assert engine.autocomplete("atten is al")[0] == (2, "Attention Is All You Need")
    assert [pid for pid, _ in engine.autocomplete("attention")] == [2, 5]  # shorter title first
    assert [pid for pid, _ in engine.autocomplete("graph att")] == [5]
    assert engine.autocomplete("4")[0] == (4, "Denoising Diffusion Probabilistic Models")
    assert engine.autocomplete("#3")[0][0] == 3
    assert engine.autocomplete("2402.02750")[0][0] == 1  # arXiv id without version
    assert engine.autocomplete("arxiv:2402.02750v1")[0][0] == 1
    assert engine.autocomplete("zzzz") == []
    assert [pid for pid, _ in engine.autocomplete("", limit=3)] == [6, 5, 4]  # newest first
    assert len(engine.autocomplete("a", limit=2)) == 2


def test_fold() -> None:
    assert fold("  Ángel   DÍAZ ") == "angel diaz"
    assert fold("Veličković") == "velickovic"


@pytest.mark.shared
def test_on_icml_2024_equals_rank_bm25_and_answers_by_title() -> None:
    path = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    rows = [
        IndexRow(n, r["title"], r["abstract"], tuple(r["authors"]), "ICML", 2024, (r["openreview_id"],))
        for n, r in enumerate(records, 1)
    ]
    engine = SearchEngine.build(rows)
    reference = BM25Okapi([document_tokens(r.title, r.abstract) for r in rows])
    for query in ["kv cache quantization", "speculative decoding", rows[100].title]:
        expected = rank_bm25_scores(reference, query)
        results = engine.search(query, limit=10)
        order = sorted(range(len(rows)), key=lambda i: (-expected[i], i))[:10]
        assert ids(results) == [i + 1 for i in order]
        assert [h.score for h in results.hits] == pytest.approx([expected[i] for i in order], abs=1e-9)
    # Stop words do not rank papers: a title query finds its own paper first.
    for row in rows[::500]:
        assert ids(engine.search(row.title[:MAX_QUERY_CHARS], limit=1)) == [row.paper_id]
        assert row.paper_id in [pid for pid, _ in engine.autocomplete(row.title[:25])]
        assert engine.autocomplete(records[row.paper_id - 1]["openreview_id"])[0][0] == row.paper_id
    assert np.isclose(engine.index.avgdl, reference.avgdl)


def test_adding_from_a_worker_thread_while_searching(engine: SearchEngine) -> None:
    # Services.refresh_changed adds in a worker thread; commands and the recommender keep reading.
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                engine.search("caches paper", limit=5, year=2025)
                engine.index.idf("cach")
                engine.index.doc_terms(1)
                engine.autocomplete("paper")
                engine.weighted({"cach": 1.0, "word7": 2.0}, limit=5)
            except BaseException as error:  # any failure in the reader fails the test
                errors.append(error)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(40):
            engine.add([IndexRow(100 + n, f"Paper {n} on caches", f"word{n} cache text", (), None, 2025)])
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert engine.search("caches", year=2025, limit=1).total == 40
    assert engine.index.doc_terms(139) == {"paper": 3, "39": 3, "cach": 4, "word39": 1, "text": 1}
