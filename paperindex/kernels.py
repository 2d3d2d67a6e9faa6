"""The compiled inner loop of :class:`paperindex.index.BM25Index` (numba).

:func:`accumulate` adds a query's postings into a score array, computing each posting's tf factor
``tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))`` as it goes: the operations rank-bm25 performs, in its
order, so the scores are rank-bm25's exactly, without keeping a float64 factor per posting (8 bytes
each, refreshed whenever N or avgdl changed) as the numpy version had to for its speed.

numba compiles it once per machine and keeps the machine code on disk (:mod:`paperindex.compiled`);
it releases the GIL. :func:`paperindex.index.warm_up` prepares the loops at start. The loops Python calls
have numpy twins (:mod:`paperindex.compiled`), the same operations on whole arrays, giving the same
floats: they answer while numba compiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paperindex import term_docs as _term_codes
from paperindex.compiled import jit as _jit
from paperindex.compiled import jit_fastmath as _jit_fastmath
from paperindex.compiled import twin as _twin
from paperindex.term_docs import term_docs
from paperindex.tf import half_tf_at, tf_at, values


@_jit
def accumulate(
    codes: Any,
    t_indptr: Any,
    slot0: int,
    tfs: Any,
    tids: Any,
    coef: Any,
    k1p: float,
    len_factor: Any,
    acc: Any,
) -> None:
    """Per query term in query order (term ``tids[j]`` of a segment whose postings' slots are ``codes``
    (:mod:`paperindex.term_docs`) and tfs ``tfs`` (:mod:`paperindex.tf`); coefficient
    ``coef[j]``), add
    ``coef · tf·(k1 + 1) / (tf + len_factor)`` into ``acc``: rank-bm25's operations in its order."""
    code8, code16, code32, where = codes
    packed, big_at, big_tf = tfs
    n_terms = len(t_indptr) - 1
    docs = np.empty(_longest(t_indptr, tids), np.int32)
    for j in range(len(tids)):
        t = tids[j]
        if t >= n_terms:
            continue
        lo = t_indptr[t]
        count = t_indptr[t + 1] - lo
        term_docs(code8, code16, code32, where, count, t, slot0, docs)
        c_j = coef[j]
        for i in range(count):
            d = docs[i]
            f = np.float64(tf_at(packed, big_at, big_tf, lo + i))
            acc[d] += c_j * (f * k1p / (f + len_factor[d]))


@_jit
def _longest(t_indptr: Any, tids: Any) -> int:
    """The most postings any of the terms ``tids`` has in a segment (0 for terms it has not)."""
    n_terms = len(t_indptr) - 1
    longest = 0
    for t in tids:
        if t < n_terms:
            longest = max(longest, t_indptr[t + 1] - t_indptr[t])
    return longest


# ------------------------------------------------------------------------------- bounded top-k
# What :mod:`paperindex.topk` runs: a one-byte impact per posting (its tf factor quantised),
# summed in float32 into an upper bound of every document's score; the best bounds picked with a
# heap; the few documents whose bound can reach the k-th score rescored exactly, as above.

BLOCK = 256  #: score bounds are scanned in blocks of this many slots (fixed: LLVM vectorises them)


@_jit
def quantise(
    codes: Any, t_indptr: Any, slot0: int, tfs: Any, k1p: float, len_factor: Any, inv_step: float, out: Any
) -> None:
    """``out[c]`` = posting ``c``'s tf factor ``tf·(k1 + 1) / (tf + len_factor[slot])`` in steps of
    ``1 / inv_step``, rounded to the nearest (the factor is below k1 + 1 = 255 steps)."""
    code8, code16, code32, where = codes
    packed, big_at, big_tf = tfs
    docs = np.empty(_longest(t_indptr, np.arange(len(t_indptr) - 1)), np.int32)
    for t in range(len(t_indptr) - 1):
        lo = t_indptr[t]
        count = t_indptr[t + 1] - lo
        term_docs(code8, code16, code32, where, count, t, slot0, docs)
        for i in range(count):
            f = np.float64(tf_at(packed, big_at, big_tf, lo + i))
            level = int((f * k1p / (f + len_factor[docs[i]])) * inv_step + 0.5)
            out[lo + i] = 255 if level > 255 else level


