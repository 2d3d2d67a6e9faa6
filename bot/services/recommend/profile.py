"""The words of an interest as a weighted BM25 query, and the ranking's settings.

A typed topic's words are the query (each at ``topic_weight``); a paper named as an interest stands
for its distinctive terms (:func:`indexed_vector`) while the paper space that its model needs is
still being computed after a start. :mod:`bot.services.recommend.topic_ranking` ranks with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from paperindex.tokenizer import display_terms


class DocumentStats(Protocol):
    """The indexed papers' own terms (``paperindex.index.BM25Index``): vectors without re-reading text."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...

    def term_ids(self, terms: Iterable[str]) -> npt.NDArray[np.int64]: ...

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...

    def doc_weights(
        self, doc_ids: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]: ...


@dataclass(frozen=True, slots=True)
class RankingParams:
    """Weights of the words' query and of the ranking; tuned on `bench/recommend_eval.py`."""

    topic_weight: float = 1.0  # each topic term
    terms_per_paper: int = 40  # distinctive terms a paper stands for
    min_coverage: float = 0.04  # the bar: share of the query's positive mass a pick must match
    recency_floor: float = 0.85  # score multiplier for a very old paper (new papers get 1.0)
    recency_half_life_days: float = 365.0
    duplicate_jaccard: float = 0.6  # top-term overlap above which two picks are near-copies
    pool: int = 100  # candidates the query fetches (at least twice the count asked for)
    probe_terms: int = 40  # the pool is fetched with the strongest terms, then fully scored


DEFAULT_PARAMS: Final = RankingParams()


@dataclass(frozen=True, slots=True)
class PaperVector:
    """A paper's distinctive terms: unit-length weights of its top terms, and their words."""

    weights: Mapping[str, float]
    words: Mapping[str, str]  # index term → the word as written in the paper

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(self.weights)


def _unit_top(scored: list[tuple[str, float]], top_k: int) -> dict[str, float]:
    scored.sort(key=lambda item: (-item[1], item[0]))
    top = scored[:top_k]
    norm = math.sqrt(sum(w * w for _, w in top)) or 1.0
    return {term: w / norm for term, w in top}


def indexed_vector(
    paper_id: int, index: DocumentStats, *, top_k: int, min_df: int = 2, shown: Callable[[str], str] = str
) -> PaperVector:
    """An indexed paper's distinctive terms, unit length, from the index's own counts (no text read).

    The terms kept are the `top_k` with the largest BM25 weight in the paper, ``idf · tf·(k1 + 1) /
    (tf + k1·(1 − b + b·|d|/avgdl))``, among terms at least `min_df` papers have (a word only this
    paper uses finds nothing else). Each is weighted by the tf part of that weight only: the profile
    query is scored with BM25, which applies idf itself. With idf in the query weights too, the rare
    words of one liked paper outweighed the words all liked papers share (``bench/recommend_eval.py``:
    0.380 → 0.394 mean precision@5). Each term is shown as ``shown`` writes it (the engine's
    ``vocabulary.form``: the corpus's most common word for it).
    """
    counts = index.doc_terms(paper_id)
    names = list(counts)
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(names))
    norm = index.k1 * (1 - index.b + index.b * index.doc_length(paper_id) / (index.avgdl or 1.0))
    tf_part = tf * (index.k1 + 1) / (tf + norm)
    # idf · tf part and document frequencies, as the index has them (whole-paper calls, not per term)
    _, ids, weights = index.doc_weights([paper_id])
    term_ids = index.term_ids(names)
    order = np.argsort(ids)
    at = np.searchsorted(ids[order], term_ids)
    weight = weights[order[np.minimum(at, len(ids) - 1)]] if len(ids) else np.zeros(len(names))
    weight[index.doc_freqs(term_ids) < min_df] = 0.0
    best = [i for i in np.argsort(-weight, kind="stable")[:top_k].tolist() if weight[i] > 0]
    unit = _unit_top([(names[i], float(tf_part[i])) for i in best], top_k)
    return PaperVector(weights=unit, words={t: shown(t) for t in unit})


@dataclass(frozen=True, slots=True)
class Profile:
    """An interest's words: index term → weight, and the word to show for each term."""

    topics: tuple[str, ...]
    topic_terms: Mapping[str, float]
    words: Mapping[str, str]

    @property
    def empty(self) -> bool:
        return not any(w > 0 for w in self.topic_terms.values())

    def query(self) -> dict[str, float]:
        return {t: w for t, w in self.topic_terms.items() if abs(w) > 1e-9}

    def word(self, term: str) -> str:
        return self.words.get(term, term)


NO_WORDS: Final = Profile((), {}, {})


def topic_profile(topics: Sequence[str], params: RankingParams = DEFAULT_PARAMS) -> Profile:
    """The words of typed topics (each topic's terms at ``topic_weight``)."""
    terms, shown = topic_terms(topics, params.topic_weight)
    return Profile(tuple(topics), terms, shown)


def paper_profile(vector: PaperVector) -> Profile:
    """A paper's distinctive terms as the words of an interest (no typed words to show)."""
    return Profile((), dict(vector.weights), dict(vector.words))


def decay(created_at: str, now: datetime, half_life_days: float) -> float:
    """0.5 ** (age / half-life): 1.0 for a signal given now, 0.5 after one half-life."""
    try:
        moment = datetime.fromisoformat(created_at)
    except ValueError:
        return 1.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    age_days = max(0.0, (now - moment).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def topic_terms(topics: Sequence[str], weight: float) -> tuple[dict[str, float], dict[str, str]]:
    """Index terms of the topics (each topic's terms at `weight`), and the words the user typed."""
    terms: dict[str, float] = {}
    shown: dict[str, str] = {}
    for topic in topics:
        for word, term in display_terms(topic):
            terms[term] = max(terms.get(term, 0.0), weight)
            shown.setdefault(term, word)
    return terms, shown
