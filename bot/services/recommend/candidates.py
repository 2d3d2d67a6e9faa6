"""A ranked paper on its way to becoming a pick, and the near-copy guard that reads their words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.services.recommend.learner import rows_and_lengths

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

DUPLICATE_TERMS: Final = 12  # distinctive terms compared by the near-copy guard


class MutedPapers(Protocol):
    """The candidate filter: the papers a person muted never become candidates
    (``bot.services.people.mutes.MuteService``; a channel feed's planner leaves out its own)."""

    async def muted(self, user_id: int) -> frozenset[int]: ...


class WeightedPapers(Protocol):
    def doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, FloatArray]: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A paper one interest would pick, with what its reason names: the typed words it matched and
    the liked paper of the interest it lies closest to."""

    paper_id: int
    score: float
    words: tuple[str, ...] = ()
    like: int | None = None  # a paper the person liked or saved
    like_signal: str = "like"


@dataclass(slots=True)
class Pool:
    """Papers' terms as flat arrays (row = paper, sorted), from the index."""

    ids: list[int]
    indptr: IntArray
    row: IntArray
    terms: IntArray  # index term id of each (paper, term)
    weights: FloatArray  # its BM25 weight in the paper
    unit: FloatArray  # the weight divided by the paper's vector norm

    @classmethod
    def of(cls, index: WeightedPapers, paper_ids: list[int]) -> Pool:
        papers = index.doc_weights(paper_ids)
        indptr, terms, weights = papers
        row, norms = rows_and_lengths(papers)
        return cls(paper_ids, indptr, row, terms, weights, weights / norms[row])

    def top_terms(self, n: int, k: int = DUPLICATE_TERMS) -> frozenset[int]:
        """The paper's k distinctive terms (largest BM25 weights), for the near-copy guard."""
        lo, hi = int(self.indptr[n]), int(self.indptr[n + 1])
        terms, weights = self.terms[lo:hi], self.weights[lo:hi]
        if hi - lo > k:
            terms = terms[np.argpartition(-weights, k - 1)[:k]]
        return frozenset(terms.tolist())


def jaccard(a: frozenset[str] | frozenset[int], b: frozenset[str] | frozenset[int]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


class NearCopyGuard:
    """Keeps a list free of near-copies: a paper whose distinctive terms overlap an earlier pick's by
    ``threshold`` (Jaccard) or more, or with the same title words, is one paper twice."""

    def __init__(self, pool: Pool, title_hashes: Sequence[int], threshold: float) -> None:
        self._pool = pool
        self._row = {paper_id: k for k, paper_id in enumerate(pool.ids)}
        self._hashes = title_hashes
        self._threshold = threshold
        self._tops: list[frozenset[int]] = []
        self._titles: set[int] = set()

    def admit(self, paper_id: int) -> bool:
        """Whether the paper is no near-copy of one admitted before; if so it is admitted."""
        k = self._row.get(paper_id)
        if k is None:
            return True
        title = int(self._hashes[k])
        if title and title in self._titles:
            return False
        top = self._pool.top_terms(k)
        if any(jaccard(top, other) >= self._threshold for other in self._tops):
            return False
        self._tops.append(top)
        self._titles.add(title)
        return True
