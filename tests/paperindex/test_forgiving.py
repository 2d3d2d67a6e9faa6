"""ForgivingSearch: a typed query repaired (corrected words, other forms) or searched as typed."""

from __future__ import annotations

import pytest
from test_search_engine import ROWS

from paperindex.engine import SearchEngine
from paperindex.errors import QueryError
from paperindex.forgiving import ForgivingSearch, unquoted


@pytest.fixture
def engine() -> SearchEngine:
    return SearchEngine.build(ROWS)


def test_unknown_words_are_corrected_and_the_rest_kept_as_typed(engine: SearchEngine) -> None:
    repair = ForgivingSearch().repair(engine, "Tranformer atention (kv)")
    assert repair.corrected
    assert repair.text == "transformer attention (kv)"
    assert [(c.typed, c.text) for c in repair.corrections] == [
        ("tranformer", "transformer"),
        ("atention", "attention"),
    ]
    results, _ = ForgivingSearch().search(engine, "tranformer atention", limit=3)
    assert results.hits[0].paper_id == 2  # "Attention Is All You Need"
    assert results.hits[0].matched_terms == ("transformer", "attention")


def test_a_query_that_needs_nothing_is_searched_as_always(engine: SearchEngine) -> None:
    for query in ["kv cache quantization", "attention graph", "diffusion models", "KV cache KV"]:
        results, repair = ForgivingSearch().search(engine, query, limit=10)
        assert (repair.text, repair.corrections, repair.forms) == (query, (), ())
        plain = engine.search(query, limit=10)
        assert [(h.paper_id, h.score) for h in results.hits] == [(h.paper_id, h.score) for h in plain.hits]
        assert (results.terms, results.words) == (plain.terms, plain.words)


def test_a_quoted_query_is_searched_exactly_as_typed(engine: SearchEngine) -> None:
    repair = ForgivingSearch().repair(engine, "“tranformer atention”")
    assert repair.verbatim
    assert not repair.corrected
    assert repair.text == "tranformer atention"
    results, _ = ForgivingSearch().search(engine, '"tranformer"', limit=3)
    assert results.total == 0
    assert unquoted('"a b"') == "a b"
    assert unquoted("a b") is None
    assert unquoted('"') is None


def test_a_query_the_engine_refuses_is_refused_with_its_reason(engine: SearchEngine) -> None:
    with pytest.raises(QueryError, match="empty"):
        ForgivingSearch().repair(engine, '  ""  ')
    with pytest.raises(QueryError, match="characters long"):
        ForgivingSearch().repair(engine, "x" * 400)
