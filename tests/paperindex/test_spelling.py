"""SpellingCorrector: unknown query words → the nearest words the index knows."""

from __future__ import annotations

import threading
import time

import pytest

from paperindex.documents import Document
from paperindex.engine import SearchEngine
from paperindex.spelling import SpellingCorrector, max_edits

ROWS = [
    Document(1, "Attention Is All You Need", "The Transformer relies on an attention mechanism alone."),
    Document(2, "Vision Transformers at Scale", "Transformers for images; attention over patches."),
    Document(3, "Graph Neural Networks for Molecules", "Message passing graph neural networks predict."),
    Document(4, "Retention of Memories", "A retention mechanism for recurrent networks."),
    Document(5, "Denoising Diffusion Models", "Diffusion models generate images by denoising."),
    Document(6, "Self Attention in Graphs", "Self attention layers over graph nodes."),
]


def fixed(corrector: SpellingCorrector, word: str) -> str | None:
    """What ``word`` is searched as (None: left as it is)."""
    correction = corrector.correct(word)
    return None if correction is None else correction.text


@pytest.fixture
def corrector() -> SpellingCorrector:
    engine = SearchEngine.build(ROWS)
    return SpellingCorrector(engine.index, engine.vocabulary)


@pytest.mark.parametrize(
    ("typed", "corrected"),
    [
        ("tranformer", "transformer"),  # a letter left out
        ("atention", "attention"),
        ("mechanisim", "mechanism"),  # a letter added: the word, not its stem "mechan", is compared
        ("difusion", "diffusion"),
        ("trasnformers", "transformers"),  # two letters swapped: one edit
        ("Tranformer", "transformer"),  # case does not matter
    ],
)
def test_an_unknown_word_becomes_the_nearest_known_word(
    corrector: SpellingCorrector, typed: str, corrected: str
) -> None:
    correction = corrector.correct(typed)
    assert correction is not None
    assert correction.text == corrected
    assert correction.edits == 1


def test_the_nearest_word_wins_then_the_one_more_papers_hold(corrector: SpellingCorrector) -> None:
    assert fixed(corrector, "xttention") == "attention"  # one edit; two from "retention"
    assert fixed(corrector, "etention") == "retention"  # one edit; two from "attention"
    # "tention": one edit from both "attention" (3 papers) and "retention" (1): the frequent one
    assert fixed(corrector, "tention") == "attention"


def test_two_words_run_together_are_split(corrector: SpellingCorrector) -> None:
    split = corrector.correct("graphneural")
    assert split is not None
    assert split.text == "graph neural"
    assert fixed(corrector, "selfattention") == "self attention"


def test_known_short_and_numbered_words_are_left_alone(corrector: SpellingCorrector) -> None:
    assert corrector.correct("transformer") is None  # known
    assert corrector.correct("the") is None  # a stop word is never searched
    assert corrector.correct("gnm") is None  # three letters: an acronym as likely as a slip
    assert corrector.correct("gpt4x") is None  # a digit: a model name
    assert corrector.correct("zzzzzzzz") is None  # nothing near
    assert (max_edits("kv"), max_edits("atent"), max_edits("atention")) == (0, 1, 2)


def test_it_looks_for_a_correction_of_unknown_and_rare_words_only(corrector: SpellingCorrector) -> None:
    """What a search waits for the corrector's words for: an unknown word, or one so rare it may be a
    slip ("transformer": 2 of these 6 papers), not a known, short or numbered one."""
    assert all(map(corrector.looks_for, ("atention", "Trasnformer", "transformer")))
    assert not corrector.looks_for("transformer", slips=False)
    assert not any(corrector.looks_for(word) for word in ("attention", "the", "gnm", "gpt4x"))


def test_words_of_papers_added_later_are_known_to_it() -> None:
    engine = SearchEngine.build(ROWS)
    corrector = SpellingCorrector(engine.index, engine.vocabulary)
    assert corrector.correct("quantizaton") is None
    engine.add([Document(7, "Quantization of KV Caches", "Quantization to 2 bits.")])
    assert fixed(corrector, "quantizaton") == "quantization"


def test_a_removed_papers_words_are_no_longer_offered() -> None:
    engine = SearchEngine.build(ROWS)
    corrector = SpellingCorrector(engine.index, engine.vocabulary)
    assert fixed(corrector, "difusion") == "diffusion"
    engine.remove([5])
    assert corrector.correct("difusion") is None


def test_a_slip_some_paper_made_too_is_corrected_to_the_word_most_papers_write() -> None:
    """Papers have typos: "atention" in one or two papers is still a slip beside "attention" in 250
    (at least SLIP_RATIO times as many); in three it is a word of theirs."""
    rows = [Document(n, f"Paper {n}", "Attention over tokens.") for n in range(1, 251)]
    engine = SearchEngine.build([*rows, Document(1001, "A slip", "An atention layer.")])
    corrector = SpellingCorrector(engine.index, engine.vocabulary)
    assert fixed(corrector, "atention") == "attention"
    engine.add([Document(1002, "Another slip", "Atention again.")])
    assert fixed(corrector, "atention") == "attention"  # 2 papers: still rare
    engine.add([Document(1003, "A third", "Atention, once more.")])
    assert corrector.correct("atention") is None  # 3 papers write it: a word of theirs


def test_while_another_thread_reads_the_words_a_correction_is_skipped_not_waited_for(
    corrector: SpellingCorrector,
) -> None:
    """The words are read in a worker thread (a start's first look at a large index); a search on the
    event loop meanwhile gets no correction rather than waiting for them."""
    reading, done = threading.Event(), threading.Event()

    def read_words() -> None:
        with corrector._lock:
            reading.set()
            done.wait(5)

    worker = threading.Thread(target=read_words)
    worker.start()
    try:
        assert reading.wait(5)
        started = time.perf_counter()
        assert corrector.correct("tranformer") is None
        assert time.perf_counter() - started < 1.0
    finally:
        done.set()
        worker.join()
    assert fixed(corrector, "tranformer") == "transformer"  # once they are read
