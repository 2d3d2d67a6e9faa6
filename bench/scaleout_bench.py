"""One process on SQLite against two on PostgreSQL, side by side in one run: answers under a burst, the
digests of N subscribers, and an ingest.

    nice .venv/bin/python bench/scaleout_bench.py [--subscribers 10000] [--burst 50] [--ingest PATH]

Each set-up gets a fresh sandbox Discord (in this process, with Discord's rate limits, DISCORD_RATES)
and a fresh store, prepared alike: the shipped corpus and the ICML 2024 list (../shared/data, when
present), N subscribers to a daily DM digest of 3 papers on two of ten ML topics, all due the same
minute, each person's DM channel known (as after their first digest). Then real `paperbot run`
processes (`python -m bot run`, as the end-to-end tests start them) run on it:

* **1 process, SQLite**: `PAPERBOT_ROLE=all` on a SQLite file — today's single-machine deployment;
* **2 processes, PostgreSQL**: a `gateway` and a `worker` on one PostgreSQL database, each with its own
  state folder — deploy/docker-compose.postgres.yml's services.

Measured for each, from the sandbox, as Discord would see it:

* a burst of `--burst` `/paper search`es sent at once by 8 people, before the digests: each one's first
  response (INTERACTION_CREATE to the callback; Discord refuses one after 3 s), p50 / p95 / max;
* the same burst while the digests go out (sent once a third of the subscribers have theirs);
* the digests: from the due minute until the last subscriber's last paper arrived (the bench waits
  until every digest run in the store is finished, a job retried after a failed send included); the
  rate of messages; how many digests arrived whole (every paper the store planned for the person in
  their DM), how many papers reached someone twice, the runs by status (`empty`: the "nothing new"
  line), the jobs retried; the requests Discord refused (429s);
* an ingest beside the running processes (`--ingest`, default the 35,712-record multivenue file):
  `python -m bot ingest` from exec to exit, papers/s, and how long after it the file's last title is
  found by `/paper search` (through the process on the gateway).

With `DIGEST_SPREAD_MINUTES=0` every digest is due at once; sending is paced by the bot under
Discord's global limit (45 requests/s for bulk sending), which bounds the digest time of both set-ups
alike: 10,000 subscribers take 15-20 minutes each (retries after a 429 included). The PostgreSQL database is a throwaway one on the
local server (127.0.0.1:5432, trust auth), or `--postgres URL` (an empty database). Figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from bench_common import MULTIVENUE, QUERIES, SHARED, first_response, last_title, percentile, start_ingest  # noqa: E402
from bot_process import BotProcess  # noqa: E402

from bot.sandbox import DISCORD_RATES, SandboxServer  # noqa: E402
from bot.sandbox.emulator.state import SandboxMessage, SandboxUser  # noqa: E402
from storage.store import StoreLocation, open_database  # noqa: E402

ICML = SHARED / "icml2024" / "icml2024_papers.jsonl.gz"
TOPICS = (
    "quantization",
    "kv cache",
    "speculative decoding",
    "large language models",
    "diffusion models",
    "reinforcement learning",
    "graph neural networks",
    "in-context learning",
    "federated learning",
    "optimization",
)
PAPERS_PER_DIGEST = 3
SEARCHERS = 8


@dataclass
class Burst:
    sent: int = 0
    waits: list[float] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return self.sent - len([w for w in self.waits if w <= 3.0])

    def cell(self) -> str:
        if not self.waits:
            return f"none of {self.sent} answered"
        return (
            f"{statistics.median(self.waits):.2f} / {percentile(self.waits, 0.95):.2f} / "
            f"{max(self.waits):.2f} s ({self.failed} of {self.sent} failed)"
        )


@dataclass
class Result:
    label: str
    ready: float = float("nan")
    quiet: Burst = field(default_factory=Burst)
    busy: Burst = field(default_factory=Burst)
    digests_first: float = float("nan")
    digests_last: float = float("nan")
    messages: int = 0
    papers: int = 0
    whole: int = 0
    planned_papers: int = 0
    twice: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, int] = field(default_factory=dict)
    retried: int = 0
    ingest_wall: float = float("nan")
    ingested: int = 0
    searchable: float | None = None
    load: list[tuple[float, float, float]] = field(default_factory=list)


# ---- the store ---------------------------------------------------------------------------------


async def prepare(store: StoreLocation, state_dir: Path, people: list[tuple[int, int]]) -> None:
    """The corpus, and one 3-paper daily digest per person (its time set later), their DM channel stored."""
    from bot.runtime import open_services
    from bot.services.papers.ingest.runner import ingest_paths
    from bot.settings import Settings
    from storage.repositories.users import UserRepository

    rng = random.Random(7)
    settings = Settings(discord_token="x" * 30, store=store, state_dir=state_dir)
    async with await open_database(store) as db:
        if ICML.is_file():
            await ingest_paths(db, [ICML])
    async with open_services(settings, load_shipped_corpus=True) as services:
        subscriptions = services.digests.subscriptions
        users = UserRepository(services.db)
        for user_id, dm_id in people:
            await subscriptions.subscribe(
                user_id,
                topics=", ".join(rng.sample(TOPICS, 2)),
                time="00:00",
                timezone="UTC",
                count=PAPERS_PER_DIGEST,
            )
            await users.set_dm_channel(user_id, dm_id)


@contextlib.asynccontextmanager
async def postgres_database(url: str | None) -> AsyncIterator[StoreLocation]:
    """``url``, or a throwaway database on the local server, dropped afterwards."""
    if url is not None:
        yield StoreLocation(url=url)
        return
    import asyncpg

    name = f"paperbot_scaleout_{os.getpid()}"
    admin = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield StoreLocation(url=f"postgresql://postgres@127.0.0.1:5432/{name}")
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


# ---- what people do ----------------------------------------------------------------------------


async def burst(server: SandboxServer, searchers: list[SandboxUser], size: int) -> Burst:
    waits = await asyncio.gather(
        *(
            first_response(server, searchers[n % len(searchers)], QUERIES[n % len(QUERIES)])
            for n in range(size)
        )
    )
    return Burst(size, [w for w in waits if w is not None])


# ---- one set-up --------------------------------------------------------------------------------


async def measure(
    label: str,
    store: StoreLocation,
    roles: list[str],
    args: argparse.Namespace,
    work: Path,
) -> Result:
    result = Result(label)
    async with SandboxServer(rates=DISCORD_RATES) as server:
        world = server.world
        searchers = [server.add_user(f"searcher{n}") for n in range(SEARCHERS)]
        people: list[tuple[int, int]] = []
        for n in range(args.subscribers):
            user = SandboxUser(world.snowflakes.next(), f"reader{n}", f"Reader {n}")
            world.users[user.id] = user
            people.append((user.id, world.dm_channel(user).id))
        dm_channels = {dm for _, dm in people}

        started = time.monotonic()
        await prepare(store, work / "prepare", people)
        print(
            f"{label}: prepared {len(people):,} subscribers in {time.monotonic() - started:.0f} s", flush=True
        )
        due_at = (datetime.now(UTC) + timedelta(seconds=args.lead)).replace(second=0, microsecond=0)
        due_at += timedelta(minutes=1)
        async with await open_database(store) as db, db.transaction() as conn:
            # every digest due at that minute (set once prepared, however long preparing took)
            await conn.execute("UPDATE subscriptions SET time_local = ?", (due_at.strftime("%H:%M"),))

        # every message the bot posts to a subscriber's DM: when, and which paper
        first_at: list[float] = []
        last_at: dict[int, float] = {}
        titles: dict[int, list[str]] = {}
        delivered = [0]
        sent = [0]  # every message to a subscriber: papers and headers
        loop = asyncio.get_running_loop()

        def watch(kind: str, message: SandboxMessage) -> None:
            if kind == "create" and message.channel.id in dm_channels:
                last_at[message.channel.id] = loop.time()
                first_at[:] = first_at or [loop.time()]
                sent[0] += 1
                if message.embeds:
                    titles.setdefault(message.channel.id, []).append(str(message.embeds[0].get("title")))
                    if len(titles[message.channel.id]) == PAPERS_PER_DIGEST:
                        delivered[0] += 1

        unsubscribe = server.subscribe(watch)
        processes: list[BotProcess] = []
        try:
            began = time.monotonic()
            for role in roles:
                folder = work / role
                folder.mkdir(parents=True, exist_ok=True)
                process = await BotProcess.start(
                    server,
                    store,
                    folder,
                    PAPERBOT_ROLE=role,
                    PAPERBOT_STATE_DIR=str(folder),
                    PAPERBOT_DEV_GUILD=str(server.guild.id),
                    PAPERBOT_DIGEST_SPREAD_MINUTES="0",
                )
                processes.append(process)
            for process, role in zip(processes, roles, strict=True):
                await process.wait_for("ready as" if role != "worker" else "leading:", timeout=300)
            result.ready = time.monotonic() - began
            await asyncio.sleep(args.settle)  # what a start does beside being ready (the paper space) ends
            print(f"{label}: ready in {result.ready:.1f} s; the quiet burst", flush=True)
            result.quiet = await burst(server, searchers, args.burst)
            due_loop = loop.time() + (due_at - datetime.now(UTC)).total_seconds()
            if due_loop < loop.time():
                print(f"{label}: the digests were due before the processes were ready (--lead)", flush=True)
            print(f"{label}: digests due {due_at:%H:%M:%S} UTC", flush=True)

            busy_sent = False
            report = loop.time()
            statuses: dict[str, int] = {}
            async with await open_database(store) as db:
                while True:
                    await asyncio.sleep(2.0)
                    batch, server.recorder.requests = server.recorder.requests, []
                    for request in batch:
                        if request.status >= 400:
                            result.refused[
                                f"{request.status}/{request.scope or request.error_code or ''}"
                            ] += 1
                    if not busy_sent and delivered[0] >= len(people) / 3:
                        busy_sent = True
                        result.busy = await burst(server, searchers, args.burst)
                    # every digest run finished (sent, or "nothing new"), none left to retry
                    rows = await db.fetchall("SELECT status, COUNT(*) FROM digest_runs GROUP BY status")
                    statuses = {str(status): int(count) for status, count in rows}
                    finished = sum(n for status, n in statuses.items() if status != "claimed")
                    now = loop.time()
                    if now - report > 30:
                        report = now
                        print(
                            f"{label}: {delivered[0]:,} of {len(people):,} digests whole; runs {statuses}",
                            flush=True,
                        )
                    if finished >= len(people) and busy_sent:
                        break
                    if last_at and now - max(last_at.values()) > args.quiet:
                        print(f"{label}: nothing sent for {args.quiet:.0f} s: stopping", flush=True)
                        break
                    if now - due_loop > args.timeout:
                        print(f"{label}: stopped after {args.timeout:.0f} s", flush=True)
                        break
            result.statuses = statuses
            result.retried = sum(
                1
                for process in processes
                for line in process.lines
                if re.search(r": retry \d+ scheduled at ", line)
            )
            await asyncio.sleep(2.0)
            if last_at:
                result.digests_first = first_at[0] - due_loop
                result.digests_last = max(last_at.values()) - due_loop
            result.messages = sent[0]
            result.papers = sum(len(t) for t in titles.values())
            result.twice = sum(sum(n - 1 for n in Counter(t).values()) for t in titles.values())
            async with await open_database(store) as db:
                rows = await db.fetchall(
                    "SELECT s.user_id, COUNT(i.paper_id) FROM subscriptions s "
                    "JOIN digest_runs r ON r.subscription_id = s.id "
                    "JOIN digest_items i ON i.run_id = r.id GROUP BY s.user_id"
                )
            planned: dict[int, int] = {int(row[0]): int(row[1]) for row in rows}
            result.planned_papers = sum(int(v) for v in planned.values())
            result.whole = sum(
                1
                for user, dm in people
                if planned.get(user) and len(set(titles.get(dm, []))) == planned[user]
            )
            result.load.append(os.getloadavg())

            if args.ingest is not None:
                result.ingest_wall, result.ingested = await ingest(store, args.ingest, work)
                result.searchable = await searchable(
                    server, searchers[0], last_title(args.ingest), args.patience
                )
            result.load.append(os.getloadavg())
            for process in processes:
                await process.stop()
        finally:
            unsubscribe()
            for process in processes:
                await process.kill()
            for process, role in zip(processes, roles, strict=False):
                errors = [line for line in process.lines if " ERROR " in line or "Traceback" in line]
                if errors:
                    print(f"{label}: {len(errors)} error lines, first: {errors[0][:300]}", flush=True)
                if args.logs is not None:
                    args.logs.mkdir(parents=True, exist_ok=True)
                    name = f"{'sqlite' if store.path else 'postgresql'}-{role}.log"
                    (args.logs / name).write_text(process.log + "\n", "utf-8")
    return result


async def ingest(store: StoreLocation, path: Path, work: Path) -> tuple[float, int]:
    (work / "ingest").mkdir(exist_ok=True)
    started = time.perf_counter()
    child = await start_ingest(
        [path],
        {
            "PAPERBOT_DB": store.url or str(store.path),
            "PAPERBOT_STATE_DIR": str(work / "ingest"),
            "PAPERBOT_LOG_LEVEL": "WARNING",
        },
        cwd=work,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await child.communicate()
    wall = time.perf_counter() - started
    counts = re.search(rb"added (\d+), merged (\d+), unchanged (\d+)", out)
    stored = sum(int(n) for n in counts.groups()) if counts else 0
    return wall, stored


async def searchable(server: SandboxServer, user: SandboxUser, title: str, patience: float) -> float | None:
    """Seconds after the ingest ended until `/paper search` finds the file's last title."""
    started = time.perf_counter()
    while time.perf_counter() - started < patience:
        result = await server.run_command(user, "paper search", query=title, check=False, timeout=30)
        if title[:40] in result.text.replace("\\", ""):  # titles are markdown-escaped
            return time.perf_counter() - started
        await asyncio.sleep(1.0)
    return None


