"""Each document's own terms, read back from the index (its document-major postings): what similar
papers, the recommender's paper vectors and a hit's matched words read. :class:`ForwardReads` is that
side of :class:`paperindex.index.BM25Index`, which holds the state it reads.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import doc_terms as doc_codes
from paperindex.locking import locked
from paperindex.packed import PackedStrings
from paperindex.segments import Segment, offsets
from paperindex.slots import SlotMap
from paperindex.term_ids import TermTable
from paperindex.tokenizer import PHRASE_JOIN

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


def _only_words(
    indptr: IntArray, ids: IntArray, weights: FloatArray, word_mask: Callable[[IntArray], BoolArray]
) -> tuple[IntArray, IntArray, FloatArray]:
    """Documents' ``(indptr, term ids, weights)`` without their phrase terms."""
    words = word_mask(ids)
    if words.all():
        return indptr, ids, weights
    kept = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(words, dtype=np.int64)])
    return kept[indptr], ids[words], weights[words]


class ForwardReads:
    """A document's terms and frequencies, the weights of several documents' terms, which terms they hold."""

    lock: threading.RLock
    k1: float
    _terms: PackedStrings
    _vocab: TermTable
    _idf: FloatArray
    _segments: list[Segment]
    _seg_starts: list[int]
    _slot_of: SlotMap
    _len_factor: FloatArray

    @locked
    def doc_terms(self, doc_id: int, *, phrases: bool = False) -> dict[str, int]:
        """Term frequencies of one document's word terms (KeyError for an unknown id): phrase terms
        (two words joined by :data:`PHRASE_JOIN`) count in its length but are left out unless asked for."""
        terms, tfs = self._forward(self._slot_of[doc_id])
        names = self._terms
        pairs = zip(terms.tolist(), tfs.tolist(), strict=True)
        return {names[t]: f for t, f in pairs if phrases or PHRASE_JOIN not in names[t]}

    @locked
    def doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, FloatArray]:
        """The word terms of several documents at once: ``(indptr, term ids, weights)``.

        Document ``n``'s terms are ``ids[indptr[n]:indptr[n + 1]]``; each weight is what the term adds
        to the document's score for a one-term query, ``idf · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))``
        (KeyError for an unknown id). Phrase terms are left out, as in :meth:`doc_terms`.
        """
        return _only_words(*self._doc_weights(doc_ids), self._vocab.word_mask)

    def _doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, FloatArray]:
        slots = self._slot_of.slots_array(np.asarray(doc_ids, dtype=np.int64))
        if len(self._segments) == 1:  # the usual case after a build: one gather, no per-segment masks
            seg = self._segments[0]
            local = slots - seg.slot0
            lo, lengths = seg.d_indptr[local], seg.d_indptr[local + 1] - seg.d_indptr[local]
            indptr = offsets(lengths)
            at = np.arange(int(indptr[-1]), dtype=np.int64) + np.repeat(lo - indptr[:-1], lengths)
            ids = seg.doc_terms(local).astype(np.int64)
            tf = seg.doc_tf(at).astype(np.float64)
            norm = np.repeat(self._len_factor[slots], lengths)
            return indptr, ids, self._idf[ids] * (tf * (self.k1 + 1) / (tf + norm))
        # Gather every document's forward range at once, segment by segment (no loop per document).
        seg_of = np.searchsorted(np.asarray(self._seg_starts, dtype=np.int64), slots, side="right") - 1
        lo = np.empty(len(slots), dtype=np.int64)
        lengths = np.empty(len(slots), dtype=np.int64)
        for k in np.unique(seg_of).tolist():
            seg, mine = self._segments[k], seg_of == k
            local = slots[mine] - seg.slot0
            lo[mine] = seg.d_indptr[local]
            lengths[mine] = seg.d_indptr[local + 1] - lo[mine]
        indptr = offsets(lengths)
        total = int(indptr[-1])
        at = np.arange(total, dtype=np.int64) + np.repeat(lo - indptr[:-1], lengths)
        ids = np.empty(total, dtype=np.int64)
        tf = np.empty(total, dtype=np.float64)
        posting_seg = np.repeat(seg_of, lengths)
        for k in np.unique(seg_of).tolist():
            mine, seg = posting_seg == k, self._segments[k]
            ids[mine] = seg.doc_terms(slots[seg_of == k] - seg.slot0)
            tf[mine] = seg.doc_tf(at[mine])
        norm = np.repeat(self._len_factor[slots], lengths)
        return indptr, ids, self._idf[ids] * (tf * (self.k1 + 1) / (tf + norm))

    def matched_terms(self, doc_id: int, terms: Iterable[str]) -> list[str]:
        """Those of ``terms`` (in their order, without repeats) that occur in the document."""
        return self.matched_terms_many([doc_id], terms)[0]

    @locked
    def matched_terms_many(self, doc_ids: Sequence[int], terms: Iterable[str]) -> list[list[str]]:
        """:meth:`matched_terms` for many documents at once (one compiled walk of each one's terms)."""
        wanted = [t for t in dict.fromkeys(terms) if self._vocab.get(t) is not None]
        if not wanted or not doc_ids:
            return [[] for _ in doc_ids]
        slots = np.array([self._slot_of[d] for d in doc_ids], dtype=np.int64)
        ids = np.array([self._vocab.get(t) for t in wanted], dtype=np.int64)
        order = np.argsort(ids)
        held = np.zeros((len(slots), len(wanted)), dtype=bool)
        rows = np.arange(len(slots))
        for seg in self._segments:
            mine = (
                rows
                if len(self._segments) == 1
                else rows[(slots >= seg.slot0) & (slots < seg.slot0 + seg.n_docs)]
            )
            if len(mine):
                doc_codes.holds(
                    seg.d_code, seg.d_byteptr, slots[mine] - seg.slot0, ids[order], order, held, mine
                )
        return [[term for term, h in zip(wanted, row, strict=True) if h] for row in held.tolist()]

    def _forward(self, slot: int) -> tuple[npt.NDArray[np.int32], IntArray]:
        """The term ids (ascending) and frequencies of the document in ``slot``."""
        seg = self._segments[bisect.bisect_right(self._seg_starts, slot) - 1]
        local = slot - seg.slot0
        lo, hi = int(seg.d_indptr[local]), int(seg.d_indptr[local + 1])
        return seg.doc_terms(np.array([local], dtype=np.int64)), seg.doc_tf(np.arange(lo, hi))
