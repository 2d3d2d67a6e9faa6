"""Each document's term ids in a segment's document-major postings, ascending, as LEB128 deltas.

A document holds a few dozen to a few hundred distinct terms out of a vocabulary of hundreds of
thousands; term ids are given in first-seen order, so the common terms have small ids and the gaps
between a document's ids, sorted, are mostly below 128: one byte each (about 1.2 bytes a term on the
multivenue corpus, where an int32 took 4). Document ``n``'s bytes are ``code[byteptr[n]:byteptr[n +
1]]``: its first id, then each gap to the next, 7 bits a byte, the high bit set on all but a number's
last byte. The compiled loops here encode, decode (for any list of documents, in that order), count
per term and check a snapshot's bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paperindex.compiled import jit as _jit
from paperindex.compiled import twin as _twin


@_jit
def _size(value: int) -> int:
    size = 1
    while value >= 128:
        value >>= 7
        size += 1
    return size


@_jit
def encode(indptr: Any, terms: Any) -> tuple[Any, Any]:
    """``(code, byteptr)`` for documents whose ascending term ids are ``terms[indptr[n]:indptr[n + 1]]``."""
    n_docs = len(indptr) - 1
    byteptr = np.zeros(n_docs + 1, np.int64)
    for n in range(n_docs):
        size = 0
        previous = 0
        for c in range(indptr[n], indptr[n + 1]):
            size += _size(terms[c] - previous)
            previous = terms[c]
        byteptr[n + 1] = byteptr[n] + size
    code = np.empty(byteptr[n_docs], np.uint8)
    at = 0
    for n in range(n_docs):
        previous = 0
        for c in range(indptr[n], indptr[n + 1]):
            value = terms[c] - previous
            previous = terms[c]
            while value >= 128:
                code[at] = (value & 127) | 128
                value >>= 7
                at += 1
            code[at] = value
            at += 1
    return code, byteptr


@_jit
def decode_into(code: Any, lo: int, hi: int, out: Any, start: int) -> int:
    """Decode bytes ``code[lo:hi]`` (one document) into ``out[start:]``; returns the end in ``out``."""
    at = start
    term = 0
    value = 0
    shift = 0
    for i in range(lo, hi):
        byte = code[i]
        value |= (int(byte) & 127) << shift
        if byte & 128:
            shift += 7
        else:
            term += value
            out[at] = term
            at += 1
            value = 0
            shift = 0
    return at


@_jit
def decode(code: Any, byteptr: Any, indptr: Any, docs: Any) -> Any:
    """The term ids of local documents ``docs``, one after the other (``indptr`` gives their counts)."""
    total = 0
    for d in docs:
        total += indptr[d + 1] - indptr[d]
    out = np.empty(total, np.int32)
    at = 0
    for d in docs:
        at = decode_into(code, byteptr[d], byteptr[d + 1], out, at)
    return out


@_jit
def count_terms(code: Any, byteptr: Any, live: Any, n_terms: int) -> Any:
    """How many of the documents where ``live`` is True hold each term (ids ≥ ``n_terms``: not counted)."""
    counts = np.zeros(n_terms, np.int64)
    for d in range(len(byteptr) - 1):
        if not live[d]:
            continue
        term = 0
        value = 0
        shift = 0
        for i in range(byteptr[d], byteptr[d + 1]):
            byte = code[i]
            value |= (int(byte) & 127) << shift
            if byte & 128:
                shift += 7
            else:
                term += value
                if term < n_terms:
                    counts[term] += 1
                value = 0
                shift = 0
    return counts


@_jit
def well_formed(code: Any, byteptr: Any, indptr: Any, n_terms: int) -> bool:
    """Whether every document's bytes hold exactly its ``indptr`` count of strictly ascending ids below
    ``n_terms``, each number ending within them (a snapshot's bytes, before use)."""
    for d in range(len(byteptr) - 1):
        lo, hi = byteptr[d], byteptr[d + 1]
        if lo > hi or hi > len(code):
            return False
        count = 0
        term = -1
        value = 0
        shift = 0
        for i in range(lo, hi):
            byte = code[i]
            if shift > 35:
                return False
            value |= (int(byte) & 127) << shift
            if byte & 128:
                shift += 7
            else:
                if count > 0 and value == 0:
                    return False
                term = value if count == 0 else term + value
                if term >= n_terms:
                    return False
                count += 1
                value = 0
                shift = 0
        if shift != 0 or count != indptr[d + 1] - indptr[d]:
            return False
    return True


@_jit
def holds(code: Any, byteptr: Any, docs: Any, wanted: Any, column: Any, held: Any, rows: Any) -> None:
    """``held[rows[i], column[j]] = True`` where local document ``docs[i]`` holds term ``wanted[j]``
    (``wanted`` ascending)."""
    m = len(wanted)
    for i in range(len(docs)):
        d = docs[i]
        j = 0
        term = 0
        value = 0
        shift = 0
        for c in range(byteptr[d], byteptr[d + 1]):
            byte = code[c]
            value |= (int(byte) & 127) << shift
            if byte & 128:
                shift += 7
                continue
            term += value
            value = 0
            shift = 0
            while j < m and wanted[j] < term:
                j += 1
            if j == m:
                break
            if wanted[j] == term:
                held[rows[i], column[j]] = True


# ------------------------------------------------------------------------------- twins (numpy)


def _numbers(code: Any, byteptr: Any, docs: Any) -> tuple[Any, Any]:
    """The term ids of local documents ``docs`` one after the other (well-formed codes), and how many
    each has: the varints of their bytes decoded at once, then summed within each document."""
    byteptr = np.asarray(byteptr, dtype=np.int64)
    docs = np.asarray(docs, dtype=np.int64)
    lo, hi = byteptr[docs], byteptr[docs + 1]
    sizes = hi - lo
    if not sizes.sum():
        return np.zeros(0, np.int64), np.zeros(len(docs), np.int64)
    at = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
    data = np.asarray(code, dtype=np.uint8)[at].astype(np.int64)
    ends = (data & 128) == 0
    number = np.cumsum(ends) - ends  # the number each byte belongs to
    first_byte = np.flatnonzero(np.concatenate([[True], ends[:-1]]))
    shift = 7 * (np.arange(len(data)) - first_byte[number])
    values = np.zeros(int(ends.sum()), np.int64)
    np.add.at(values, number, (data & 127) << shift)
    ended = np.concatenate([np.zeros(1, np.int64), np.cumsum(ends)])
    counts = ended[np.cumsum(sizes)] - ended[np.cumsum(sizes) - sizes]
    starts = np.cumsum(counts) - counts
    running = np.cumsum(values)
    before = np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0)
    return running - np.repeat(before, counts), counts


