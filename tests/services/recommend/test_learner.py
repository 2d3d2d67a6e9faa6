"""The per-person model: its features, fitting, scoring, its words; choosing picks (bot.services.recommend.learner)."""

from __future__ import annotations

import numpy as np
import pytest

from bot.services.recommend.learner import Examples, LearningParams, PersonModel, choose, fit, unit_rows


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _papers(rows: list[dict[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, term ids, weights) for papers given as term id → BM25 weight."""
    indptr = np.cumsum([0, *(len(r) for r in rows)]).astype(np.int64)
    terms = np.array([t for r in rows for t in r], dtype=np.int64)
    weights = np.array([w for r in rows for w in r.values()], dtype=np.float64)
    return indptr, terms, weights


def _examples(
    papers: list[dict[int, float]],
    labels: list[float],
    *,
    coords: np.ndarray | None = None,
    topic: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    rated: int | None = None,
) -> Examples:
    n = len(papers)
    columns = np.unique([t for p in papers for t in p]).astype(np.int64)
    return Examples(
        words=unit_rows(_papers(papers), columns),
        terms=columns,
        coords=coords if coords is not None else np.zeros((n, 4), dtype=np.float32),
        topic_match=topic if topic is not None else np.zeros(n),
        labels=np.array(labels),
        weights=weights if weights is not None else np.ones(n),
        rated=n if rated is None else rated,
    )


def test_unit_rows_scale_each_paper_by_all_its_words_and_keep_the_asked_ones() -> None:
    """A paper's row is its BM25 vector over its whole length (3-4-5: 0.6 and 0.8), with only the
    words asked for as columns; a paper of none of them is an empty row."""
    rows = unit_rows(
        _papers([{1: 3.0, 2: 4.0}, {2: 1.0, 9: 1.0}, {7: 2.0}]), np.array([2, 9], dtype=np.int64)
    )
    assert rows.shape == (3, 2)
    assert rows.toarray() == pytest.approx(np.array([[0.8, 0.0], [2**-0.5, 2**-0.5], [0.0, 0.0]]))


def test_before_a_like_the_topics_lead_and_after_one_they_are_learned_from_the_prior() -> None:
    """With only background examples the topics' weight stays near its prior while nothing is
    liked; once the liked paper matches the topics no better than the background, it falls from the
    prior (to ~0 when it is learned from zero, as it was with one model for every topic)."""
    rng = np.random.default_rng(0)
    papers = [{int(t): 1.0 for t in rng.choice(50, 6, replace=False)} for _ in range(60)]
    topic = rng.random(60)
    unliked = fit(
        _examples(papers, [0.0] * 60, topic=topic, weights=np.full(60, 10 / 60), rated=0), liked=False
    )
    assert unliked.topic_weight == pytest.approx(LearningParams().prior_weight, abs=0.5)
    topic[0] = 0.5
    examples = _examples(papers, [1.0] + [0.0] * 59, topic=topic, weights=np.r_[1.0, np.full(59, 10 / 59)])
    liked = fit(examples, liked=True)
    assert 0.0 < liked.topic_weight < LearningParams().prior_liked
    from_zero = fit(examples, LearningParams(prior_liked=0.0), liked=True)
    assert abs(from_zero.topic_weight) < 1.0
    # an interest among several keeps more of its typed words' weight, from the same reactions
    among_several = fit(examples, liked=True, several=True)
    assert among_several.topic_weight > liked.topic_weight + 1.0
    assert LearningParams().prior_several > LearningParams().prior_liked
    # a topic narrowed by a paper the person named learns its words' weight from zero, one among
    # several too: the paper said which part of the field is meant
    narrowed = fit(examples, liked=True, several=True, narrowed=True)
    assert abs(narrowed.topic_weight) < 1.0
    assert narrowed.topic_weight < liked.topic_weight < among_several.topic_weight


def test_liked_papers_words_lift_unseen_papers_that_share_them() -> None:
    """Liked papers share word 3, disliked ones word 5: an unseen paper with word 3 scores above a
    paper with neither, which scores above one with word 5; word 3 is the strongest word for, 5
    the strongest against."""
    papers = [{3: 2.0, 1: 0.5}, {3: 1.5, 2: 0.5}, {5: 2.0, 1: 0.5}, {5: 1.0, 2: 0.5}]
    model = fit(_examples(papers, [1.0, 1.0, 0.0, 0.0]), liked=True)
    unseen = model.word_scores(_papers([{3: 1.0, 7: 1.0}, {7: 1.0}, {5: 1.0, 7: 1.0}]))
    assert unseen[0] > unseen[1] > unseen[2]
    assert unseen[1] == 0.0
    assert model.strongest_words(1, positive=True)[0][0] == 3
    assert model.strongest_words(1, positive=False)[0][0] == 5


def test_likes_of_one_corner_lift_that_corner_over_the_rest() -> None:
    """Liked papers near one axis of the paper space, disliked ones near another (no words in
    common): unseen papers near the liked axis score above those near the disliked one."""
    rng = np.random.default_rng(1)
    axis_a, axis_b = np.eye(8)[0], np.eye(8)[1]
    coords = np.vstack(
        [_unit(axis_a + 0.3 * rng.standard_normal((6, 8))), _unit(axis_b + 0.3 * rng.standard_normal((6, 8)))]
    )
    papers = [{100 + k: 1.0} for k in range(12)]
    model = fit(_examples(papers, [1.0] * 6 + [0.0] * 6, coords=coords), liked=True)
    unseen_a = _unit(axis_a + 0.3 * rng.standard_normal((20, 8)))
    unseen_b = _unit(axis_b + 0.3 * rng.standard_normal((20, 8)))
    zeros = np.zeros(20)
    assert model.place_scores(unseen_a, zeros).min() > model.place_scores(unseen_b, zeros).max()


def test_saturated_starts_do_not_blow_up() -> None:
    """Every example matching the topics fully (logits saturated at the prior) and most disliked:
    the fit converges to finite, modest weights."""
    rng = np.random.default_rng(2)
    coords = _unit(rng.standard_normal((40, 5)))
    papers = [{int(t): 1.0 for t in rng.choice(20, 4, replace=False)} for _ in range(40)]
    model = fit(_examples(papers, [0.0] * 40, coords=coords, topic=np.ones(40)), liked=False)
    assert np.isfinite(model.coord_weights).all()
    assert np.isfinite(model.term_weights).all()
    assert abs(model.bias) < 50
    assert np.abs(model.coord_weights).max() < 50


def test_a_model_without_words_scores_every_paper_zero_for_its_words() -> None:
    model = PersonModel(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(4), 1.0, 0.0)
    assert model.word_scores(_papers([{1: 1.0}, {}])).tolist() == [0.0, 0.0]


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
