"""`paperbot search --batch FILE --json --limit 10` per query, end to end, beside rank-bm25.

    .venv/bin/python bench/search_batch_bench.py [--db PATH] [--queries 201] [--runs 15] [--compare REV]

The store: the 35,712-record multivenue file (../shared/data/multivenue) ingested by `paperbot ingest`
into a SQLite file in a temporary folder, or `--db PATH` (ingested there first when it holds no
papers; kept for the next run). The queries: bench/search_bench.py's for its 36k size (half titles of
papers, half 2-3-word phrases cut from titles, a few typical ones first).

The command runs as a child process, as an operator runs it: a batch of all the queries and a batch of
the first one alone, alternating, `--runs` times each after one warm-up of each (the first start
writes the index snapshot); with `--compare REV`, that commit's command too (a temporary checkout, its
own snapshot), each run of it right after the same run of this checkout's. Per query = (the whole batch − the one-query batch) / (queries − 1), so
start-up (imports, opening the store, loading the snapshot) cancels out; wall clock, and CPU (user +
system) of the child; the median over the pairs, and their spread. Each batch's output is checked: one
JSON line per query, in order.

Beside it, in this process on the same queries: rank-bm25's `BM25Okapi` on the lower-cased words
(`\\w+`) of each stored paper's title + abstract, per query its scores and top 10 (score, then id) —
ranking only, no store and no output, so its figure is a lower bound for a request. Then, with
`--stages`, where our per-query time goes, in this process through the command's own functions:
searching the block, reading its papers, making the lines. Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import MULTIVENUE, commit_checkout, load_average, percentile, start_ingest  # noqa: E402
from keyword_eval import lower_words  # noqa: E402
from search_bench import load_rows, make_queries  # noqa: E402
from search_peers import RankBM25  # noqa: E402

from storage.models import IndexRow  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import StoreLocation, open_database  # noqa: E402


def child_env(db: Path, tree: Path = REPO, state: Path | None = None) -> dict[str, str]:
    """The environment of a `paperbot` child on store `db`, running the code in `tree`, keeping its
    index snapshot in `state` (beside the store when None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
    env.update(PAPERBOT_DB=str(db), PAPERBOT_LOG_LEVEL="WARNING")
    if state is not None:
        env["PAPERBOT_STATE_DIR"] = str(state)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    return env


@dataclass
class Checkout:
    """A tree whose `paperbot search --batch` is measured, and its runs: (wall s, CPU s) each."""

    label: str
    tree: Path
    state: Path
    one: list[tuple[float, float]] = field(default_factory=list)
    whole: list[tuple[float, float]] = field(default_factory=list)


async def stored_rows(db: Path) -> list[IndexRow]:
    async with await open_database(StoreLocation.parse(str(db))) as database:
        return await PaperRepository(database).iter_index_rows()


async def ensure_papers(db: Path, exists: bool) -> int:
    if exists and await stored_rows(db):
        return 0
    print(f"ingesting {MULTIVENUE.name} into {db} …", flush=True)
    child = await start_ingest([MULTIVENUE], child_env(db), stdout=subprocess.DEVNULL)
    return await child.wait()


def run_batch(db: Path, checkout: Checkout, batch: Path, expected: int, out: Path) -> tuple[float, float]:
    """Wall clock and the child's CPU seconds of one `paperbot search --batch` (its output checked)."""
    argv = [sys.executable, "-m", "bot", "search", "--batch", str(batch), "--json", "--limit", "10"]
    env = child_env(db, checkout.tree, checkout.state)
    with out.open("w") as sink:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=checkout.tree, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    lines = out.read_text("utf-8").splitlines()
    if child.returncode != 0 or len(lines) != expected:
        raise SystemExit(
            f"{checkout.label}: paperbot search --batch: exit {child.returncode}, {len(lines)} lines"
        )
    if [json.loads(line)["query_id"] for line in lines] != [str(n) for n in range(1, expected + 1)]:
        raise SystemExit(f"{checkout.label}: paperbot search --batch: the lines are not the queries in order")
    return wall, usage.ru_utime + usage.ru_stime


def per_query(whole: Sequence[float], one: Sequence[float], extra: int) -> tuple[float, float, float]:
    """Median and the 25th / 75th percentiles, over the pairs, of (whole − one) / extra, in ms."""
    diffs = [(w - o) / extra * 1e3 for w, o in zip(whole, one, strict=True)]
    return statistics.median(diffs), percentile(diffs, 0.25), percentile(diffs, 0.75)


def rank_bm25_per_query(rows: Sequence[IndexRow], queries: Sequence[str]) -> tuple[float, float, float]:
    """rank-bm25's mean wall and CPU ms per query (scores and top 10), and its build in s."""
    import numpy as np

    started = time.perf_counter()
    engine = RankBM25()
    engine.prepare(
        [lower_words(r.title) + lower_words(r.abstract) for r in rows],
        np.array([r.paper_id for r in rows]),
    )
    built = time.perf_counter() - started
    tokens = [lower_words(q) for q in queries]
    wall = cpu = 0.0
    for query in tokens:
        w, c = time.perf_counter(), time.process_time()
        engine.ids(engine.top10(query))
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
    return wall / len(tokens) * 1e3, cpu / len(tokens) * 1e3, built


async def stages(db: Path, queries: Sequence[str], repeat: int, state: Path) -> dict[str, float]:
    """Per query, in ms (the median of `repeat` passes): the command's search, read and output steps."""
    from bot.cli.search import batch_line, search_block
    from bot.runtime import open_services
    from bot.settings import load_settings

    os.environ.update(child_env(db, REPO, state))
    timings: dict[str, list[float]] = {
        "search (tokenise, rank)": [],
        "read the papers": [],
        "the JSON lines": [],
    }
    async with open_services(load_settings(), beside_start=False) as services:
        for _ in range(repeat):
            marks = [time.perf_counter()]
            found = await search_block(
                services.search_service.repair, services.search, list(queries), 10, False
            )
            marks.append(time.perf_counter())
            papers = await services.papers.identities(
                hit.paper_id
                for answer in found
                if not isinstance(answer, Exception)
                for hit in answer.results.hits
            )
            marks.append(time.perf_counter())
            for n, (text, results) in enumerate(zip(queries, found, strict=True), 1):
                batch_line(str(n), text, results, papers)
            marks.append(time.perf_counter())
            for name, a, b in zip(timings, marks, marks[1:], strict=False):
                timings[name].append((b - a) / len(queries) * 1e3)
    return {name: statistics.median(values) for name, values in timings.items()}


def measure(args: argparse.Namespace, db: Path, work: Path, checkouts: list[Checkout]) -> None:
    queries = make_queries(load_rows(MULTIVENUE), args.queries)
    whole_file, one_file = work / "queries.txt", work / "first.txt"
    whole_file.write_text("\n".join(queries) + "\n", "utf-8")
    one_file.write_text(queries[0] + "\n", "utf-8")
    rows = asyncio.run(stored_rows(db))
    print(f"{len(rows):,} papers in {db}; {len(queries)} queries; load average {load_average()}", flush=True)

    def batch(checkout: Checkout, file: Path, n: int) -> tuple[float, float]:
        return run_batch(db, checkout, file, n, work / "out.jsonl")

    for checkout in checkouts:  # warm-up (the first start writes the index snapshot)
        checkout.state.mkdir(parents=True, exist_ok=True)
        batch(checkout, one_file, 1), batch(checkout, whole_file, len(queries))
    for _ in range(args.runs):
        for checkout in checkouts:
            checkout.one.append(batch(checkout, one_file, 1))
            checkout.whole.append(batch(checkout, whole_file, len(queries)))
    print(f"load average after the batches: {load_average()}", flush=True)
    ref_wall, ref_cpu, ref_build = rank_bm25_per_query(rows, queries)
    print(f"rank-bm25 built in {ref_build:.1f} s; load average {load_average()}")

    extra = len(queries) - 1
    print(
        f"\n{args.runs} runs of each batch, alternating; per query = ({len(queries)}-query batch − "
        f"1-query batch) / {extra}, median over the runs [25th–75th percentile]\n"
    )
    print("| | wall ms / query | CPU ms / query | start-up wall / CPU s | rank-bm25's wall ÷ this |")
    print("|---|---|---|---|---|")
    for checkout in checkouts:
        wall = per_query([w for w, _ in checkout.whole], [w for w, _ in checkout.one], extra)
        cpu = per_query([c for _, c in checkout.whole], [c for _, c in checkout.one], extra)
        start_wall = statistics.median(w for w, _ in checkout.one)
        start_cpu = statistics.median(c for _, c in checkout.one)
        print(
            f"| {checkout.label} | {wall[0]:.3f} [{wall[1]:.3f}–{wall[2]:.3f}] | "
            f"{cpu[0]:.3f} [{cpu[1]:.3f}–{cpu[2]:.3f}] | {start_wall:.2f} / {start_cpu:.2f} | "
            f"{ref_wall / wall[0]:.0f} |"
        )
    print(f"| rank-bm25, lower-cased words (scores + top 10 only) | {ref_wall:.1f} | {ref_cpu:.1f} | | 1 |")
    if args.stages:
        parts = asyncio.run(stages(db, queries, args.runs, checkouts[0].state))
        print(
            "\nwhere a query's time goes in this checkout's command, in this process (median of the passes), ms:"
        )
        for name, value in parts.items():
            print(f"  {name}: {value:.3f}")
    print(f"\nload average at the end: {load_average()} ({os.cpu_count()} cores)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, help="a SQLite store to use (and keep); ingested when empty")
    parser.add_argument("--queries", type=int, default=201)
    parser.add_argument("--runs", type=int, default=15, help="runs of each batch")
    parser.add_argument("--compare", metavar="REV", help="also measure this commit's command, interleaved")
    parser.add_argument("--stages", action="store_true", help="also time the command's steps in this process")
    args = parser.parse_args()
    if not MULTIVENUE.exists():
        print(f"not found: {MULTIVENUE} (this bench needs ../shared/data/)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as trees:
        work = Path(folder)
        db = args.db.resolve() if args.db else work / "paperbot.db"
        if asyncio.run(ensure_papers(db, db.exists())) != 0:
            print("paperbot ingest failed", file=sys.stderr)
            return 1
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        checkouts = [
            Checkout(f"paperbot search --batch, this checkout ({commit})", REPO, work / "state-this")
        ]
        if args.compare:
            tree = trees.enter_context(commit_checkout(args.compare, work))
            checkouts.append(Checkout(f"the same at {args.compare}", tree, work / "state-other"))
        measure(args, db, work, checkouts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
