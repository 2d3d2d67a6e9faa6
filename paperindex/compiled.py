"""The index's compiled loops (``index_kernels``, ``index_doc_terms``, ``index_term_docs``,
``bulk_kernels``) as the modules hold them, and their pure-numpy twins.

A loop comes from one of two places, chosen once per process when this module is imported:

- **ahead of time** (:mod:`paperindex.ahead_of_time`): an extension module built once per machine,
  loaded without numba. Each call looks up the export for the kinds of its arguments (:func:`kinds`);
  arguments of kinds it was not built for go to the loop's twin (and the log says so once).
- **numba** (:func:`jit`): where that module is not built yet (the first start after an install, or a
  machine without a C compiler), numba compiles the loops with the GIL released and keeps the machine
  code on disk (``cache=True``: in ``NUMBA_CACHE_DIR`` when set, else beside the source file, else in
  the user's cache folder). Where none of them is writable numba refuses to compile with a cache: the
  loops are then compiled in each process instead, and the log says so once. Loaded from the cache
  numba takes 0.4 to 1 s to prepare them in a fresh process, which :func:`paperindex.index.warm_up`
  spends at start rather than during the first search.

A process that started on numba's loops switches to the module once it is built
(:func:`use_ahead_of_time`), so that numba never loads their machine code there.

Compiling them where nothing is compiled yet takes a minute of a core. So each loop a caller outside
the compiled code reaches also has a **twin** (:func:`twin`): the same computation in Python and
numpy, giving exactly what the compiled loop gives (the same numbers in the same order, the same arrays
written), only slower on large inputs. While :func:`use_twins` is on, a call of a loop runs its twin;
:mod:`paperindex.prepare` compiles the loops in a child process meanwhile and says when the process
can load them and switch back. A loop without a twin, or a call inside :func:`compiled_only`, always
runs compiled.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar, cast

import numpy as np

from paperindex import ahead_of_time

_F = TypeVar("_F", bound=Callable[..., Any])

log = logging.getLogger(__name__)


class _Switch:
    """Whether calls run the twins (the process's setting), unless this thread asked for the compiled
    loops (:func:`compiled_only`); and who is told of each compiled call (:func:`recording`)."""

    twins = False
    local = threading.local()
    recorder: Callable[[Any, tuple[Any, ...]], None] | None = None


def _runs_twin(loop: Loop) -> bool:
    return _Switch.twins and loop.twin is not None and not getattr(_Switch.local, "compiled", False)


class Loop:
    """A compiled loop as a module holds it: ``py_func`` its Python source, ``twin`` what runs while
    :func:`use_twins` is on."""

    py_func: Callable[..., Any]
    twin: Callable[..., Any] | None = None

    @property
    def loop_name(self) -> str:
        return f"{self.py_func.__module__}.{self.py_func.__qualname__}"


class AheadOfTime(Loop):
    """A loop from the module compiled ahead of time: for each kinds of arguments, its export."""

    def __init__(self, py_func: Callable[..., Any], exports: dict[ahead_of_time.Kinds, Callable[..., Any]]):
        self.py_func = py_func
        self.exports = exports
        self.missed = 0  # calls with arguments of kinds the module was not built for
        functools.update_wrapper(self, py_func)

    def __call__(self, *args: Any) -> Any:
        if _runs_twin(self):
            return self.twin(*args)  # type: ignore[misc]
        export = self.exports.get(_kinds_of_call(args))
        if export is None:
            return self._without_export(args)
        return export(*args)

    def _without_export(self, args: tuple[Any, ...]) -> Any:
        self.missed += 1
        if self.twin is None:
            raise TypeError(f"{self.loop_name} was not compiled for arguments {_described(args)}")
        if self.missed == 1:
            log.warning(
                "%s was not compiled for arguments %s: its numpy twin answers (slower)",
                self.loop_name,
                _described(args),
            )
        return self.twin(*args)


def _described(value: Any) -> str:
    """Arguments as a person reads their kinds: ``(<f4 1-d C, int)``."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "strided"
        return f"{value.dtype.str} {value.ndim}-d {layout}{'' if flags.writeable else ' read-only'}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_described(v) for v in value) + ")"
    return type(value).__name__


def kinds(args: tuple[Any, ...]) -> ahead_of_time.Kinds:
    """What numba compiles a loop for, of each argument: an array's dtype, dimensions, layout, whether
    it is writable and of native byte order (one int); a tuple's items; anything else's type (numpy's
    int64, float64 and bool as Python's int, float and bool, as numba types them). The module
    compiled ahead of time brings the same in C (``paperindex/kinds.c``), which a call uses."""
    return tuple([_kind(a) for a in args])


#: numpy's scalars numba types as Python's
_ALIKE: dict[type, type] = {np.int64: int, np.float64: float, np.bool_: bool}

