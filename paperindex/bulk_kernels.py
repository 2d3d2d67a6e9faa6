"""The compiled loops of :mod:`paperindex.bulk_terms` (numba): tokenising many papers at once.

Python tokenises a paper in ~0.1 ms (each raw piece of text a bytes object, a dict look-up, a Counter);
at a million papers that is minutes. These loops do the per-piece and per-posting work over whole
batches of translated text instead: :func:`find_pieces` cuts the text at spaces and gives each distinct
piece an id through an open-addressing hash table (the piece's bytes kept once), so Python only looks at
a piece the first time it is seen; :func:`title_pairs` joins the pieces' adjacent word terms into phrase
pairs; :func:`count_documents` counts each paper's terms in first-seen order; :func:`postings_by_term`
turns document-major postings into term-major ones by a counting sort (stable, linear), and
:func:`postings_by_document` back, each document's terms ascending.

numba compiles them once per machine (``cache=True``); they release the GIL. Each has a twin in Python
and numpy (:mod:`paperindex.compiled`) that leaves the same arrays, used while they compile.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paperindex.compiled import jit as _jit
from paperindex.compiled import jit_inline as _jit_inline
from paperindex.compiled import twin as _twin

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_SPACE = 32


@_jit
def piece_hash(blob: Any, lo: int, hi: int) -> Any:
    """FNV-1a of ``blob[lo:hi]`` (never 0, so 0 can mean an empty slot)."""
    h = _FNV_OFFSET
    for i in range(lo, hi):
        h = (h ^ np.uint64(blob[i])) * _FNV_PRIME
    return h | np.uint64(1)


@_jit
def rehash(hashes: Any, n_pieces: int, size: int) -> Any:
    """A table of ``size`` slots (a power of two) holding pieces ``0 .. n_pieces - 1``."""
    table = np.full(size, -1, dtype=np.int32)
    mask = np.uint64(size - 1)
    for pid in range(n_pieces):
        slot = hashes[pid] & mask
        while table[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = pid
    return table


@_jit
def find_pieces(
    blob: Any,
    bounds: Any,
    first_doc: int,
    table: Any,
    hashes: Any,
    keys: Any,
    key_ptr: Any,
    state: Any,
    out: Any,
    out_ptr: Any,
) -> int:
    """The id of every piece (run of bytes other than space) of documents ``first_doc ..``, document
    ``d`` being ``blob[bounds[d]:bounds[d + 1]]``; new pieces get the next ids, their bytes appended to
    ``keys`` (piece ``p`` is ``keys[key_ptr[p]:key_ptr[p + 1]]``).

    ``state`` holds [pieces, key bytes, pieces written to ``out``]; ``out_ptr[d + 1]`` ends document
    ``d``'s ids. Returns the document where it stopped because the table would be over half full or
    ``hashes``/``keys`` would overflow (the caller grows them and calls again from there), or the
    number of documents when done.
    """
    n_docs = len(bounds) - 1
    mask = np.uint64(len(table) - 1)
    n_pieces, n_key, k = state[0], state[1], state[2]
    for d in range(first_doc, n_docs):
        lo, hi = bounds[d], bounds[d + 1]
        if 2 * (n_pieces + (hi - lo)) > len(table) or n_pieces + (hi - lo) > len(hashes) - 1:
            state[0], state[1], state[2] = n_pieces, n_key, k
            return d
        if n_key + (hi - lo) > len(keys):
            state[0], state[1], state[2] = n_pieces, n_key, k
            return d
        i = lo
        while i < hi:
            while i < hi and blob[i] == _SPACE:
                i += 1
            if i == hi:
                break
            j = i
            while j < hi and blob[j] != _SPACE:
                j += 1
            h = piece_hash(blob, i, j)
            length = j - i
            slot = h & mask
            found = -1
            while table[slot] != -1:
                pid = table[slot]
                if hashes[pid] == h and key_ptr[pid + 1] - key_ptr[pid] == length:
                    start = key_ptr[pid]
                    same = True
                    for m in range(length):
                        if keys[start + m] != blob[i + m]:
                            same = False
                            break
                    if same:
                        found = pid
                        break
                slot = (slot + np.uint64(1)) & mask
            if found == -1:
                found = n_pieces
                table[slot] = found
                hashes[found] = h
                for m in range(length):
                    keys[n_key + m] = blob[i + m]
                n_key += length
                key_ptr[found + 1] = n_key
                n_pieces += 1
            out[k] = found
            k += 1
            i = j
        out_ptr[d + 1] = k
    state[0], state[1], state[2] = n_pieces, n_key, k
    return n_docs


@_jit
def title_pairs(
    ids: Any,
    ptr: Any,
    use: Any,
    first: Any,
    last: Any,
    flags: Any,
    pair_ptr: Any,
    pairs: Any,
    out: Any,
    out_ptr: Any,
) -> None:
    """Adjacent word-term pairs of each title whose ``use`` is set (its pieces ``ids[ptr[d]:ptr[d + 1]]``),
    as ``first << 32 | second`` keys, in order; ``out_ptr[d + 1]`` ends title ``d``'s.

    Per piece: ``first`` is its first word's term (−1 for a word without one, −2 for a piece without
    words), ``last`` its last word's, ``flags`` bit 0 a phrase break before its first word (for a piece
    without words: anywhere in it) and bit 1 one after its last word, and ``pairs[pair_ptr[p]:
    pair_ptr[p + 1]]`` the pairs inside it (as :func:`paperindex.tokenizer.phrase_spans` finds them).
    """
    k = 0
    for d in range(len(ptr) - 1):
        if use[d]:
            previous = -1
            for c in range(ptr[d], ptr[d + 1]):
                p = ids[c]
                head = first[p]
                if head == -2:
                    if flags[p] & 1:
                        previous = -1
                    continue
                if previous >= 0 and head >= 0 and not flags[p] & 1:
                    out[k] = (np.int64(previous) << 32) | np.int64(head)
                    k += 1
                for q in range(pair_ptr[p], pair_ptr[p + 1]):
                    out[k] = pairs[q]
                    k += 1
                previous = -1 if flags[p] & 2 else last[p]
        out_ptr[d + 1] = k


@_jit_inline
def _count(term: Any, weight: int, marker: int, k: int, last: Any, out_terms: Any, out_tf: Any) -> int:
    """Count one occurrence (``weight`` times) of ``term`` in the current document; the next free posting."""
    seen = last[term]
    if seen >> 32 == marker:
        out_tf[seen & 0xFFFFFFFF] += weight
        return k
    last[term] = (np.int64(marker) << 32) | k
    out_terms[k] = term
    out_tf[k] = weight
    return k + 1


@_jit
def terms_in(ids: Any, term_ptr: Any) -> int:
    """How many terms the pieces ``ids`` hold together."""
    total = 0
    for p in ids:
        total += term_ptr[p + 1] - term_ptr[p]
    return total


@_jit
def count_documents(
    title_ids: Any,
    title_ptr: Any,
    abstract_ids: Any,
    abstract_ptr: Any,
    term_ptr: Any,
    terms: Any,
    phrases: Any,
    phrase_ptr: Any,
    title_weight: int,
    first_marker: int,
    last: Any,
    out_terms: Any,
    out_tf: Any,
    n_unique: Any,
) -> int:
    """Each document's distinct terms in first-seen order and their frequencies: its title's terms
    ``title_weight`` times, then its abstract's, then its phrase terms ``phrases[phrase_ptr[d]:
    phrase_ptr[d + 1]]`` (a piece's terms are ``terms[term_ptr[p]:term_ptr[p + 1]]``). Returns the
    number of postings written (at most 2**32 per call).

    ``last`` is scratch per term id: ``marker << 32 | posting`` of the document that saw it last (its
    marker ``first_marker + d``, so a later call needs no reset; −1 at first) and where its count is."""
    k = 0
    for d in range(len(title_ptr) - 1):
        start = k
        marker = first_marker + d
        for c in range(title_ptr[d], title_ptr[d + 1]):
            p = title_ids[c]
            for at in range(term_ptr[p], term_ptr[p + 1]):
                k = _count(terms[at], title_weight, marker, k, last, out_terms, out_tf)
        for c in range(abstract_ptr[d], abstract_ptr[d + 1]):
            p = abstract_ids[c]
            for at in range(term_ptr[p], term_ptr[p + 1]):
                k = _count(terms[at], 1, marker, k, last, out_terms, out_tf)
        for c in range(phrase_ptr[d], phrase_ptr[d + 1]):
            k = _count(phrases[c], 1, marker, k, last, out_terms, out_tf)
        n_unique[d] = k - start
    return k


@_jit
def pair_numbers(keys: Any, table: Any, state: Any, out: Any) -> None:
    """Number each distinct ``keys`` value (≥ 0) in order of first appearance, from call to call: ``out``
    gets each key's number. ``table`` (open addressing: ``key, number`` per slot, −1 when empty; the
    caller keeps it at most half full) holds them and ``state[0]`` counts them."""
    mask = np.uint64(len(table) - 1)
    n = state[0]
    for c in range(len(keys)):
        key = keys[c]
        slot = ((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & mask
        while True:
            held = table[slot, 0]
            if held == key:
                out[c] = table[slot, 1]
                break
            if held == -1:
                table[slot, 0] = key
                table[slot, 1] = n
                out[c] = n
                n += 1
                break
            slot = (slot + np.uint64(1)) & mask
    state[0] = n


@_jit
def document_lengths(n_unique: Any, tf: Any) -> Any:
    """Each document's length: the sum of its ``n_unique[d]`` frequencies, documents one after another."""
    lengths = np.zeros(len(n_unique), dtype=np.int64)
    c = 0
    for d in range(len(n_unique)):
        total = 0
        for _ in range(n_unique[d]):
            total += tf[c]
            c += 1
        lengths[d] = total
    return lengths


