"""The compiled loops' twins (Python and numpy, :mod:`paperindex.compiled`): what answers while numba
compiles must be exactly what the compiled loops give — the same floats, the same arrays written.

The suite's processes run the loops compiled ahead of time (tests/conftest.py builds them), as a start
after the first does; tests/paperindex/test_ahead_of_time.py checks they answer as numba's do."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paperindex import bulk_kernels, compiled, doc_terms, kernels, prepare, term_docs, tf
from paperindex.compiled import AheadOfTime, Loop
from paperindex.documents import Document
from paperindex.engine import SearchEngine

# Where numba has no cache for the loops yet, this process compiles them.
pytestmark = pytest.mark.timeout(600)

MODULES = (kernels, bulk_kernels, doc_terms, term_docs, tf)
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

WORDS = [
    "graph",
    "neural",
    "networks",
    "over-smoothing",
    "message",
    "passing",
    "kv",
    "cache",
    "quantization",
    "attention",
    "transformer",
    "diffusion",
    "model",
    "score",
    "matching",
    "reinforcement",
    "learning",
    "policy",
    "gradient",
    "bandit",
    "regret",
    "convex",
    "optimisation",
    "naïve",
    "bayes",
    "café",
    "résumé",
    "c++",
    "v3.5",
    "(derived)",
]


def rows(n: int, start: int = 1, seed: int = 7) -> list[Document]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        title = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 9))))
        if i % 5 == 0:
            title = "Über " + title + ": ünïcode title"
        body = rng.choice(WORDS, size=int(rng.integers(5, 120))).tolist()
        if i % 11 == 0:
            body += ["cache"] * 300  # a frequency past four and past eight bits
        if i % 7 == 0:
            body += ["graph"] * 20
        out.append(Document(i, title, " ".join(body), (), None, 2020 + i % 5))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b)
        )
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (type(a) is type(b) or {type(a), type(b)} <= {int, np.int64, bool, np.bool_})


def kernels_with_twins() -> dict[str, Loop]:
    return {
        f"{k.py_func.__module__}.{k.py_func.__name__}": k
        for m in MODULES
        for k in vars(m).values()
        if isinstance(k, Loop) and k.twin is not None
    }


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, Any, Any]]:
    """Every call from Python of a loop that has a twin, run compiled: (name, args before, result,
    args after)."""
    calls: list[tuple[str, Any, Any, Any]] = []
    loops = kernels_with_twins()
    names = {id(k): name for name, k in loops.items()}
    kind = type(next(iter(loops.values())))
    original = kind.__call__

    def record(self: Loop, *args: Any) -> Any:
        name = names.get(id(self))
        if name is None or compiled.using_twins():
            return original(self, *args)
        before = copy.deepcopy(args)
        result = original(self, *args)
        calls.append((name, before, copy.deepcopy(result), copy.deepcopy(args)))
        return result

    monkeypatch.setattr(kind, "__call__", record)
    return calls


def workload(tmp_path: Path) -> list[Any]:
    """Build, search, score, rate, add (new segments, merges), save and load: what the bot asks of the
    index. Returns everything it answered."""
    engine = SearchEngine.build(rows(120))
    answers: list[Any] = []

    def ask(e: SearchEngine) -> None:
        for query in ("kv cache quantization", "graph neural networks", "naïve café", "zzz unknown"):
            page = e.search(query, limit=5)
            answers.append([(h.paper_id, h.score, h.matched_terms) for h in page.hits])
            answers.append(page.total)
        answers.append([(h.paper_id, h.score) for h in e.search("graph", limit=3, year=2021).hits])
        answers.append(e.index.score_array(["cach", "graph"]).tolist())
        answers.append([(h.paper_id, h.score) for h in e.similar(4, limit=4).hits])
        answers.append([(h.paper_id, h.score) for h in e.weighted({"cach": 1.0, "quantiz": -0.5}, limit=5)])
        answers.append(e.index.matched_terms_many([1, 11, 14, 22], ["cach", "graph", "attent", "nope"]))

    ask(engine)
    for n in range(8):  # each a segment of its own, merged as they come
        engine.add(rows(3, start=500 + 10 * n, seed=n))
        ask(engine)
    engine.remove([2, 3, 5])
    ask(engine)
    engine.save(tmp_path / "index", "fp")
    loaded = SearchEngine.load(tmp_path / "index", "fp")
    assert loaded is not None
    ask(loaded)
    with zipfile.ZipFile(tmp_path / "index") as saved:  # the words' surface counts too: the engine's own
        answers.append({name: saved.read(name) for name in saved.namelist()})
    return answers


def test_every_twin_leaves_what_its_compiled_loop_leaves(
    recorded: list[tuple[str, Any, Any, Any]], tmp_path: Path
) -> None:
    """Each call the workload made of a compiled loop, replayed through its twin on the same input:
    the same result and the same arrays written, to the last bit."""
    workload(tmp_path)
    by_name = kernels_with_twins()
    seen = {name for name, *_ in recorded}
    expected = set(by_name) - {"paperindex.kernels.top_bounded"}  # its twin defers to the exact scores
    assert expected <= seen, f"not exercised: {sorted(expected - seen)}"
    for name, before, result, after in recorded:
        if name == "paperindex.kernels.top_bounded":
            continue
        args = copy.deepcopy(before)
        got = by_name[name].twin(*args)  # type: ignore[misc]
        assert _same(got, result), f"{name} returned {got!r}, compiled {result!r}"
        for i, (mine, theirs) in enumerate(zip(args, after, strict=True)):
            assert _same(mine, theirs), f"{name}: argument {i} differs after the call"


def test_the_engine_on_twins_answers_exactly_as_compiled(tmp_path: Path) -> None:
    """Built, searched, grown, merged, saved and loaded on the twins: every hit, score, count, matched
    term and the snapshot's bytes as on the compiled loops."""
    compiled_answers = workload(tmp_path / "compiled")
    compiled.use_twins(True)
    try:
        twin_answers = workload(tmp_path / "twins")
    finally:
        compiled.use_twins(False)
    assert twin_answers == compiled_answers


