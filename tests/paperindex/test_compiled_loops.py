"""The compiled scoring loops from numba (a first start, or a machine where they cannot be compiled ahead
of time: ``PAPERINDEX_LOOPS=numba``): ready before the first search, and working where numba can keep
no cache. Each test runs a fresh Python process, as a start of the bot is one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Where numba has no cache for the loops yet (a fresh clone), the process compiles them all: a minute
# or two on a busy 2-core machine.
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]

ROWS = """
from paperindex.documents import Document as IndexRow
ROWS = [
    IndexRow(n, f"Paper {n} on kv cache quantization", "We quantize the key value cache " * (1 + n % 4),
             (), None, 2024)
    for n in range(1, 60)
] + [IndexRow(100, "Graph neural networks", "Message passing over graphs " * 90, (), None, 2023)]
"""


def run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ROWS) + textwrap.dedent(script)],
        cwd=REPO,
        env={**os.environ, "PAPERINDEX_LOOPS": "numba", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_after_warm_up_a_search_compiles_and_loads_nothing_more() -> None:
    """warm_up prepares every loop, for the very types, that searching, similar papers and the
    recommender's scores take next, also once new papers make more segments: after it, none of them
    adds a compiled version (which a search would prepare holding the index's lock)."""
    result = run("""
        import json
        import threading
        from paperindex import kernels
        from paperindex.index import warm_up
        from paperindex.engine import SearchEngine

        def compiled():
            return {name: len(f.signatures) for name, f in vars(kernels).items() if hasattr(f, "signatures")}

        engine = SearchEngine.build(ROWS)
        before = compiled()
        stopped = threading.Event()
        stopped.set()
        warm_up(engine.index, stopped)  # a bot stopping before the warm-up began: nothing done
        assert compiled() == before
        warm_up(engine.index)
        warmed = compiled()
        engine.search("kv cache quantization", limit=5)
        engine.search("graph networks", limit=3, year=2023)
        engine.index.score_array(["cach", "graph"])
        engine.similar(1, limit=3)
        for n in range(6):  # each a segment of its own: up to seven at once before they merge
            engine.add([IndexRow(200 + n, f"New paper {n} on caches", "cache " * (n + 1), (), None, 2025)])
            engine.search("kv cache quantization", limit=5)
            engine.weighted({"cach": 1.0, "quantiz": -0.5}, limit=5)
        assert engine.index.n_segments > 1
        print(json.dumps([before, warmed, compiled()]))
    """)
    assert result.returncode == 0, result.stderr
    before, warmed, after = json.loads(result.stdout.strip().splitlines()[-1])
    assert warmed["top_bounded"] > before["top_bounded"]  # the bounded best k was prepared
    assert warmed["accumulate"] > before["accumulate"]  # and every slot's score
    assert after == warmed


def test_the_index_works_where_numba_can_keep_no_cache() -> None:
    """A read-only install with no writable home: numba finds nowhere for its cache, so the loops are
    compiled in the process (said once in the log), and scores are still rank-bm25's."""
    result = run(
        """
        import json
        from rank_bm25 import BM25Okapi
        from paperindex.engine import SearchEngine, document_tokens

        engine = SearchEngine.build(ROWS)
        reference = BM25Okapi([document_tokens(r.title, r.abstract) for r in ROWS])
        expected = reference.get_scores(["graph"]).tolist()
        scores = engine.index.score_array(["graph"]).tolist()
        print(json.dumps([scores == expected, [h.paper_id for h in engine.search("graph neural", limit=1).hits]]))
        """,
        NUMBA_CACHE_LOCATOR_CLASSES="IPythonCacheLocator",  # a locator that finds nothing for a file
    )
    assert result.returncode == 0, result.stderr
    exact, top = json.loads(result.stdout.strip().splitlines()[-1])
    assert exact
    assert top == [100]
    assert result.stderr.count("numba finds no writable folder for its cache") == 1
