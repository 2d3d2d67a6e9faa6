"""The compiled loops prepared in a child process while the twins answer.

numba compiles the index's loops the first time a process calls them and keeps the machine code in its
disk cache (:mod:`paperindex.compiled`): a minute of a core after an install, under a second to load
later. A process that finds them not yet :func:`ready` runs the twins (exact, in numpy) and starts
:func:`compile_in_background`: a child (``python -m paperindex.prepare``) that compiles every loop, for
every type an application of the index passes (:func:`exercise`), into numba's cache, then into the
module later processes load without numba (:mod:`paperindex.ahead_of_time`), and leaves a stamp beside
it. Once the child has finished, the process loads them from numba's cache and switches
(:func:`switch_to_compiled`). The stamp names the Python, numpy and numba versions and the index's
sources: any change, and the loops are compiled again in the background.

One child compiles at a time (a lock beside the cache): a second start meanwhile waits for it and
finds the stamp. The child outlives a process that stops before it is done, so that the next start
finds the loops compiled.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from paperindex import ahead_of_time, bulk_terms, compiled
from paperindex.documents import Document
from paperindex.engine import SearchEngine
from paperindex.index import BM25Index, warm_up

log = logging.getLogger(__name__)

_PYTHONPATH = os.environ.get("PYTHONPATH")


def stamp_path() -> Path | None:
    """The file that says the loops of these sources are compiled (None: nowhere to keep them)."""
    folder = ahead_of_time.folder()
    return folder / f"paperindex-{ahead_of_time.fingerprint()}.ready" if folder else None


def ready() -> bool:
    """Whether the loops for these sources are compiled (a start loads them in a second, or has)."""
    stamp = stamp_path()
    return compiled.ahead_of_time_loaded() or (stamp is not None and stamp.is_file())


def exercise() -> None:
    """Call every compiled loop with every type an application of the index passes: build, search
    (bounded and exact, with filters), similar papers, weighted queries, matched terms, adds up to the
    most segments the index holds before merging, merges, removals, a snapshot saved and loaded, and
    the warm-ups the bot runs at start."""
    with compiled.compiled_only():
        bulk_terms.warm_up()
        warm_up(BM25Index())
        rows = [
            Document(
                n,
                f"Paper {n} on kv cache quantization" + (": naïve café" if n % 3 == 0 else ""),
                "We quantize the key value cache " * (1 + n % 4) + ("graph " * 300 if n % 7 == 0 else ""),
                (),
                None,
                2020 + n % 5,
            )
            for n in range(1, 80)
        ]
        many = " ".join(f"w{n}x" for n in range(3000))  # past the first piece table: it grows
        SearchEngine.build([Document(1, "Many words", many, (), None, 2020)])
        engine = SearchEngine.build(rows)
        warm_up(engine.index)
        for n in range(9):
            engine.add(
                [Document(200 + n, f"New paper {n} on caches", "cache graph " * (n + 1), (), None, 2025)]
            )
            engine.search("kv cache quantization", limit=5)
            engine.search("graph", limit=3, year=2021)
            engine.weighted({"cach": 1.0, "quantiz": -0.5}, limit=5)
            engine.similar(1, limit=3)
            engine.index.score_array(["cach", "graph"])
        engine.remove([2, 3])
        engine.search("kv cache quantization", limit=5)
        with tempfile.TemporaryDirectory(prefix="paperindex-prepare-") as scratch:
            engine.save(Path(scratch) / "index", "prepare")
            loaded = SearchEngine.load(Path(scratch) / "index", "prepare")
            if loaded is not None:
                loaded.search("kv cache quantization", limit=5)
                loaded.add([Document(900, "One more paper", "cache " * 5, (), None, 2025)])


@contextlib.contextmanager
def _one_at_a_time(folder: Path) -> Iterator[None]:
    with open(folder / "paperindex-prepare.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prepare() -> bool:
    """Compile every loop into numba's cache and into the module compiled ahead of time (unless
    another process did meanwhile), and leave the stamp. False where numba keeps no cache."""
    stamp = stamp_path()
    if stamp is None or compiled.is_compiled_in_each_process():
        return False
    stamp.parent.mkdir(parents=True, exist_ok=True)
    with _one_at_a_time(stamp.parent):
        if not stamp.is_file():
            if compiled.ahead_of_time_loaded():  # built by a child that stopped before its stamp
                built = "ahead of time: built before"
            else:
                with compiled.recording() as calls:
                    exercise()
                built = _built_ahead_of_time(calls, stamp.parent)
            stamp.write_text(f"{sys.version}\nnumpy {np.__version__}\n{built}\n")
            ahead_of_time.forget_others(stamp.parent)
    return True


def _built_ahead_of_time(calls: compiled.Calls, folder: Path) -> str:
    """Build the module later processes load without numba; where it cannot be built they load the
    loops from numba's cache, and the stamp and this child's log say why."""
    try:
        return f"ahead of time: {ahead_of_time.build(calls, folder).name}"
    except Exception as error:  # no C compiler, a numba without pycc, a type pycc refuses
        why = (str(error).strip().splitlines() or [type(error).__name__])[0]  # numba's hints follow
        log.warning(
            "could not compile the loops ahead of time (%s); later starts load them from numba's cache", why
        )
        return f"ahead of time: not built ({why})"


def compile_in_background() -> subprocess.Popen[bytes]:
    """Start the child that compiles the loops (its own session: it finishes even if this process
    stops first); what it says goes to :func:`log_path`."""
    stamp = stamp_path()
    if stamp is None:
        raise OSError("numba keeps no cache here")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path(), "wb") as said:
        return subprocess.Popen(
            [sys.executable, "-m", "paperindex.prepare"],
            stdin=subprocess.DEVNULL,
            stdout=said,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ahead_of_time.SOURCES.parent), _PYTHONPATH])),
                ahead_of_time.MODE_VARIABLE: "numba",  # the module is built from numba's loops
            },
        )


def log_path() -> Path:
    """Where the child compiling in the background writes what it says (beside numba's cache)."""
    stamp = stamp_path()
    return (stamp.parent if stamp else Path(tempfile.gettempdir())) / "paperindex-prepare.log"


def last_words() -> str:
    """The child's last line (why it failed, if it did)."""
    try:
        lines = log_path().read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def switch_to_compiled(index: BM25Index, stop: threading.Event | None = None) -> bool:
    """Load the loops a search and an add take from numba's cache (as a start with the cache ready
    does: :func:`paperindex.index.warm_up` for ``index``'s layouts, :func:`paperindex.bulk_terms.warm_up`),
    then run the compiled loops instead of the twins. Where the child built the module compiled ahead of
    time, the loops come from it instead and numba's are never loaded. False, the twins still answering,
    if ``stop`` was set meanwhile."""
    loaded = None if compiled.ahead_of_time_loaded() else ahead_of_time.load()
    if loaded is not None:
        compiled.use_ahead_of_time(loaded)
        compiled.use_twins(False)
        return True
    with compiled.compiled_only():
        warm_up(index, stop)
        if stop is not None and stop.is_set():
            return False
        bulk_terms.warm_up()
    compiled.use_twins(False)
    return True


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    if not prepare():
        sys.stderr.write("numba keeps no cache here: nothing to prepare\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
