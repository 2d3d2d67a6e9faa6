"""The slots of each term's postings in a segment, as gaps in one, two or four bytes chosen per term.

A term's postings are ascending slots. Most postings belong to common terms, whose slots are close to
each other: their gaps fit a byte or two. Each term is stored in the narrowest of three arrays its
values fit: ``code8`` (uint8) or ``code16`` (uint16) holding the gap from the slot before (from the
segment's first slot for the first posting), or ``code32`` (int32) holding the slots themselves.
``where[t]`` is ``offset << 2 | width`` (width 0, 1 or 2: code8, code16, code32; offset in that array);
the number of postings is the segment's ``t_indptr[t + 1] − t_indptr[t]`` as before. About 1.5 bytes a
posting on the multivenue corpus where an int32 took 4.

:func:`term_docs` decodes one term into a buffer (what every compiled loop over postings calls);
:func:`encode`, :func:`decode_all` and :func:`well_formed` serve building, merging and snapshots. Each
has a numpy twin (:mod:`paperindex.compiled`) giving the same arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paperindex.compiled import jit as _jit
from paperindex.compiled import twin as _twin


@_jit
def term_docs(
    code8: Any, code16: Any, code32: Any, where: Any, count: int, t: int, slot0: int, out: Any
) -> None:
    """Term ``t``'s ``count`` slots into ``out[:count]``."""
    width = where[t] & 3
    at = where[t] >> 2
    if width == 2:
        for i in range(count):
            out[i] = code32[at + i]
        return
    d = slot0
    if width == 0:
        for i in range(count):
            d += code8[at + i]
            out[i] = d
    else:
        for i in range(count):
            d += code16[at + i]
            out[i] = d


@_jit
def encode(indptr: Any, docs: Any, slot0: int) -> tuple[Any, Any, Any, Any]:
    """``(code8, code16, code32, where)`` for term-major postings ``docs`` (ranges ``indptr``)."""
    n_terms = len(indptr) - 1
    where = np.zeros(n_terms, np.int64)
    sizes = np.zeros(3, np.int64)
    for t in range(n_terms):
        top = 0
        previous = slot0
        for c in range(indptr[t], indptr[t + 1]):
            top = max(top, docs[c] - previous)
            previous = docs[c]
        width = 0 if top < 256 else 1 if top < 65536 else 2
        where[t] = (sizes[width] << 2) | width
        sizes[width] += indptr[t + 1] - indptr[t]
    code8 = np.empty(sizes[0], np.uint8)
    code16 = np.empty(sizes[1], np.uint16)
    code32 = np.empty(sizes[2], np.int32)
    for t in range(n_terms):
        width = where[t] & 3
        at = where[t] >> 2
        previous = slot0
        for c in range(indptr[t], indptr[t + 1]):
            if width == 0:
                code8[at] = docs[c] - previous
            elif width == 1:
                code16[at] = docs[c] - previous
            else:
                code32[at] = docs[c]
            previous = docs[c]
            at += 1
    return code8, code16, code32, where


@_jit
def decode_all(code8: Any, code16: Any, code32: Any, where: Any, indptr: Any, slot0: int) -> Any:
    """Every posting's slot, term after term (the int32 array the codes replace)."""
    out = np.empty(indptr[-1] if len(indptr) else 0, np.int32)
    for t in range(len(indptr) - 1):
        lo = indptr[t]
        term_docs(code8, code16, code32, where, indptr[t + 1] - lo, t, slot0, out[lo:])
    return out


