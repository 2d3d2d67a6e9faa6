"""The search index's cold build, as the bot makes it at start: `SearchEngine.build` over every paper.

    .venv/bin/python bench/build_bench.py [--sizes 100000,1000000] [--runs 1] [--compare REV]

The papers: the multivenue corpus (35,712) topped up with `search_bench.py`'s synthetic papers (the
same seeded ones), all in memory before the clock starts, as the bot holds the store's rows. Each build
runs in a child process of its own (one warm-up build of 2,000 papers first, so numba's compiled loops
are on disk and loaded, as at any start but the very first): wall clock and CPU (user + system) of
`SearchEngine.build` alone, the peak resident memory it adds above the rows (Linux `VmHWM`, reset
before the build) and what it keeps after (`VmRSS`), the index's arrays (`BM25Index.nbytes`), and a
digest of every paper's score for 20 queries (`BM25Index.score_array`), so that another commit's index
can be seen to give the very same scores. With `--compare REV`, that commit's build too (a temporary
checkout; the papers and queries come from this checkout's bench), each run right after the same run of
this checkout's. Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_common import MULTIVENUE, REPO, commit_checkout, load_average  # noqa: E402


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def child(size: int, tree: Path) -> None:
    """Build at ``size`` papers with ``tree``'s code; print one JSON line."""
    sys.path.insert(0, str(tree))
    import gc
    import importlib

    import numpy as np

    # ``tree``'s modules first: search_bench puts this checkout on the path as it is imported.
    SearchEngine = importlib.import_module("paperindex.engine").SearchEngine
    tokenize = importlib.import_module("paperindex.tokenizer").tokenize
    from search_bench import Synthesizer, load_rows, make_queries

    base = load_rows(MULTIVENUE)
    rows = (
        base[:size]
        if size <= len(base)
        else base + list(Synthesizer(base).rows(len(base) + 1, size - len(base)))
    )
    queries = [tokenize(q) for q in make_queries(base, 20)]
    SearchEngine.build(base[:2000])  # numba's loops loaded, the tokenizer imported (not timed)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    rss0 = _status("VmRSS")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    engine = SearchEngine.build(rows)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = _status("VmHWM") - rss0
    gc.collect()
    kept = _status("VmRSS") - rss0
    index = engine.index
    digest = hashlib.sha256()
    for q in queries:
        digest.update(np.ascontiguousarray(index.score_array(q)).tobytes())
    print(
        json.dumps(
            {
                "code": str(Path(importlib.import_module("bot").__file__ or "").parent.parent),
                "papers": len(engine),
                "wall": wall,
                "cpu": cpu,
                "peak": peak,
                "kept": kept,
                "index": index.nbytes(),
                "postings": index.n_postings,
                "scores": digest.hexdigest()[:16],
            }
        ),
        flush=True,
    )


def run_child(size: int, tree: Path) -> dict[str, float | str]:
    done = subprocess.run(
        [sys.executable, str(BENCH / "build_bench.py"), "--child", str(size), "--tree", str(tree)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--compare", metavar="REV", help="also build with this commit's code, interleaved")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.tree)
        return 0
    if not MULTIVENUE.exists():
        print(f"skipped: the multivenue corpus is not at {MULTIVENUE}")
        return 0
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    trees: dict[str, Path] = {f"this checkout ({rev.stdout.strip()})": REPO}
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        if args.compare:
            trees[args.compare] = stack.enter_context(commit_checkout(args.compare, Path(folder)))
        rows = []
        for size in (int(s) for s in args.sizes.split(",") if s):
            for run in range(args.runs):
                for name, tree in trees.items():
                    got = run_child(size, tree)
                    print(
                        f"{size:,} papers, {name}, run {run + 1}: {got['wall']:.1f} s "
                        f"(CPU {got['cpu']:.1f} s), peak +{got['peak'] / 1e6:,.0f} MB, "
                        f"kept +{got['kept'] / 1e6:,.0f} MB, index {got['index'] / 1e6:,.0f} MB, "
                        f"scores {got['scores']}, code in {got['code']} (load {load_average()})",
                        flush=True,
                    )
                    rows.append((size, name, got))
    print(
        "\n| papers | code | build s | CPU s | peak above the rows MB | kept MB | index MB | scores digest |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size, name, got in rows:
        print(
            f"| {size:,} | {name} | {got['wall']:.1f} | {got['cpu']:.1f} | {got['peak'] / 1e6:,.0f} | "
            f"{got['kept'] / 1e6:,.0f} | {got['index'] / 1e6:,.0f} | {got['scores']} |"
        )
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