_COMPILES_NOTHING = """
import sys
from paperindex import compiled
from test_twins import kernels_with_twins, rows
from paperindex.engine import SearchEngine

assert not compiled.ahead_of_time_loaded()
engine = SearchEngine.build(rows(30))
before = {name: len(k.signatures) for name, k in kernels_with_twins().items()}
compiled.use_twins(True)
engine2 = SearchEngine.build(rows(40, start=100))
engine2.add(rows(3, start=300))
engine2.search("kv cache", limit=3)
engine2.similar(101, limit=3)
engine.search("graph", limit=3)
compiled.use_twins(False)
after = {name: len(k.signatures) for name, k in kernels_with_twins().items()}
print(sorted(name for name in after if after[name] != before[name]))
"""


def test_twins_compile_nothing() -> None:
    """While the twins answer, no loop that has one is compiled by numba in the process (it would hold
    the GIL for seconds the first time). In a process where numba compiles the loops, as the first
    start after an install is."""
    env = {**os.environ, "PAPERINDEX_LOOPS": "numba", "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)])}
    done = subprocess.run(
        [sys.executable, "-c", _COMPILES_NOTHING], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"compiled while on the twins: {done.stdout}"


def test_the_background_compile_covers_what_the_index_is_asked(tmp_path: Path) -> None:
    """What the child compiling in the background runs (:func:`paperindex.prepare.exercise`) prepares
    every loop for every type the index's work passes: the loops compiled ahead of time from it take
    every call of the workload (none falls to a twin), and where numba compiles them nothing compiles
    after the switch (numba holding the GIL for seconds)."""
    all_kernels = {
        f"{k.py_func.__module__}.{k.py_func.__name__}": k
        for m in MODULES
        for k in vars(m).values()
        if isinstance(k, Loop)
    }
    if compiled.ahead_of_time_loaded():
        loops = {name: k for name, k in all_kernels.items() if isinstance(k, AheadOfTime)}
        before = {name: k.missed for name, k in loops.items()}
        workload(tmp_path)
        missed = {name: k.missed - before[name] for name, k in loops.items() if k.missed > before[name]}
        assert missed == {}, f"calls of kinds the module was not built for: {missed}"
        return
    prepare.exercise()
    before = {name: len(k.signatures) for name, k in all_kernels.items()}  # type: ignore[attr-defined]
    workload(tmp_path)
    assert {name: len(k.signatures) for name, k in all_kernels.items()} == before  # type: ignore[attr-defined]
