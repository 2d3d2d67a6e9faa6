"""The bounds of bench/library_eval.py (``--ceiling``): the SVM given every early paper of the person's
area, and one that also knows the later papers' labels but never scores a paper it trained on."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

pytest.importorskip("sklearn")

from library_eval import Person, ceiling, ceiling_scores

ZETA = 40  # the later paper of area a that writes "zeta", a word no other paper has
LATER_ALPHA = [20, 24]


def _corpus() -> tuple[object, list[set[str]], np.ndarray]:
    """Area a writes "alpha", the rest "gamma"; papers 0–19 are the library years, where every fourth
    is of area a; of the later ones, two write "alpha" and one, of area a too, "zeta"."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, labels = [], []
    for i in range(40):
        a = i % 4 == 0 if i < 20 else i in LATER_ALPHA
        texts.append(f"{'alpha' if a else 'gamma'} filler{i % 3}")
        labels.append({"a"} if a else set())
    texts.append("zeta zeta")
    labels.append({"a"})
    early = np.array([i < 20 for i in range(len(texts))])
    return TfidfVectorizer().fit_transform(texts), labels, early


def test_every_early_paper_of_the_area_teaches_the_first_bound() -> None:
    matrix, labels, early = _corpus()
    pick = ceiling(matrix, ~early, labels, early, C=1.0, knowing=False)
    person = Person("test", ("a",), (0, 4, 8), 3)
    picks = asyncio.run(pick(person, [], [], set(person.library), 0))
    assert sorted(picks[:2]) == LATER_ALPHA
    assert all(r >= 20 for r in picks)  # later papers only


def test_the_knowing_bound_scores_each_later_paper_by_the_half_it_was_not_trained_on() -> None:
    """It knows the "zeta" paper is of area a, yet scores it with the model of the half it is not in,
    which never saw "zeta" (a model trained on it scores it above 0)."""
    matrix, labels, early = _corpus()
    scores = ceiling_scores(matrix, labels, early, ("a",), C=1.0, knowing=True)
    assert min(scores[LATER_ALPHA]) > 0
    assert scores[ZETA] < 0
