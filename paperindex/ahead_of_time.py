"""The index's compiled loops as an extension module of their own, built once per machine, so that a
process that has it never imports numba.

numba compiles the loops in each process that calls them (from its disk cache: under a second), and
what that leaves resident is large: numba and llvmlite imported, LLVM's code generator mapped in to
load the machine code (about 140 MB of the 480 MB a bot at 100,000 papers held after a day). The child that prepares the
loops after an install (:mod:`paperindex.prepare`) therefore also has numba write them, for every type
it called them with, into a CPython extension module (numba's ahead-of-time compiler, ``numba.pycc``,
which needs a C compiler), beside a table of which export takes which kinds of arguments
(:func:`paperindex.compiled.kinds`). A later process loads that module (:func:`load`) and numba is not
imported. Where it cannot be built (no C compiler, or a numba without ``pycc``) the loops come from
numba's cache as before.

The module is named after :func:`fingerprint` (the Python, numpy and numba versions, the processor and
the index's sources), so any change and it is built again. The kinds of a call's arguments, which pick
its export, are computed in C by a small helper built beside it (``kinds.c``): in Python they took
longer than numba's own dispatch.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

log = logging.getLogger(__name__)

SOURCES = Path(__file__).resolve().parent

#: Set to ``numba`` to have this process compile the loops with numba even where the module exists
#: (the child that builds it).
MODE_VARIABLE = "PAPERINDEX_LOOPS"

#: The kinds of a call's arguments (:func:`paperindex.compiled.kinds`): ints and types, in tuples.
Kinds = tuple[Any, ...]

#: For each loop (``module.qualname``), the function compiled for each kinds of arguments.
Exports = dict[str, dict[Kinds, Callable[..., Any]]]


class Loaded(NamedTuple):
    """The loops compiled ahead of time, and :func:`paperindex.compiled.kinds` in C (None: the
    Python one serves)."""

    exports: Exports
    kinds: Callable[[tuple[Any, ...]], Kinds] | None


@functools.cache
def fingerprint() -> str:
    """What the compiled loops depend on: the versions, the processor (they are compiled for its
    instructions) and every source file of the index, as this process read them (once: a start asks
    three times)."""
    digest = hashlib.sha256(f"{sys.version}|{np.__version__}|{_numba_version()}|{_processor()}".encode())
    for path in sorted([*SOURCES.glob("*.py"), *SOURCES.glob("*.c")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _numba_version() -> str:
    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _processor() -> str:
    """This machine's processor and its instruction sets (Linux: /proc/cpuinfo), so that a cache
    folder shared with another machine never serves it loops compiled for the other's."""
    try:
        with open("/proc/cpuinfo") as info:
            lines = [line for line in info if line.startswith(("model name", "flags", "Features"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return f"{platform.machine()} {platform.processor()}"


def folder() -> Path | None:
    """Where the prepared loops are kept: ``NUMBA_CACHE_DIR`` when set (as numba's own cache), else
    the package's ``__pycache__`` where it is writable, else the user's cache folder; None when none of
    them is writable."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        candidates = [Path(configured)]
    else:
        home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        candidates = [SOURCES / "__pycache__", home / "paperindex"]
    return next((c for c in candidates if _writable(c)), None)


def _writable(path: Path) -> bool:
    while not path.exists():
        if path.parent == path:
            return False
        path = path.parent
    return os.access(path, os.W_OK)


def module_name(print_: str) -> str:
    return f"paperindex_loops_{print_}"


def _paths(where: Path, print_: str) -> tuple[Path, Path, Path]:
    """The extension module, its table of exports and the kinds helper."""
    name, suffix = module_name(print_), importlib.machinery.EXTENSION_SUFFIXES[0]
    return where / f"{name}{suffix}", where / f"{name}.json", where / f"paperindex_kinds_{print_}{suffix}"


def _extension(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no loader for {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load() -> Loaded | None:
    """The loops from the module built for these sources, or None (numba is to compile them): none
    built yet, ``PAPERINDEX_LOOPS=numba``, or the module would not load (said in the log)."""
    if os.environ.get(MODE_VARIABLE) == "numba":
        return None
    where = folder()
    if where is None:
        return None
    print_ = fingerprint()
    library, table, helper = _paths(where, print_)
    if not table.is_file():  # written after the module: both are there
        return None
    try:
        module = _extension(module_name(print_), library)
        entries = json.loads(table.read_text())
        exports = {
            loop: {_decoded(kinds): getattr(module, export) for kinds, export in exports}
            for loop, exports in entries.items()
        }
    except (ImportError, OSError, ValueError, AttributeError) as error:
        log.warning("could not load the loops compiled ahead of time (%s); numba compiles them", error)
        return None
    try:
        kinds = _extension(_KINDS_MODULE, helper).kinds if helper.is_file() else None
    except (ImportError, AttributeError) as error:
        log.warning("could not load the C kinds of arguments (%s); the Python ones serve", error)
        kinds = None
    return Loaded(exports, kinds)


_KINDS_MODULE = "_paperindex_kinds"


def _encoded(kinds: Any) -> Any:
    """A kinds for JSON: a type as ``module:qualname``, a tuple as a list, an array's int as is."""
    if isinstance(kinds, tuple):
        return [_encoded(k) for k in kinds]
    if isinstance(kinds, type):
        return f"{kinds.__module__}:{kinds.__qualname__}"
    return kinds


def _decoded(kinds: Any) -> Any:
    if isinstance(kinds, list):
        return tuple(_decoded(k) for k in kinds)
    if isinstance(kinds, str):
        module, _, name = kinds.partition(":")
        return getattr(importlib.import_module(module), name)
    return kinds


def build(calls: Mapping[tuple[str, Kinds], tuple[Callable[..., Any], Any]], where: Path) -> Path:
    """Compile the loops ``calls`` names (``(loop, kinds)`` → its Python function and numba's
    signature for those arguments) into the extension module for these sources, in ``where``, with the
    GIL released as numba's ``nogil`` does. Returns the module's path; raises where it cannot be built
    (no C compiler: ``distutils`` says so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation: the module is what we need of it
        cc_class: Any = importlib.import_module("numba.pycc").CC

    print_ = fingerprint()
    library, table, helper = _paths(where, print_)
    exports: dict[tuple[str, str], str] = {}
    entries: dict[str, list[list[Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="paperindex-loops-", dir=where) as scratch:
        cc = cc_class(module_name(print_))
        cc.output_dir = scratch
        cc.target_cpu = "host"  # as numba's JIT compiles: for this machine's processor
        for (loop, kinds), (function, signature) in sorted(calls.items(), key=lambda c: repr(c[0])):
            export = exports.get((loop, str(signature)))
            if export is None:
                export = exports[loop, str(signature)] = f"loop{len(exports)}"
                cc.export(export, signature)(function)
            entries.setdefault(loop, []).append([_encoded(kinds), export])
        with _releasing_the_gil(), open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            cc.compile()
            built_helper = _build_kinds_helper(Path(scratch))
        os.replace(Path(scratch) / cc.output_file, library)
        os.replace(built_helper, helper)
    table_part = table.with_suffix(".part")
    table_part.write_text(json.dumps(entries))
    os.replace(table_part, table)
    return library


def forget_others(where: Path) -> None:
    """Remove what was built in ``where`` for other sources or versions (a loaded module stays loaded
    where a process still runs it)."""
    print_ = fingerprint()
    for path in [
        *where.glob("paperindex_loops_*"),
        *where.glob("paperindex_kinds_*"),
        *where.glob("paperindex-*.ready"),
    ]:
        if print_ not in path.name:
            path.unlink(missing_ok=True)


def _build_kinds_helper(scratch: Path) -> Path:
    """``paperindex/kinds.c`` compiled (by setuptools, as pycc compiles its own C) into ``scratch``."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extension = Extension(_KINDS_MODULE, [str(SOURCES / "kinds.c")], include_dirs=[np.get_include()])
    command = build_ext(Distribution({"ext_modules": [extension]}))
    command.build_lib = str(scratch / "lib")
    command.build_temp = str(scratch / "temp")
    command.ensure_finalized()
    command.run()
    return Path(command.get_ext_fullpath(_KINDS_MODULE))


@contextlib.contextmanager
def _releasing_the_gil() -> Iterator[None]:
    """pycc compiles its exports with one set of flags of its own, which holds the GIL; the loops
    release it as their ``nogil`` dispatchers do (a search runs beside the event loop)."""
    compiler: Any = importlib.import_module("numba.pycc.compiler")
    plain = compiler.Flags

    class Flags(plain):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = Flags
    try:
        yield
    finally:
        compiler.Flags = plain
