"""The exact best k of a query whose coefficients are all positive, without scoring every posting exactly.

Each segment keeps, per posting, its tf factor ``tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))``
quantised to one byte (:func:`quantise`): steps of (k1 + 1)/255, rounded to the nearest, so the factor
is within half a step of ``step · impact``, for the average length ``avgdl₀`` of the moment it was
computed. If avgdl has moved since, to ``avgdl``, the factor moves by at most the ratio
``avgdl/avgdl₀`` either way (for ``r = avgdl₀/avgdl``, ``k1·(1 − b + b·|d|/avgdl)`` is
``k1·(1 − b)·(1 − r) + r·K₀``, between ``r·K₀`` and ``K₀``, and ``tf·(k1 + 1)/(tf + K)`` scales by
less than K does); a segment is quantised again when that ratio leaves ``1 ± DRIFT``.

A query then runs in three compiled steps (:mod:`paperindex.kernels`):

1. every posting of the query's terms adds ``weight · step · ratio_hi · (impact + ½)`` into a float32
   sum per slot: an upper bound of the slot's exact score once multiplied by a slack for float32
   rounding, and never more than ``gap`` above it (half a step per term either side, the avgdl drift,
   the rounding; ``gap`` is summed over all the query's terms, so it holds for every document);
2. one scan over the sums counts the matches and keeps a heap of the ``need`` best bounds, collecting
   every slot whose bound is within ``gap`` of the heap's least (it cannot be below the ``need``-th
   exact score otherwise);
3. the heap's documents are scored exactly (rank-bm25's operations, in its order, from each document's
   own terms): the least of those scores is at most the ``need``-th best exact score, so every other
   collected slot whose bound reaches it is scored exactly too, and the best ``need`` of all exactly
   scored ones, by score then id, are rank-bm25's best ``need``.

Ties and near-ties at the cut are harmless: a slot is dropped only when its bound is below an exact
score of another slot, so its own exact score is too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import kernels
from paperindex.segments import Segment

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

LEVELS: Final = 255  #: impact steps up to k1 + 1
DRIFT: Final = 1e-3  #: how far avgdl may move (relatively) before a segment's impacts are recomputed
_U32: Final = 2.0**-24  # float32 unit roundoff


def impact_step(k1: float) -> float:
    return (k1 + 1) / LEVELS


def bounded(k1: float, b: float) -> bool:
    """Whether the factor stays within [0, k1 + 1] for every tf ≥ 1 and length (what the bounds need)."""
    return k1 >= 0 and 0 <= b <= 1


def quantise(seg: Segment, k1: float, len_factor: FloatArray, avgdl: float) -> None:
    """(Re)compute ``seg``'s impacts for the current length factors (those of ``avgdl``)."""
    impacts = seg.impacts if seg.impacts is not None and len(seg.impacts) == seg.n_postings else None
    if impacts is None:
        impacts = np.empty(seg.n_postings, dtype=np.uint8)
    kernels.quantise(
        seg.term_codes, seg.t_indptr, seg.slot0, seg.tfs, k1 + 1, len_factor, 1 / impact_step(k1), impacts
    )
    seg.impacts = impacts
    seg.impact_avgdl = avgdl


def stale(seg: Segment, avgdl: float) -> bool:
    """Whether ``seg``'s impacts are missing or were computed for an avgdl too far from ``avgdl``."""
    if seg.impacts is None or seg.impact_avgdl <= 0:
        return True
    return abs(avgdl / seg.impact_avgdl - 1) > DRIFT


@dataclass
class Workspace:
    """Buffers reused from query to query (callers hold the index's lock): the float32 sums, always
    zero between queries, and the keep mask, both padded to whole blocks; the candidates."""

    acc: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    keep: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    cand: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cand_bound: FloatArray = field(default_factory=lambda: np.zeros(0))
    exact: FloatArray = field(default_factory=lambda: np.zeros(0))

    def fit(self, n_slots: int) -> None:
        padded = -(-n_slots // kernels.BLOCK) * kernels.BLOCK
        if len(self.acc) != padded:
            self.acc = np.zeros(padded, dtype=np.float32)
            self.keep = np.zeros(padded, dtype=bool)
            self.cand = np.zeros(padded, dtype=np.int64)
            self.cand_bound = np.zeros(padded)
            self.exact = np.zeros(padded)


def usable(segments: Sequence[Segment]) -> bool:
    """Whether every segment has impacts."""
    return all(seg.impacts is not None for seg in segments)


def top_positive(
    segments: Sequence[Segment],
    tids: IntArray,
    coef: FloatArray,
    need: int,
    *,
    k1: float,
    avgdl: float,
    len_factor: FloatArray,
    slot_ids: IntArray,
    keep: BoolArray | None,
    space: Workspace,
) -> tuple[list[tuple[int, float]], int] | None:
    """The best ``need`` (id, score) of a plan whose coefficients are all positive (``tids``/``coef`` in
    plan order), by score descending then id, and the number of matched slots; ``keep`` masks slots out
    (None: all kept). None when the bounds cannot be used (weights float32 cannot hold): the caller
    then scores exactly."""
    n_slots = len(len_factor)
    space.fit(n_slots)
    ratios = [avgdl / seg.impact_avgdl for seg in segments]
    use_keep = keep is not None
    if keep is not None:
        space.keep[:n_slots] = keep
    need = max(1, need)
    out_ids = np.empty(need, dtype=np.int64)
    out_scores = np.empty(need)
    matched, n_out = kernels.top_bounded(
        tuple(seg.t_indptr for seg in segments),
        tuple(seg.term_codes for seg in segments),
        tuple(seg.impacts for seg in segments),
        tuple(seg.d_indptr for seg in segments),
        tuple(seg.d_code for seg in segments),
        tuple(seg.d_byteptr for seg in segments),
        tuple(seg.doc_tfs for seg in segments),
        np.array([seg.slot0 for seg in segments], dtype=np.int64),
        tids, coef, impact_step(k1), min(min(ratios), 1.0), max(max(ratios), 1.0), k1 + 1, len_factor,
        slot_ids, space.acc, space.keep, use_keep, need,
        space.cand, space.cand_bound, space.exact, out_ids, out_scores,
    )  # fmt: skip
    if matched < 0:
        return None
    return list(zip(out_ids[:n_out].tolist(), out_scores[:n_out].tolist(), strict=True)), matched
