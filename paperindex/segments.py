"""The segments of :class:`paperindex.index.BM25Index`: the postings of a run of document slots, twice.

Term-major for queries: per term, the slots holding it (:mod:`paperindex.term_docs`), their term
frequencies (:mod:`paperindex.tf`) and their one-byte impacts, which :mod:`paperindex.topk`
computes and snapshots leave out. Document-major (per document: its term ids,
:mod:`paperindex.doc_terms`, and their frequencies) for ``doc_terms``, the exact rescoring of
the top k and what a removed document held. New documents form a new segment (:func:`new_segment`);
:func:`merge` joins two in linear time and drops the postings of dead documents; a snapshot's segments
are checked before use (:func:`segment_from_snapshot`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import doc_terms as doc_codes
from paperindex import term_docs as term_codes
from paperindex import tf as tf_codes
from paperindex.bulk_kernels import count_by_term, postings_by_document, postings_by_term
from paperindex.snapshot import Snapshot, SnapshotError, check_offsets, expect

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

#: what a snapshot keeps of each segment
SEGMENT_ARRAYS: Final = (
    "t_indptr", "t_code8", "t_code16", "t_code32", "t_where", "t_tf", "t_big_at", "t_big_tf",
    "d_indptr", "d_code", "d_byteptr", "d_tf", "d_big_at", "d_big_tf",
)  # fmt: skip
TERM_TF_BITS: Final = 8  #: term-major tfs: a byte a posting (index_tf)
DOC_TF_BITS: Final = 4  #: document-major tfs: two postings to a byte
MERGE_STRETCH: Final = 1 << 22  #: postings a merge places at a time (:func:`_by_term`)


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
    t_tf: npt.NDArray[np.uint8]  # each posting's tf, 0 past 255 (index_tf) …
    t_big_at: IntArray  # … those postings …
    t_big_tf: npt.NDArray[np.uint32]  # … and their tf
    d_indptr: IntArray  # local document → its range of postings (its terms, ascending)
    d_code: npt.NDArray[np.uint8]  # their term ids (index_doc_terms)
    d_byteptr: IntArray  # local document → range in d_code
    d_tf: npt.NDArray[np.uint8]  # their tfs, two to a byte, 0 past 15 …
    d_big_at: IntArray  # … those postings …
    d_big_tf: npt.NDArray[np.uint32]  # … and their tf
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

    @property
    def tfs(self) -> tf_codes.Packed:
        """Each term-major posting's tf (:func:`index_tf.tf_at`)."""
        return self.t_tf, self.t_big_at, self.t_big_tf

    @property
    def doc_tfs(self) -> tf_codes.Packed:
        """Each document-major posting's tf (:func:`index_tf.half_tf_at`)."""
        return self.d_tf, self.d_big_at, self.d_big_tf

    def doc_tf(self, at: IntArray) -> IntArray:
        """The tfs of document-major postings ``at``."""
        return tf_codes.values(self.doc_tfs, at, DOC_TF_BITS)

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
        """The term ids of local documents ``local``, one after the other (their postings' order)."""
        terms: npt.NDArray[np.int32] = doc_codes.decode(self.d_code, self.d_byteptr, self.d_indptr, local)
        return terms

    @property
    def nbytes(self) -> int:
        arrays: int = sum(getattr(self, name).nbytes for name in SEGMENT_ARRAYS)
        return arrays + (0 if self.impacts is None else self.impacts.nbytes)


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
    ``n_unique`` distinct terms: their ids and frequencies, of any unsigned type), and per term how many
    of them hold it."""
    n_new = len(n_unique)
    term_counts = count_by_term(d_terms, n_terms)
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
    local += np.int32(slot0)  # each posting's slot, in place (its document's number is used no more)
    segment = Segment(
        slot0,
        n_new,
        t_indptr,
        *term_codes.encode(t_indptr, local, slot0),
        *tf_codes.pack(t_tf, TERM_TF_BITS),
        d_indptr,
        code,
        byteptr,
        *tf_codes.pack(sorted_tf, DOC_TF_BITS),
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
    lengths: IntArray = tf_codes.half_range_sums(*seg.doc_tfs, seg.d_indptr)
    return lengths


def segment_from_snapshot(snapshot: Snapshot, prefix: str, slot0: int, n_docs: int, n_terms: int) -> Segment:
    t_indptr = snapshot.in_place(prefix + "t_indptr", (np.int64,))
    t_code8 = snapshot.in_place(prefix + "t_code8", (np.uint8,))
    t_code16 = snapshot.in_place(prefix + "t_code16", (np.uint16,))
    t_code32 = snapshot.in_place(prefix + "t_code32", (np.int32,))
    t_where = snapshot.in_place(prefix + "t_where", (np.int64,), length=len(t_indptr) - 1)
    n_postings = int(t_indptr[-1]) if len(t_indptr) else -1
    t_tfs = _tfs_from_snapshot(snapshot, prefix + "t_", n_postings, TERM_TF_BITS)
    d_indptr = snapshot.in_place(prefix + "d_indptr", (np.int64,), length=n_docs + 1)
    d_code = snapshot.in_place(prefix + "d_code", (np.uint8,))
    d_byteptr = snapshot.in_place(prefix + "d_byteptr", (np.int64,), length=n_docs + 1)
    d_tfs = _tfs_from_snapshot(snapshot, prefix + "d_", n_postings, DOC_TF_BITS)
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
    return Segment(
        slot0,
        n_docs,
        t_indptr,
        t_code8,
        t_code16,
        t_code32,
        t_where,
        *t_tfs,
        d_indptr,
        d_code,
        d_byteptr,
        *d_tfs,
    )


def _tfs_from_snapshot(
    snapshot: Snapshot, prefix: str, n_postings: int, bits: tf_codes.Bits
) -> tf_codes.Packed:
    """A segment's ``t_`` or ``d_`` frequencies, checked to be ``n_postings`` of them."""
    packed = snapshot.in_place(prefix + "tf", (np.uint8,))
    big_at = snapshot.array(prefix + "big_at", (np.int64,))
    big_tf = snapshot.array(prefix + "big_tf", (np.uint32,), length=len(big_at))
    tfs = (packed, big_at, big_tf)
    expect(tf_codes.well_formed(tfs, n_postings, bits), prefix + "tf: not one frequency a posting")
    return tfs


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