@_jit
def _add_bounds(codes: Any, t_indptr: Any, impacts: Any, slot0: int, t: int, w: Any, acc: Any) -> None:
    """Add ``w · (impact + ½)`` for each posting of term ``t`` into ``acc``, decoding its slots as it goes
    (:func:`paperindex.term_docs.term_docs`, unrolled per width: no buffer in between)."""
    code8, code16, code32, where = codes
    half = w * np.float32(0.5)
    lo = t_indptr[t]
    count = t_indptr[t + 1] - lo
    width = where[t] & 3
    at = where[t] >> 2
    d = slot0
    if width == 0:
        for i in range(count):
            d += code8[at + i]
            acc[d] += w * np.float32(impacts[lo + i]) + half
    elif width == 1:
        for i in range(count):
            d += code16[at + i]
            acc[d] += w * np.float32(impacts[lo + i]) + half
    else:
        for i in range(count):
            acc[code32[at + i]] += w * np.float32(impacts[lo + i]) + half


@_jit
def _threshold_bits(heap_min: float, gap: float, slack: float) -> Any:
    """The float32 bits below which a slot's sum, times ``slack``, is under ``heap_min − gap``
    (rounded down; 0 when that is not positive: every matched slot then passes)."""
    t = (heap_min - gap) / slack * (1.0 - 1e-6)
    if t <= 0.0:
        return np.int32(0)
    return np.array([np.float32(t)]).view(np.int32)[0]


@_jit
def _sift_down(heap_v: Any, heap_k: Any, n: int) -> None:
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            return
        if child + 1 < n and heap_v[child + 1] < heap_v[child]:
            child += 1
        if heap_v[child] >= heap_v[i]:
            return
        heap_v[i], heap_v[child] = heap_v[child], heap_v[i]
        heap_k[i], heap_k[child] = heap_k[child], heap_k[i]
        i = child


@_jit
def _sift_up(heap_v: Any, heap_k: Any, i: int) -> None:
    while i > 0:
        parent = (i - 1) // 2
        if heap_v[i] >= heap_v[parent]:
            return
        heap_v[i], heap_v[parent] = heap_v[parent], heap_v[i]
        heap_k[i], heap_k[parent] = heap_k[parent], heap_k[i]
        i = parent


@_jit_fastmath  # integer max/count only, no float sums
def _block_tops(acc: Any, keep: Any, use_keep: bool, tops: Any) -> int:
    """Per block of :data:`BLOCK` slots, the largest float32 sum's bits into ``tops`` (dropping slots
    where ``keep`` is False if ``use_keep``); returns the number of positive sums."""
    bits = acc.view(np.int32)  # non-negative floats order as their bits: integer max vectorises
    matched = 0
    for block in range(len(tops)):
        base = block * BLOCK
        top = np.int32(0)
        count = np.int32(0)
        if use_keep:
            for i in range(BLOCK):
                u = bits[base + i] if keep[base + i] else np.int32(0)
                bits[base + i] = u
                top = max(top, u)
                count += np.int32(u != 0)
        else:
            for i in range(BLOCK):
                u = bits[base + i]
                top = max(top, u)
                count += np.int32(u != 0)
        tops[block] = top
        matched += int(count)
    return matched


