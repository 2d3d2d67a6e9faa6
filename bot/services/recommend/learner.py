"""A model of what one person wants, learned from their reactions (👍 🔖 for, 👎 against).

Per interest of a person (:mod:`bot.services.recommend.attribution` says which reactions teach which), a
logistic regression over three views of every paper:

* its **words**: the paper's BM25 vector scaled to length 1 (as arxiv-sanity's SVM reads TF-IDF), one
  weight per word of the papers the person rated — two papers of one narrow sub-area share its rare
  words;
* its **place in the field**: its LSA coordinates (:mod:`bot.services.recommend.paper_space`), so that a paper
  about the same things in other words is lifted too;
* how well it matches the person's typed **topics** (BM25, scaled to 0–1 by the best match).

Each reaction is a training example (older ones count less: half-life); papers shown and left
without a reaction are weak negatives; a fixed sample of the corpus is a weak background negative,
so the model learns what sets the liked papers apart from papers in general, as the SVM that
arxiv-sanity trains against every other paper does. L2 pulls every weight towards its start.

Before the first 👍 the topics lead: their weight is held near ``prior_weight``, the 👎 teach which
corners of the typed field are not wanted, and the picks explore (:func:`choose`), so a broad phrase
shows several corners and the first 👍 says which one is wanted. From the first 👍 on the
topics' weight is learned like every other, from a smaller prior (``prior_liked``): the typed words stay
what the interest is about, as each interest keeps its own model. (With one model for all of a
person's topics, holding it there lost on the tuning split of ``bench/recommend_eval.py``; learned from
zero, an interest with no 👍 yet vanished from the picks.) An interest among several starts from a
larger prior (``prior_several``): it gets two or three picks of five, which must be about its words,
and a model that follows its 👍s away from them drifts towards the other interests' fields
(``bench/interests_eval.py``, tune split: days 4–6 precision up for two and three interests). A
topic the person named a paper for (the answer to a broad topic) is the exception: the paper says
which part of the field they mean, so its words' weight is learned from zero and binds no pick
(``prior_narrowed``, ``liked_match_narrowed``).

Fitting is L-BFGS over the words of the rated papers plus ~dims+2 weights (milliseconds); scoring
every paper's place and topic match is one matrix-vector product, and the words are added to the
best of those (:meth:`PersonModel.word_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Coords = npt.NDArray[np.float32]
#: papers as :meth:`paperindex.index.BM25Index.doc_weights` gives them: (indptr, term ids, weights)
DocWeights = tuple[IntArray, IntArray, FloatArray]

MAX_ITERATIONS: Final = 200
HELD: Final = 100.0  # the L2 pull on a weight held at its start


@dataclass(frozen=True, slots=True)
class LearningParams:
    """How the per-person model learns and picks; chosen on the tuning split (module docstring)."""

    word_l2: float = 1.0  # pull of each word's weight towards zero
    coord_l2: float = 0.3  # the same for each LSA coordinate's
    topic_l2: float = 1.0  # the same for the topics' weight, once something is liked
    prior_liked: float = 1.0  # once something is liked the topics' weight starts here (0: learned from zero)
    prior_several: float = 3.0  # the same for an interest among several (it keeps closer to its words)
    prior_weight: float = 10.0  # the topics' weight while nothing is liked yet (score = weight · match)
    prior_l2: float = 1.0  # how firmly it stays there
    dislike_weight: float = 1.0  # a 👎 as an example, against a 👍's 1
    #: the same in an interest that is a group of the person's own 👍 (a library): the papers they chose
    #: say what it is; a 👎 on a pick says less (bench/library_eval.py, tune split: at 1.0 days 2–3
    #: drift from the library, days 1–3 precision 0.43 / 0.42 IJCAI / ICLR, at 0.1 0.49 / 0.44)
    grouped_dislike_weight: float = 0.1
    ignored_weight: float = 0.05  # a paper shown and left without a reaction
    background: int = 300  # papers sampled from the corpus as background negatives
    background_weight: float = 10.0  # their total weight (a smaller corpus's whole sample weighs less)
    half_life_days: float = 180.0  # a reaction this old counts half
    pool: int = 500  # papers best by place and topics that the words are scored on
    exploration: float = 0.0  # later picks give up this much score per unit of cosine to earlier ones
    exploration_unliked: float = 10.0  # the same while the person has liked nothing yet
    candidates: int = 200  # best-scored papers the picks are chosen from
    candidates_unliked: int = 2000  # the same while nothing is liked (a broad start explores widely)
    unliked_match: float = 0.6  # while nothing is liked, picks match the topics this share of the best match
    liked_match: float = 0.25  # once something is liked, this share (an interest stays about its words)
    place_pool: int = 5000  # of those, the papers matching the topics best are scored by place
    #: a topic narrowed by a paper the person named for it (a broad field answered): its words' weight
    #: starts here once liked, and binds the picks this much (bench/interests_eval.py, tune split,
    #: IJCAI answered, days 4–6: 0.241 / 0.262 / 0.273 for one / two / three interests at the settings
    #: of a typed name, 0.336 / 0.304 / 0.369 with neither; for every interest, they cost typed names)
    prior_narrowed: float = 0.0
    liked_match_narrowed: float = 0.0


DEFAULT_LEARNING: Final = LearningParams()


def unit_rows(papers: DocWeights, columns: IntArray) -> sp.csr_matrix:
    """The papers' BM25 vectors scaled to length 1 (over all their words), keeping only the words in
    ``columns`` (sorted term ids), one column each."""
    _, terms, weights = papers
    row, lengths = rows_and_lengths(papers)
    at = _lookup(columns, np.arange(len(columns)), terms, missing=-1)
    known = at >= 0
    return sp.csr_matrix(
        ((weights / lengths[row])[known], (row[known], at[known])), shape=(len(lengths), len(columns))
    )


def rows_and_lengths(papers: DocWeights) -> tuple[IntArray, FloatArray]:
    """Each weight's paper, and each paper's vector length (1 for an empty one)."""
    indptr, _, weights = papers
    counts = np.diff(indptr)
    row = np.repeat(np.arange(len(counts)), counts)
    lengths = np.sqrt(np.bincount(row, weights=weights**2, minlength=len(counts)))
    lengths[lengths == 0] = 1.0
    return row, lengths


def _lookup(
    keys: IntArray, values: npt.NDArray[Any], wanted: IntArray, *, missing: float
) -> npt.NDArray[Any]:
    """values[i] where keys[i] == each wanted term id, else ``missing`` (a gather from a table by term
    id: faster than searching, and term ids are dense)."""
    table = np.full(
        max(int(keys.max(initial=-1)), int(wanted.max(initial=-1))) + 1, missing, dtype=values.dtype
    )
    table[keys] = values
    return table[wanted]


@dataclass(frozen=True, slots=True)
class Examples:
    """Training rows: each paper's words (:func:`unit_rows` over ``terms``), coordinates and topic
    match, its label (1 = wanted) and its weight. The first ``rated`` rows are the papers the person
    reacted to (the rest: papers shown and ignored, and the background)."""

    words: sp.csr_matrix
    terms: IntArray  # the term id of each column of ``words``
    coords: Coords
    topic_match: FloatArray
    labels: FloatArray
    weights: FloatArray
    rated: int


@dataclass(frozen=True, slots=True)
class PersonModel:
    """logit(paper) = Σ word weights · its unit BM25 vector + coords · coord weights
    + topic weight · topic match + bias."""

    terms: IntArray  # sorted term ids with a weight
    term_weights: FloatArray
    coord_weights: FloatArray
    topic_weight: float
    bias: float

    def place_scores(self, coords: Coords, topic_match: FloatArray) -> FloatArray:
        """The coordinates' and the topics' part of the logit (cheap: every paper at once)."""
        return (
            np.asarray(coords @ self.coord_weights.astype(np.float32), dtype=np.float64)
            + self.topic_weight * topic_match
        )

    def word_scores(self, papers: DocWeights) -> FloatArray:
        """The words' part of the logit for these papers."""
        _, terms, weights = papers
        row, lengths = rows_and_lengths(papers)
        values = _lookup(self.terms, self.term_weights, terms, missing=0.0)
        return np.asarray(
            np.bincount(row, weights=weights * values, minlength=len(lengths)) / lengths, dtype=np.float64
        )

    def strongest_words(self, n: int, *, positive: bool) -> list[tuple[int, float]]:
        """(term id, weight) of the ``n`` words that count most for (or against) a paper."""
        sign = 1.0 if positive else -1.0
        order = np.argsort(-sign * self.term_weights, kind="stable")[:n]
        return [
            (int(self.terms[k]), float(self.term_weights[k]))
            for k in order
            if sign * self.term_weights[k] > 0
        ]