def _codes(seg: Segment) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """A segment's term-major and document-major tf codes, a byte each (:func:`index_tf.unpack`)."""
    n = seg.n_postings
    return tf_codes.unpack(seg.t_tf, n, TERM_TF_BITS), tf_codes.unpack(seg.d_tf, n, DOC_TF_BITS)


Postings: TypeAlias = Callable[[int, int], npt.NDArray[Any]]


def _by_term(ap: IntArray, bp: IntArray, a_part: Postings, b_part: Postings, dtype: Any) -> npt.NDArray[Any]:
    """Two segments' term-major postings (``ap``, ``bp``: their term offsets, padded alike) as one: each
    term's postings of a, then its postings of b. ``a_part(t0, t1)`` gives a's postings of terms t0 to
    t1 − 1 (``b_part`` b's). A stretch of terms at a time: every posting's int64 position at once, and
    both segments' postings decoded whole beside the result, took 12 bytes a posting (0.9 GB at 1M
    papers)."""
    out = np.empty(int(ap[-1] + bp[-1]), dtype=dtype)
    both = ap + bp
    cuts = np.searchsorted(both, np.arange(MERGE_STRETCH, int(both[-1]), MERGE_STRETCH))
    bounds = np.unique(np.concatenate([[0], cuts, [len(ap) - 1]])).tolist()
    for t0, t1 in itertools.pairwise(bounds):
        # a posting of term t moves past b's postings of the terms before t, b's past a's up to t
        a_at = np.arange(ap[t0], ap[t1]) + np.repeat(bp[t0:t1], np.diff(ap[t0 : t1 + 1]))
        out[a_at] = a_part(t0, t1)
        b_at = np.arange(bp[t0], bp[t1]) + np.repeat(ap[t0 + 1 : t1 + 1], np.diff(bp[t0 : t1 + 1]))
        out[b_at] = b_part(t0, t1)
    return out


