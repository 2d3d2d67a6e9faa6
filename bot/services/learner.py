"""A model of what one person wants, learned from their reactions (👍 🔖 for, 👎 against).

Per person, a logistic regression over each paper's place in the field (its LSA coordinates,
:mod:`bot.services.paper_space`) and how well it matches the person's typed topics (BM25, scaled to
0–1 by the best match). Before any reaction the model *is* the topics: the topic weight starts at
``prior_weight`` and the coordinate weights at zero. Each reaction is a training example; papers
shown and left without a reaction are weak negatives; a fixed sample of the corpus is a weak
background negative, so the model learns what sets the liked papers apart from papers in general,
not what all papers share. L2 pulls the coordinate weights to zero and the topic weight back to its
start, so the topics count less as reactions accumulate, never suddenly. Older reactions count less
(half-life). Two Rocchio terms are added to what the regression learned: the rated papers' centroid
in the same coordinates, and their words' centroid (:class:`WordCentroid`, for the rare words of a
narrow sub-area that a hundred coordinates blur).

Picks are chosen with some exploration (:func:`choose`); until the person has liked something, it is
strong, keeps away from what they disliked and stays inside the typed field, so a broad phrase shows
several corners of the field and the first 👍 says which one is wanted.

Fitting is a few Newton steps on ~dims+2 unknowns (milliseconds); scoring every paper is one
matrix-vector product. The settings are chosen on the tuning split of ``bench/recommend_eval.py``
(``--grid``) and reported on its held-out test split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
NEWTON_STEPS: Final = 30


@dataclass(frozen=True, slots=True)
class LearningParams:
    """How the per-person model learns; chosen on the tuning split (see the module docstring)."""

    scale: float = 10.0  # coordinates are multiplied by this (sets the L2 pull's strength relative to them)
    l2: float = 3.0  # pull of each coordinate weight towards zero
    prior_weight: float = 10.0  # the topics' weight before any reaction (score = weight · topic match)
    prior_l2: float = 1.0  # how firmly the topics' weight stays at its start as reactions accumulate
    dislike_weight: float = 2.0  # a 👎 as an example, against a 👍's 1
    ignored_weight: float = 0.05  # a paper shown and left without a reaction
    background: int = 300  # papers sampled from the corpus as background negatives
    background_weight: float = 10.0  # their total weight (a smaller corpus's whole sample weighs less)
    half_life_days: float = 180.0  # a reaction this old counts half
    centroid: float = 5.0  # the rated papers' centroid (liked minus disliked) added, in standard deviations
    centroid_dislike: float = 0.5  # how much of the disliked papers' mean it subtracts
    words: float = 0.3  # the rated papers' words (liked minus disliked, BM25) added, in standard deviations
    words_dislike: float = 0.5  # how much of the disliked papers' words it subtracts
    word_terms: int = 100  # the strongest words of that centroid kept for scoring
    exploration: float = 0.3  # later picks give up this much score per unit of cosine to earlier ones
    exploration_unliked: float = 10.0  # the same while the person has liked nothing yet
    candidates_unliked: int = 2000  # the same while nothing is liked (a broad start explores widely)
    avoid_disliked: bool = True  # whether the exploration also keeps away from disliked papers
    unliked_match: float = 0.6  # while nothing is liked, picks match the topics this share of the best match
    candidates: int = 200  # best-scored papers the picks are chosen from


DEFAULT_LEARNING: Final = LearningParams()


@dataclass(frozen=True, slots=True)
class PersonModel:
    """score(paper) = coords · weights + topic_weight · topic match + bias (a logit)."""

    weights: FloatArray  # one per coordinate (already multiplied by ``scale``)
    topic_weight: float
    bias: float

    def scores(self, coords: npt.NDArray[np.float32], topic_match: FloatArray) -> FloatArray:
        return (
            np.asarray(coords @ self.weights.astype(np.float32), dtype=np.float64)
            + self.topic_weight * topic_match
        )

    def plus(self, direction: FloatArray) -> PersonModel:
        return PersonModel(self.weights + direction, self.topic_weight, self.bias)


def centroid_direction(
    liked: npt.NDArray[np.float32], disliked: npt.NDArray[np.float32], spread: float, params: LearningParams
) -> FloatArray:
    """Rocchio in the paper space: the sum of the liked papers' coordinates minus ``centroid_dislike``
    × the disliked ones', over how many were rated — so likes and dislikes of one corner cancel — in
    units of ``centroid`` standard deviations of a unit direction's scores (``spread``)."""
    rated = len(liked) + len(disliked)
    dims = liked.shape[1]
    if not params.centroid or not rated or spread <= 0:
        return np.zeros(dims)
    direction = np.asarray(liked, dtype=np.float64).sum(axis=0)
    direction -= params.centroid_dislike * np.asarray(disliked, dtype=np.float64).sum(axis=0)
    return np.asarray(params.centroid * direction / (rated * spread), dtype=np.float64)


