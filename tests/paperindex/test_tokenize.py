"""The tokenizer: what a query word and a paper's word must share to match."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperindex.tokenizer import (
    STOP_WORDS,
    count_terms,
    display_terms,
    iter_terms,
    text_words,
    tokenize,
    word_terms,
)
from paperindex.vocabulary import Vocabulary


def test_stop_words_never_become_terms() -> None:
    # rank-bm25 floors the idf of terms in > half the papers to 0.25 × mean idf, which would
    # make "the", "of", "we" outweigh content words: they must not reach the index at all.
    assert tokenize("We found that the model of the world is what we need") == [
        "found",
        "model",
        "world",
        "need",
    ]
    assert tokenize("the of and we it is") == []
    assert all(not tokenize(word) for word in STOP_WORDS)


def test_inflections_meet_at_one_stem() -> None:
    assert tokenize("quantization quantized quantizing") == ["quantiz"] * 3
    assert tokenize("Models modelling modeled") == tokenize("model model model")
    assert tokenize("LLMs") == tokenize("LLM") == ["llm"]  # Snowball keeps "llms"
    assert tokenize("CNNs GNNs") == ["cnn", "gnn"]
    assert tokenize("bias focus") == ["bias", "focus"]  # ordinary words ending in s stay


def test_unicode_width_ligatures_case_and_apostrophes() -> None:
    assert tokenize("ＧＰＴ") == tokenize("gpt") == ["gpt"]
    assert tokenize("ﬁne-tuning") == tokenize("Fine tuning")
    assert tokenize("STRASSE") == tokenize("Straße")
    assert tokenize("model’s") == tokenize("model's") == ["model"]
    assert tokenize("naïve") == ["naïv"]


def test_technical_tokens_stay_recognisable() -> None:
    assert tokenize("KV-cache") == ["kv", "cach"] == tokenize("kv cache")
    assert tokenize("GPT-4 and 3D") == ["gpt", "4", "3d"]
    assert tokenize("C++ and CD4+ cells") == ["c++", "cd4+", "cell"]
    assert tokenize("GPT-3.5 (v1.2), end.Next") == ["gpt", "3.5", "v1.2", "end", "next"]
    assert tokenize("x y 7") == ["7"]  # single letters go, digits stay


def test_no_words_at_all() -> None:
    assert tokenize("") == []
    assert tokenize("🙂🚀 ... !!! ___") == []


def test_count_terms_matches_tokenize_including_first_seen_order() -> None:
    text = "Sparse attention: sparse KV cache for attention heads; 'sparse' again. Ωmega α-β"
    counts: dict[str, int] = {"existing": 1}
    added = count_terms(text, weight=2, into=counts)
    tokens = tokenize(text)
    assert added == 2 * len(tokens)
    assert counts == {"existing": 1, **{t: 2 * n for t, n in Counter(tokens).items()}}
    assert list(counts)[1:] == list(dict.fromkeys(tokens))
    assert list(iter_terms(text)) == tokens


@given(st.text(max_size=200))
def test_ascii_and_unicode_paths_agree(text: str) -> None:
    # An ASCII text takes a bytes fast path; adding one non-ASCII separator forces the other.
    assert tokenize(text + " §") == tokenize(text) or not text.isascii()
    counts: dict[str, int] = {}
    count_terms(text, into=counts)
    assert counts == Counter(tokenize(text))


def test_a_link_is_no_words_and_the_words_around_it_keep_their_places() -> None:
    text = "Code at https://github.com/a/LifelongLearning, and www.x.org/y; data (HTTPS://Z.io/d)."
    assert tokenize(text) == ["code", "data"]
    words = text_words(text)
    assert [w.text for w in words] == ["Code", "at", "and", "data"]
    assert all(text[w.start : w.end] == w.text for w in words)  # (a snippet bolds them where they are)
    assert tokenize("graph https neural") == ["graph", "http", "neural"]  # the word alone is a word


def test_display_terms_keep_the_users_spelling() -> None:
    assert display_terms("KV-Cache quantization for the LLMs") == [
        ("KV", "kv"),
        ("Cache", "cach"),
        ("quantization", "quantiz"),
        ("LLMs", "llm"),
    ]
    assert display_terms("model models") == [("model", "model")]
    assert display_terms("🙂 the") == []


def test_word_terms_and_surface_forms() -> None:
    assert word_terms("Caching") == ("cach",)
    assert word_terms("the") == ()
    words = Vocabulary()
    words.learn_words(["caches", "caching", "cache", "the"], np.array([1, 1, 1, 5]))
    assert words.form("cach") == "cache"  # as common as the others, and shortest
    words.learn_words(["caching"], np.array([2]))
    assert words.form("cach") == "caching"  # now the most widespread
    assert words.form("never-seen-term") == "never-seen-term"
    assert "the" not in words.counts()  # a stop word is no term


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("kv cache", "Compressing the KV-cache of LLMs"),
        ("LLM inference", "Fast inference for large language models (LLMs)"),
        ("diffusion model", "Diffusion Models Beat GANs"),
        ("ＧＰＴ-４", "evaluating GPT-4"),
    ],
)
def test_a_query_finds_its_words_in_the_paper(query: str, document: str) -> None:
    assert set(tokenize(query)) <= set(tokenize(document))


def _novel_words(prefix: str, count: int) -> Iterator[str]:
    """Words no text has used, each its own stem ("zqab", "zqac", ...): every one is a cache miss."""
    letters = "bcdfghjklmnpqrstvwxz"
    for number in range(count):
        word = prefix
        while True:
            number, digit = divmod(number, len(letters))
            word += letters[digit]
            if not number:
                break
        yield word


@pytest.fixture
def fast_thread_switches() -> Iterator[None]:
    """Switch threads every microsecond, so two threads interleave inside one dict copy."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("fast_thread_switches")
def test_surface_counts_can_be_copied_while_another_thread_learns_words() -> None:
    """A snapshot copies the surface-form counts in one thread while papers are added in another
    (new words add counts): the copy must not fail with "dictionary changed size during iteration"."""
    words = Vocabulary()
    words.learn((word, word, 1) for word in _novel_words("zqpre", 20_000))
    failures: list[BaseException] = []
    stop = threading.Event()

    def learn_new_papers() -> None:
        try:
            for word in _novel_words("zqnew", 200_000):
                if stop.is_set():
                    return
                words.learn([(word, word, 1), (word, word + "s", 1)])
        except BaseException as error:
            failures.append(error)

    worker = threading.Thread(target=learn_new_papers)
    worker.start()
    try:
        for _ in range(40):
            copied = words.counts()
            assert copied["zqpreb"] == {"zqpreb": 1}
            assert words.form("zqpreb") == "zqpreb"
    finally:
        stop.set()
        worker.join()
    assert not failures
