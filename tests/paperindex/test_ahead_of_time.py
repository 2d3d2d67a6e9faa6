"""The loops compiled ahead of time (:mod:`paperindex.ahead_of_time`): a process that has them never
imports numba, and they answer exactly as numba's loops do. tests/conftest.py builds them before the
suite, as the child a start runs after an install does."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paperindex import ahead_of_time, compiled

REPO = Path(__file__).resolve().parents[2]

#: Build, search (bounded, exact, filtered), weighted, similar, add (segments, merges), remove, save
#: and load, in a process of its own: what it answered, then whether numba and LLVM were loaded.
_WORKLOAD = """
import json, sys, tempfile
from pathlib import Path
import numpy as np
from paperindex import compiled
from paperindex.documents import Document
from paperindex.engine import SearchEngine

rng = np.random.default_rng(3)
words = "graph neural networks kv cache quantization attention transformer diffusion score naïve café".split()
rows = [
    Document(i, " ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 40 + i % 50)), (), None, 2020 + i % 5)
    for i in range(1, 1500)
]
engine = SearchEngine.build(rows)
answers = []

def ask(e):
    for query in ("kv cache quantization", "graph neural networks", "naïve café"):
        page = e.search(query, limit=7)
        answers.append([[h.paper_id, h.score, sorted(h.matched_terms)] for h in page.hits] + [page.total])
    answers.append([[h.paper_id, h.score] for h in e.search("graph", limit=5, year=2021).hits])
    answers.append([[h.paper_id, h.score] for h in e.similar(4, limit=5).hits])
    answers.append([[h.paper_id, h.score] for h in e.weighted({"cach": 1.0, "quantiz": -0.5}, limit=5)])
    answers.append(e.index.score_array(["cach", "graph"]).tolist()[:50])

ask(engine)
for n in range(8):
    engine.add([Document(5000 + n, f"New cache paper {n}", "cache graph " * (n + 1), (), None, 2025)])
    ask(engine)
engine.remove([2, 3, 5])
ask(engine)
with tempfile.TemporaryDirectory() as scratch:
    engine.save(Path(scratch) / "index", "fp")
    ask(SearchEngine.load(Path(scratch) / "index", "fp"))
print(json.dumps({
    "answers": answers,
    "ahead_of_time": compiled.ahead_of_time_loaded(),
    "numba": "numba" in sys.modules,
    "llvmlite": "llvmlite" in sys.modules,
}))
"""


def run_workload(**env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _WORKLOAD],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def built() -> None:
    if ahead_of_time.load() is None:
        reason = "the loops are not compiled ahead of time here (no C compiler? see paperindex-prepare.log)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def test_a_process_with_the_module_answers_as_numba_without_loading_it(built: None) -> None:
    """The same work in a process on the module and in one where numba compiles: the same hits, scores
    (to the bit), totals and matched words; and the first never loaded numba or LLVM."""
    ahead = run_workload()
    with_numba = run_workload(PAPERINDEX_LOOPS="numba")
    assert ahead["ahead_of_time"]
    assert not with_numba["ahead_of_time"]
    assert (ahead["numba"], ahead["llvmlite"]) == (False, False)
    assert (with_numba["numba"], with_numba["llvmlite"]) == (True, True)
    assert ahead["answers"] == with_numba["answers"]


def test_arguments_of_kinds_the_module_was_not_built_for_go_to_the_twin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call the module has no export for answers on the twin, and the log says so once; a loop
    without a twin refuses it (the module would read the memory as the wrong type)."""

    def doubled(values: np.ndarray) -> np.ndarray:
        return values * 2

    loop = compiled.AheadOfTime(doubled, {})
    loop.twin = lambda values: values + values
    with caplog.at_level(logging.WARNING, logger="paperindex.compiled"):
        assert loop(np.arange(3, dtype=np.float32)).tolist() == [0.0, 2.0, 4.0]
        assert loop(np.arange(2, dtype=np.float32)).tolist() == [0.0, 2.0]
    assert loop.missed == 2
    said = [r.getMessage() for r in caplog.records if "was not compiled for" in r.getMessage()]
    assert len(said) == 1
    assert "doubled" in said[0]
    assert "arguments (<f4 1-d C)" in said[0]

    bare = compiled.AheadOfTime(doubled, {})
    with pytest.raises(TypeError, match=r"not compiled for arguments \(<i8 1-d C\)"):
        bare(np.arange(3))


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


#: Arrays numba compiles different code for, one of each: none may share a kind with another.
DIFFERENT_ARRAYS = [
    np.arange(4, dtype=np.int64),
    np.arange(4, dtype=np.int32),
    np.arange(4, dtype=np.float64),
    np.arange(4, dtype=np.uint8),
    np.arange(8, dtype=np.int64)[::2],  # strided
    _readonly(np.arange(4, dtype=np.int64)),
    np.arange(4, dtype=">i8"),  # not the machine's byte order
    np.zeros((2, 3)),
    np.zeros((2, 3), order="F"),
    np.zeros((2, 3))[:, ::2],
    np.zeros((2, 3, 1)),
]


def test_an_export_is_chosen_by_dtype_dimensions_layout_writability_and_byte_order() -> None:
    """Each array numba would compile different code for is a kind of its own, so an export built for a
    writable contiguous int64 array never receives any of the others; numpy's int64, float64 and bool
    are Python's int, float and bool, as numba types them."""
    assert len({compiled.kinds((a,)) for a in DIFFERENT_ARRAYS}) == len(DIFFERENT_ARRAYS)
    assert compiled.kinds((np.int64(3), np.float64(2.0), np.bool_(True))) == compiled.kinds((3, 2.0, True))
    calls: list[str] = []
    key = compiled.kinds((np.arange(4, dtype=np.int64), 3))
    loop = compiled.AheadOfTime(lambda a, n: None, {key: lambda a, n: calls.append("export")})
    loop.twin = lambda a, n: calls.append("twin")
    loop(np.arange(4, dtype=np.int64), 3)
    loop(np.ones(4, dtype=np.int64), np.int64(3))
    for other in DIFFERENT_ARRAYS[1:]:
        loop(other, 3)
    loop(np.arange(4, dtype=np.int64), 3.0)
    assert calls == ["export", "export"] + ["twin"] * len(DIFFERENT_ARRAYS)


def test_the_kinds_in_c_are_the_kinds_in_python(built: None) -> None:
    """The module's kinds helper (paperindex/kinds.c), which calls use, gives what
    :func:`paperindex.compiled.kinds` gives, with which the child recorded the exports."""
    loaded = ahead_of_time.load()
    assert loaded is not None
    assert loaded.kinds is not None, "the C kinds were not built beside the loops"
    values = [
        *DIFFERENT_ARRAYS,
        3,
        2.5,
        True,
        np.int64(3),
        np.float64(2.0),
        np.bool_(False),
        np.int32(3),
        None,
        "text",
        (),
        (np.arange(2), (np.zeros(1, np.uint8), 5)),
        tuple(DIFFERENT_ARRAYS),
    ]
    for value in values:
        assert loaded.kinds((value,)) == compiled.kinds((value,)), repr(value)
    assert loaded.kinds(tuple(values)) == compiled.kinds(tuple(values))


def test_a_changed_source_of_the_index_is_never_served_by_a_stale_module(built: None, tmp_path: Path) -> None:
    """The module is named after the index's sources: a copy of them as they are loads it; the same
    copy with one loop's file changed does not (numba compiles that process's loops)."""
    copy = tmp_path / "src"
    shutil.copytree(REPO / "paperindex", copy / "paperindex", ignore=shutil.ignore_patterns("__pycache__"))
    kept = ahead_of_time.folder()
    assert kept is not None
    script = "from paperindex import ahead_of_time, compiled; print(ahead_of_time.fingerprint(), compiled.ahead_of_time_loaded())"

    def fingerprint_and_loaded() -> list[str]:
        env = {**os.environ, "NUMBA_CACHE_DIR": str(kept), "PYTHONPATH": str(copy)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert fingerprint_and_loaded() == [ahead_of_time.fingerprint(), "True"]
    kernels = copy / "paperindex" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# changed\n")
    changed, loaded = fingerprint_and_loaded()
    assert changed != ahead_of_time.fingerprint()
    assert loaded == "False"


_BUILD_WITHOUT_A_COMPILER = """
import sys
from pathlib import Path
from paperindex import compiled, prepare

with compiled.recording() as calls:
    prepare.exercise()
print(len(calls))
print(prepare._built_ahead_of_time(calls, Path(sys.argv[1])))
"""


def test_without_a_c_compiler_the_child_says_why_and_numba_serves_the_loops(tmp_path: Path) -> None:
    """Where the module cannot be built (here: the C compiler fails), the child records why in its
    stamp and log and writes no module, so later starts load the loops from numba's cache."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PAPERINDEX_LOOPS": "numba", "CC": "/bin/false"}
    done = subprocess.run(
        [sys.executable, "-c", _BUILD_WITHOUT_A_COMPILER, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    recorded, said = done.stdout.strip().splitlines()
    assert int(recorded) >= 20  # every loop a caller reaches, for each kinds of arguments
    assert said.startswith("ahead of time: not built (")
    assert "could not compile the loops ahead of time" in done.stderr
    assert not list(tmp_path.glob("paperindex_loops_*"))


_FIRST_PROCESS = """
import json, os
import numpy as np
from paperindex import compiled, prepare
from paperindex.documents import Document
from paperindex.engine import SearchEngine

rng = np.random.default_rng(5)
words = "graph neural networks kv cache quantization attention transformer diffusion score".split()
rows = [Document(i, " ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 60)), (), None, 2024) for i in range(1, 400)]

def ask(engine):
    out = [[(h.paper_id, h.score) for h in engine.search(q, limit=5).hits] for q in ("kv cache", "graph attention")]
    out.append([(h.paper_id, h.score) for h in engine.similar(3, limit=3).hits])
    return out

compiled.use_twins(True)  # a first start: the twins answer while the child compiles
engine = SearchEngine.build(rows)
on_twins = ask(engine)
os.environ.pop("PAPERINDEX_LOOPS")  # the child is done: the module is there to load
switched = prepare.switch_to_compiled(engine.index)
after = ask(engine)
engine.add([Document(900, "A new cache paper", "cache graph " * 5, (), None, 2025)])
ask(engine)
loaded_by_numba = sorted(k.loop_name for k in compiled._KERNELS if k.signatures)
print(json.dumps([switched, compiled.using_twins(), on_twins == after, loaded_by_numba]))
"""


def test_the_first_process_switches_from_the_twins_to_the_module_and_numba_loads_nothing(built: None) -> None:
    """The first start after an install runs numba's dispatchers (the module is not built yet) and answers
    on the twins; once the child has built the module it switches to it, answering the same, and numba
    never loads a loop's machine code into LLVM in that process."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS],
        env={**os.environ, "PYTHONPATH": str(REPO), "PAPERINDEX_LOOPS": "numba"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    switched, on_twins, same, loaded_by_numba = json.loads(done.stdout.strip().splitlines()[-1])
    assert switched
    assert not on_twins
    assert same
    assert loaded_by_numba == []
