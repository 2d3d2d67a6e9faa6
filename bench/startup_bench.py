"""Start-up time and memory of the whole bot at 100,000 papers, at start and after a day's work.

From "process begins to start the bot" to discord.py's on_ready (the real PaperBot, default client options,
against the in-process local Discord server): open + migrate the store, build the search index, log in,
sync commands, gateway handshake, guild_ready_timeout (the bot's `GUILD_READY_TIMEOUT`). Then the first /paper search answer,
and the process's resident memory (VmRSS) and peak (VmHWM) once the work beside the start is done (the
learned models' paper space, the author names). Then a simulated day: a digest planned for every
subscription (10,000) and 1,000 `/paper search` commands, and resident memory again; then 9,000 more
searches, the resident memory of which must not keep growing (a leak check). Targets: ready ≤ 2 s,
≤ 400 MB resident at start and after the day.

    .venv/bin/python bench/startup_bench.py [--papers 100000] [--db PATH] [--ready-timeout 30]
        [--searches 1000] [--leak-searches 9000] [--no-day]

The database is prepared as `digest_bench.py` prepares it (10,000 subscribers, 100,000 papers; needs
../shared/data/multivenue/); `--db` keeps it for the next run (and can share the digest bench's).
`--ready-timeout`: how long to wait for on_ready (a machine other work keeps busy may need more than 30 s).
`PAPERINDEX_LOOPS=numba` in the environment runs the index's loops from numba's cache, as a machine where
they cannot be compiled ahead of time does (`paperindex.ahead_of_time`): the line "the index's loops"
says which ran. The first search is timed until its answer is complete (its last change, not the sandbox's quiet spell after it), also
when it came past Discord's 3 s (refused).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))

import digest_bench
from start_memory import beside_start_done, memory_mb, resident_parts_mb

from bot.app import GUILD_READY_TIMEOUT
from bot.runtime import release_free_memory
from bot.sandbox import SandboxServer
from bot.sandbox.harness import running_paperbot, sandbox_settings
from bot.services.digests.subscriptions import recipient_of
from paperindex import compiled

if TYPE_CHECKING:
    from bot.runtime import Services

READY_TARGET_S = 2.0
MEMORY_TARGET_MB = 400
LEAK_TOLERANCE_MB = 20  # resident growth from 1,000 to 10,000 searches taken as noise, not a leak
QUERIES = (
    "kv cache quantization",
    "graph neural networks",
    "offline reinforcement learning",
    "diffusion models for images",
    "contrastive learning",
    "large language model alignment",
    "federated learning privacy",
    "speculative decoding",
    "vision transformer",
    "robot manipulation policy",
)


async def searches(server: SandboxServer, count: int, start: int) -> None:
    for n in range(start, start + count):
        query = QUERIES[n % len(QUERIES)]
        await server.run_command("bob", "paper search", query=query, limit=5, check=False, timeout=30)


async def a_day(server: SandboxServer, services: Services, searches_count: int) -> tuple[int, float]:
    """A digest planned for every active subscription (none sent, nothing marked), then what the digest
    scheduler does once its deliveries are over (``on_idle``: the memory they freed given back), and
    the searches."""
    digests = services.digests
    subs = await digests.subscriptions.active()
    sent = await digests.repository.all_sent_paper_ids()
    started = time.perf_counter()
    for sub in subs:
        await digests.planner.choose(sub, sent=sent.get(recipient_of(sub), set()))
    planned = time.perf_counter() - started
    release_free_memory()  # planned here directly, not through the scheduler that calls it once idle
    await searches(server, searches_count, 0)
    # the names and words the searches did not need, which the bot reads once searches pause
    await services.search_service.repair.catch_up(services.search)
    return len(subs), planned


async def measure(db_path: Path, args: argparse.Namespace) -> int:
    """Each figure is printed as soon as it is measured (a day on a busy machine takes half an hour)."""
    before_bot, _ = memory_mb()
    async with SandboxServer() as server:
        local_discord, _ = memory_mb()
        # No catch-up of the digests missed while no bot ran: the sandbox has none of the subscribers,
        # and those sends, paced at Discord's rate, would hold the whole run up (and pause them all).
        settings = sandbox_settings(server, db_path, digest_grace_hours=0.0)
        started = time.perf_counter()
        async with running_paperbot(
            server, settings, load_shipped_corpus=False, client_options={}, ready_timeout=args.ready_timeout
        ) as running:
            ready = time.perf_counter() - started
            print(f"papers indexed            {len(running.services.search):>10,}")
            print(f"the index's loops         {_loops()}")
            print(
                f"start → on_ready          {ready:>10.2f} s   (target ≤ {READY_TARGET_S:.0f} s; "
                f"includes the bot's guild_ready_timeout, {GUILD_READY_TIMEOUT} s)"
            )
            sent = asyncio.get_running_loop().time()
            result = await server.run_command(
                "bob", "paper search", query="kv cache quantization", limit=5, check=False, timeout=30
            )
            # until the answer's last change, not the sandbox's quiet spell after it (0.15 s)
            answered = result.record.last_activity - sent
            late = result.record.late_callback_age is not None or bool(result.record.rejected)
            outcome = "refused: past Discord's 3 s" if late else "answered" if result.embeds else "no answer"
            print(f"first /paper search       {answered * 1000:>10.1f} ms  ({outcome})")
            await beside_start_done(running.services)
            gc.collect()
            rss, peak = memory_mb()
            own, files = resident_parts_mb()
            print(
                f"after start (work beside it done) {rss:>6.0f} MB resident ({own:,.0f} MB its own, "
                f"{files:,.0f} MB of mapped files), peak {peak:,.0f} MB  "
                f"(target ≤ {MEMORY_TARGET_MB} MB resident; of which the imports and the in-process local "
                f"Discord {local_discord:,.0f} MB, {before_bot:,.0f} MB before it)",
                flush=True,
            )
            day_rss = leak_rss = 0.0
            if not args.no_day:
                subs, planned = await a_day(server, running.services, args.searches)
                gc.collect()
                day_rss, day_peak = memory_mb()
                own, files = resident_parts_mb()
                print(
                    f"after a day ({subs:,} digests planned in {planned:.0f} s, {args.searches:,} searches)"
                    f"   {day_rss:>6.0f} MB resident ({own:,.0f} MB its own, {files:,.0f} MB of mapped "
                    f"files), peak {day_peak:,.0f} MB",
                    flush=True,
                )
                await searches(server, args.leak_searches, args.searches)
                gc.collect()
                leak_rss, leak_peak = memory_mb()
                print(
                    f"after {args.searches + args.leak_searches:,} searches{'':>26}{leak_rss:>6.0f} MB resident, "
                    f"peak {leak_peak:,.0f} MB (growth {leak_rss - day_rss:+.0f} MB since {args.searches:,})"
                )
    leaking = not args.no_day and leak_rss - day_rss > LEAK_TOLERANCE_MB
    if leaking:
        print(f"resident memory grew by more than {LEAK_TOLERANCE_MB} MB over the last searches: a leak?")
    print(f"load average              {digest_bench.load_average():>10}")
    return 0 if ready <= READY_TARGET_S and max(rss, day_rss) <= MEMORY_TARGET_MB and not leaking else 1


def _loops() -> str:
    """Where this process's index loops come from, and whether numba is loaded at all."""
    where = "compiled ahead of time" if compiled.ahead_of_time_loaded() else "numba's cache"
    return f"{where} (numba {'loaded' if 'numba' in sys.modules else 'not loaded'})"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--db", type=Path, help="keep the prepared database here and reuse it next time")
    parser.add_argument("--ready-timeout", type=float, default=30.0, help="seconds to wait for on_ready")
    parser.add_argument("--searches", type=int, default=1000, help="/paper search commands of the day")
    parser.add_argument(
        "--leak-searches", type=int, default=9000, help="more searches after the day, for the leak check"
    )
    parser.add_argument("--no-day", action="store_true", help="measure the start only")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    # a first start over a large store has a child process build the index: its peak is logged
    logging.getLogger("bot.services.search.live_index").setLevel(logging.INFO)
    if not digest_bench.CORPUS.exists():
        print(f"start-up bench skipped: {digest_bench.CORPUS} is absent (research data, not shipped)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        db_path = args.db or Path(tmp) / "bench.db"
        if not db_path.exists():
            command = [sys.executable, digest_bench.__file__, "--prepare", str(db_path)]
            command += ["--subscribers", str(args.subscribers), "--papers", str(args.papers)]
            subprocess.run(command, check=True)
        return asyncio.run(measure(db_path, args))


if __name__ == "__main__":
    raise SystemExit(main())
