"""Derived titles for the abstract-only seed papers, and code URLs pulled out of abstracts."""

from __future__ import annotations

import re

import pytest

from bot.services.papers.ingest.papertext import paragraphs
from bot.services.papers.ingest.runner import shipped_seed_files
from bot.services.papers.ingest.titles import (
    MAX_FALLBACK,
    MAX_TITLE,
    clip,
    derive_title,
    extract_code_url,
)
from bot.services.papers.prose import plain_text


def _seed_abstracts() -> list[str]:
    abstracts: list[str] = []
    for _name, data in shipped_seed_files():
        found = [text for _line, text in paragraphs(data.decode("utf-8").splitlines())]
        abstracts.extend(found[1:])  # the first paragraph is the header
    return abstracts


SEEDS = _seed_abstracts()


def _seed(marker: str) -> str:
    matches = [text for text in SEEDS if marker in text]
    assert len(matches) == 1, marker
    return matches[0]


def test_the_package_ships_38_seed_abstracts() -> None:
    assert len(SEEDS) == 38


@pytest.mark.parametrize(
    ("marker", "title_start"),
    [
        ("we present Medusa", "Medusa: an efficient method that augments LLM inference"),
        ("dubbed ILARL", "ILARL: a new algorithm for imitation learning in infinite horizon linear MDPs"),
        (
            "termed as *StyDeSty*",
            "StyDeSty: a simple yet effective scheme to explicitly account for the alignment",
        ),
        (
            "called Deep Demonstration Tracing (DDT)",
            "Deep Demonstration Tracing (DDT): a demonstration transformer",
        ),
        ("We present TROVE", "TROVE: a training-free method of inducing a verifiable and efficient toolbox"),
        (
            "we propose reflected reSGLD",
            "Reflected reSGLD (r2SGLD): an algorithm tailored for constrained non-convex",
        ),
        ("We introduce Reprompting", "Reprompting: an iterative sampling algorithm"),
        (
            "dubbed ProbAbilistic Concept Explainers",
            "ProbAbilistic Concept Explainers (PACE): a variational Bayesian",
        ),
        ("We propose LESS", "LESS: an optimizer-aware and practically efficient algorithm"),
        ("(HOCTC)", "High-Order Contrastive Tensor Completion (HOCTC): an innovative network"),
        ("(PAIL)", "Preference Aided Imitation Learning from imperfect demonstrations (PAIL): a novel"),
        ("(LEAP)", "Learning Principles (LEAP)"),
        ("**Sparse Cocktail**", "Sparse Cocktail: the first sparse co-training framework"),
        ("(DBC)", "Diffusion Model-Augmented Behavioral Cloning (DBC): an imitation learning framework"),
        ("(FRAG)", "Frequency Adapting Group (FRAG), which enhances the video quality"),
        ("called MGit", "MGit: a model versioning and management system"),
        ("(SEA)", "Support Exploration Algorithm (SEA): a novel algorithm promoting sparsity"),
        ("(Atari-PB)", "Atari Pre-training Benchmark (Atari-PB), which pre-trains a ResNet-50 model"),
        (
            "Ranking-Generalizable Squared",
            "Ranking-Generalizable Squared (RG²): a new surrogate squared loss",
        ),
    ],
)
def test_a_named_method_leads_the_title_with_a_short_description(marker: str, title_start: str) -> None:
    assert derive_title(_seed(marker)).startswith(title_start)


@pytest.mark.parametrize(
    ("marker", "title"),
    [
        # no method name: the contribution as a noun phrase
        (
            "Goldilocks zone for homogeneous",
            "A rigorous and comprehensive analysis of the Goldilocks zone for homogeneous neural networks",
        ),
        (
            "distributed estimation and support recovery",
            "Distributed estimation and support recovery for high-dimensional linear quantile regression",
        ),
        (
            "This paper extends neural collapse",
            "Extending neural collapse to cases where the number of classes are much larger than the dimension of feature space",
        ),
        (
            "This paper aims to take the first attempt",
            "A triadic-OCD framework with certifiable robustness, provable optimality, and guaranteed convergence",
        ),
        # "a thorough evaluation of these factors by evaluating X": the anaphora is dropped
        (
            "effect of PTQ on Weight",
            "Evaluating the effect of PTQ on Weight, Activation, and KV Cache on 11 model families",
        ),
        (
            "fitted Q-evaluation (FQE) method",
            "The statistical analysis of the fitted Q-evaluation (FQE) method",
        ),
    ],
)
def test_without_a_name_the_contribution_becomes_the_title(marker: str, title: str) -> None:
    assert derive_title(_seed(marker)) == title