def fit(
    examples: Examples,
    params: LearningParams = DEFAULT_LEARNING,
    *,
    liked: bool,
    several: bool = False,
    narrowed: bool = False,
) -> PersonModel:
    """The L2-regularised logistic regression of the module docstring (L-BFGS). ``liked``: whether
    any example is wanted; until one is, the topics' weight is held near ``prior_weight``. ``several``:
    the interest is one of several (its topics' weight then starts at ``prior_several``);
    ``narrowed``: a paper named for its topic says which part of it is meant (``prior_narrowed``)."""
    n_words, dims = len(examples.terms), examples.coords.shape[1]
    rows = len(examples.labels)
    # the words sparse, the rest (coordinates, topic match, bias) one dense block beside them
    words = examples.words.tocsr()
    words_t = words.T.tocsr()
    dense = np.empty((rows, dims + 2))
    dense[:, :dims] = examples.coords
    dense[:, dims] = examples.topic_match
    dense[:, dims + 1] = 1.0
    start = np.zeros(n_words + dims + 2)
    pull = np.concatenate([np.full(n_words, params.word_l2), np.full(dims, params.coord_l2), [0.0, 1e-3]])
    if liked:
        # the typed words stay the interest's prior: its weight starts there and moves with the reactions
        prior = params.prior_narrowed if narrowed else params.prior_several if several else params.prior_liked
        start[-2], pull[-2] = prior, params.topic_l2
    else:
        start[-2], pull[-2] = params.prior_weight, params.prior_l2
        # With nothing wanted, a free bias would explain every 👎 by itself (all papers unwanted).
        # Held where the prior puts the disliked papers at even odds, the 👎 lower their own words
        # and corner instead.
        disliked = examples.topic_match[: examples.rated]
        if len(disliked):
            start[-1], pull[-1] = -params.prior_weight * float(disliked.mean()), HELD
    sign = 2.0 * examples.labels - 1.0
    weights = examples.weights

    def loss_and_gradient(w: FloatArray) -> tuple[float, FloatArray]:
        margin = sign * (words @ w[:n_words] + dense @ w[n_words:])
        # Σ weight · log(1 + e^-margin), plus the L2 pull
        loss = float(weights @ np.logaddexp(0.0, -margin) + 0.5 * pull @ (w - start) ** 2)
        slope = -sign * weights / (1.0 + np.exp(np.clip(margin, -50.0, 50.0)))
        gradient = np.concatenate([words_t @ slope, dense.T @ slope])
        return loss, np.asarray(gradient + pull * (w - start), dtype=np.float64)

    w = lbfgs(loss_and_gradient, start)
    keep = np.flatnonzero(w[:n_words])
    return PersonModel(
        terms=examples.terms[keep],
        term_weights=w[:n_words][keep],
        coord_weights=w[n_words : n_words + dims],
        topic_weight=float(w[-2]),
        bias=float(w[-1]),
    )


