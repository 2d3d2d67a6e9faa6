"""The segments of :class:`bot.services.index.BM25Index`: the postings of a run of document slots, twice.

Term-major (per term: the slots holding it, their term frequencies and their one-byte impacts, which
:mod:`bot.services.index_topk` computes and snapshots leave out) for queries; document-major (per document: its terms and frequencies) for ``doc_terms`` and for what a
removed document held. New documents form a new segment (:func:`new_segment`); :func:`merge` joins
two in linear time and drops the postings of dead documents; a snapshot's segments are checked
before use (:func:`segment_from_snapshot`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from bot.services import index_doc_terms as doc_codes
from bot.services import index_term_docs as term_codes
from bot.services.bulk_kernels import postings_by_document, postings_by_term
from bot.services.snapshot import Snapshot, SnapshotError, check_offsets, check_range, expect

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

#: what a snapshot keeps of each segment
SEGMENT_ARRAYS: Final = (
    "t_indptr", "t_code8", "t_code16", "t_code32", "t_where", "t_tf", "d_indptr", "d_code", "d_byteptr", "d_tf",
)  # fmt: skip


@dataclass(slots=True)
class Segment:
    """Postings of the documents in slots ``slot0 .. slot0 + n_docs - 1``."""

    slot0: int
    n_docs: int
    t_indptr: IntArray  # term id → postings range; terms past the end have none
    t_code8: npt.NDArray[np.uint8]  # the slots of each term's postings, ascending (index_term_docs)
    t_code16: npt.NDArray[np.uint16]
    t_code32: npt.NDArray[np.int32]
    t_where: IntArray  # term id → its codes' width and offset
    t_tf: npt.NDArray[np.unsignedinteger]
    d_indptr: IntArray  # local document → range in d_tf (its terms, ascending)
    d_code: npt.NDArray[np.uint8]  # its term ids (index_doc_terms)
    d_byteptr: IntArray  # local document → range in d_code
    d_tf: npt.NDArray[np.unsignedinteger]
    impacts: npt.NDArray[np.uint8] | None = None  # per posting: its tf factor in one byte (index_topk)
    impact_avgdl: float = 0.0  # the average length the impacts were computed for

    @property
    def n_terms(self) -> int:
        return len(self.t_indptr) - 1

    @property
    def n_postings(self) -> int:
        return int(self.t_indptr[-1])

    @property
    def term_codes(
        self,
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint16], npt.NDArray[np.int32], IntArray]:
        """What the compiled loops decode a term's slots from (:func:`index_term_docs.term_docs`)."""
        return self.t_code8, self.t_code16, self.t_code32, self.t_where

    def postings(self, term: int) -> npt.NDArray[np.int32]:
        """The slots holding ``term`` (a term id below :attr:`n_terms`), ascending."""
        count = int(self.t_indptr[term + 1] - self.t_indptr[term])
        out = np.empty(count, dtype=np.int32)
        term_codes.term_docs(*self.term_codes, count, term, self.slot0, out)
        return out

    def all_postings(self) -> npt.NDArray[np.int32]:
        """Every posting's slot, term after term."""
        docs: npt.NDArray[np.int32] = term_codes.decode_all(*self.term_codes, self.t_indptr, self.slot0)
        return docs

    def doc_terms(self, local: IntArray) -> npt.NDArray[np.int32]:
        """The term ids of local documents ``local``, one after the other (``d_tf``'s order)."""
        terms: npt.NDArray[np.int32] = doc_codes.decode(self.d_code, self.d_byteptr, self.d_indptr, local)
        return terms

    @property
    def nbytes(self) -> int:
        return sum(
            a.nbytes
            for a in (
                self.t_indptr,
                self.t_code8,
                self.t_code16,
                self.t_code32,
                self.t_where,
                self.t_tf,
                self.d_indptr,
                self.d_code,
                self.d_byteptr,
                self.d_tf,
            )
        ) + (0 if self.impacts is None else self.impacts.nbytes)


def tf_dtype(max_tf: int) -> type[np.unsignedinteger]:
    """The narrowest unsigned type for term frequencies up to ``max_tf``."""
    for dtype in (np.uint8, np.uint16):
        if max_tf <= np.iinfo(dtype).max:
            return dtype
    return np.uint32


