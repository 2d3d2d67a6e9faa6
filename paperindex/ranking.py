"""Scoring and ranking a query over the index's segments: rank-bm25's scores, the exact best k.

For each query term, in query order, a compiled loop (:mod:`paperindex.kernels`) adds the term's idf
times rank-bm25's per-posting factor into a score array; the best k of a query whose weights are all
positive need not score every posting (:mod:`paperindex.topk`). :class:`Ranking` is the query side of
:class:`paperindex.index.BM25Index`, which holds the state it reads.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import kernels, topk
from paperindex.locking import locked
from paperindex.segments import Segment
from paperindex.slots import SlotMap
from paperindex.term_ids import TermTable

Query: TypeAlias = Sequence[str] | Mapping[str, float]
"""A list of terms (each occurrence adds its BM25 score again, as in rank-bm25) or a mapping
term → weight (score = Σ weight · bm25_term)."""

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

_ROWS: Final = 128  # a score array is viewed as _ROWS × (slots / _ROWS) for the top-k cut


class Ranking:
    """The query side of the index: scores of every slot, of the matching documents, the best k."""

    lock: threading.RLock
    k1: float
    _vocab: TermTable
    _df: IntArray
    _idf: FloatArray
    _segments: list[Segment]
    _slot_of: SlotMap
    _slot_ids: IntArray
    _alive: BoolArray
    _dead: IntArray
    _len_factor: FloatArray
    _topk_space: topk.Workspace

    if TYPE_CHECKING:

        @property
        def n_slots(self) -> int: ...

        @property
        def avgdl(self) -> float: ...

    def _plan(self, query: Query) -> list[tuple[int, float, float]]:
        """(term id, coefficient = weight · idf, weight) per query term with postings."""
        if isinstance(query, str):
            raise TypeError("query must be a sequence of terms or a term → weight mapping")
        vocab, df, idf = self._vocab, self._df, self._idf
        plan: list[tuple[int, float, float]] = []
        if isinstance(query, Mapping):
            for term, weight in query.items():
                tid = vocab.get(term)
                if tid is not None and df[tid] and weight:
                    plan.append((tid, float(weight) * float(idf[tid]), float(weight)))
        else:
            for term in query:
                tid = vocab.get(term)
                if tid is not None and df[tid]:
                    plan.append((tid, float(idf[tid]), 1.0))
        return plan

    def _accumulate(self, plan: list[tuple[int, float, float]], size: int) -> FloatArray:
        plan = [p for p in plan if p[1] != 0.0]  # rank-bm25 adds 0.0 for those: no change
        tids = np.fromiter((tid for tid, _, _ in plan), dtype=np.int64, count=len(plan))
        coef = np.fromiter((c for _, c, _ in plan), dtype=np.float64, count=len(plan))
        return self._scatter(tids, coef, size)

    def _scatter(self, tids: IntArray, coef: FloatArray, size: int) -> FloatArray:
        """Scores of ``size`` slots for terms ``tids`` with coefficients ``coef``, in that (query) order."""
        scores = np.zeros(size)
        for seg in self._segments:
            kernels.accumulate(
                seg.term_codes,
                seg.t_indptr,
                seg.slot0,
                seg.tfs,
                tids,
                coef,
                self.k1 + 1,
                self._len_factor,
                scores,
            )
        return scores

    def _mark(self, plan: Iterable[tuple[int, float, float]], size: int) -> BoolArray:
        """Which slots contain at least one of the plan's terms."""
        mask = np.zeros(size, dtype=bool)
        for tid, _, _ in plan:
            for seg in self._segments:
                if tid < seg.n_terms:
                    mask[seg.postings(tid)] = True
        return mask

    @locked
    def score_array(self, query: Query) -> FloatArray:
        """Scores of every slot (0.0 for empty slots), aligned with :attr:`slot_ids`."""
        n = self.n_slots
        scores = self._accumulate(self._plan(query), n)
        if len(self._dead):
            scores[self._dead] = 0.0
        return scores

    @locked
    def holding(self, terms: Iterable[str], start: int = 0) -> BoolArray:
        """Which live slots from ``start`` on hold every one of ``terms``, read under one hold of the
        lock (a paper added meanwhile waits). By the postings, not the scores: a term in exactly half
        the documents has idf 0 (rank-bm25's), so its documents score 0 and still hold it."""
        n = self.n_slots
        every = self._alive[start:n].copy()
        for term in dict.fromkeys(terms):
            tid = self._vocab.get(term)
            if tid is None or not self._df[tid]:
                return np.zeros(n - start, dtype=bool)
            every &= self._mark([(tid, 0.0, 1.0)], n)[start:]
        return every

    @locked
    def scores(self, query: Query) -> dict[int, float]:
        """Score of every document containing a query term (absent ids score 0.0)."""
        plan = self._plan(query)
        n = self.n_slots
        scores = self._accumulate(plan, n)
        mask = self._mark(plan, n) & self._alive
        slots = np.flatnonzero(mask)
        return dict(zip(self._slot_ids[slots].tolist(), scores[slots].tolist(), strict=True))

    def top_k(
        self,
        query: Query,
        k: int,
        *,
        allowed: BoolArray | Collection[int] | None = None,
        exclude: Collection[int] = (),
    ) -> list[tuple[int, float]]:
        """Best ``k`` (id, score), by score descending then id ascending.

        Only documents containing at least one query term of positive weight are returned.
        ``allowed`` is a boolean mask over slots (see :meth:`slot_of`) or a collection of ids.
        """
        return self.rank(query, k, allowed=allowed, exclude=exclude)[0]

    @locked
    def rank(
        self,
        query: Query,
        k: int,
        *,
        offset: int = 0,
        allowed: BoolArray | Collection[int] | None = None,
        exclude: Collection[int] = (),
    ) -> tuple[list[tuple[int, float]], int]:
        """Hits ``offset .. offset + k - 1`` of :meth:`top_k`'s order and the number of matches."""
        if k < 0 or offset < 0:
            raise ValueError("k and offset must not be negative")
        n = self.n_slots
        plan = self._plan(query)
        if not plan or n == 0:
            return [], 0
        mask = _allowed_mask(self._slot_of, allowed, exclude, n)
        if all(coef > 0 for _, coef, _ in plan):
            # Every matched document scores > 0 and every other one exactly 0.
            tids = np.fromiter((tid for tid, _, _ in plan), dtype=np.int64, count=len(plan))
            coef = np.fromiter((c for _, c, _ in plan), dtype=np.float64, count=len(plan))
            hits, total = self._top_positive(tids, coef, offset + k, mask)
            return hits[offset:], total
        scores = self._accumulate(plan, n)
        matched = self._mark((p for p in plan if p[2] > 0), n) & self._alive
        if mask is not None:
            matched &= mask
        cand = np.flatnonzero(matched)
        values = scores[cand]
        ids = self._slot_ids[cand]
        order = np.lexsort((ids, -values))[offset : offset + k]
        return list(zip(ids[order].tolist(), values[order].tolist(), strict=True)), len(cand)

    def _top_positive(
        self, tids: IntArray, coef: FloatArray, need: int, mask: BoolArray | None
    ) -> tuple[list[tuple[int, float]], int]:
        """The best ``need`` (id, score) of a query whose coefficients are all positive (``tids``/``coef``
        in query order), best first, and the number of matches."""
        n = self.n_slots
        keep = mask & self._alive if mask is not None else self._alive if len(self._dead) else None
        if self._segments and self.avgdl > 0 and topk.usable(self._segments):
            found = topk.top_positive(
                self._segments, tids, coef, need, k1=self.k1, avgdl=self.avgdl, len_factor=self._len_factor,
                slot_ids=self._slot_ids, keep=keep, space=self._topk_space,
            )  # fmt: skip
            if found is not None:
                return found[0][:need], found[1]
        scores = self._scatter(tids, coef, -(-n // _ROWS) * _ROWS)
        if keep is not None:
            np.multiply(scores[:n], keep, out=scores[:n])
        slots, values, total = _top_exact(scores, need)
        ids = self._slot_ids[slots]
        order = np.lexsort((ids, -values))[:need]
        return list(zip(ids[order].tolist(), values[order].tolist(), strict=True)), total


def _top_exact(scores: FloatArray, need: int) -> tuple[IntArray, FloatArray, int]:
    """Slots holding the best ``need`` of ``scores`` (length a multiple of _ROWS; 0.0 where unmatched)
    and every slot tied with them, their scores, and the number of positive scores."""
    # +0.0 is the only double whose bits are all zero: counting int64 is SIMD-fast.
    total = int(np.count_nonzero(scores.view(np.int64)))
    if total == 0 or need == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0), total
    grid = scores.reshape(_ROWS, -1)
    cand: IntArray | None = None
    if total > 4 * need and need <= grid.shape[1]:
        # Column maxima: the need-th largest is ≤ the need-th largest score, so only columns
        # reaching it can hold a top-need score (a few columns, not the array).
        col_max = grid.max(axis=0)
        cut = len(col_max) - need
        threshold = np.partition(col_max, cut)[cut]
        if threshold > 0:
            cols = np.flatnonzero(col_max >= threshold)
            rows, at = np.nonzero(grid[:, cols] >= threshold)
            cand = rows * grid.shape[1] + cols[at]
    if cand is None:
        cand = np.flatnonzero(scores)
    return cand, scores[cand], total


def _allowed_mask(
    slot_of: Mapping[int, int], allowed: BoolArray | Collection[int] | None, exclude: Collection[int], n: int
) -> BoolArray | None:
    """A mask over ``n`` slots: the ``allowed`` mask or ids, without the ``exclude`` ids (None: every slot)."""
    mask: BoolArray | None = None
    if allowed is not None:
        if isinstance(allowed, np.ndarray) and allowed.dtype == np.bool_:
            if len(allowed) != n:
                raise ValueError(f"allowed mask has {len(allowed)} slots, index has {n}")
            mask = allowed.copy()
        else:
            mask = np.zeros(n, dtype=bool)
            slots = [slot_of[i] for i in allowed if i in slot_of]
            mask[slots] = True
    if exclude:
        slots = [slot_of[i] for i in exclude if i in slot_of]
        if slots:
            if mask is None:
                mask = np.ones(n, dtype=bool)
            mask[slots] = False
    return mask
