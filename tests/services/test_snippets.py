"""Snippets: the words they bold are found the same way on the fast ASCII path as word by word, and a
hit's phrases come from its title as well as its abstract."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.services import snippets
from bot.services.tokenize import LOWER_ASCII_WORD_RE, WORD_RE, tokenize

# ASCII pieces that test where words start and end: apostrophes, dots between digits, trailing "+",
# hyphens, capitals, stop words, single letters.
PIECES = st.sampled_from(
    [
        "model",
        "Models",
        "model's",
        "LLMs",
        "c++",
        "3.5",
        "v.2",
        "KV-cache",
        "caching",
        "x",
        "the",
        "ﬁne",
        "café",
        "GPT-4",
        "'s",
        "+",
        ".",
        "-",
        " ",
        "  ",
        "\n",
        ",",
        "(kv)",
        "s",
        "4",
        "2bit",
        "quantized",
    ]
)
TEXTS = st.lists(PIECES, max_size=40).map("".join)


@given(TEXTS, st.lists(PIECES, max_size=4))
def test_the_ascii_path_bolds_the_words_a_word_by_word_scan_finds(text: str, query: list[str]) -> None:
    terms = frozenset(tokenize(" ".join(query)) + tokenize(text)[:2])
    assert snippets._matches(text, terms) == snippets._matches_word_by_word(text, terms)


@given(TEXTS)
def test_the_lower_case_ascii_word_pattern_finds_the_words_of_word_re(text: str) -> None:
    lowered = text.lower()
    if lowered.isascii():
        assert [m.span() for m in LOWER_ASCII_WORD_RE.finditer(lowered)] == [
            m.span() for m in WORD_RE.finditer(lowered)
        ]


def test_a_phrase_in_the_title_counts_when_the_abstract_splits_it() -> None:
    terms = ("graph", "neural", "network")
    phrases = (("graph", "neural"), ("neural", "network"))
    shown, found = snippets.snippet_and_phrases(
        "A graph feeds neural networks.", "Graph neural networks at scale", terms, phrases
    )
    assert found == {("graph", "neural"), ("neural", "network")}
    assert "**graph** feeds **neural networks**" in shown
    _, none = snippets.snippet_and_phrases("A graph feeds neural networks.", "Kernels", terms, ())
    assert none == set()
