"""How long the bot's event loop stalls while it answers the commands that do heavy work, at 36k papers.

    .venv/bin/python bench/loop_stall_bench.py [--db PATH] [--repeat 5] [--compare REV]

Everything the bot does for every person — answering commands, buttons and reactions, sending digests
— waits while its one event loop is busy with one person's request. The store: the 35,712-record
multivenue file (../shared/data/multivenue) ingested by `paperbot ingest` into a SQLite file in a
temporary folder, or `--db PATH` (ingested there first when it holds no papers). The bot: the real one
in this process against the sandbox Discord (``running_paperbot``, as the end-to-end tests run it),
once its paper space is computed. A watcher on the same loop sleeps 2 ms at a time and records how much
later than asked it wakes: the longest such delay while a command is answered is that command's stall.

Each command `--repeat` times, each time by a new person (no per-person limit in the way):

* subscribe: `/paper subscribe topics:` with 20 topics, several of them broad;
* interests add: `/paper interests add topic:reinforcement learning` (broad: it gets narrower ones);
* recommend: `/paper recommend` by a person with a topic and 12 👍;
* digest: `/paper digest` by such a person (the paper picks, then the DMs);
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
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from bench_common import MULTIVENUE, commit_checkout, load_average, rate, start_ingest  # noqa: E402

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

    async def measure(self, action: Callable[[], Awaitable[Any]]) -> list[float | None]:
        """[the first response in s (None: it never came), the whole answer in s, the worst stall in s]
        of the command ``action`` sends (it returns the sandbox's InteractionResult)."""
        await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        self.worst = 0.0
        sent = loop.time()
        result = await action()
        await asyncio.sleep(0.05)
        record = result.record
        first = None if record.callback_at is None else record.callback_at - record.created
        return [first, record.last_activity - sent, self.worst]


async def with_likes(running: Any, user: Any) -> None:
    """A topic and 12 👍 on papers of it, stored as the person's own."""
    services = running.services
    hits = services.search.search(LIKED_QUERY, limit=12).hits
    await services.profiles.add_topic(user.id, "speculative decoding")
    for hit in hits:
        await rate(
            services.db, user.id, hit.paper_id, "like", at=datetime.now(UTC), guild_id=running.server.guild.id
        )


async def scenarios(running: Any, repeat: int) -> dict[str, list[list[float | None]]]:
    """Each command ``repeat`` times, each time by a new person: (first response, worst stall)."""
    server = running.server
    listings: dict[int, Any] = {}

    async def plain(person: Any) -> None:
        return None

    async def likes(person: Any) -> None:
        await with_likes(running, person)

    async def subscribe(person: Any, i: int) -> Any:
        return await server.run_command(person, "paper subscribe", topics=TOPICS, check=False, timeout=60)

    async def add_broad(person: Any, i: int) -> Any:
        return await server.run_command(
            person, "paper interests add", topic="reinforcement learning", check=False, timeout=60
        )

    async def recommend(person: Any, i: int) -> Any:
        return await server.run_command(person, "paper recommend", check=False, timeout=60)

    async def digest(person: Any, i: int) -> Any:
        return await server.run_command(person, "paper digest", check=False, timeout=60)

    async def by_author(person: Any, i: int) -> Any:
        name = AUTHORS[i % len(AUTHORS)]
        return await server.run_command(
            person, "paper search", query=SEARCH_QUERY, author=name, check=False, timeout=60
        )

    async def ordered(person: Any, i: int) -> Any:
        result = await server.run_command(person, "paper search", query="speculative decoding", timeout=60)
        listings[i] = result
        return result

    async def next_page(person: Any, i: int) -> Any:
        return await server.click(person, listings[i], "Next ▶")

    steps: list[tuple[str, str, Callable[[Any], Awaitable[None]], Callable[[Any, int], Awaitable[Any]]]] = [
        ("subscribe (20 topics)", "subscriber", plain, subscribe),
        ("interests add (a broad topic)", "adder", plain, add_broad),
        ("recommend (12 👍)", "reader", likes, recommend),
        ("digest (12 👍)", "digester", likes, digest),
        ("search, new author:", "searcher", plain, by_author),
        ("search, ordered by 12 👍", "orderer", likes, ordered),
        ("▶ on that search", "orderer", plain, next_page),
    ]
    watch = LoopWatch()
    watch.start()
    results: dict[str, list[list[float | None]]] = {}
    try:
        for name, who, prepare, act in steps:
            for i in range(repeat):
                known = server.world.user_named(f"{who}{i}")
                person = known or server.add_user(f"{who}{i}")
                await prepare(person)

                async def command(person: Any = person, i: int = i, act: Any = act) -> Any:
                    return await act(person, i)

                results.setdefault(name, []).append(await watch.measure(command))
    finally:
        await watch.stop()
    return results


async def stored_papers(db: Path) -> int:
    async with await open_database(StoreLocation.parse(str(db))) as database:
        return await PaperRepository(database).count()


async def prepared(db: Path) -> None:
    if await stored_papers(db) == 0:
        process = await start_ingest(
            [MULTIVENUE], {"PAPERBOT_DB": str(db)}, stdout=asyncio.subprocess.DEVNULL
        )
        await process.wait()


async def measure(db: Path, repeat: int) -> dict[str, list[list[float | None]]]:
    await prepared(db)
    async with SandboxServer() as server:
        settings = sandbox_settings(server, db, state_dir=db.parent)
        async with running_paperbot(
            server, settings, load_shipped_corpus=False, ready_timeout=300
        ) as running:
            space = running.services.recommender.space
            await server.eventually(lambda: space.ready, timeout=300, what="the paper space")
            return await scenarios(running, repeat)


def table(label: str, results: dict[str, list[list[float | None]]], papers: int, load: str) -> str:
    lines = [
        f"{label}: {papers:,} papers, load {load}",
        "| command | first response median / max (s) | whole answer median / max (s) | loop stall median / max (ms) |",
        "|---|---|---|---|",
    ]
    for name, runs in results.items():
        firsts = [r[0] for r in runs if r[0] is not None]
        wholes = [float(r[1] or 0.0) for r in runs]
        stalls = [float(r[2] or 0.0) * 1e3 for r in runs]
        first = f"{statistics.median(firsts):.2f} / {max(firsts):.2f}" if firsts else "none"
        missing = f" ({len(runs) - len(firsts)} of {len(runs)} unanswered)" if len(firsts) < len(runs) else ""
        lines.append(
            f"| {name} | {first}{missing} | {statistics.median(wholes):.2f} / {max(wholes):.2f} | "
            f"{statistics.median(stalls):.0f} / {max(stalls):.0f} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="loop-stall-") as tmp:
        work = Path(tmp)
        db = Path(args.db) if args.db else work / "bench.db"
        if args.json:  # a child run (--compare): figures as JSON on stdout
            results = await measure(db, args.repeat)
            print(json.dumps(results))
            return 0
        await prepared(db)
        papers = await stored_papers(db)
        runs: list[tuple[str, dict[str, list[list[float | None]]], str]] = []
        copy = work / "this.db"
        shutil.copy(db, copy)
        started = load_average()
        ours = await measure(copy, args.repeat)
        runs.append(("this checkout", ours, f"{started} → {load_average()}"))
        if args.compare:
            with commit_checkout(args.compare, work) as tree:
                shutil.copy(Path(__file__), tree / "bench" / Path(__file__).name)
                theirs_db = work / "compare.db"
                shutil.copy(db, theirs_db)
                started = load_average()
                env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
                script = tree / "bench" / Path(__file__).name
                child = await asyncio.create_subprocess_exec(
                    sys.executable, str(script), "--db", str(theirs_db), "--repeat", str(args.repeat), "--json",
                    cwd=tree, env=env, stdout=asyncio.subprocess.PIPE,
                )  # fmt: skip
                output, _ = await child.communicate()
                assert child.returncode == 0, f"{args.compare}'s run failed"
                theirs = json.loads(output.decode().strip().splitlines()[-1])
                runs.append((args.compare, theirs, f"{started} → {load_average()}"))
        for label, results, load in runs:
            print(table(label, results, papers, load))
            print()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db", help="a SQLite store to use (the multivenue file is ingested into an empty one)"
    )
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
