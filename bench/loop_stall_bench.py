"""How long the bot's event loop stalls while it answers the commands that do heavy work, at 36k papers.

    .venv/bin/python bench/loop_stall_bench.py [--db PATH] [--repeat 5] [--compare REV]

Everything the bot does for every person — answering commands, buttons and reactions, sending digests
— waits while its one event loop is busy with one person's request. The store: the 35,712-record
multivenue file (../shared/data/multivenue) ingested by `paperbot ingest` into a SQLite file in a
temporary folder, or `--db PATH` (ingested there first when it holds no papers). The bot: the real one
in this process against the sandbox Discord (``running_paperbot``, as the end-to-end tests run it),
once its paper space is computed. A watcher on the same loop sleeps 2 ms at a time and records how much
later than asked it wakes: the longest such delay while a command is answered is that command's stall.

Each command `--repeat` times, each time by a new person (no cooldown in the way):

* subscribe: `/paper subscribe topics:` with 20 topics, several of them broad;
* recommend: `/paper recommend` by a person with a topic and 12 👍;
* search author: `/paper search` with an `author:` filter not used before;
* search ordered: `/paper search` by a person with 12 👍 (their model orders the close matches), then
  ▶ on that listing.

Per command: the first response as Discord measures it (median, max) and the loop's longest stall
(median, max). With `--compare REV`, that commit's bot (a temporary checkout, this script copied into
it) runs the same on its own copy of the store, after this checkout's. Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from bench_common import MULTIVENUE, commit_checkout, load_average, start_ingest  # noqa: E402

from bot.sandbox import SandboxServer  # noqa: E402
from bot.sandbox.harness import running_paperbot, sandbox_settings  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import StoreLocation, open_database  # noqa: E402

TOPICS = (
    "reinforcement learning, large language models, diffusion models, graph neural networks, "
    "federated learning, contrastive learning, neural networks, deep learning, optimization, "
    "generalization, representation learning, transformers, image generation, language models, "
    "robustness, interpretability, self-supervised learning, continual learning, meta learning, "
    "causal inference"
)
AUTHORS = ("wang", "zhang", "li", "liu", "chen", "yang", "huang", "zhao", "wu", "zhou", "xu", "sun")
LIKED_QUERY = "speculative decoding large language models"
SEARCH_QUERY = "learning"
TICK = 0.002


class LoopWatch:
    """The longest delay past a 2 ms sleep on the running loop, per window of interest."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(TICK)
            self.worst = max(self.worst, loop.time() - asked - TICK)

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def measure(self, action: Callable[[], Awaitable[float | None]]) -> tuple[float | None, float]:
        """(the action's first response in s, None when it never came; the loop's worst stall in s)."""
        await asyncio.sleep(0.05)
        self.worst = 0.0
        answered = await action()
        await asyncio.sleep(0.05)
        return answered, self.worst


def first_response(result: Any) -> float | None:
    record = result.record
    return None if record.callback_at is None else record.callback_at - record.created


async def with_likes(running: Any, user: Any) -> None:
    """A topic and 12 👍 on papers of it, stored as the person's own."""
    services = running.services
    hits = services.search.search(LIKED_QUERY, limit=12).hits
    await services.profiles.add_topic(user.id, "speculative decoding")
    for hit in hits:
        await services.feedback.set(user.id, hit.paper_id, "like", guild_id=running.server.guild.id)


async def scenarios(running: Any, repeat: int) -> dict[str, list[tuple[float | None, float]]]:
    server = running.server
    watch = LoopWatch()
    watch.start()
    results: dict[str, list[tuple[float | None, float]]] = {}
    try:
        for i in range(repeat):
            person = server.add_user(f"subscriber{i}")

            async def subscribe(person: Any = person) -> float | None:
                result = await server.run_command(person, "paper subscribe", topics=TOPICS, check=False, timeout=60)
                return first_response(result)

            results.setdefault("subscribe (20 topics)", []).append(await watch.measure(subscribe))

        for i in range(repeat):
            person = server.add_user(f"reader{i}")
            await with_likes(running, person)

            async def recommend(person: Any = person) -> float | None:
                return first_response(await server.run_command(person, "paper recommend", check=False, timeout=60))

            results.setdefault("recommend (12 👍)", []).append(await watch.measure(recommend))

        for i in range(repeat):
            person = server.add_user(f"searcher{i}")

            async def by_author(person: Any = person, name: str = AUTHORS[i % len(AUTHORS)]) -> float | None:
                result = await server.run_command(
                    person, "paper search", query=SEARCH_QUERY, author=name, check=False, timeout=60
                )
                return first_response(result)

            results.setdefault("search, new author:", []).append(await watch.measure(by_author))

        for i in range(repeat):
            person = server.add_user(f"orderer{i}")
            await with_likes(running, person)
            listing: list[Any] = []

            async def ordered(person: Any = person) -> float | None:
                result = await server.run_command(
                    person, "paper search", query="speculative decoding", check=False, timeout=60
                )
                listing.append(result)
                return first_response(result)

            results.setdefault("search, ordered by 12 👍", []).append(await watch.measure(ordered))

            async def page(person: Any = person) -> float | None:
                return first_response(await server.click(person, listing[0], "Next ▶"))

            results.setdefault("▶ on that search", []).append(await watch.measure(page))
    finally:
        await watch.stop()
    return results


