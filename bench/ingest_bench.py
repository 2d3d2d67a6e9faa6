"""Ingest rate on the 36k multivenue corpus (target: at least 5,000 papers/s on a 2-core machine).

    .venv/bin/python bench/ingest_bench.py                 # ../shared/data/multivenue/multivenue_corpus.jsonl.gz
    .venv/bin/python bench/ingest_bench.py FILE_OR_FOLDER… # anything `paperbot ingest` accepts

Ingests into a fresh database in a temporary folder (the same `ingest_paths` the CLI runs: gzip,
JSON decoding, field cleaning, content keys, batched merge, one transaction per batch, WAL on disk)
and prints records/s (wall clock) for the first ingest, then for a second ingest of the same input, which merges
every record into an existing paper and writes nothing. Then the time to read every paper back for
the search index (`PaperRepository.iter_index_rows`). CPU time and the load average are printed too:
on a shared 2-core machine the wall-clock rate drops when other processes take the cores. Figures
only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import load_average  # noqa: E402

from bot.services.papers.ingest.runner import ingest_paths  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import open_database  # noqa: E402

DEFAULT = REPO.parent / "shared" / "data" / "multivenue" / "multivenue_corpus.jsonl.gz"


async def run(paths: list[Path]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with await open_database(Path(folder) / "bench.db") as db:
            for label in ("first ingest (fresh database)", "second ingest (all already there)"):
                started, cpu = time.perf_counter(), time.process_time()
                summary = await ingest_paths(db, paths)
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
                records = summary.added + summary.merged + summary.unchanged
                print(
                    f"{label}: {records:,} records in {seconds:.2f} s = {records / seconds:,.0f} papers/s "
                    f"(added {summary.added:,}, merged {summary.merged:,}, unchanged {summary.unchanged:,}, "
                    f"rejected {summary.rejected:,}); CPU {cpu:.2f} s (both threads)"
                )
            repo = PaperRepository(db)
            started = time.perf_counter()
            rows = await repo.iter_index_rows()
            seconds = time.perf_counter() - started
            print(
                f"index rows: {len(rows):,} papers read back in {seconds:.2f} s = {len(rows) / seconds:,.0f} rows/s"
            )
    print(f"load average while running: {load_average()} ({os.cpu_count()} cores)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT])
    args = parser.parse_args()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"not found: {', '.join(missing)} (the default needs ../shared/data/)", file=sys.stderr)
        return 2
    print(
        f"python {platform.python_version()} on {platform.machine()}, input: {', '.join(map(str, args.paths))}"
    )
    asyncio.run(run(args.paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