def lbfgs(
    loss_and_gradient: Callable[[FloatArray], tuple[float, FloatArray]],
    start: FloatArray,
    *,
    memory: int = 10,
    iterations: int = MAX_ITERATIONS,
    tolerance: float = 1e-9,
) -> FloatArray:
    """The minimum of a smooth convex function by L-BFGS with a backtracking line search (Nocedal &
    Wright, algorithms 7.4 and 3.1). scipy's L-BFGS-B costs milliseconds an iteration at a few
    thousand unknowns (its bounds machinery), which a digest per person cannot afford."""
    w = start.copy()
    loss, gradient = loss_and_gradient(w)
    steps: list[tuple[FloatArray, FloatArray, float]] = []  # (s, y, 1 / y·s), oldest first
    for _ in range(iterations):
        direction = -gradient
        alphas = []
        for s, y, rho in reversed(steps):
            alpha = rho * float(s @ direction)
            alphas.append(alpha)
            direction = direction - alpha * y
        if steps:
            s, y, _ = steps[-1]
            direction = direction * (float(s @ y) / float(y @ y))
        else:
            direction = direction / max(1.0, float(np.abs(gradient).max()))
        for (s, y, rho), alpha in zip(steps, reversed(alphas), strict=True):
            direction = direction + (alpha - rho * float(y @ direction)) * s
        slope = float(gradient @ direction)
        if slope >= 0:  # not a descent direction (rounding): start the memory again
            steps.clear()
            direction, slope = -gradient, -float(gradient @ gradient)
        t = 1.0
        while True:
            candidate = w + t * direction
            new_loss, new_gradient = loss_and_gradient(candidate)
            if new_loss <= loss + 1e-4 * t * slope or t < 1e-10:
                break
            t /= 2
        s, y = candidate - w, new_gradient - gradient
        if float(s @ y) > 1e-12:
            steps.append((s, y, 1.0 / float(s @ y)))
            if len(steps) > memory:
                steps.pop(0)
        w, gradient, previous, loss = candidate, new_gradient, loss, new_loss
        if previous - loss <= tolerance * max(1.0, abs(loss)):
            break
    return w


def choose(
    scores: FloatArray,
    coords: Coords,
    candidates: Sequence[int],
    count: int,
    exploration: float,
    avoid: Coords | None = None,
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
