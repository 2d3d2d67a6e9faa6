"""Where the memory of a start goes: the bot's services alone (no Discord client, no local Discord).

Opens the services on a store as `paperbot run` does (`open_services`: the store, the search index
loaded from its snapshot or built, the paper space, the author names) and waits for the work beside the
start, then ranking's facts as the first digest reads them; prints resident (VmRSS) and peak (VmHWM)
memory after the imports, once the services are open, once the work beside the start is done, and
after ``--digests N`` digests planned (none sent), and after ``--searches N`` and 10 × N `/paper search`
answers (the search service, its listings stored behind: resident memory must not keep growing). With
``--trace``, tracemalloc's largest allocations
still held (by file and line) since the start (or, with ``--digests``, since the start was done).

    .venv/bin/python bench/start_memory.py --db /tmp/bench100k.db [--trace] [--top 30] [--digests N]
        [--searches N] [--maps N]

The store is the one `startup_bench.py` and `digest_bench.py` prepare (`--db` of either); the first
run over it builds and saves the search snapshot and the paper space, so run it twice to see a later
start. Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.runtime import Services


def memory_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, in MB: resident now and at its peak."""
    values: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


async def beside_start_done(services: Services) -> None:
    """Wait for the work the bot does beside its start: the paper space placed, the author names read."""
    space = services.recommender.space
    while services._placing.locked() or space.placed < services.search.index.n_slots:
        await services.place_papers()
        await asyncio.sleep(0.1)
    await services.authors.refresh()


async def plan_digests(services: Services, count: int) -> None:
    """Plan the digests of the first ``count`` active subscriptions, as they would fall due (none sent)."""
    from bot.services.digests.subscriptions import recipient_of

    board = services.digests
    subs = (await board.subscriptions.active())[:count]
    sent = await board.repository.all_sent_paper_ids()
    for sub in subs:
        await board.planner.choose(sub, sent=sent.get(recipient_of(sub), set()))


QUERIES = (
    "kv cache quantization",
    "graph neural networks",
    "offline reinforcement learning",
    "speculative decoding",
)


async def search(services: Services, start: int, stop: int) -> None:
    """``/paper search`` answers from ``start`` to ``stop`` (listing ids), as the command asks them."""
    for n in range(start, stop):
        query = QUERIES[n % len(QUERIES)]
        await services.search_service.search(n + 1, user_id=1 + n % 50, query=query, page_size=5)


def resident_parts_mb() -> tuple[float, float]:
    """(RssAnon, RssFile) of this process, in MB: the resident memory of its own and the pages of
    files it maps (the search snapshot's strings, the paper space: the system's to drop again)."""
    values: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                values[key] = int(rest.split()[0]) / 1024
    return values["RssAnon"], values["RssFile"]


def mapped_files_mb(top: int) -> list[tuple[float, str]]:
    """The files whose mapped pages this process holds most of: (MB resident, path)."""
    held: dict[str, float] = {}
    name = ""
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split()
            if not fields[0].endswith(":"):  # a mapping's first line: range, perms, offset, dev, inode, path
                name = fields[5] if len(fields) > 5 and fields[4] != "0" else ""
            elif fields[0] == "Rss:" and name:
                held[name] = held.get(name, 0.0) + int(fields[1]) / 1024
    return sorted(((mb, path) for path, mb in held.items()), reverse=True)[:top]


def _line(what: str, started: float) -> None:
    rss, peak = memory_mb()
    anon, mapped = resident_parts_mb()
    print(
        f"{what:<34} {time.perf_counter() - started:>6.1f} s  {rss:>6.0f} MB resident, peak {peak:,.0f} MB"
        f"  ({anon:,.0f} MB its own, {mapped:,.0f} MB of files)"
    )


async def measure(db: Path, trace: bool, top: int, digests: int, searches: int, maps: int) -> None:
    started = time.perf_counter()
    from bot.runtime import open_services
    from bot.settings import Settings
    from storage.store import StoreLocation

    _line("imports", started)
    if trace and not digests:
        tracemalloc.start()
    baseline = tracemalloc.take_snapshot() if trace and not digests else None
    settings = Settings(discord_token="unused", store=StoreLocation.parse(str(db)))
    async with open_services(settings, load_shipped_corpus=False) as services:
        _line("services open (index loaded/built)", started)
        await beside_start_done(services)
        await services.recommender.facts.sync()
        gc.collect()
        _line("work beside the start done", started)
        if digests:
            if trace:
                tracemalloc.start()
                baseline = tracemalloc.take_snapshot()
            await plan_digests(services, digests)
            gc.collect()
            _line(f"{digests:,} digests planned", started)
            from bot.runtime import release_free_memory

            release_free_memory()  # as the digest scheduler does once its deliveries are over
            _line("  then the C heap's free pages given back", started)
        if searches:
            await services.writes.start()  # as the bot does once logged in: listings stored behind
            await search(services, 0, searches)
            gc.collect()
            _line(f"{searches:,} searches", started)
            await search(services, searches, 10 * searches)
            gc.collect()
            _line(f"{10 * searches:,} searches", started)
        if maps:
            print("\nmapped files, resident:")
            for mb, path in mapped_files_mb(maps):
                print(f"{mb:>8.1f} MB  {path}")
        if baseline is not None:
            held = tracemalloc.take_snapshot().compare_to(baseline, "lineno")
            print(f"\ntraced and still held: {sum(s.size_diff for s in held) / 1e6:.1f} MB; the largest:")
            for stat in held[:top]:
                frame = stat.traceback[0]
                where = f"{Path(frame.filename).name}:{frame.lineno}"
                print(f"{stat.size_diff / 1e6:>8.1f} MB {stat.count_diff:>9,} blocks  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="a store startup_bench.py prepared")
    parser.add_argument("--trace", action="store_true", help="tracemalloc's largest held allocations")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--digests", type=int, default=0, help="then plan this many digests")
    parser.add_argument(
        "--searches", type=int, default=0, help="then this many searches, and 10 times as many"
    )
    parser.add_argument("--maps", type=int, default=0, help="then the N files most resident as mappings")
    args = parser.parse_args()
    if not args.db.exists():
        print(f"start memory skipped: {args.db} does not exist (prepare it with startup_bench.py --db)")
        return
    asyncio.run(measure(args.db, args.trace, args.top, args.digests, args.searches, args.maps))


if __name__ == "__main__":
    main()