def offsets(counts: npt.NDArray[np.integer]) -> IntArray:
    """Range starts for consecutive runs of ``counts`` items (CSR offsets, one more than counts)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def pad_offsets(indptr: IntArray, n_terms: int) -> IntArray:
    """``indptr`` extended with empty ranges up to ``n_terms`` terms."""
    if len(indptr) - 1 >= n_terms:
        return indptr
    return np.concatenate([indptr, np.full(n_terms + 1 - len(indptr), indptr[-1])])


def new_segment(
    slot0: int,
    n_unique: IntArray,
    d_terms: npt.NDArray[np.int32],
    d_tf: npt.NDArray[np.unsignedinteger],
    n_terms: int,
) -> tuple[Segment, IntArray]:
    """A segment for new documents in slots ``slot0 ..`` given document-major (each document's
    ``n_unique`` distinct terms: their ids and frequencies), and per term how many of them hold it."""
    n_new = len(n_unique)
    term_counts = np.bincount(d_terms, minlength=n_terms)
    t_indptr = offsets(term_counts)
    local = np.empty(len(d_terms), dtype=np.int32)  # term-major: each posting's document
    t_tf = np.empty_like(d_tf)
    postings_by_term(d_terms, d_tf, n_unique, t_indptr, local, t_tf)
    # The term-major postings by document: each document's terms, ascending.
    d_indptr = offsets(n_unique)
    sorted_terms = np.empty(len(d_terms), dtype=np.int32)
    sorted_tf = np.empty_like(d_tf)
    postings_by_document(t_indptr, local, t_tf, d_indptr, sorted_terms, sorted_tf)
    code, byteptr = doc_codes.encode(d_indptr, sorted_terms)
    segment = Segment(
        slot0,
        n_new,
        t_indptr,
        *term_codes.encode(t_indptr, local + np.int32(slot0), slot0),
        t_tf=t_tf,
        d_indptr=d_indptr,
        d_code=code,
        d_byteptr=byteptr,
        d_tf=sorted_tf,
    )
    return segment, term_counts


def live_postings(seg: Segment, alive: BoolArray, mine: BoolArray, n_terms: int) -> tuple[IntArray, IntArray]:
    """Per term, how many live documents hold it: counted from the term-major postings and from the
    document-major ones (they agree in an index this code wrote)."""
    by_term = np.zeros(n_terms, dtype=np.int64)
    if mine.all():  # nothing removed or replaced here (the usual case): every posting counts
        by_term[: seg.n_terms] = np.diff(seg.t_indptr)
        return by_term, doc_codes.count_terms(seg.d_code, seg.d_byteptr, mine, n_terms)
    running = np.concatenate(
        [np.zeros(1, dtype=np.int32), np.cumsum(alive[seg.all_postings()], dtype=np.int32)]
    )
    by_term[: seg.n_terms] = running[seg.t_indptr[1:]] - running[seg.t_indptr[:-1]]
    return by_term, doc_codes.count_terms(seg.d_code, seg.d_byteptr, mine, n_terms)


def doc_lengths(seg: Segment) -> IntArray:
    """Each document's length (the sum of its term frequencies), from the document-major postings."""
    starts, sizes = seg.d_indptr[:-1], np.diff(seg.d_indptr)
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    padded = np.concatenate([seg.d_tf, np.zeros(1, dtype=seg.d_tf.dtype)])  # an empty last document
    lengths: IntArray = np.add.reduceat(padded, starts, dtype=np.int64)
    lengths[sizes == 0] = 0
    return lengths


def segment_from_snapshot(snapshot: Snapshot, prefix: str, slot0: int, n_docs: int, n_terms: int) -> Segment:
    t_indptr = snapshot.array(prefix + "t_indptr", (np.int64,))
    t_code8 = snapshot.array(prefix + "t_code8", (np.uint8,))
    t_code16 = snapshot.array(prefix + "t_code16", (np.uint16,))
    t_code32 = snapshot.array(prefix + "t_code32", (np.int32,))
    t_where = snapshot.array(prefix + "t_where", (np.int64,), length=len(t_indptr) - 1)
    n_postings = int(t_indptr[-1]) if len(t_indptr) else -1
    t_tf = snapshot.array(prefix + "t_tf", (np.uint8, np.uint16, np.uint32), length=n_postings)
    d_indptr = snapshot.array(prefix + "d_indptr", (np.int64,), length=n_docs + 1)
    d_code = snapshot.array(prefix + "d_code", (np.uint8,))
    d_byteptr = snapshot.array(prefix + "d_byteptr", (np.int64,), length=n_docs + 1)
    d_tf = snapshot.array(prefix + "d_tf", (t_tf.dtype.type,), length=n_postings)
    seg_terms = len(t_indptr) - 1
    expect(seg_terms <= n_terms, prefix + "t_indptr: more terms than the vocabulary")
    check_offsets(prefix + "t_indptr", t_indptr, n_postings)
    check_offsets(prefix + "d_indptr", d_indptr, n_postings)
    expect(
        term_codes.well_formed(t_code8, t_code16, t_code32, t_where, t_indptr, slot0, n_docs),
        prefix + "t_where: not each term's ascending slots in this segment",
    )
    check_offsets(prefix + "d_byteptr", d_byteptr, len(d_code))
    expect(
        doc_codes.well_formed(d_code, d_byteptr, d_indptr, seg_terms),
        prefix + "d_code: not each document's ascending term ids",
    )
    check_range(prefix + "t_tf", t_tf, 1, 1 << 32)
    check_range(prefix + "d_tf", d_tf, 1, 1 << 32)
    return Segment(
        slot0=slot0,
        n_docs=n_docs,
        t_indptr=t_indptr,
        t_code8=t_code8,
        t_code16=t_code16,
        t_code32=t_code32,
        t_where=t_where,
        t_tf=t_tf,
        d_indptr=d_indptr,
        d_code=d_code,
        d_byteptr=d_byteptr,
        d_tf=d_tf,
    )


