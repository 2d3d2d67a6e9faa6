"""Each posting's tf as a small code, the rare larger ones beside (paperindex.tf): a byte a
term-major posting, four bits a document-major one. They read back as they were, move with their
postings through merges and removals, survive a snapshot, and a large tf widens nothing."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from builders import compact
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from paperindex import tf as index_tf
from paperindex.index import BM25Index
from paperindex.snapshot import Snapshot, SnapshotError, write

WIDEST_TF = (1 << 32) - 1
frequency = st.one_of(st.integers(1, 15), st.integers(16, 300), st.just(WIDEST_TF))
BITS = pytest.mark.parametrize("bits", [4, 8])


def each(tfs: index_tf.Packed, n: int, bits: index_tf.Bits) -> list[int]:
    """Every posting's frequency, read one at a time as the compiled loops do."""
    if bits == 4:
        return index_tf.half_range_sums(*tfs, np.arange(n + 1, dtype=np.int64)).tolist()
    return [index_tf.tf_at.py_func(*tfs, c) for c in range(n)]


@BITS
@settings(max_examples=150, deadline=None)
@given(tf=st.lists(frequency, max_size=41))
def test_packed_frequencies_read_back_as_they_were(tf: list[int], bits: index_tf.Bits) -> None:
    tfs = index_tf.pack(np.array(tf, dtype=np.uint32), bits)
    packed, big_at, big_tf = tfs
    assert packed.dtype == np.uint8
    assert len(packed) == (len(tf) if bits == 8 else (len(tf) + 1) // 2)
    assert big_at.dtype == np.int64
    assert big_tf.dtype == np.uint32
    assert len(big_at) == sum(f >= 1 << bits for f in tf)
    assert each(tfs, len(tf), bits) == tf
    at = np.arange(len(tf), dtype=np.int64)
    assert index_tf.values(tfs, at, bits).tolist() == tf
    assert index_tf.values(tfs, at[::-1].copy(), bits).tolist() == tf[::-1]  # any postings, any order
    assert index_tf.well_formed(tfs, len(tf), bits)
    assert index_tf.pack_codes(index_tf.unpack(packed, len(tf), bits), bits).tolist() == packed.tolist()


def test_document_lengths_sum_the_large_ones_too_past_32_bits() -> None:
    tf = np.array([1, 255, 256, WIDEST_TF, 7], dtype=np.uint32)
    assert len(index_tf.pack(tf, 8)[1]) == 2
    half = index_tf.pack(tf, 4)
    lengths = index_tf.half_range_sums(*half, np.array([0, 0, 2, 5], dtype=np.int64))
    assert lengths.tolist() == [0, 256, 256 + WIDEST_TF + 7]  # an empty range; sums past 32 bits


@BITS
def test_edges_nothing_and_one_posting(bits: index_tf.Bits) -> None:
    nothing = index_tf.pack(np.zeros(0, dtype=np.uint8), bits)
    assert [len(a) for a in nothing] == [0, 0, 0]
    assert index_tf.well_formed(nothing, 0, bits)
    for tf in (1, 15, 16, 255, 256, WIDEST_TF):
        one = index_tf.pack(np.array([tf], dtype=np.uint32), bits)
        assert len(one[0]) == 1
        assert each(one, 1, bits) == [tf]
        assert index_tf.well_formed(one, 1, bits)
    small = np.array([3, 200], dtype=np.uint8)
    assert index_tf.pack(small, 8)[0] is small  # a byte each already: kept, not copied
    assert index_tf.pack(small, 4)[0].tolist() == [3]  # 200 beside
    assert small.tolist() == [3, 200]


@BITS
def test_large_frequencies_move_with_their_postings_and_drop_with_them(bits: index_tf.Bits) -> None:
    a = np.array([300, 1, 2, 70000], dtype=np.uint32)
    b = np.array([5, 16, 9], dtype=np.uint32)
    pos_a, pos_b = np.array([0, 2, 4, 6]), np.array([1, 3, 5])  # interleaved, as a merge puts them
    (pa, at_a, tf_a), (pb, at_b, tf_b) = index_tf.pack(a, bits), index_tf.pack(b, bits)
    codes = np.empty(7, dtype=np.uint8)
    codes[pos_a], codes[pos_b] = index_tf.unpack(pa, 4, bits), index_tf.unpack(pb, 3, bits)
    big_at, big_tf = index_tf.gathered([(pos_a[at_a], tf_a), (pos_b[at_b], tf_b)])
    merged = (index_tf.pack_codes(codes, bits), big_at, big_tf)
    assert each(merged, 7, bits) == [300, 5, 1, 16, 2, 9, 70000]
    keep = np.array([False, True, True, True, False, True, True])
    big_at, big_tf = index_tf.kept(big_at, big_tf, keep)
    tfs = (index_tf.pack_codes(codes[keep], bits), big_at, big_tf)
    assert each(tfs, 5, bits) == [5, 1, 16, 9, 70000]
    assert index_tf.well_formed(tfs, 5, bits)


Change = Callable[[np.ndarray, np.ndarray, np.ndarray], index_tf.Packed]
CORRUPT: dict[str, tuple[Change, int]] = {
    "a zero code with no tf beside": (lambda p, at, tf: (p, at[:1], tf[:1]), 5),
    "fewer tfs than places": (lambda p, at, tf: (p, at, tf[:1]), 5),
    "not where the zeros are": (lambda p, at, tf: (p, at + 1, tf), 5),
    "a large one that fits its code": (lambda p, at, tf: (p, at, np.array([400, 3], dtype=np.uint32)), 5),
    "fewer codes than postings": (lambda p, at, tf: (p[:-1], at, tf), 5),
    "more postings than codes": (lambda p, at, tf: (p, at, tf), 6 + 6),
    "a segment without postings' bounds (n = -1)": (lambda p, at, tf: (p[:0], at[:0], tf[:0]), -1),
}


@BITS
@pytest.mark.parametrize("corruption", CORRUPT)
def test_a_snapshot_s_frequencies_must_be_exactly_one_a_posting(corruption: str, bits: index_tf.Bits) -> None:
    tfs = index_tf.pack(np.array([3, 400, 2, 999, 1], dtype=np.uint16), bits)
    assert index_tf.well_formed(tfs, 5, bits)
    change, n = CORRUPT[corruption]
    assert not index_tf.well_formed(change(*tfs), n, bits)


def test_a_half_byte_past_the_last_posting_must_be_empty() -> None:
    packed, big_at, big_tf = index_tf.pack(np.array([3, 400, 2], dtype=np.uint16), 4)
    assert index_tf.well_formed((packed, big_at, big_tf), 3, 4)
    assert not index_tf.well_formed((packed | np.uint8(0x10), big_at, big_tf), 3, 4)


def test_large_frequencies_keep_exact_scores_through_merges_removals_and_a_snapshot() -> None:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(60)]
    corpus = [list(rng.choice(words, size=int(rng.integers(1, 60)))) for _ in range(400)]
    corpus[17] = ["w1"] * 300 + ["w2"] * 70000  # past a byte and past two
    corpus[250] = ["w1"] * 256
    index = BM25Index()
    for lo in range(0, 400, 50):  # eight adds: several merges, each moving the large ones
        index.add(list(range(lo, lo + 50)), corpus[lo : lo + 50])
    index.remove([3, 250])  # a large one dropped at the next merge
    index.add([3], [["w2"] * 1000])
    compact(index)
    assert index.n_segments == 1
    seg = index._segments[0]
    assert len(seg.t_tf) == seg.n_postings
    assert len(seg.d_tf) == (seg.n_postings + 1) // 2
    assert sorted(seg.t_big_tf.tolist()) == [300, 1000, 70000]  # paper 250's went with it
    assert 1000 in seg.d_big_tf.tolist()
    ids = [i for i in range(400) if i not in (3, 250)] + [3]
    docs = {i: corpus[i] for i in range(400)} | {3: ["w2"] * 1000}
    reference = BM25Okapi([docs[i] for i in ids])
    slots = [index.slot_of(i) for i in ids]
    for query in (["w1"], ["w2", "w1", "w5"], ["w2"], ["w7", "w8"]):
        expected = reference.get_scores(query)
        assert index.score_array(query)[slots].tolist() == expected.tolist()
        best = sorted(
            (n for n, i in enumerate(ids) if set(docs[i]) & set(query)), key=lambda n: (-expected[n], ids[n])
        )[:10]
        assert index.top_k(query, 10) == [(ids[n], float(expected[n])) for n in best]
    assert index.doc_terms(17) == {"w1": 300, "w2": 70000}
    assert index.doc_length(17) == 70300
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "snapshot"
        meta, arrays, strings = index.snapshot_state()
        write(path, {"index": meta}, arrays, strings)
        with Snapshot(path) as saved:
            loaded = BM25Index.from_snapshot(saved.meta["index"], saved)
        big = arrays["index.seg0.d_big_tf"].copy()
        big[0] = 7  # a large one that would fit four bits: refused
        write(path, {"index": meta}, arrays | {"index.seg0.d_big_tf": big}, strings)
        with Snapshot(path) as saved, pytest.raises(SnapshotError, match="d_tf"):
            BM25Index.from_snapshot(saved.meta["index"], saved)
    for query in (["w1"], ["w2", "w1"]):
        assert loaded.score_array(query).tolist() == index.score_array(query).tolist()
        assert loaded.top_k(query, 10) == index.top_k(query, 10)
        assert loaded.doc_terms(17) == index.doc_terms(17)
