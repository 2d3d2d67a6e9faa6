"""ParsedQuery: a query read once gives what every step of a search reads of it."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperindex.errors import QueryError
from paperindex.query import PHRASE_WEIGHT, ParsedQuery, query_weights
from paperindex.tokenizer import PHRASE_JOIN, display_terms, phrase_spans, tokenize

PIECES = [*"abcKVZ019 .,;:-'’()+\"!?_ßİéÅ\u0301ＧＰＴ", "the ", "of ", "graph ", "neural ", "LLMs ", "x "]
queries = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.text(max_size=60))


@given(queries)
def test_a_parsed_query_holds_what_each_reading_of_its_text_gives(query: str) -> None:
    """Terms and words as displayed, weights as the tokens and phrase terms count, and the phrases: the
    same as the tokenizer's functions give, each reading the text on its own."""
    try:
        parsed = ParsedQuery.parse(query)
    except QueryError:
        assert not display_terms(query) or len(query.strip()) > 300
        return
    pairs = display_terms(query)
    assert parsed.terms == tuple(term for _, term in pairs)
    assert parsed.words == tuple(word for word, _ in pairs)
    words = {t: w for t, w in parsed.weights.items() if PHRASE_JOIN not in t}
    assert words == {t: float(n) for t, n in Counter(tokenize(query)).items()}
    spans = [(a, b) for a, b, _, _ in phrase_spans(query)]
    assert parsed.phrases == tuple(dict.fromkeys(pair for pair in spans if pair[0] != pair[1]))
    assert dict(parsed.weights) == query_weights(query)


def test_a_short_query_asks_for_its_phrases_and_a_sentence_does_not() -> None:
    parsed = ParsedQuery.parse("  Graph neural networks  ")
    assert parsed.text == "Graph neural networks"
    assert parsed.words == ("Graph", "neural", "networks")
    assert parsed.phrases == (("graph", "neural"), ("neural", "network"))
    assert parsed.weights == {
        "graph": 1.0,
        "neural": 1.0,
        "network": 1.0,
        "graph neural": PHRASE_WEIGHT,
        "neural network": PHRASE_WEIGHT,
    }
    sentence = ParsedQuery.parse("sparse graph neural networks beat dense transformers on molecules")
    assert all(PHRASE_JOIN not in term for term in sentence.weights)
    assert sentence.phrases  # still bolded as phrases in the snippets


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("   ", "is empty"),
        ("🙂 !!", "no words in it"),
        ("the of a", "very common words"),
        ("k" * 301, "301 characters"),
        ("https://openreview.net/forum?id=PEpbUobfJv", "is a link"),
        ("the www.example.org", "is a link"),
    ],
)
def test_a_query_with_nothing_to_search_says_why(query: str, reason: str) -> None:
    with pytest.raises(QueryError, match=reason):
        ParsedQuery.parse(query)