@_jit
def select_bounds(
    acc: Any, keep: Any, use_keep: bool, slack: float, gap: float, need: int,
    heap_v: Any, heap_k: Any, cand: Any, cand_bound: Any,
) -> tuple[int, int, int]:  # fmt: skip
    """Scan the float32 sums ``acc`` (length a multiple of :data:`BLOCK`; zeroed on the way, for the
    next query), dropping slots where ``keep`` is False if ``use_keep``. Counts the slots with a positive
    sum, and fills ``cand``/``cand_bound`` with every slot whose bound (sum × ``slack``) was, when
    scanned, at least the ``need``-th best bound so far minus ``gap``; the heap (``heap_v`` bounds,
    ``heap_k`` positions in ``cand``) holds the ``need`` best bounds. Blocks are looked into only if
    their largest sum can pass: the ``need``-th largest of the blocks' largest sums is itself at most
    the ``need``-th best, so it gives a first threshold. Returns ``(matched, heap size, candidates)``."""
    bits = acc.view(np.int32)
    tops = np.empty(len(acc) // BLOCK, np.int32)
    matched = _block_tops(acc, keep, use_keep, tops)
    thr = np.int32(0)
    if need <= len(tops):
        kth = np.partition(tops, len(tops) - need)[len(tops) - need]
        if kth > 0:
            thr = _threshold_bits(np.float64(np.array([kth]).view(np.float32)[0]) * slack, gap, slack)
    n_heap = 0
    n_cand = 0
    for block in range(len(tops)):
        if tops[block] <= thr:
            continue
        base = block * BLOCK
        for i in range(BLOCK):
            if bits[base + i] > thr:
                bound = np.float64(acc[base + i]) * slack
                cand[n_cand] = base + i
                cand_bound[n_cand] = bound
                if n_heap < need:
                    heap_v[n_heap] = bound
                    heap_k[n_heap] = n_cand
                    _sift_up(heap_v, heap_k, n_heap)
                    n_heap += 1
                    if n_heap == need:
                        thr = max(thr, _threshold_bits(heap_v[0], gap, slack))
                elif bound > heap_v[0]:
                    heap_v[0] = bound
                    heap_k[0] = n_cand
                    _sift_down(heap_v, heap_k, n_heap)
                    thr = max(thr, _threshold_bits(heap_v[0], gap, slack))
                n_cand += 1
    for block in range(len(tops)):
        if tops[block] > 0:
            base = block * BLOCK
            for i in range(BLOCK):
                bits[base + i] = 0
    return matched, n_heap, n_cand


@_jit
def _query_terms(tids: Any, coef: Any) -> tuple[Any, Any, Any]:
    """The distinct term ids of a plan (ascending), each plan entry's index among them, and each
    distinct term's summed coefficient (a term given twice counts twice)."""
    order = np.argsort(tids, kind="mergesort")
    terms = np.empty(len(tids), np.int64)
    plan_term = np.empty(len(tids), np.int64)
    weights = np.zeros(len(tids))
    m = 0
    for i in order:
        if m == 0 or terms[m - 1] != tids[i]:
            terms[m] = tids[i]
            m += 1
        plan_term[i] = m - 1
        weights[m - 1] += coef[i]
    return terms[:m], plan_term, weights[:m]


@_jit
def _exact_score(
    d: int, local: int, d_indptr: Any, d_code: Any, d_byteptr: Any, d_tfs: Any,
    terms: Any, plan_term: Any, coef: Any, k1p: float, len_factor: Any, tf_of: Any,
) -> float:  # fmt: skip
    """Slot ``d``'s exact score from its own terms (document ``local`` of its segment's document-major
    postings, ids ascending as the query's ``terms`` are): rank-bm25's operations in plan order, as
    :func:`accumulate` performs them."""
    m = len(terms)
    packed, big_at, big_tf = d_tfs
    tf_of[:m] = 0
    u = 0
    c = d_indptr[local]
    term = 0
    value = 0
    shift = 0
    for i in range(d_byteptr[local], d_byteptr[local + 1]):
        byte = d_code[i]
        value |= (int(byte) & 127) << shift
        if byte & 128:
            shift += 7
            continue
        term += value
        value = 0
        shift = 0
        while u < m and terms[u] < term:
            u += 1
        if u == m:
            break
        if terms[u] == term:
            tf_of[u] = half_tf_at(packed, big_at, big_tf, c)
        c += 1
    score = 0.0
    length = len_factor[d]
    for j in range(len(plan_term)):
        tf = tf_of[plan_term[j]]
        if tf:
            f = np.float64(tf)
            score += coef[j] * (f * k1p / (f + length))
    return score


@_jit
def _candidate_score(d: int, slot0: Any, segments: Any, query: Any, k1p: float, len_factor: Any) -> float:
    """:func:`_exact_score` of slot ``d``, in whichever segment holds it."""
    s = np.searchsorted(slot0, d, side="right") - 1
    d_indptr, d_code, d_byteptr, d_tfs = segments
    terms, plan_term, coef, tf_of = query
    return _exact_score(
        d, d - slot0[s], d_indptr[s], d_code[s], d_byteptr[s], d_tfs[s], terms, plan_term, coef, k1p, len_factor, tf_of
    )  # fmt: skip


@_jit
def _insert(out_ids: Any, out_scores: Any, n_out: int, pid: int, score: float) -> int:
    """Put (pid, score) among the best ``len(out_ids)`` so far (``n_out`` of them, by score descending
    then id), if it belongs there; returns how many there are now."""
    need = len(out_ids)
    if n_out == need:
        last_score, last_id = out_scores[need - 1], out_ids[need - 1]
        if score < last_score or (score == last_score and pid > last_id):
            return n_out
        at = need - 1
    else:
        at = n_out
        n_out += 1
    while at > 0 and (out_scores[at - 1] < score or (out_scores[at - 1] == score and out_ids[at - 1] > pid)):
        out_scores[at] = out_scores[at - 1]
        out_ids[at] = out_ids[at - 1]
        at -= 1
    out_scores[at] = score
    out_ids[at] = pid
    return n_out


@_jit
def top_bounded(
    t_indptr: Any, t_codes: Any, impacts: Any, d_indptr: Any, d_code: Any, d_byteptr: Any, d_tfs: Any, slot0: Any,
    tids: Any, coef: Any, step: float, ratio_lo: float, ratio_hi: float, k1p: float, len_factor: Any,
    slot_ids: Any, acc: Any, keep: Any, use_keep: bool, need: int,
    cand: Any, cand_bound: Any, exact: Any, out_ids: Any, out_scores: Any,
) -> tuple[int, int]:  # fmt: skip
    """The best ``need`` exact scores of a plan whose coefficients are all positive (``tids``/``coef``
    in plan order), over segments given as tuples of their arrays (``slot0`` ascending): their ids and
    scores into ``out_ids``/``out_scores``, by score descending then id. Returns ``(matched slots,
    hits written)``, or ``(-1, 0)`` when float32 cannot hold the bounds (the caller scores exactly).
    How and why: :mod:`paperindex.topk`."""
    terms, plan_term, weights = _query_terms(tids, coef)
    m = len(terms)
    total_weight = weights.sum()
    top_bound = total_weight * k1p * ratio_hi
    weight32 = np.empty(m, np.float32)
    for u in range(m):
        w = weights[u] * (step * ratio_hi * (1 + 1e-6))
        if not (w > 1e-30 and w < 1e30):
            return -1, 0
        weight32[u] = np.float32(w)
    if not top_bound < 1e30:
        return -1, 0
    u32 = 2.0**-24
    slack = 1 + (m + 4) * 2 * u32
    per_term = step * (0.5 * (ratio_hi + ratio_lo) + 255 * (ratio_hi - ratio_lo))
    gap = total_weight * per_term * (1 + 1e-5) + 8 * (m + 4) * u32 * top_bound
    # 1. bounds
    for s in range(len(t_indptr)):
        seg_terms = len(t_indptr[s]) - 1
        for u in range(m):
            if terms[u] < seg_terms:
                _add_bounds(t_codes[s], t_indptr[s], impacts[s], slot0[s], terms[u], weight32[u], acc)
    # 2. the scan
    heap_v = np.empty(need)
    heap_k = np.empty(need, np.int64)
    found = select_bounds(acc, keep, use_keep, slack, gap, need, heap_v, heap_k, cand, cand_bound)
    matched, n_heap, n_cand = found
    # 3. exact scores: the heap's, then every candidate whose bound reaches the least of them
    query = (terms, plan_term, coef, np.zeros(m, np.int64))
    segments = (d_indptr, d_code, d_byteptr, d_tfs)
    exact[:n_cand] = -1.0
    theta = np.inf
    for h in range(n_heap):
        k = heap_k[h]
        exact[k] = _candidate_score(cand[k], slot0, segments, query, k1p, len_factor)
        theta = min(theta, exact[k])
    if n_heap < need:
        theta = -1.0
    n_out = 0
    for k in range(n_cand):
        if exact[k] < 0.0 and cand_bound[k] >= theta:
            exact[k] = _candidate_score(cand[k], slot0, segments, query, k1p, len_factor)
        if exact[k] >= 0.0:
            n_out = _insert(out_ids, out_scores, n_out, slot_ids[cand[k]], exact[k])
    return matched, n_out


# ------------------------------------------------------------------------------- twins (numpy)


@_twin(accumulate)
def _accumulate_twin(
    codes: Any,
    t_indptr: Any,
    slot0: int,
    tfs: Any,
    tids: Any,
    coef: Any,
    k1p: float,
    len_factor: Any,
    acc: Any,
) -> None:
    """:func:`accumulate` a term at a time: each posting's factor by the same operations, and a term's
    postings (each slot once) added in one step, terms in query order."""
    code8, code16, code32, where = codes
    n_terms = len(t_indptr) - 1
    for j in range(len(tids)):
        t = int(tids[j])
        if t >= n_terms:
            continue
        lo, hi = int(t_indptr[t]), int(t_indptr[t + 1])
        docs = np.empty(hi - lo, np.int64)
        term_docs(code8, code16, code32, where, hi - lo, t, slot0, docs)
        f = values(tfs, np.arange(lo, hi, dtype=np.int64), 8).astype(np.float64)
        acc[docs] += coef[j] * (f * k1p / (f + len_factor[docs]))


@_twin(quantise)
def _quantise_twin(
    codes: Any, t_indptr: Any, slot0: int, tfs: Any, k1p: float, len_factor: Any, inv_step: float, out: Any
) -> None:
    n = int(t_indptr[-1])
    code8, code16, code32, where = codes
    docs = _term_codes.decode_all(code8, code16, code32, where, t_indptr, slot0)
    f = values(tfs, np.arange(n, dtype=np.int64), 8).astype(np.float64)
    level = ((f * k1p / (f + len_factor[docs])) * inv_step + 0.5).astype(np.int64)
    out[:n] = np.minimum(level, 255)


@_twin(top_bounded)
def _top_bounded_twin(*args: Any) -> tuple[int, int]:
    """The bounded best k has no twin of its own: ``-1`` sends the caller to the exact scores of every
    matched slot (:func:`accumulate`'s twin), which give the same hits and the same count."""
    return -1, 0