#: numpy's flags numba's array types tell apart: C and F contiguous, aligned, writeable
_TOLD_APART = 0x1 | 0x2 | 0x100 | 0x400


def _kind(value: Any) -> Any:
    kind = type(value)
    if kind is np.ndarray:
        swapped = 0 if value.dtype.isnative else 1 << 30
        return value.dtype.num | value.ndim << 8 | (value.flags.num & _TOLD_APART) << 16 | swapped
    if kind is tuple:
        return tuple([_kind(v) for v in value])
    return _ALIKE.get(kind, kind)


_AHEAD = ahead_of_time.load()
#: the kinds of a call's arguments that pick its export: the module's C ones where it brought them
_kinds_of_call: Callable[[tuple[Any, ...]], ahead_of_time.Kinds] = (_AHEAD and _AHEAD.kinds) or kinds


def ahead_of_time_loaded() -> bool:
    """Whether this process runs the loops compiled ahead of time (numba not imported for them)."""
    return _AHEAD is not None


@functools.cache
def _kernel_class() -> type:
    from numba.core.registry import CPUDispatcher

    class Kernel(CPUDispatcher, Loop):
        """A numba dispatcher that runs its twin instead while :func:`use_twins` is on. Compiled code
        calling it (numba resolves it as any dispatcher) never goes through the twin."""

        #: the module's, once :func:`use_ahead_of_time` switched this process to it
        exports: dict[ahead_of_time.Kinds, Callable[..., Any]] = {}  # noqa: RUF012 (replaced, never changed)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            if _runs_twin(self):
                return self.twin(*args, **kwargs)  # type: ignore[misc]
            if self.exports:
                export = self.exports.get(_kinds_of_call(args))
                if export is not None:
                    return export(*args)
            result = super().__call__(*args, **kwargs)
            if _Switch.recorder is not None:
                _Switch.recorder(self, args)
            return result

    return Kernel


def _dispatcher(fn: Callable[..., Any], *, cache: bool, **options: Any) -> Loop:
    kernel = _kernel_class()(
        py_func=fn, locals={}, targetoptions={"nopython": True, "nogil": True, **options}
    )
    if cache:
        kernel.enable_caching()
    _KERNELS.append(kernel)
    return cast(Loop, kernel)


_KERNELS: list[Any] = []  # numba's dispatchers of this process, for use_ahead_of_time


def use_ahead_of_time(loaded: ahead_of_time.Loaded) -> None:
    """In a process that started on numba's loops (the first after an install): call the module the
    child built meanwhile from now on, so that numba never loads their machine code into LLVM (90 MB
    less resident in a small ad-hoc run). Arguments of kinds it was not built for still go to numba."""
    global _kinds_of_call
    _kinds_of_call = loaded.kinds or kinds
    for kernel in _KERNELS:
        kernel.exports = loaded.exports.get(kernel.loop_name, {})


def jit(fn: _F, *, fastmath: bool = False, inline: Literal["never", "always"] = "never") -> _F:
    """``fn`` compiled (ahead of time, or by numba: nopython, the GIL released, cached on disk where it
    can be), same signature."""
    if _AHEAD is not None:
        return cast(_F, AheadOfTime(fn, _AHEAD.exports.get(f"{fn.__module__}.{fn.__qualname__}", {})))
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
        cast(Loop, kernel).twin = fn
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


Calls = dict[tuple[str, ahead_of_time.Kinds], tuple[Callable[..., Any], Any]]


@contextlib.contextmanager
def recording() -> Iterator[Calls]:
    """Every loop numba ran for a caller outside the compiled code meanwhile, for each kinds of
    arguments: its Python function and numba's signature (what :func:`ahead_of_time.build` compiles)."""
    if _AHEAD is not None:
        raise RuntimeError("the loops are compiled ahead of time here: numba runs none of them")
    calls: Calls = {}
    lock = threading.Lock()

    def record(kernel: Any, args: tuple[Any, ...]) -> None:
        key = (kernel.loop_name, kinds(args))
        if key in calls:
            return
        types = tuple(kernel.typeof_pyval(a) for a in args)
        if types not in kernel.overloads:  # run on a compatible overload: compile the exact one
            kernel.compile(types)
        with lock:
            calls[key] = (kernel.py_func, kernel.overloads[types].signature)

    _Switch.recorder = record
    try:
        yield calls
    finally:
        _Switch.recorder = None


@functools.cache
def _compiled_in_each_process() -> None:
    logging.getLogger(__name__).warning(
        "numba finds no writable folder for its cache: the index's compiled loops are compiled at each "
        "start (set NUMBA_CACHE_DIR to a writable folder to keep them)"
    )


def is_compiled_in_each_process() -> bool:
    """Whether numba keeps no cache here (the loops compile in every process)."""
    return _compiled_in_each_process.cache_info().currsize > 0
