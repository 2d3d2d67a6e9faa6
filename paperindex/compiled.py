"""numba as the index's compiled loops use it (``index_kernels``, ``index_doc_terms``, ``index_term_docs``,
``bulk_kernels``), and their pure-numpy twins.

:func:`jit` compiles with the GIL released and keeps the machine code on disk (``cache=True``: in
``NUMBA_CACHE_DIR`` when set, else beside the source file, else in the user's cache folder, so an
install whose files are read-only still keeps it). Where none of them is writable (a read-only install
with a read-only home), numba refuses to compile with a cache, and the module would not import: the
loops are then compiled in each process instead, and the log says so once. Loaded from the cache numba
takes 0.4 to 1 s to prepare them in a fresh process, which :func:`paperindex.index.warm_up` spends at
start rather than during the first search.

Compiling them where the cache has none (the first start after an install) takes a minute of a core.
So each loop a caller outside the compiled code reaches also has a **twin** (:func:`twin`): the same
computation in Python and numpy, giving exactly what the compiled loop gives (the same numbers in the
same order, the same arrays written), only slower on large inputs. While :func:`use_twins` is on, a
call of a loop runs its twin; :mod:`paperindex.warm` compiles the loops in a child process meanwhile
and says when the process can load them from the cache and switch back. A loop without a twin, or a
call inside :func:`compiled_only`, always runs compiled.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar, cast

from numba.core.registry import CPUDispatcher

_F = TypeVar("_F", bound=Callable[..., Any])


class _Switch:
    """Whether calls run the twins (the process's setting), unless this thread asked for the compiled
    loops (:func:`compiled_only`)."""

    twins = False
    local = threading.local()


class Kernel(CPUDispatcher):
    """A numba dispatcher that runs its twin instead while :func:`use_twins` is on. Compiled code calling
    it (numba resolves it as any dispatcher) never goes through the twin."""

    twin: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _Switch.twins and self.twin is not None and not getattr(_Switch.local, "compiled", False):
            return self.twin(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def _dispatcher(fn: Callable[..., Any], *, cache: bool, **options: Any) -> Kernel:
    kernel = Kernel(py_func=fn, locals={}, targetoptions={"nopython": True, "nogil": True, **options})
    if cache:
        kernel.enable_caching()
    return kernel


def jit(fn: _F, *, fastmath: bool = False, inline: Literal["never", "always"] = "never") -> _F:
    """``fn`` compiled by numba (nopython, the GIL released, cached on disk where it can be), same signature."""
    try:
        return cast(_F, _dispatcher(fn, cache=True, fastmath=fastmath, inline=inline))
    except RuntimeError:  # "cannot cache function …: no locator available for file …"
        _compiled_in_each_process()
        return cast(_F, _dispatcher(fn, cache=False, fastmath=fastmath, inline=inline))


def jit_fastmath(fn: _F) -> _F:
    """:func:`jit` with numba's fastmath."""
    return jit(fn, fastmath=True)


def jit_inline(fn: _F) -> _F:
    """:func:`jit`, inlined into the compiled functions that call it."""
    return jit(fn, inline="always")


def twin(kernel: Callable[..., Any]) -> Callable[[_F], _F]:
    """Register the decorated function as ``kernel``'s twin: what runs while :func:`use_twins` is on."""

    def register(fn: _F) -> _F:
        cast(Kernel, kernel).twin = fn
        return fn

    return register


def use_twins(on: bool) -> None:
    """Run the twins (``True``) or the compiled loops (``False``, the default) from now on, in every thread."""
    _Switch.twins = on


def using_twins() -> bool:
    return _Switch.twins


@contextlib.contextmanager
def compiled_only() -> Iterator[None]:
    """In this thread, call the compiled loops whatever :func:`use_twins` says (to prepare them)."""
    before = getattr(_Switch.local, "compiled", False)
    _Switch.local.compiled = True
    try:
        yield
    finally:
        _Switch.local.compiled = before


def cache_folder(kernel: Callable[..., Any]) -> str | None:
    """The folder where numba keeps ``kernel``'s machine code (None: it keeps none)."""
    cache = getattr(kernel, "_cache", None)
    return cast(str | None, getattr(cache, "_cache_path", None))


@functools.cache
def _compiled_in_each_process() -> None:
    logging.getLogger(__name__).warning(
        "numba finds no writable folder for its cache: the index's compiled loops are compiled at each "
        "start (set NUMBA_CACHE_DIR to a writable folder to keep them)"
    )


def is_compiled_in_each_process() -> bool:
    """Whether numba keeps no cache here (the loops compile in every process)."""
    return _compiled_in_each_process.cache_info().currsize > 0