def _term_postings(seg: Segment) -> Postings:
    """The slots of a segment's postings of terms t0 to t1 − 1, decoded when asked."""

    def part(t0: int, t1: int) -> npt.NDArray[np.int32]:
        t1 = min(t1, seg.n_terms)
        if t1 <= t0:
            return np.zeros(0, dtype=np.int32)
        indptr = seg.t_indptr[t0 : t1 + 1] - seg.t_indptr[t0]
        docs: npt.NDArray[np.int32] = term_codes.decode_all(
            seg.t_code8, seg.t_code16, seg.t_code32, seg.t_where[t0:t1], indptr, seg.slot0
        )
        return docs

    return part


def _stretches(values: npt.NDArray[Any], indptr: IntArray) -> Postings:
    return lambda t0, t1: values[indptr[t0] : indptr[t1]]


def merge(a: Segment, b: Segment | None, alive: BoolArray) -> Segment:
    """One segment with a's then b's documents, without postings of dead documents (``alive``, per
    slot)."""
    if b is None:
        n_terms = a.n_terms
        t_indptr = a.t_indptr
        docs = a.all_postings()
        t_tf, d_tf = _codes(a)
        t_big, d_big = (a.t_big_at, a.t_big_tf), (a.d_big_at, a.d_big_tf)
        d_indptr, d_code, d_byteptr = a.d_indptr, a.d_code, a.d_byteptr
        n_docs = a.n_docs
    else:
        n_terms = max(a.n_terms, b.n_terms)
        ap, bp = pad_offsets(a.t_indptr, n_terms), pad_offsets(b.t_indptr, n_terms)
        t_indptr = ap + bp
        docs = _by_term(ap, bp, _term_postings(a), _term_postings(b), np.int32)
        (a_t_tf, a_d_tf), (b_t_tf, b_d_tf) = _codes(a), _codes(b)
        t_tf = _by_term(ap, bp, _stretches(a_t_tf, ap), _stretches(b_t_tf, bp), np.uint8)
        del a_t_tf, b_t_tf
        # where a's and b's large frequencies went: a posting of term t moves past b's postings of the
        # terms before t, and b's past a's up to and including t
        a_term = np.searchsorted(ap, a.t_big_at, side="right") - 1
        b_term = np.searchsorted(bp, b.t_big_at, side="right") - 1
        t_big = tf_codes.gathered(
            [(a.t_big_at + bp[a_term], a.t_big_tf), (b.t_big_at + ap[b_term + 1], b.t_big_tf)]
        )
        d_indptr = np.concatenate([a.d_indptr, b.d_indptr[1:] + a.d_indptr[-1]])
        d_code = np.concatenate([a.d_code, b.d_code])
        d_byteptr = np.concatenate([a.d_byteptr, b.d_byteptr[1:] + a.d_byteptr[-1]])
        d_tf = np.concatenate([a_d_tf, b_d_tf])
        del a_d_tf, b_d_tf
        d_big = tf_codes.gathered([(a.d_big_at, a.d_big_tf), (b.d_big_at + a.n_postings, b.d_big_tf)])
        n_docs = a.n_docs + b.n_docs
    keep = alive[docs]
    if not keep.all():
        term_of = np.repeat(np.arange(n_terms), np.diff(t_indptr))
        t_indptr = offsets(np.bincount(term_of[keep], minlength=n_terms))
        t_big = tf_codes.kept(*t_big, keep)
        docs, t_tf = docs[keep], t_tf[keep]
        live = alive[a.slot0 : a.slot0 + n_docs]  # dead documents keep their slot, with nothing in it
        counts, sizes = np.diff(d_indptr), np.diff(d_byteptr)
        d_keep = np.repeat(live, counts)
        d_big = tf_codes.kept(*d_big, d_keep)
        d_tf = d_tf[d_keep]
        d_code = d_code[np.repeat(live, sizes)]
        d_indptr, d_byteptr = offsets(np.where(live, counts, 0)), offsets(np.where(live, sizes, 0))
        del term_of, d_keep
    del keep  # (a byte a posting: not held while the codes are packed)
    return Segment(
        a.slot0,
        n_docs,
        t_indptr,
        *term_codes.encode(t_indptr, docs, a.slot0),
        tf_codes.pack_codes(t_tf, TERM_TF_BITS),
        *t_big,
        d_indptr,
        d_code,
        d_byteptr,
        tf_codes.pack_codes(d_tf, DOC_TF_BITS),
        *d_big,
    )
