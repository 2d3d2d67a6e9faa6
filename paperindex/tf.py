"""The term frequencies of a segment's postings: a small code each, the rare larger ones beside.

Both copies of a segment's postings keep a frequency per posting, 73 million of them at a million
papers. They are small (a title word counts 3, most abstract words once or twice: 99.9 % are below 16),
but one paper repeating a word 256 times (one synthetic paper of bench/search_bench.py's corpus does)
made the whole array two bytes a posting, 147 MB more for the two copies. Here each posting gets a code
of ``bits`` bits, its frequency, or 0 (never a frequency) where the frequency does not fit: it is then
``big_tf[i]`` for ``big_at[i] == c``, ``big_at`` ascending.

* Term-major (the compiled loops scoring every posting of a term): 8 bits, a byte a posting, past 255
  beside (none at all in the bench corpora but that one paper's). Four bits there would save another
  37 MB at a million papers but made every slot's score (:func:`paperindex.kernels.accumulate`)
  8 to 18 % slower, where one byte with the branch for the large ones costs nothing measurable.
* Document-major (read a few postings at a time, for the exact rescoring of the top k and a document's
  terms): 4 bits, two postings to a byte (posting ``c`` in the low half of byte ``c // 2`` if ``c`` is
  even, the high half otherwise), past 15 beside: 37 MB instead of 73 at a million papers, with 83
  thousand beside.

The compiled loops read a frequency with :func:`tf_at` (8 bits) or :func:`half_tf_at` (4 bits); merges
work on the codes a byte each (:func:`unpack`) and move the large ones with their postings
(:func:`gathered`, :func:`kept`) before packing them again (:func:`pack_codes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex.compiled import jit as _jit
from paperindex.compiled import jit_inline as _jit_inline
from paperindex.compiled import twin as _twin

IntArray: TypeAlias = npt.NDArray[np.int64]
Bytes: TypeAlias = npt.NDArray[np.uint8]
BigTf: TypeAlias = npt.NDArray[np.uint32]
Packed: TypeAlias = tuple[Bytes, IntArray, BigTf]  # (codes, big_at, big_tf)
Bits: TypeAlias = Literal[4, 8]


@_jit_inline
def tf_at(codes: Any, big_at: Any, big_tf: Any, c: int) -> int:
    """Posting ``c``'s frequency, of codes of 8 bits."""
    f = int(codes[c])
    if f == 0:
        return int(big_tf[np.searchsorted(big_at, c)])
    return f


@_jit_inline
def half_tf_at(packed: Any, big_at: Any, big_tf: Any, c: int) -> int:
    """Posting ``c``'s frequency, of codes of 4 bits."""
    f = (int(packed[c >> 1]) >> ((c & 1) << 2)) & 15
    if f == 0:
        return int(big_tf[np.searchsorted(big_at, c)])
    return f


def pack(tf: npt.NDArray[np.unsignedinteger], bits: Bits) -> Packed:
    """``(codes, big_at, big_tf)`` for frequencies ``tf`` (each ≥ 1 and < 2³²)."""
    big_at = np.flatnonzero(tf >= 1 << bits).astype(np.int64, copy=False)
    big_tf = tf[big_at].astype(np.uint32)
    if bits == 8 and tf.dtype == np.uint8:
        codes = tf  # as they are (none is large)
    else:
        codes = tf.astype(np.uint8)  # a large one may wrap: set to 0 next
        codes[big_at] = 0
    return pack_codes(codes, bits), big_at, big_tf


def pack_codes(codes: Bytes, bits: Bits) -> Bytes:
    """Codes a byte each (below ``1 << bits``) as ``bits`` bits each: two to a byte for 4 (the last high
    half 0 when their number is odd)."""
    if bits == 8:
        return codes
    packed = codes[0::2].copy()
    odd = codes[1::2]
    packed[: len(odd)] |= odd << np.uint8(4)
    return packed


def unpack(packed: Bytes, n: int, bits: Bits) -> Bytes:
    """The ``n`` codes of ``packed``, a byte each (0 where the frequency is beside)."""
    if bits == 8:
        return packed[:n]
    codes = np.empty(2 * len(packed), dtype=np.uint8)
    codes[0::2] = packed & np.uint8(15)
    codes[1::2] = packed >> np.uint8(4)
    return codes[:n]


def values(tfs: Packed, at: IntArray, bits: Bits) -> IntArray:
    """The frequencies of postings ``at``."""
    packed, big_at, big_tf = tfs
    tf = packed[at] if bits == 8 else (packed[at >> 1] >> ((at & 1) << 2).astype(np.uint8)) & np.uint8(15)
    out: IntArray = tf.astype(np.int64)
    large = np.flatnonzero(tf == 0)
    if len(large):
        out[large] = big_tf[np.searchsorted(big_at, at[large])]
    return out


@_jit
def half_range_sums(packed: Any, big_at: Any, big_tf: Any, indptr: Any) -> Any:
    """The sum of the frequencies (codes of 4 bits) of each range ``indptr[n] .. indptr[n + 1]``: the
    documents' lengths."""
    out = np.zeros(len(indptr) - 1, np.int64)
    for n in range(len(indptr) - 1):
        total = 0
        for c in range(indptr[n], indptr[n + 1]):
            total += half_tf_at(packed, big_at, big_tf, c)
        out[n] = total
    return out


@_twin(half_range_sums)
def _half_range_sums_twin(packed: Any, big_at: Any, big_tf: Any, indptr: Any) -> Any:
    """:func:`half_range_sums` in numpy (:mod:`paperindex.compiled`)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    n = int(indptr[-1]) if len(indptr) else 0
    tf = values((packed, big_at, big_tf), np.arange(n, dtype=np.int64), 4)
    sums = np.concatenate([np.zeros(1, np.int64), np.cumsum(tf, dtype=np.int64)])
    return sums[indptr[1:]] - sums[indptr[:-1]]


def gathered(parts: Sequence[tuple[IntArray, BigTf]]) -> tuple[IntArray, BigTf]:
    """The large frequencies of several runs of postings, each part's positions already moved to where
    its postings went: ``(big_at, big_tf)``, ascending."""
    at = np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False)
    tf = np.concatenate([p[1] for p in parts]).astype(np.uint32, copy=False)
    order = np.argsort(at, kind="stable")
    return at[order], tf[order]


def kept(big_at: IntArray, big_tf: BigTf, keep: npt.NDArray[np.bool_]) -> tuple[IntArray, BigTf]:
    """The large frequencies once the postings where ``keep`` is False are dropped."""
    held = keep[big_at]
    at = big_at[held]
    gone = np.flatnonzero(~keep)
    return at - np.searchsorted(gone, at), big_tf[held]


def well_formed(tfs: Packed, n: int, bits: Bits) -> bool:
    """Whether ``tfs`` holds ``n`` frequencies: ``big_at`` names exactly the postings whose code is 0,
    each of their frequencies needs more than ``bits`` bits, and a last half byte past them is 0 (a
    snapshot's, before use)."""
    packed, big_at, big_tf = tfs
    if n < 0 or len(packed) != (n if bits == 8 else (n + 1) // 2) or len(big_at) != len(big_tf):
        return False
    if bits == 4 and n % 2 and packed[-1] >> 4:
        return False
    zeros = np.flatnonzero(unpack(packed, n, bits) == 0)
    return np.array_equal(zeros, big_at) and bool(np.all(big_tf >= 1 << bits))