@_jit
def first_seen(ids: Any, local_of: Any, state: Any) -> None:
    """Number ids by their first appearance: ``local_of[i]`` (−1 until seen) becomes the count of distinct
    ids seen before ``i`` (``state[0]``, carried from call to call); ``ids`` are replaced by those numbers."""
    n_local = state[0]
    for c in range(len(ids)):
        i = ids[c]
        local = local_of[i]
        if local == -1:
            local = local_of[i] = n_local
            n_local += 1
        ids[c] = local
    state[0] = n_local


@_jit
def count_by_term(d_terms: Any, n_terms: int) -> Any:
    """How many postings each of ``n_terms`` terms has (ids below ``n_terms``): ``np.bincount`` without
    the int64 copy it makes of int32 ids first (587 MB and 1.7 s of a 30 s build at a million papers)."""
    counts = np.zeros(n_terms, np.int64)
    for term in d_terms:
        counts[term] += 1
    return counts


@_jit
def postings_by_term(d_terms: Any, d_tf: Any, n_unique: Any, t_indptr: Any, t_docs: Any, t_tf: Any) -> None:
    """Term-major postings from document-major ones: a counting sort by term (``t_indptr`` holds each
    term's range), documents (numbered from 0) ascending within a term."""
    fill = t_indptr[:-1].copy()
    c = 0
    for d in range(len(n_unique)):
        for _ in range(n_unique[d]):
            term = d_terms[c]
            at = fill[term]
            t_docs[at] = d
            t_tf[at] = d_tf[c]
            fill[term] = at + 1
            c += 1