# ---- the table ---------------------------------------------------------------------------------


def table(results: list[Result], args: argparse.Namespace) -> str:
    n = args.subscribers

    def digests(r: Result) -> str:
        return f"{r.digests_last:,.0f} s (first after {r.digests_first:.1f} s)"

    def rate(r: Result) -> str:
        span = r.digests_last - r.digests_first
        return f"{r.messages / span:.1f}/s" if span > 0 else "–"

    def ingest_cell(r: Result) -> str:
        if args.ingest is None:
            return "not run"
        return f"{r.ingest_wall:.1f} s, {r.ingested / r.ingest_wall:,.0f} papers/s"

    def search_cell(r: Result) -> str:
        if args.ingest is None:
            return "not run"
        return "not within the patience" if r.searchable is None else f"{r.searchable:.1f} s"

    rows = [
        ("start → ready (every process)", lambda r: f"{r.ready:.1f} s"),
        (f"{args.burst} searches at once, first response p50 / p95 / max", lambda r: r.quiet.cell()),
        ("the same burst while the digests go out", lambda r: r.busy.cell()),
        (f"digests for {n:,} subscribers: last one in, after the due minute", digests),
        (
            "messages to subscribers (of them papers), and their rate",
            lambda r: f"{r.messages:,} ({r.papers:,}), {rate(r)}",
        ),
        (
            "digests whole (every paper planned in the DM) / papers twice",
            lambda r: f"{r.whole:,} of {n:,} / {r.twice}",
        ),
        (
            "digest runs by status; digest jobs retried (after a failed send)",
            lambda r: (
                ", ".join(f"{k} {v:,}" for k, v in sorted(r.statuses.items())) + f"; {r.retried} retried"
            ),
        ),
        (
            "refused requests (status/scope)",
            lambda r: ", ".join(f"{k} {v}" for k, v in r.refused.items()) or "none",
        ),
        (
            f"ingest of {args.ingest.name if args.ingest else '–'} (`paperbot ingest`, exec to exit)",
            ingest_cell,
        ),
        ("→ its last paper found by /paper search, after", search_cell),
        ("load average after digests / after ingest", lambda r: " / ".join(f"{x[0]:.1f}" for x in r.load)),
    ]
    lines = ["| | " + " | ".join(r.label for r in results) + " |", "|---|" + "---|" * len(results)]
    for name, cell in rows:
        lines.append(f"| {name} | " + " | ".join(cell(r) for r in results) + " |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory(prefix="scaleout-") as tmp:
        work = Path(tmp)
        sqlite_store = StoreLocation(path=work / "sqlite" / "paperbot.db")
        (work / "sqlite").mkdir()
        if "sqlite" in args.setups:
            results.append(await measure("1 process, SQLite", sqlite_store, ["all"], args, work / "sqlite"))
        if "postgresql" not in args.setups:
            return results
        async with postgres_database(args.postgres) as pg_store:
            results.append(
                await measure(
                    "2 processes (gateway + worker), PostgreSQL",
                    pg_store,
                    ["gateway", "worker"],
                    args,
                    work / "pg",
                )
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--burst", type=int, default=50, help="searches sent at once")
    parser.add_argument(
        "--ingest",
        type=Path,
        default=MULTIVENUE if MULTIVENUE.is_file() else None,
        help="a .jsonl.gz to ingest",
    )
    parser.add_argument("--no-ingest", action="store_true")
    parser.add_argument("--postgres", help="an empty PostgreSQL database (default: a throwaway local one)")
    parser.add_argument(
        "--lead", type=float, default=90.0, help="seconds from the end of preparing to the due minute"
    )
    parser.add_argument(
        "--timeout", type=float, default=3 * 3600.0, help="give up the digests after this long"
    )
    parser.add_argument(
        "--patience", type=float, default=300.0, help="wait this long for the ingest's papers"
    )
    parser.add_argument("--setups", default="sqlite,postgresql", help="which of sqlite,postgresql to run")
    parser.add_argument("--logs", type=Path, help="write each process's log into this folder")
    parser.add_argument(
        "--quiet",
        type=float,
        default=420.0,
        help="stop when nothing was sent this long (a retry comes after 5 min)",
    )
    parser.add_argument("--settle", type=float, default=30.0, help="seconds from ready to the first burst")
    args = parser.parse_args()
    if args.no_ingest:
        args.ingest = None
    if not ICML.is_file():
        print(f"no {ICML}: the stores hold the shipped corpus only", flush=True)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    results = asyncio.run(run(args))
    print(
        f"\n{args.subscribers:,} subscribers, {PAPERS_PER_DIGEST} papers each, due the same minute; commit {commit}; "
        f"{os.cpu_count()} cores\n"
    )
    print(table(results, args))


if __name__ == "__main__":
    main()
