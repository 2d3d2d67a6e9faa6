"""numba as the index's compiled loops use it (``index_kernels``, ``index_doc_terms``, ``index_term_docs``,
``bulk_kernels``).

:func:`jit` compiles with the GIL released and keeps the machine code on disk (``cache=True``: in
``NUMBA_CACHE_DIR`` when set, else beside the source file, else in the user's cache folder, so an
install whose files are read-only still keeps it). Where none of them is writable (a read-only install
with a read-only home), numba refuses to compile with a cache, and the module would not import: the
loops are then compiled in each process instead, and the log says so once. Either way numba takes 0.4
to 1 s and more to prepare them in a fresh process, which :func:`paperindex.index.warm_up` spends at
start rather than during the first search.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

import numba

_F = TypeVar("_F", bound=Callable[..., Any])


def jit(fn: _F, *, fastmath: bool = False, inline: Literal["never", "always"] = "never") -> _F:
    """``fn`` compiled by numba (nopython, the GIL released, cached on disk where it can be), same signature."""
    try:
        return cast(_F, numba.njit(cache=True, nogil=True, fastmath=fastmath, inline=inline)(fn))
    except RuntimeError:  # "cannot cache function …: no locator available for file …"
        _compiled_in_each_process()
        return cast(_F, numba.njit(nogil=True, fastmath=fastmath, inline=inline)(fn))


def jit_fastmath(fn: _F) -> _F:
    """:func:`jit` with numba's fastmath."""
    return jit(fn, fastmath=True)


def jit_inline(fn: _F) -> _F:
    """:func:`jit`, inlined into the compiled functions that call it."""
    return jit(fn, inline="always")


@functools.cache
def _compiled_in_each_process() -> None:
    logging.getLogger(__name__).warning(
        "numba finds no writable folder for its cache: the index's compiled loops are compiled at each "
        "start (set NUMBA_CACHE_DIR to a writable folder to keep them)"
    )
