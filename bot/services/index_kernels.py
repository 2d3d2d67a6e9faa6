"""The compiled inner loop of :class:`bot.services.index.BM25Index` (numba).

:func:`accumulate` adds a query's postings into a score array, computing each posting's tf factor
``tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))`` as it goes: the operations rank-bm25 performs, in its
order, so the scores are rank-bm25's exactly, without keeping a float64 factor per posting (8 bytes
each, refreshed whenever N or avgdl changed) as the numpy version had to for its speed.

numba compiles it once per machine (``cache=True`` keeps the machine code beside this file, or in the
user's cache folder when that is not writable); it releases the GIL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """Compiled by numba (machine code cached on disk, the GIL released), same signature."""
    return cast(_F, numba.njit(cache=True, nogil=True)(fn))


@_jit
def accumulate(
    docs: Any, tf: Any, lo: Any, hi: Any, coef: Any, k1p: float, len_factor: Any, acc: Any
) -> None:
    """Per query term in query order (postings ``lo[j]:hi[j]``, coefficient ``coef[j]``), add
    ``coef · tf·(k1 + 1) / (tf + len_factor)`` into ``acc``: rank-bm25's operations in its order."""
    for j in range(len(lo)):
        c_j = coef[j]
        for c in range(lo[j], hi[j]):
            d = docs[c]
            f = np.float64(tf[c])
            acc[d] += c_j * (f * k1p / (f + len_factor[d]))