async def stored_papers(db: Path) -> int:
    async with await open_database(StoreLocation.parse(str(db))) as database:
        return await PaperRepository(database).count()


async def prepared(db: Path) -> None:
    if await stored_papers(db) == 0:
        process = await start_ingest([MULTIVENUE], {"PAPERBOT_DB": str(db)}, stdout=asyncio.subprocess.DEVNULL)
        await process.wait()


async def measure(db: Path, repeat: int) -> dict[str, list[tuple[float | None, float]]]:
    await prepared(db)
    async with SandboxServer() as server:
        settings = sandbox_settings(server, db, state_dir=db.parent)
        async with running_paperbot(server, settings, load_shipped_corpus=False, ready_timeout=300) as running:
            space = running.services.recommender.space
            await server.eventually(lambda: space.ready, timeout=300, what="the paper space")
            return await scenarios(running, repeat)


def table(label: str, results: dict[str, list[list[float | None]]], papers: int, load: str) -> str:
    lines = [
        f"{label}: {papers:,} papers, load {load}",
        "| command | first response median (s) | max | answered | loop stall median (ms) | max |",
        "|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        answers = [a for a, _ in runs if a is not None]
        stalls = [s * 1e3 for _, s in runs if s is not None]
        lines.append(
            f"| {name} | {statistics.median(answers) if answers else float('nan'):.2f} | "
            f"{max(answers) if answers else float('nan'):.2f} | {len(answers)} of {len(runs)} | "
            f"{statistics.median(stalls):.0f} | {max(stalls):.0f} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="loop-stall-") as tmp:
        work = Path(tmp)
        db = Path(args.db) if args.db else work / "bench.db"
        if args.json:  # a child run (--compare): figures as JSON on stdout
            results = await measure(db, args.repeat)
            print(json.dumps({k: [list(v) for v in runs] for k, runs in results.items()}))
            return 0
        await prepared(db)
        papers = await stored_papers(db)
        runs: list[tuple[str, dict[str, list[list[float | None]]], str]] = []
        copy = work / "this.db"
        shutil.copy(db, copy)
        started = load_average()
        ours = await measure(copy, args.repeat)
        runs.append(("this checkout", {k: [list(v) for v in r] for k, r in ours.items()}, f"{started} → {load_average()}"))
        if args.compare:
            with commit_checkout(args.compare, work) as tree:
                shutil.copy(Path(__file__), tree / "bench" / Path(__file__).name)
                theirs_db = work / "compare.db"
                shutil.copy(db, theirs_db)
                started = load_average()
                env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
                child = subprocess.run(
                    [sys.executable, str(tree / "bench" / Path(__file__).name), "--db", str(theirs_db),
                     "--repeat", str(args.repeat), "--json"],
                    cwd=tree, env=env, capture_output=True, text=True, check=True,
                )
                theirs = json.loads(child.stdout.strip().splitlines()[-1])
                runs.append((args.compare, theirs, f"{started} → {load_average()}"))
        for label, results, load in runs:
            print(table(label, results, papers, load))
            print()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a SQLite store to use (the multivenue file is ingested into an empty one)")
    parser.add_argument("--repeat", type=int, default=5, help="each command this many times (default 5)")
    parser.add_argument("--compare", metavar="REV", help="also run this commit's bot, after this checkout's")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    started = time.perf_counter()
    status = asyncio.run(main_async(args))
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