@_jit
def postings_by_document(
    t_indptr: Any, t_docs: Any, t_tf: Any, d_indptr: Any, d_terms: Any, d_tf: Any
) -> None:
    """Document-major postings from term-major ones (documents numbered from 0): a counting sort by
    document (``d_indptr`` holds each one's range), terms ascending within a document."""
    fill = d_indptr[:-1].copy()
    for term in range(len(t_indptr) - 1):
        for c in range(t_indptr[term], t_indptr[term + 1]):
            d = t_docs[c]
            at = fill[d]
            d_terms[at] = term
            d_tf[at] = t_tf[c]
            fill[d] = at + 1


@_jit
def distinct_per_document(
    ids: Any, ptr: Any, words_ptr: Any, words: Any, seen: Any, out: Any, out_ptr: Any
) -> None:
    """Each document's distinct words (pieces → words: ``words[words_ptr[p]:words_ptr[p + 1]]``), in
    first-seen order; ``seen`` is scratch per word id (−1 initially)."""
    k = 0
    for d in range(len(ptr) - 1):
        for c in range(ptr[d], ptr[d + 1]):
            p = ids[c]
            for at in range(words_ptr[p], words_ptr[p + 1]):
                w = words[at]
                if seen[w] != d:
                    seen[w] = d
                    out[k] = w
                    k += 1
        out_ptr[d + 1] = k