@_twin(encode)
def _encode_twin(indptr: Any, terms: Any) -> tuple[Any, Any]:
    indptr = np.asarray(indptr, dtype=np.int64)
    n_docs = len(indptr) - 1
    counts = np.diff(indptr)
    ids = np.asarray(terms[indptr[0] : indptr[-1]], dtype=np.int64)
    previous = np.empty(len(ids), np.int64)
    previous[1:] = ids[:-1]
    previous[(indptr[:-1] - indptr[0])[counts > 0]] = 0
    values = ids - previous
    sizes = np.ones(len(values), np.int64)
    for bits in range(7, 64, 7):
        sizes += values >= (1 << bits)
    byteptr = np.zeros(n_docs + 1, np.int64)
    total = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)])
    byteptr[1:] = total[indptr[1:] - indptr[0]]
    code = np.empty(int(byteptr[-1]), np.uint8)
    start = np.cumsum(sizes) - sizes
    for k in range(int(sizes.max()) if len(sizes) else 0):
        mine = sizes > k
        byte = (values[mine] >> (7 * k)) & 127
        code[start[mine] + k] = byte | np.where(sizes[mine] - 1 > k, 128, 0)
    return code, byteptr


@_twin(decode)
def _decode_twin(code: Any, byteptr: Any, indptr: Any, docs: Any) -> Any:
    ids, _ = _numbers(code, byteptr, docs)
    return ids.astype(np.int32)


@_twin(count_terms)
def _count_terms_twin(code: Any, byteptr: Any, live: Any, n_terms: int) -> Any:
    ids, _ = _numbers(code, byteptr, np.flatnonzero(live[: len(byteptr) - 1]))
    return np.bincount(ids[ids < n_terms], minlength=n_terms).astype(np.int64)[:n_terms]


@_twin(well_formed)
def _well_formed_twin(code: Any, byteptr: Any, indptr: Any, n_terms: int) -> bool:
    data = bytes(np.asarray(code, dtype=np.uint8))
    bounds, counts = byteptr.tolist(), np.diff(indptr).tolist()
    for d in range(len(bounds) - 1):
        lo, hi = bounds[d], bounds[d + 1]
        if lo > hi or hi > len(data):
            return False
        count, term, value, shift = 0, -1, 0, 0
        for byte in data[lo:hi]:
            if shift > 35:
                return False
            value |= (byte & 127) << shift
            if byte & 128:
                shift += 7
                continue
            if count > 0 and value == 0:
                return False
            term = value if count == 0 else term + value
            if term >= n_terms:
                return False
            count += 1
            value, shift = 0, 0
        if shift != 0 or count != counts[d]:
            return False
    return True


@_twin(holds)
def _holds_twin(code: Any, byteptr: Any, docs: Any, wanted: Any, column: Any, held: Any, rows: Any) -> None:
    ids, counts = _numbers(code, byteptr, docs)
    if not len(wanted) or not len(ids):
        return
    row = np.repeat(np.asarray(rows), counts)
    j = np.searchsorted(wanted, ids)  # the first of equal wanted ids, as the loop finds it
    found = j < len(wanted)
    found[found] = np.asarray(wanted)[j[found]] == ids[found]
    held[row[found], np.asarray(column)[j[found]]] = True
