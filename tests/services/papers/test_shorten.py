"""Text shortened for a limit: within it, at a word's end, markdown kept whole."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.services.papers.shorten import cut, cut_markdown, one_line

WORDS = st.lists(
    st.sampled_from(["KV", "cache", "quantization", "for", "a", "LLM-serving", "2.2×", "α", "(x)", "e.g.,"]),
    min_size=1,
    max_size=60,
)


@given(WORDS, st.integers(min_value=8, max_value=200))
def test_a_cut_fits_and_ends_at_a_word(words: list[str], limit: int) -> None:
    text = " ".join(words)
    shortened = cut(text, limit)
    assert len(shortened) <= limit
    if shortened != text and len(words[0]) < limit - 1:  # (a first word over the limit is cut inside)
        assert shortened.endswith("…")
        kept = shortened.removesuffix("…").split()
        assert kept[:-1] == text.split()[: len(kept) - 1]
        # the last word kept is whole (maybe without trailing punctuation), never a piece of one
        assert text.split()[len(kept) - 1].startswith(kept[-1])
        assert text.split()[len(kept) - 1].rstrip(",;:.-") == kept[-1].rstrip(",;:.-")


def test_the_reported_cut_keeps_the_word_whole() -> None:
    title = "ZipCache: Accurate and Efficient Quantization for KV Cache"
    assert cut(title, 53) == "ZipCache: Accurate and Efficient Quantization for KV…"
    reason = f"for your interest in kv cache · like: {title}"
    assert one_line(reason.replace(" in ", " in  "), len(reason) - 3).endswith("for KV…")


def test_one_word_longer_than_the_limit_is_cut_inside() -> None:
    assert cut("https://example.org/a/very/long/path", 12) == "https://exa…"


@given(WORDS, st.integers(min_value=10, max_value=200))
def test_a_markdown_cut_keeps_bold_closed_and_links_whole(words: list[str], limit: int) -> None:
    marked = " ".join(f"**{w}**" if n % 3 == 0 else w for n, w in enumerate(words))
    text = f"[{marked}](https://example.org/p) > {marked}"
    shortened = cut_markdown(text, limit)
    assert len(shortened) <= limit
    assert shortened.count("**") % 2 == 0
    assert "](" not in shortened or "(https://example.org/p)" in shortened


@pytest.mark.parametrize(
    ("text", "limit", "shortened"),
    [
        ("reduce the **KV cache** by **quantization** of keys", 40, "reduce the **KV cache** by…"),
        ("reduce the **KV cache and values** by quantization", 30, "reduce the **KV cache and**…"),
        ("*for your interest in kv cache · like: ZipCache*", 36, "*for your interest in kv cache*…"),
        ("**1. [Get More with LESS](https://x.org/p)** text", 30, "**1**…"),
    ],
)
def test_markdown_cuts(text: str, limit: int, shortened: str) -> None:
    assert cut_markdown(text, limit) == shortened


def test_text_within_the_limit_is_kept() -> None:
    assert cut("  short  ", 10) == "short"
    assert cut_markdown("**short**", 9) == "**short**"
    assert re.fullmatch(r"a+…", cut("a" * 20, 5))