_ADDED_WORDS = {"for", "which", "extending", "evaluating", "learning"}


@pytest.mark.parametrize("abstract", SEEDS, ids=lambda text: text[:40])
def test_every_seed_title_is_short_clean_and_made_of_the_abstracts_words(abstract: str) -> None:
    title = derive_title(abstract)
    assert 20 <= len(title) <= MAX_TITLE
    assert title[0].isupper() or title[0].isdigit()
    assert "**" not in title
    assert "$" not in title
    assert "  " not in title
    assert not re.search(r"\b(?:of|the|a|an|and|to|for|with|by|in)…?$", title), title
    words = set(re.findall(r"[\w-]+", plain_text(abstract).lower()))
    invented = {w for w in re.findall(r"[\w-]+", title.lower()) if w not in words and w not in _ADDED_WORDS}
    assert not invented, f"{title!r} has words not in its abstract: {invented}"


def test_seed_titles_are_distinct() -> None:
    titles = [derive_title(text) for text in SEEDS]
    assert len(set(titles)) == len(titles)


def test_the_opening_clause_is_the_last_resort_trimmed_at_a_word() -> None:
    abstract = (
        "Graph neural networks have become the standard tool for learning on relational data across "
        "chemistry, physics and social science, although their expressive power remains poorly understood. "
        "Experiments on twelve benchmarks confirm the analysis."
    )
    title = derive_title(abstract)
    assert title.startswith("Graph neural networks have become the standard tool")
    assert len(title) <= MAX_FALLBACK
    body = title.removesuffix("…")
    assert abstract.startswith(body)
    assert abstract[len(body)] in " ,", "cut in the middle of a word"


def test_a_subordinate_opening_gives_way_to_the_main_clause() -> None:
    abstract = (
        "While transformers dominate language modelling, recurrent models remain attractive for streaming "
        "inference on small devices with tight memory budgets. Results follow."
    )
    assert derive_title(abstract).startswith("Recurrent models remain attractive for streaming")


def test_a_method_named_only_in_passing_by_others_is_not_taken_for_the_papers_name() -> None:
    abstract = (
        "We then quantify this information using the framework of conditional mutual information proposed by "
        "Steinke and Zakynthinou (2020), and we study the interplay between memorization and learning in "
        "stochastic convex optimization in depth here."
    )
    assert not derive_title(abstract).startswith("By Steinke")


def test_clip_prefers_a_phrase_boundary_and_never_cuts_a_word() -> None:
    text = "An algorithm tailored for constrained non-convex exploration by utilizing reflection steps within a domain"
    assert clip(text, 70) == "An algorithm tailored for constrained non-convex exploration"
    cut = clip("Supercalifragilistic expialidocious words everywhere around", 30)
    assert cut.endswith("…")
    assert len(cut) <= 30
    assert clip("Short title.", 50) == "Short title"


def test_markup_is_removed_from_titles() -> None:
    assert (
        plain_text("**L**ow-rank *gradient* $\\ell_1$ loss with $O(n^2)$ cost")
        == "Low-rank gradient ℓ1 loss with O(n²) cost"
    )


@pytest.mark.parametrize(
    ("abstract", "url"),
    [
        (
            "The code can be found in https://github.com/thu-nics/qllm-eval.",
            "https://github.com/thu-nics/qllm-eval",
        ),
        ("The project page is in https://osil-ddt.github.io.", "https://osil-ddt.github.io"),
        ("Code: (https://gitlab.com/group/repo).", "https://gitlab.com/group/repo"),
        ("Models at huggingface.co/org/model, see also.", "https://huggingface.co/org/model"),
        ("Code is available at \\url{https://github.com/a/b}.", "https://github.com/a/b"),
        (
            "Project page https://example.org/proj; code at https://github.com/x/y!",
            "https://github.com/x/y",  # a code host beats a project page
        ),
        ("Demo and code are released at https://example.org/tool.", "https://example.org/tool"),
        ("We use data from https://example.org/data to train.", None),  # a URL, but not code
        ("No link at all in this abstract.", None),
    ],
)
def test_code_and_project_urls_are_pulled_out_of_abstracts(abstract: str, url: str | None) -> None:
    assert extract_code_url(abstract) == url


def test_seed_code_urls() -> None:
    urls = {extract_code_url(text) for text in SEEDS} - {None}
    assert {
        "https://github.com/thu-nics/qllm-eval",
        "https://osil-ddt.github.io",
        "https://github.com/libertyhhn/AR-DMVC",
        "https://github.com/princeton-nlp/LESS",
    } <= urls
    assert all(not url.endswith((".", ",", ")")) for url in urls if url)
