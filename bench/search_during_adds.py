"""Searches while papers are added: how long a search waits while a worker thread adds and merges.

    .venv/bin/python bench/search_during_adds.py [--papers 100000] [--runs 2] [--compare REV]

The papers: the multivenue file (../shared/data/multivenue, 35,712) topped up with bench/search_bench.py's
synthetic papers to ``--papers``. A `SearchEngine` is built over the first three quarters; then a worker
thread adds the rest 1,000 at a time (as `bot.runtime` indexes an ingest's papers, merging segments as
they grow) while this thread runs `SearchEngine.search` (limit 10, bench_common's queries in turn) every
5 ms until the adds end: each search's time, p50, p99 and max, and the adds' total time. Each run is a
child process; with ``--compare REV`` that commit's code (a temporary checkout) runs right after each run
of this checkout's, on the same papers. One run of each is made first and not counted (numba compiles the
loops of a fresh checkout, once per kind of array they are given). Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import MULTIVENUE, QUERIES, REPO, commit_checkout, load_average, percentile

BATCH = 1000


def child(rows_path: Path) -> None:
    """One run (in a child process, whose PYTHONPATH chooses the code): JSON figures on stdout."""
    from paperindex.engine import SearchEngine

    with rows_path.open("rb") as fh:
        rows = pickle.load(fh)  # written by the parent a moment ago
    first = len(rows) * 3 // 4
    engine = SearchEngine.build(rows[:first])
    engine.search(QUERIES[0], limit=10)
    done = threading.Event()

    def add_the_rest() -> None:
        for start in range(first, len(rows), BATCH):
            engine.add(rows[start : start + BATCH])
        done.set()

    times: list[float] = []
    adder = threading.Thread(target=add_the_rest)
    began = time.perf_counter()
    adder.start()
    while not done.is_set():
        at = time.perf_counter()
        engine.search(QUERIES[len(times) % len(QUERIES)], limit=10)
        times.append(time.perf_counter() - at)
        time.sleep(0.005)
    adder.join()
    adding = time.perf_counter() - began
    print(json.dumps({"adding": adding, "searches": times, "segments": engine.index.n_segments}))


def run_child(tree: Path, rows_path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(rows_path)],
        env=env,
        cwd=tree,
        capture_output=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--compare", metavar="REV", help="also measure this commit's code, interleaved")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    if not MULTIVENUE.exists():
        print(f"search-during-adds bench skipped: {MULTIVENUE} is absent (research data, not shipped)")
        return 0
    import search_bench

    rows = search_bench.load_rows(MULTIVENUE)
    if args.papers > len(rows):
        rows += list(search_bench.Synthesizer(rows).rows(len(rows) + 1, args.papers - len(rows)))
    rows = rows[: args.papers]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows_path = work / "rows.pickle"
        with rows_path.open("wb") as fh:
            pickle.dump(rows, fh)
        trees = [("this checkout", REPO)]
        with commit_checkout(args.compare, work) if args.compare else contextlib.nullcontext() as other:
            if other is not None:
                trees.append((args.compare, other))
            print(
                f"{len(rows):,} papers: built over {len(rows) * 3 // 4:,}, the rest added {BATCH:,} at a time"
            )
            print("| code | adds | searches | p50 | p99 | max | segments after |")
            print("|---|---|---|---|---|---|---|")
            for _, tree in trees:
                run_child(tree, rows_path)  # not counted: compiles what the checkout's numba cache lacks
            for _ in range(args.runs):
                for name, tree in trees:
                    result = run_child(tree, rows_path)
                    times = [float(t) for t in result["searches"]]
                    print(
                        f"| {name} | {result['adding']:.1f} s | {len(times)} "
                        f"| {percentile(times, 0.5) * 1000:.1f} ms | {percentile(times, 0.99) * 1000:.0f} ms "
                        f"| {max(times) * 1000:.0f} ms | {result['segments']} |",
                        flush=True,
                    )
    print(f"load average              {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