def _rows_and_lengths(
    indptr: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """For weights laid out as :meth:`BM25Index.doc_weights` gives them: each weight's document, and
    each document's vector length (1 for an empty one)."""
    counts = np.diff(indptr)
    row = np.repeat(np.arange(len(counts)), counts)
    lengths = np.sqrt(np.bincount(row, weights=weights**2, minlength=len(counts)))
    lengths[lengths == 0] = 1.0
    return row, lengths


def unit_cosines(
    indptr: npt.NDArray[np.int64],
    terms: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    table: FloatArray,
) -> FloatArray:
    """Each document's cosine to a vector of term weights: its BM25 weights (as
    :meth:`BM25Index.doc_weights` gives them), scaled to length 1, dotted with ``table`` (by term id,
    at least as long as the largest id)."""
    row, lengths = _rows_and_lengths(indptr, weights)
    products = np.bincount(row, weights=weights * table[terms], minlength=len(lengths))
    return np.asarray(products / lengths, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class WordCentroid:
    """Rocchio over words: the rated papers' unit-length BM25 vectors, liked minus ``words_dislike``
    × disliked, over how many were rated, cut to its ``word_terms`` strongest terms. Two papers of
    one narrow sub-area share its rare words, which a hundred coordinates blur; this keeps them.
    A paper's score is its cosine to the centroid times ``scale`` (``words`` over the cosines'
    spread on the background sample)."""

    terms: npt.NDArray[np.int64]  # sorted term ids
    values: FloatArray  # their weights
    scale: float

    @classmethod
    def of(
        cls,
        rated: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]],
        liked: npt.NDArray[np.bool_],
        params: LearningParams,
    ) -> WordCentroid:
        indptr, terms, weights = rated
        row, lengths = _rows_and_lengths(indptr, weights)
        sign = np.where(liked, 1.0, -params.words_dislike)
        unique, where = np.unique(terms, return_inverse=True)
        values = np.bincount(where, weights=weights * (sign / lengths)[row], minlength=len(unique)) / max(
            1, len(lengths)
        )
        keep = np.flatnonzero(values)
        if len(keep) > params.word_terms:
            keep = np.sort(
                keep[np.argpartition(-np.abs(values[keep]), params.word_terms)[: params.word_terms]]
            )
        return cls(unique[keep].astype(np.int64), np.asarray(values[keep], dtype=np.float64), 1.0)

    def scaled(self, background: FloatArray, params: LearningParams) -> WordCentroid:
        """The same centroid, its scale set from the cosines of the background sample."""
        spread = float(np.std(background)) if len(background) > 1 else 0.0
        return WordCentroid(self.terms, self.values, params.words / spread if spread > 0 else 0.0)

    def cosines(
        self, papers: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]
    ) -> FloatArray:
        """:func:`unit_cosines` of the papers (``doc_weights``) to this centroid, times ``scale``."""
        _, terms, _ = papers
        table = np.zeros(int(max(terms.max(initial=0), self.terms.max(initial=0))) + 1)
        table[self.terms] = self.values
        return self.scale * unit_cosines(*papers, table)


@dataclass(frozen=True, slots=True)
class Examples:
    """Training rows: coordinates, topic match, label (1 = wanted) and weight of each."""

    coords: npt.NDArray[np.float32]
    topic_match: FloatArray
    labels: FloatArray
    weights: FloatArray


def fit(examples: Examples, params: LearningParams = DEFAULT_LEARNING) -> PersonModel:
    """The L2-regularised logistic regression of the module docstring (Newton's method)."""
    dims = examples.coords.shape[1]
    features = np.hstack(
        [
            examples.coords.astype(np.float64) * params.scale,
            examples.topic_match[:, None],
            np.ones((len(examples.labels), 1)),
        ]
    )
    start = np.zeros(dims + 2)
    start[dims] = params.prior_weight
    pull = np.full(dims + 2, float(params.l2))
    pull[dims] = params.prior_l2
    pull[dims + 1] = 1e-2  # the bias is almost free; this keeps the Hessian invertible
    y, sw = examples.labels, examples.weights

    def loss(w: FloatArray) -> float:
        z = features @ w
        # Σ weight · log(1 + e^-z) for wanted papers, log(1 + e^z) for the others; plus the L2 pull
        data = np.logaddexp(0.0, np.where(y > 0, -z, z))
        return float(sw @ data + 0.5 * pull @ (w - start) ** 2)

    w = start.copy()
    current = loss(w)
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(features @ w, -30.0, 30.0)))
        gradient = features.T @ (sw * (p - y)) + pull * (w - start)
        hessian = (features * (sw * p * (1.0 - p))[:, None]).T @ features + np.diag(pull)
        step = np.linalg.solve(hessian, gradient)
        # backtracking: Newton's full step overshoots where the logistic is saturated
        t, slope = 1.0, float(gradient @ step)
        while t > 1e-4 and loss(w - t * step) > current - 1e-4 * t * slope:
            t /= 2
        w = w - t * step
        previous, current = current, loss(w)
        if previous - current < 1e-8 * max(1.0, abs(current)):
            break
    return PersonModel(w[:dims] * params.scale, float(w[dims]), float(w[dims + 1]))


def choose(
    scores: FloatArray,
    coords: npt.NDArray[np.float32],
    candidates: Sequence[int],
    count: int,
    exploration: float,
    avoid: npt.NDArray[np.float32] | None = None,
) -> list[int]:
    """Pick ``count`` of the candidates (best score first), each later pick giving up
    ``exploration`` × its cosine to the closest earlier pick (or paper in ``avoid``, e.g. those
    already disliked): a broad start then shows several corners of the field, and the reactions say
    which one is wanted."""
    order = sorted(candidates, key=lambda c: (-scores[c], c))
    if not order or count <= 0:
        return []
    rest = np.array(order, dtype=np.int64)
    closeness = np.full(len(rest), -np.inf)
    if exploration and avoid is not None and len(avoid):
        closeness = (coords[rest] @ avoid.T).max(axis=1)
    picked: list[int] = []
    values = scores[rest]
    while len(rest) and len(picked) < count:
        best = int(np.argmax(values - exploration * np.maximum(closeness, 0.0))) if exploration else 0
        chosen = int(rest[best])
        picked.append(chosen)
        rest, values, closeness = np.delete(rest, best), np.delete(values, best), np.delete(closeness, best)
        if exploration and len(rest):
            closeness = np.maximum(closeness, coords[rest] @ coords[chosen])
    return picked
