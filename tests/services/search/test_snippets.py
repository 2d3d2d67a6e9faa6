"""Snippets: the words they bold are found the same way on the fast ASCII path as word by word, and a
hit's phrases come from its title as well as its abstract."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.services.search import snippets
from bot.services.search.snippets import echo, escape_markdown, snippet
from paperindex.tokenizer import LOWER_ASCII_WORD_RE, WORD_RE, tokenize

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


def test_snippet_bolds_query_words_in_the_densest_window() -> None:
    abstract = (
        "Large models are everywhere. " * 8
        + "We compress the KV cache with 2-bit quantization of the KV cache. "
        + "Unrelated closing words follow here. " * 8
    )
    text = snippet(abstract, tokenize("kv cache quantization"), width=120)
    assert "**KV** **cache**" in text
    assert "**quantization**" in text
    assert text.startswith("…")
    assert text.endswith("…")
    visible = text.replace("**", "").replace("…", "")
    assert len(visible) <= 120


def test_snippet_escapes_markdown_and_handles_no_match() -> None:
    abstract = "We use *stars*, _under_scores_, `code`, ~~strike~~ and |pipes| > quotes. " * 10
    text = snippet(abstract, tokenize("stars"), width=100)
    assert "**stars**" in text
    assert r"\*" in text
    assert r"\_under\_scores\_" in snippet(abstract, [], width=100)
    plain = snippet("Short abstract.", tokenize("nothing"))
    assert plain == "Short abstract."
    assert snippet("", ["x"]) == ""
    assert escape_markdown("a*b_c`d~e|f>g") == r"a\*b\_c\`d\~e\|f\>g"
    # Every unescaped markdown character is part of a bold marker.
    assert not re.search(r"(?<![\\*])[*_~`|](?!\*)", text.replace("**", ""))


def test_snippet_of_a_long_abstract_stays_within_discord_field_limits() -> None:
    abstract = " ".join(["cache"] * 2000)
    text = snippet(abstract, tokenize("cache"))
    assert len(text) <= 1024


@pytest.mark.parametrize(
    "abstract",
    [
        "A" * 500 + " cache",  # a giant word before the match
        "cache " + "x" * 400,  # and after it
        "y" * 700,  # no match, no space
        "Intro sentence here. " * 30 + "Finally we study KV cache compression.",
    ],
)
def test_snippet_visible_text_stays_near_the_width(abstract: str) -> None:
    text = snippet(abstract, tokenize("kv cache"), width=100)
    visible = text.replace("**", "").replace("…", "")
    assert 0 < len(visible) <= 100
    if "cache" in abstract:
        assert "cache**" in text


def test_snippet_bolds_a_phrase_of_the_query_as_one_run() -> None:
    abstract = "Graph neural networks are neural models; a graph of networks is not one."
    terms = ("graph", "neural", "network")
    phrases = (("graph", "neural"), ("neural", "network"))
    assert snippet(abstract, terms, phrases=phrases).startswith("**Graph neural networks** are **neural**")
    assert "a **graph** of **networks**" in snippet(abstract, terms, phrases=phrases)
    assert snippet(abstract, terms).startswith("**Graph** **neural** **networks**")  # no phrases asked
    assert "**KV-cache** size" in snippet(
        "The KV-cache size grows.", ("kv", "cach"), phrases=(("kv", "cach"),)
    )


def test_echo_shows_what_was_typed_with_its_markdown_mentions_and_links_inert() -> None:
    typed = "@everyone  **bold** [site](https://evil.example/a_b) <@123456789012345678> <@&123456789012345678> @here"
    assert echo(typed) == (
        "@\u200beveryone \\*\\*bold\\*\\* \\[site\\](https\\://evil.example/a\\_b) "
        "<@\u200b123456789012345678\\> <@\u200b&123456789012345678\\> @\u200bhere"
    )
    assert echo("plain words, kept as they are") == "plain words, kept as they are"
    assert echo("a" * 50, 10) == "a" * 9 + "…", "cut before escaping, so no escape is cut in two"
    assert echo("**" * 10, 6) == "\\*\\*\\*\\*\\*…"
