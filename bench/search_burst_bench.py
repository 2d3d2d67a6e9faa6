"""`/paper search` under a burst: each search's first response, as Discord measures it, from a real
`paperbot run` process.

    .venv/bin/python bench/search_burst_bench.py [--db PATH] [--burst 300] [--bursts 3] [--rate 0]
                                                 [--compare REV] [--profile FILE]

The store: the 35,712-record multivenue file (../shared/data/multivenue) ingested by `paperbot ingest`
into a SQLite file in a temporary folder, or `--db PATH` (ingested there first when it holds no papers;
kept for the next run). The bot: `python -m bot run` on that store (as the end-to-end tests start it)
against the sandbox Discord in this process, with Discord's rate limits (DISCORD_RATES); once it is
ready, has computed the learned models' paper space (which it does beside the start: ~20-30 s at 36k
papers) and `--settle` seconds have passed, `--bursts` bursts
of `--burst` `/paper search`es, `--pause` seconds apart, sent by 8 people in #general: all at once
(`--rate 0`) or `--rate` a second. The queries are bench/search_bench.py's for its 36k size (half titles,
half 2-3-word phrases from titles, a few typical ones first), each burst taking the next ones.

Per burst: each search's first response (from the INTERACTION_CREATE to the bot's callback; Discord
refuses one after 3 s) p50 / p95 / max, how many failed, and the CPU time the bot's process and this
one (the sandbox: interactions, gateway, REST) used per search meanwhile. With `--compare REV`, that commit's bot
runs the same bursts on its own copy of the store (a temporary checkout), after this checkout's.
`--profile FILE` records this checkout's bot with py-spy during the bursts (`pip install py-spy`).
Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from bench_common import MULTIVENUE, commit_checkout, first_response, load_average, percentile, start_ingest  # noqa: E402
from bot_process import BotProcess  # noqa: E402
from search_bench import load_rows, make_queries  # noqa: E402

from bot.sandbox import DISCORD_RATES, SandboxServer  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import StoreLocation, open_database  # noqa: E402

SEARCHERS = 8


@dataclass
class Burst:
    sent: int
    seconds: float  # from the first search sent to the last one's answer
    waits: list[float] = field(default_factory=list)
    bot_cpu: float = 0.0  # CPU seconds the bot's process used meanwhile
    sandbox_cpu: float = 0.0  # and this process (the sandbox Discord)

    @property
    def failed(self) -> int:
        return self.sent - len([w for w in self.waits if w <= 3.0])

    def cells(self) -> str:
        if not self.waits:
            return f"none of {self.sent} answered | | | | | |"
        ms = [w * 1e3 for w in self.waits]
        return (
            f"{statistics.median(ms):.0f} | {percentile(ms, 0.95):.0f} | {max(ms):.0f} | "
            f"{self.failed} of {self.sent} | {self.seconds:.2f} | {self.bot_cpu / self.sent * 1e3:.1f} | "
            f"{self.sandbox_cpu / self.sent * 1e3:.1f}"
        )


async def stored_papers(db: Path) -> int:
    async with await open_database(StoreLocation.parse(str(db))) as database:
        return await PaperRepository(database).count()


async def ensure_papers(db: Path, exists: bool) -> None:
    if exists and await stored_papers(db):
        return
    print(f"ingesting {MULTIVENUE.name} into {db} …", flush=True)
    env = {"PAPERBOT_DB": str(db), "PAPERBOT_LOG_LEVEL": "WARNING"}
    child = await start_ingest([MULTIVENUE], env, stdout=subprocess.DEVNULL)
    if await child.wait() != 0:
        raise SystemExit("paperbot ingest failed")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def burst(server: SandboxServer, queries: list[str], rate: float, bot_pid: int) -> Burst:
    users = [f"searcher{n}" for n in range(SEARCHERS)]
    bot_cpu, sandbox_cpu = cpu_seconds(bot_pid), time.process_time()
    started = time.perf_counter()
    tasks = []
    for n, query in enumerate(queries):
        if rate > 0:
            await asyncio.sleep(max(0.0, started + n / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(first_response(server, users[n % len(users)], query, timeout=30)))
    waits = await asyncio.gather(*tasks)
    took = time.perf_counter() - started
    bot_cpu, sandbox_cpu = cpu_seconds(bot_pid) - bot_cpu, time.process_time() - sandbox_cpu
    return Burst(len(queries), took, [w for w in waits if w is not None], bot_cpu, sandbox_cpu)


async def measure(
    label: str,
    tree: Path,
    db: Path,
    work: Path,
    queries: list[str],
    args: argparse.Namespace,
    profile: Path | None,
) -> list[Burst]:
    bursts: list[Burst] = []
    async with SandboxServer(rates=DISCORD_RATES) as server:
        for n in range(SEARCHERS):
            server.add_user(f"searcher{n}")
        state = work / f"state-{tree.name}"
        state.mkdir(exist_ok=True)
        process = await BotProcess.start(
            server,
            db,
            tree,
            PAPERBOT_STATE_DIR=str(state),
            PAPERBOT_DEV_GUILD=str(server.guild.id),
            PAPERBOT_PERSON_LIMITS="off",  # 8 people sending hundreds: a load test, not people
            PYTHONPATH=str(tree),
        )
        spy: asyncio.subprocess.Process | None = None
        try:
            began = time.monotonic()
            await process.wait_for("ready as", timeout=300)
            print(f"{label}: ready in {time.monotonic() - began:.1f} s", flush=True)
            try:  # what a start does beside being ready: the learned models' paper space
                await process.wait_for("paper space: ", timeout=args.space_within)
                print(f"{label}: paper space after {time.monotonic() - began:.1f} s", flush=True)
            except AssertionError:
                print(f"{label}: no paper space logged within {args.space_within:.0f} s", flush=True)
            await asyncio.sleep(args.settle)
            if profile is not None:
                spy = await asyncio.create_subprocess_exec(
                    str(Path(sys.executable).parent / "py-spy"),
                    *("record", "--pid", str(process.pid), "--output", str(profile), "--format", "raw"),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                await asyncio.sleep(1.0)
            for n in range(args.bursts):
                part = queries[n * args.burst : (n + 1) * args.burst]
                bursts.append(await burst(server, part, args.rate, process.pid))
                print(f"{label}: burst {n + 1}: {bursts[-1].cells()}", flush=True)
                await asyncio.sleep(args.pause)
        finally:
            if spy is not None:
                spy.send_signal(2)  # SIGINT: py-spy writes what it recorded
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(spy.wait(), 30)
            with contextlib.suppress(AssertionError):
                await process.stop()
    return bursts


async def run(args: argparse.Namespace, work: Path, db: Path, commit: str) -> None:
    await ensure_papers(db, args.db is not None and args.db.exists())
    queries = make_queries(load_rows(MULTIVENUE), args.burst * args.bursts)
    print(f"{await stored_papers(db):,} papers; load average {load_average()}", flush=True)
    results: list[tuple[str, list[Burst], str]] = []
    started = load_average()
    mine = await measure(f"this checkout ({commit})", REPO, db, work, queries, args, args.profile)
    results.append((f"this checkout ({commit})", mine, f"{started} → {load_average()}"))
    if args.compare:
        with contextlib.ExitStack() as stack:
            tree = stack.enter_context(commit_checkout(args.compare, work))
            copy = work / "compare.db"
            shutil.copyfile(db, copy)  # its own store: its writes (listings) stay out of ours
            started = load_average()
            theirs = await measure(args.compare, tree, copy, work, queries, args, None)
            results.append((args.compare, theirs, f"{started} → {load_average()}"))
    pace = "all at once" if args.rate <= 0 else f"{args.rate:g} a second"
    print(
        f"\n{args.burst} `/paper search`es per burst, {pace}, {SEARCHERS} people; first response "
        "(INTERACTION_CREATE → callback), ms\n"
    )
    print(
        "| bot | burst | p50 | p95 | max | failed | burst took s | bot CPU ms / search | sandbox CPU ms / search "
        "| load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, bursts, loads in results:
        for n, one in enumerate(bursts, 1):
            print(f"| {label} | {n} | {one.cells()} | {loads} |")
    print(f"\nload average at the end: {load_average()} ({os.cpu_count()} cores)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, help="a SQLite store to use (and keep); ingested when empty")
    parser.add_argument("--burst", type=int, default=300, help="searches per burst")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument(
        "--rate", type=float, default=0.0, help="searches a second in a burst (0: all at once)"
    )
    parser.add_argument("--pause", type=float, default=5.0, help="seconds between bursts")
    parser.add_argument(
        "--space-within", type=float, default=180.0, help="seconds to wait for the paper space after ready"
    )
    parser.add_argument("--settle", type=float, default=5.0, help="seconds from then to the first burst")
    parser.add_argument("--compare", metavar="REV", help="also run this commit's bot, after this checkout's")
    parser.add_argument(
        "--profile", type=Path, help="py-spy record of this checkout's bot (raw, for flamegraphs)"
    )
    args = parser.parse_args()
    if not MULTIVENUE.exists():
        print(f"not found: {MULTIVENUE} (this bench needs ../shared/data/)", file=sys.stderr)
        return 2
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        asyncio.run(run(args, work, args.db.resolve() if args.db else work / "paperbot.db", commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