def segments_from_snapshot(
    snapshot: Snapshot, layout: object, *, alive: BoolArray, dl: IntArray, n_terms: int
) -> tuple[list[Segment], IntArray]:
    """The segments a snapshot describes (``layout``: [slot0, n_docs] each, covering every slot in
    order), every one checked against ``alive`` and ``dl``; and the document frequency of each term."""
    if not isinstance(layout, list):
        raise SnapshotError("index: no segments")
    n_slots = len(alive)
    df = np.zeros(n_terms, dtype=np.int64)
    segments: list[Segment] = []
    start = 0
    for n, entry in enumerate(layout):
        expect(
            isinstance(entry, list) and len(entry) == 2 and all(type(v) is int for v in entry),
            f"index: segment {n} badly described",
        )
        slot0, n_docs = entry
        expect(slot0 == start and 0 <= n_docs <= n_slots - slot0, f"index: segment {n} out of place")
        segment = segment_from_snapshot(snapshot, f"index.seg{n}.", slot0, n_docs, n_terms)
        mine = alive[slot0 : slot0 + n_docs]
        live_by_term, live_by_doc = live_postings(segment, alive, mine, n_terms)
        expect(np.array_equal(live_by_term, live_by_doc), f"index: segment {n} postings disagree")
        lengths = doc_lengths(segment)
        expect(
            np.array_equal(lengths[mine], dl[slot0 : slot0 + n_docs][mine]),
            f"index: segment {n} document lengths disagree with their terms",
        )
        df += live_by_doc
        segments.append(segment)
        start = slot0 + n_docs
    expect(start == n_slots, "index: the segments do not cover every slot")
    return segments, df


def merge(a: Segment, b: Segment | None, alive: BoolArray) -> Segment:
    """One segment with a's then b's documents, without postings of dead documents (``alive``, per
    slot)."""
    if b is None:
        n_terms = a.n_terms
        t_indptr = a.t_indptr
        docs, tf = a.all_postings(), a.t_tf
        d_indptr, d_code, d_byteptr, d_tf = a.d_indptr, a.d_code, a.d_byteptr, a.d_tf
        n_docs = a.n_docs
    else:
        n_terms = max(a.n_terms, b.n_terms)
        ap, bp = pad_offsets(a.t_indptr, n_terms), pad_offsets(b.t_indptr, n_terms)
        t_indptr = ap + bp
        total = a.n_postings + b.n_postings
        pos_a = np.arange(a.n_postings, dtype=np.int64) + np.repeat(bp[:-1], np.diff(ap))
        pos_b = np.arange(b.n_postings, dtype=np.int64) + np.repeat(ap[1:], np.diff(bp))
        docs = np.empty(total, dtype=np.int32)
        docs[pos_a], docs[pos_b] = a.all_postings(), b.all_postings()
        tf = np.empty(total, dtype=np.result_type(a.t_tf, b.t_tf))
        tf[pos_a], tf[pos_b] = a.t_tf, b.t_tf
        d_indptr = np.concatenate([a.d_indptr, b.d_indptr[1:] + a.d_indptr[-1]])
        d_code = np.concatenate([a.d_code, b.d_code])
        d_byteptr = np.concatenate([a.d_byteptr, b.d_byteptr[1:] + a.d_byteptr[-1]])
        d_tf = np.concatenate([a.d_tf, b.d_tf]).astype(tf.dtype, copy=False)
        n_docs = a.n_docs + b.n_docs
    keep = alive[docs]
    if not keep.all():
        term_of = np.repeat(np.arange(n_terms), np.diff(t_indptr))
        t_indptr = offsets(np.bincount(term_of[keep], minlength=n_terms))
        docs, tf = docs[keep], tf[keep]
        live = alive[a.slot0 : a.slot0 + n_docs]  # dead documents keep their slot, with nothing in it
        counts, sizes = np.diff(d_indptr), np.diff(d_byteptr)
        d_tf = d_tf[np.repeat(live, counts)]
        d_code = d_code[np.repeat(live, sizes)]
        d_indptr, d_byteptr = offsets(np.where(live, counts, 0)), offsets(np.where(live, sizes, 0))
    seg = Segment(
        a.slot0,
        n_docs,
        t_indptr,
        *term_codes.encode(t_indptr, docs, a.slot0),
        t_tf=tf,
        d_indptr=d_indptr,
        d_code=d_code,
        d_byteptr=d_byteptr,
        d_tf=d_tf,
    )
    return seg
