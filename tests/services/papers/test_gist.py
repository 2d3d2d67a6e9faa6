"""`bot/services/papers/gist.py`: the sentence that states a paper's contribution, not its background."""

from __future__ import annotations

import pytest

from bot.services.papers.gist import gist, sentence_score

BACKGROUND = "Large language models have transformed natural language processing over the last years."
CHALLENGE = "However, their inference remains slow and expensive on commodity hardware today."
RESULT = "Experiments on six benchmarks show a 2.3x speed-up at the same accuracy."


@pytest.mark.parametrize(
    ("sentence", "score"),
    [
        ("In this paper, we propose Medusa, a method that adds decoding heads.", 4),
        ("We introduce a framework called Patchscopes to inspect hidden states.", 4),
        ("This paper, for the first time, introduces a benchmark of 50 tasks for planning.", 3),
        ("Our proposed method reduces the memory of the KV cache by half.", 3),
        ("We study the implicit bias of gradient descent on separable data.", 2),
        ("We show that the bound is tight up to logarithmic factors.", 1),
        ("We identify two challenges when designing reward models.", 0),
        (BACKGROUND, 0),
    ],
)
def test_sentences_are_scored_by_what_they_state(sentence: str, score: int) -> None:
    assert sentence_score(sentence) == score


def test_the_contribution_wins_over_the_background_and_the_results() -> None:
    method = (
        "To address this, we propose SpecKV, which quantizes the key-value cache to four bits while a "
        "small draft model proposes tokens in parallel."
    )
    summary = gist(" ".join([BACKGROUND, CHALLENGE, method, RESULT, "We also release our code."]))
    assert summary.text == method
    assert not summary.whole


def test_a_named_method_wins_over_an_unnamed_contribution_and_ties_go_to_the_first() -> None:
    unnamed = "We develop a general analysis of decoding with drafts that holds for any draft model we know."
    named = (
        "Building on it, we introduce DraftTree, a tree of drafts that the target model verifies in a "
        "single forward pass with a tree attention mask."
    )
    later = (
        "Finally, we present RootFix, a correction that removes the bias of earlier tree methods entirely."
    )
    assert gist(" ".join([BACKGROUND, unnamed, named, later])).text == named


def test_a_short_contribution_brings_the_next_sentence_and_a_long_one_stands_alone() -> None:
    short = "We propose KVQuant."
    assert gist(" ".join([BACKGROUND, short, RESULT])).text == f"{short} {RESULT}"
    long = (
        "We propose KVQuant, "
        + "which quantizes keys and values per channel before the rotary embedding, " * 3
    )
    long = long.rstrip(", ") + "."
    assert gist(" ".join([BACKGROUND, long, RESULT])).text == long


def test_an_abstract_stating_no_contribution_gets_its_opening_and_markup_goes() -> None:
    summary = gist(f"*Sparse* models are $O(n)$ cheaper. {CHALLENGE} {RESULT.replace('show', 'suggest')}")
    assert summary.text == f"Sparse models are O(n) cheaper. {CHALLENGE}"
    assert gist("").text == ""
    assert gist("").whole
    whole = gist("We quantize the KV cache to 2 bits. It is 4x smaller.")
    assert whole.whole
    assert whole.text == "We quantize the KV cache to 2 bits. It is 4x smaller."


def test_a_sentence_with_a_link_says_where_the_code_is_not_what_the_paper_does() -> None:
    """ICML 2024's DOMINO abstract: "we present a novel decoding algorithm, DOMINO, …" is the gist, not
    "We release DOMINO as open source at https://github.com/eth-sri/domino." (a named release)."""
    method = "To address this, we present a novel decoding algorithm, DOMINO, that enforces constraints."
    release = "We release DOMINO as open source at https://github.com/eth-sri/domino."
    assert sentence_score(release) == -1
    assert gist(" ".join([BACKGROUND, method, release])).text == method
    short = "We propose KVQuant."  # short, yet the link's sentence after it is not brought along
    assert gist(" ".join([BACKGROUND, short, "Code: www.example.org/kvquant."])).text == short