# ------------------------------------------------------------------------------- twins (Python, numpy)

_MASK64 = (1 << 64) - 1


def _fnv(piece: bytes) -> int:
    h = int(_FNV_OFFSET)
    for byte in piece:
        h = ((h ^ byte) * int(_FNV_PRIME)) & _MASK64
    return h | 1


@_twin(rehash)
def _rehash_twin(hashes: Any, n_pieces: int, size: int) -> Any:
    table = [-1] * size
    mask = size - 1
    for pid, h in enumerate(hashes[:n_pieces].tolist()):
        slot = h & mask
        while table[slot] != -1:
            slot = (slot + 1) & mask
        table[slot] = pid
    return np.array(table, dtype=np.int32)


@_twin(find_pieces)
def _find_pieces_twin(
    blob: Any, bounds: Any, first_doc: int, table: Any, hashes: Any, keys: Any, key_ptr: Any, state: Any,
    out: Any, out_ptr: Any,
) -> int:  # fmt: skip
    n_docs = len(bounds) - 1
    mask = len(table) - 1
    n_pieces, n_key, k = (int(v) for v in state[:3])
    limits = bounds.tolist()
    data = bytes(np.asarray(blob, dtype=np.uint8))
    known: dict[bytes, int] = {}

    def look_up(piece: bytes) -> int:
        nonlocal n_pieces, n_key
        h = _fnv(piece)
        slot = h & mask
        while (pid := int(table[slot])) != -1:
            if int(hashes[pid]) == h and bytes(keys[key_ptr[pid] : key_ptr[pid + 1]]) == piece:
                return pid
            slot = (slot + 1) & mask
        table[slot] = n_pieces
        hashes[n_pieces] = h
        keys[n_key : n_key + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
        n_key += len(piece)
        key_ptr[n_pieces + 1] = n_key
        n_pieces += 1
        return n_pieces - 1

    for d in range(first_doc, n_docs):
        lo, hi = limits[d], limits[d + 1]
        if 2 * (n_pieces + (hi - lo)) > len(table) or n_pieces + (hi - lo) > len(hashes) - 1:
            state[0], state[1], state[2] = n_pieces, n_key, k
            return d
        if n_key + (hi - lo) > len(keys):
            state[0], state[1], state[2] = n_pieces, n_key, k
            return d
        ids = []
        for piece in data[lo:hi].split(b" "):
            if piece:
                pid = known.get(piece)
                if pid is None:
                    pid = known[piece] = look_up(piece)
                ids.append(pid)
        out[k : k + len(ids)] = ids
        k += len(ids)
        out_ptr[d + 1] = k
    state[0], state[1], state[2] = n_pieces, n_key, k
    return n_docs


@_twin(title_pairs)
def _title_pairs_twin(
    ids: Any, ptr: Any, use: Any, first: Any, last: Any, flags: Any, pair_ptr: Any, pairs: Any, out: Any,
    out_ptr: Any,
) -> None:  # fmt: skip
    ids_, ptr_, use_ = ids.tolist(), ptr.tolist(), use.tolist()
    first_, last_, flags_, pair_ptr_, pairs_ = (
        first.tolist(),
        last.tolist(),
        flags.tolist(),
        pair_ptr.tolist(),
        pairs.tolist(),
    )
    written: list[int] = []
    for d in range(len(ptr_) - 1):
        if use_[d]:
            previous = -1
            for c in range(ptr_[d], ptr_[d + 1]):
                p = ids_[c]
                head = first_[p]
                if head == -2:
                    if flags_[p] & 1:
                        previous = -1
                    continue
                if previous >= 0 and head >= 0 and not flags_[p] & 1:
                    written.append((previous << 32) | head)
                written.extend(pairs_[pair_ptr_[p] : pair_ptr_[p + 1]])
                previous = -1 if flags_[p] & 2 else last_[p]
        out_ptr[d + 1] = len(written)
    out[: len(written)] = written


@_twin(terms_in)
def _terms_in_twin(ids: Any, term_ptr: Any) -> int:
    ids = np.asarray(ids, dtype=np.int64)
    return int((term_ptr[ids + 1] - term_ptr[ids]).sum())


@_twin(count_documents)
def _count_documents_twin(
    title_ids: Any, title_ptr: Any, abstract_ids: Any, abstract_ptr: Any, term_ptr: Any, terms: Any,
    phrases: Any, phrase_ptr: Any, title_weight: int, first_marker: int, last: Any, out_terms: Any,
    out_tf: Any, n_unique: Any,
) -> int:  # fmt: skip
    term_ptr_, terms_ = term_ptr.tolist(), terms.tolist()
    parts = (
        (title_ids.tolist(), title_ptr.tolist(), title_weight),
        (abstract_ids.tolist(), abstract_ptr.tolist(), 1),
    )
    phrases_, phrase_ptr_ = phrases.tolist(), phrase_ptr.tolist()
    written: list[int] = []
    counts: list[int] = []
    touched: dict[int, int] = {}  # term -> what last[term] holds now
    for d in range(len(phrase_ptr_) - 1):
        marker = first_marker + d
        here: dict[int, int] = {}  # term -> its posting in this document
        occurrences: list[tuple[int, int]] = []
        for ids, ptr, weight in parts:
            for c in range(ptr[d], ptr[d + 1]):
                p = ids[c]
                occurrences.extend((term, weight) for term in terms_[term_ptr_[p] : term_ptr_[p + 1]])
        occurrences.extend((term, 1) for term in phrases_[phrase_ptr_[d] : phrase_ptr_[d + 1]])
        for term, weight in occurrences:
            at = here.get(term)
            if at is None:
                here[term] = at = len(written)
                written.append(term)
                counts.append(weight)
                touched[term] = (marker << 32) | at
            else:
                counts[at] += weight
        n_unique[d] = len(here)
    if touched:
        last[np.fromiter(touched, np.int64, len(touched))] = np.fromiter(
            touched.values(), np.int64, len(touched)
        )
    out_terms[: len(written)] = written
    out_tf[: len(counts)] = counts
    return len(written)


@_twin(pair_numbers)
def _pair_numbers_twin(keys: Any, table: Any, state: Any, out: Any) -> None:
    mask = len(table) - 1
    n = int(state[0])
    known: dict[int, int] = {}
    numbers = []
    for key in keys.tolist():
        number = known.get(key)
        if number is None:
            slot = (((key * 0x9E3779B97F4A7C15) & _MASK64) >> 20) & mask
            while True:
                held = int(table[slot, 0])
                if held == key:
                    number = int(table[slot, 1])
                    break
                if held == -1:
                    table[slot, 0], table[slot, 1] = key, n
                    number = n
                    n += 1
                    break
                slot = (slot + 1) & mask
            known[key] = number
        numbers.append(number)
    out[: len(numbers)] = numbers
    state[0] = n


@_twin(document_lengths)
def _document_lengths_twin(n_unique: Any, tf: Any) -> Any:
    ends = np.cumsum(n_unique, dtype=np.int64)
    total = int(ends[-1]) if len(ends) else 0
    sums = np.concatenate([np.zeros(1, np.int64), np.cumsum(tf[:total], dtype=np.int64)])
    return sums[ends] - sums[ends - np.asarray(n_unique, dtype=np.int64)]


@_twin(first_seen)
def _first_seen_twin(ids: Any, local_of: Any, state: Any) -> None:
    if len(ids):
        unique, first = np.unique(ids, return_index=True)
        new = unique[local_of[unique] == -1]
        new = new[np.argsort(first[local_of[unique] == -1], kind="stable")]
        local_of[new] = int(state[0]) + np.arange(len(new))
        state[0] += len(new)
        ids[:] = local_of[ids]


@_twin(count_by_term)
def _count_by_term_twin(d_terms: Any, n_terms: int) -> Any:
    return np.bincount(d_terms, minlength=n_terms).astype(np.int64)


def _counting_sort(keys: Any, offsets: Any) -> tuple[Any, Any]:
    """A stable sort of ``keys`` and where each lands: ``offsets[key]`` plus its rank among equal keys."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    rank = np.arange(len(keys)) - np.searchsorted(ordered, ordered, side="left")
    return order, offsets[ordered] + rank


@_twin(postings_by_term)
def _postings_by_term_twin(
    d_terms: Any, d_tf: Any, n_unique: Any, t_indptr: Any, t_docs: Any, t_tf: Any
) -> None:
    total = int(np.sum(n_unique))
    docs = np.repeat(np.arange(len(n_unique)), n_unique)
    order, at = _counting_sort(np.asarray(d_terms[:total], dtype=np.int64), t_indptr)
    t_docs[at] = docs[order]
    t_tf[at] = d_tf[:total][order]


@_twin(postings_by_document)
def _postings_by_document_twin(
    t_indptr: Any, t_docs: Any, t_tf: Any, d_indptr: Any, d_terms: Any, d_tf: Any
) -> None:
    counts = np.diff(t_indptr)
    lo, hi = int(t_indptr[0]), int(t_indptr[-1])
    terms = np.repeat(np.arange(len(counts)), counts)
    order, at = _counting_sort(np.asarray(t_docs[lo:hi], dtype=np.int64), d_indptr)
    d_terms[at] = terms[order]
    d_tf[at] = t_tf[lo:hi][order]


@_twin(distinct_per_document)
def _distinct_per_document_twin(
    ids: Any, ptr: Any, words_ptr: Any, words: Any, seen: Any, out: Any, out_ptr: Any
) -> None:
    ids_, ptr_, words_ptr_, words_ = ids.tolist(), ptr.tolist(), words_ptr.tolist(), words.tolist()
    written: list[int] = []
    last_doc: dict[int, int] = {}
    for d in range(len(ptr_) - 1):
        for c in range(ptr_[d], ptr_[d + 1]):
            p = ids_[c]
            for w in words_[words_ptr_[p] : words_ptr_[p + 1]]:
                if last_doc.get(w, int(seen[w])) != d:
                    last_doc[w] = d
                    written.append(w)
        out_ptr[d + 1] = len(written)
    if last_doc:
        seen[np.fromiter(last_doc, np.int64, len(last_doc))] = np.fromiter(
            last_doc.values(), np.int64, len(last_doc)
        )
    out[: len(written)] = written
