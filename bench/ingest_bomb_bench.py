"""Uploads to `/paperadmin ingest`, a gzip bomb and real corpora: peak memory, the event loop's longest stall.

    .venv/bin/python bench/ingest_bomb_bench.py [--expanded-mb 300] [--runs 3] [--compare REV]

The uploads: a few hundred KB of gzip that expand to `--expanded-mb` MB of whitespace, named `.json`
(a format read whole) and `.jsonl` (a streamed one); then, when ../shared/data is there, two real
corpora as they would be uploaded: ICML 2024 as gzipped JSONL (1.5 MB, 2,610 papers) and ICLR 2024
from airas-papers-db as a gzipped JSON list (1.3 MB). Each run is a child process (so its peak
resident memory is its own) that opens a fresh SQLite store and hands the bytes to `ingest_bytes`,
the service `/paperadmin ingest` calls, while a task on the same event loop wakes every millisecond
and notes the longest gap between two wakes: how long the bot could not answer anyone. Printed: the
child's peak RSS above what it held before the ingest (MB), the longest stall (s), the wall time, and
what the ingest answered. With `--compare REV`, that commit's code too (a temporary checkout), each of
its runs right after the same run of this checkout's. Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import SHARED, commit_checkout, load_average  # noqa: E402

REAL_UPLOADS = {
    "icml2024.jsonl.gz": SHARED / "icml2024" / "icml2024_papers.jsonl.gz",
    "iclr_2024.json.gz": SHARED / "airas-papers-db" / "iclr_2024.json.gz",
}

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from bot.services.papers.ingest.runner import ingest_bytes
from storage.store import open_database

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0

async def main(store, name, upload):
    data = Path(upload).read_bytes()
    async with await open_database(store) as db:
        stall = 0.0
        stop = False
        async def ticker():
            nonlocal stall
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                stall = max(stall, now - last)
                last = now
        before = rss_mb()
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        summary = await ingest_bytes(db, name, data)
        wall = time.perf_counter() - started
        stop = True
        await tick
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak - before, "stall_s": stall, "wall_s": wall,
                      "added": summary.added, "rejected": summary.rejected,
                      "problem": (summary.problems or [""])[0]}))

asyncio.run(main(*sys.argv[1:]))
"""


def make_bomb(path: Path, expanded_mb: int) -> None:
    """`expanded_mb` MB of spaces, gzipped at the highest level (about 1/1000 of it)."""
    chunk = b" " * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(expanded_mb):
            out.write(chunk)


def measure(tree: Path, store: Path, name: str, upload: Path) -> dict[str, object]:
    store.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), name, str(upload)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "PAPERBOT_LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expanded-mb", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", metavar="REV", help="also run this commit's code, interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        work = Path(folder)
        bomb = work / "bomb.gz"
        make_bomb(bomb, args.expanded_mb)
        print(
            f"bomb: {bomb.stat().st_size / 1024:.0f} KB of gzip, {args.expanded_mb} MB expanded; "
            f"{args.runs} runs each; load {load_average()}"
        )
        trees = {"this checkout": REPO}
        if args.compare:
            trees = {args.compare: stack.enter_context(commit_checkout(args.compare, work)), **trees}
        uploads = {"bomb.json.gz": bomb, "bomb.jsonl.gz": bomb}
        uploads.update({name: path for name, path in REAL_UPLOADS.items() if path.exists()})
        print(f"{'code':<16} {'upload':<18} {'peak MB':>8} {'stall s':>8} {'wall s':>7}  answer")
        for name, path in uploads.items():
            rows: dict[str, list[dict[str, object]]] = {label: [] for label in trees}
            for _ in range(args.runs):
                for label, tree in trees.items():
                    rows[label].append(measure(tree, work / "store.db", name, path))
            for label, runs in rows.items():
                peak = statistics.median(float(str(r["peak_mb"])) for r in runs)
                stall = statistics.median(float(str(r["stall_s"])) for r in runs)
                wall = statistics.median(float(str(r["wall_s"])) for r in runs)
                last = runs[-1]
                answer = f"added {last['added']}, rejected {last['rejected']}: {last['problem']}"
                print(f"{label:<16} {name:<18} {peak:8.0f} {stall:8.3f} {wall:7.2f}  {answer}")


if __name__ == "__main__":
    main()
