"""The ceiling of bench/interests_eval.py: a classifier per area that never scores a paper it trained
on, and that gives every area its turn at the picks when shared."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

pytest.importorskip("sklearn")

from interests_eval import Ceiling, Person


def _corpus() -> tuple[list[str], list[set[str]]]:
    texts, labels = [], []
    for i in range(40):  # area a writes "alpha", area b "beta", the rest neither
        kind = ("a", "b", "-", "-")[i // 2 % 4]  # each area in both halves
        word = {"a": "alpha", "b": "beta", "-": "gamma"}[kind]
        texts.append(f"{word} {word} common{i % 3} filler")
        labels.append({kind} if kind != "-" else set())
    texts.append("zeta zeta zeta")  # labelled a, but nothing of a's in its words
    labels.append({"a"})
    return texts, labels


def _ceiling(shared: bool) -> tuple[Ceiling, list[set[str]]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, labels = _corpus()
    return Ceiling(TfidfVectorizer().fit_transform(texts), labels, C=1.0, shared=shared), labels


def test_a_paper_is_scored_by_the_half_it_was_not_trained_on() -> None:
    ceiling, _ = _ceiling(shared=True)
    scores = ceiling.area_scores("a")
    alpha = [i for i in range(40) if i // 2 % 4 == 0]
    assert min(scores[alpha]) > 0
    # trained on itself, its own word would make the lone "zeta" paper an a paper; unseen, it is not
    assert scores[40] < 0


def test_shared_picks_take_turns_between_the_areas_and_by_score_follows_the_best() -> None:
    ceiling, labels = _ceiling(shared=True)
    person = Person(("a", "b"), "name")
    picks = asyncio.run(ceiling.pick(person, [], [], set(), 0))
    assert [sorted(labels[r]) for r in picks] == [["a"], ["b"], ["a"], ["b"], ["a"]]
    best, _ = _ceiling(shared=False)
    ranked = asyncio.run(best.rank(person, set()))
    assert asyncio.run(best.pick(person, [], [], set(), 0)) == list(ranked[:5])
