"""The per-person model: fitting, the centroids, choosing picks (bot.services.learner)."""

from __future__ import annotations

import numpy as np
import pytest

from bot.services.learner import (
    Examples,
    LearningParams,
    WordCentroid,
    centroid_direction,
    choose,
    fit,
)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _examples(coords: np.ndarray, labels: list[float], topic: float = 0.0) -> Examples:
    n = len(labels)
    return Examples(coords[:n], np.full(n, topic), np.array(labels), np.ones(n))


def test_no_reactions_leave_the_topics_in_charge() -> None:
    """With only background examples, the coordinate weights stay near zero and the topic weight
    near its start: the ranking is the topics' own."""
    rng = np.random.default_rng(0)
    coords = _unit(rng.standard_normal((300, 8)))
    model = fit(Examples(coords, np.zeros(300), np.zeros(300), np.full(300, 10 / 300)))
    assert np.abs(model.weights).max() < 0.5
    assert abs(model.topic_weight - LearningParams().prior_weight) < 0.5


def test_likes_of_one_corner_lift_that_corner_over_the_rest() -> None:
    """Liked papers near one axis, disliked ones near another: unseen papers near the liked axis
    score above those near the disliked one."""
    rng = np.random.default_rng(1)
    axis_a, axis_b = np.eye(8)[0], np.eye(8)[1]
    liked = _unit(axis_a + 0.3 * rng.standard_normal((6, 8)))
    disliked = _unit(axis_b + 0.3 * rng.standard_normal((6, 8)))
    coords = np.vstack([liked, disliked])
    model = fit(_examples(coords, [1.0] * 6 + [0.0] * 6))
    unseen_a = _unit(axis_a + 0.3 * rng.standard_normal((20, 8)))
    unseen_b = _unit(axis_b + 0.3 * rng.standard_normal((20, 8)))
    zeros = np.zeros(20)
    assert model.scores(unseen_a, zeros).min() > model.scores(unseen_b, zeros).max()


def test_saturated_starts_do_not_blow_up() -> None:
    """Every example matching the topics fully (logits saturated at the start) and all disliked:
    the fit converges to finite, modest weights instead of overshooting (Newton without a line
    search went to a bias of 500)."""
    rng = np.random.default_rng(2)
    coords = _unit(rng.standard_normal((40, 5)))
    model = fit(_examples(coords, [1.0] * 5 + [0.0] * 35, topic=1.0))
    assert np.isfinite(model.weights).all()
    assert abs(model.bias) < 50
    assert np.abs(model.weights).max() < 50


def test_likes_and_dislikes_of_one_corner_cancel_in_the_centroid() -> None:
    """The centroid points at liked papers, and shrinks to nothing when as many of the same corner
    are disliked (with ``centroid_dislike`` 1)."""
    params = LearningParams(centroid=5.0, centroid_dislike=1.0)
    corner = _unit(np.eye(4)[:1] + np.zeros((3, 4)))
    towards = centroid_direction(corner, corner[:0], 0.1, params)
    assert towards[0] > 0
    assert np.allclose(towards[1:], 0)
    assert np.allclose(centroid_direction(corner, corner, 0.1, params), 0)


def test_choose_gives_up_score_for_variety_only_when_asked() -> None:
    """Two near-identical best papers: without exploration both are picked; with it, the second
    place goes to a slightly weaker paper elsewhere."""
    coords = _unit(np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0]]))
    scores = np.array([3.0, 2.9, 2.8])
    assert choose(scores, coords, [0, 1, 2], 2, 0.0) == [0, 1]
    assert choose(scores, coords, [0, 1, 2], 2, 0.5) == [0, 2]


def test_choose_keeps_away_from_disliked_papers_when_given_them() -> None:
    """The best paper lies next to one already disliked: with that paper to avoid, the pick goes to
    the next best elsewhere; without it, to the best."""
    coords = _unit(np.array([[1.0, 0.0], [0.0, 1.0]]))
    scores = np.array([3.0, 2.9])
    disliked = _unit(np.array([[1.0, 0.02]]))
    assert choose(scores, coords, [0, 1], 1, 0.5) == [0]
    assert choose(scores, coords, [0, 1], 1, 0.5, disliked) == [1]


def _weights(rows: list[dict[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, term ids, weights) for papers given as term id → BM25 weight."""
    indptr = np.cumsum([0, *(len(r) for r in rows)]).astype(np.int64)
    terms = np.array([t for r in rows for t in r], dtype=np.int64)
    weights = np.array([w for r in rows for w in r.values()], dtype=np.float64)
    return indptr, terms, weights


def test_the_words_centroid_rewards_the_liked_papers_rare_words_and_cuts_to_its_strongest() -> None:
    """Liked papers share term 3, a disliked one has term 5: an unseen paper with term 3 scores
    above one with term 5, a paper with neither scores 0, and only ``word_terms`` terms are kept."""
    params = LearningParams(word_terms=2, words_dislike=1.0)
    rated = _weights([{3: 2.0, 1: 0.1}, {3: 1.5, 2: 0.2}, {5: 2.0}])
    words = WordCentroid.of(rated, np.array([True, True, False]), params)
    weight = dict(zip(words.terms.tolist(), words.values.tolist(), strict=True))
    assert len(weight) == 2
    assert weight[3] > 0 > weight[5]
    unseen = words.cosines(_weights([{3: 1.0, 7: 1.0}, {5: 1.0, 7: 1.0}, {7: 1.0}]))
    assert unseen[0] > 0 == unseen[2] > unseen[1]


def test_the_words_centroid_is_scaled_to_its_spread_on_the_background() -> None:
    """Its scale is ``words`` over the background cosines' standard deviation (0 when they do not vary)."""
    params = LearningParams(words=0.5)
    words = WordCentroid(np.arange(3), np.ones(3), 1.0)
    assert words.scaled(np.array([0.0, 0.2, 0.4, 0.6]), params).scale == pytest.approx(
        0.5 / np.std([0.0, 0.2, 0.4, 0.6])
    )
    assert words.scaled(np.zeros(5), params).scale == 0.0