@_jit
def well_formed(
    code8: Any, code16: Any, code32: Any, where: Any, indptr: Any, slot0: int, n_docs: int
) -> bool:
    """Whether each term's codes lie within their array, as many codes as each array holds, and every
    term's slots ascend strictly within ``slot0 .. slot0 + n_docs − 1`` (a snapshot's, before use)."""
    used = np.zeros(3, np.int64)
    lengths = np.array([len(code8), len(code16), len(code32)], np.int64)
    buffer = np.empty(max(1, n_docs), np.int64)
    for t in range(len(indptr) - 1):
        count = indptr[t + 1] - indptr[t]
        width = where[t] & 3
        at = where[t] >> 2
        if width > 2 or at < 0 or count > n_docs or at + count > lengths[width]:
            return False
        used[width] += count
        term_docs(code8, code16, code32, where, count, t, slot0, buffer)
        previous = slot0 - 1
        for i in range(count):
            if buffer[i] <= previous or buffer[i] >= slot0 + n_docs:
                return False
            previous = buffer[i]
    return bool(used[0] == lengths[0] and used[1] == lengths[1] and used[2] == lengths[2])


# ------------------------------------------------------------------------------- twins (numpy)


@_twin(term_docs)
def _term_docs_twin(
    code8: Any, code16: Any, code32: Any, where: Any, count: int, t: int, slot0: int, out: Any
) -> None:
    width, at = int(where[t]) & 3, int(where[t]) >> 2
    count = int(count)
    if width == 2:
        out[:count] = code32[at : at + count]
        return
    gaps = (code8 if width == 0 else code16)[at : at + count]
    out[:count] = np.cumsum(gaps, dtype=np.int64) + int(slot0)


@_twin(encode)
def _encode_twin(indptr: Any, docs: Any, slot0: int) -> tuple[Any, Any, Any, Any]:
    indptr = np.asarray(indptr, dtype=np.int64)
    n_terms = len(indptr) - 1
    counts = np.diff(indptr)
    docs = np.asarray(docs[indptr[0] : indptr[-1]], dtype=np.int64) if n_terms > 0 else np.zeros(0, np.int64)
    previous = np.empty(len(docs), np.int64)
    previous[1:] = docs[:-1]
    starts = indptr[:-1][counts > 0] - indptr[0]
    previous[starts] = slot0
    gaps = docs - previous
    top = np.zeros(n_terms, np.int64)
    if len(starts):
        top[counts > 0] = np.maximum.reduceat(gaps, starts)
    widths = np.where(top < 256, 0, np.where(top < 65536, 1, 2)).astype(np.int64)
    where = np.zeros(n_terms, np.int64)
    arrays: list[Any] = []
    of_posting = np.repeat(widths, counts)
    for width, dtype in ((0, np.uint8), (1, np.uint16), (2, np.int32)):
        mine = widths == width
        sized = np.where(mine, counts, 0)
        where[mine] = ((np.cumsum(sized) - sized)[mine] << 2) | width
        arrays.append((docs if width == 2 else gaps)[of_posting == width].astype(dtype))
    return arrays[0], arrays[1], arrays[2], where


@_twin(decode_all)
def _decode_all_twin(code8: Any, code16: Any, code32: Any, where: Any, indptr: Any, slot0: int) -> Any:
    out = np.empty(indptr[-1] if len(indptr) else 0, np.int32)
    for t in range(len(indptr) - 1):
        lo = int(indptr[t])
        _term_docs_twin(code8, code16, code32, where, int(indptr[t + 1]) - lo, t, slot0, out[lo:])
    return out


@_twin(well_formed)
def _well_formed_twin(
    code8: Any, code16: Any, code32: Any, where: Any, indptr: Any, slot0: int, n_docs: int
) -> bool:
    used = [0, 0, 0]
    lengths = [len(code8), len(code16), len(code32)]
    buffer = np.empty(max(1, n_docs), np.int64)
    for t in range(len(indptr) - 1):
        count = int(indptr[t + 1] - indptr[t])
        width, at = int(where[t]) & 3, int(where[t]) >> 2
        if width > 2 or at < 0 or count > n_docs or at + count > lengths[width]:
            return False
        used[width] += count
        _term_docs_twin(code8, code16, code32, where, count, t, slot0, buffer)
        slots = buffer[:count]
        if count and (slots[0] < slot0 or slots[-1] >= slot0 + n_docs or np.any(np.diff(slots) <= 0)):
            return False
    return used == lengths
