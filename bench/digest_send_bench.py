"""Digest send bench: every digest of N subscribers due in the same minute, sent against Discord's limits.

The real bot (``python -m bot run``, in a process of its own) sends to the sandbox Discord, run here
with Discord's rate limits (``DISCORD_RATES``: 50 requests/s globally, 5 messages per 5 s and one
reaction per 0.25 s per channel behind headers that promise more, 40003 past a burst of DM opens,
the invalid-request ban). Every subscriber is due at the same minute; the bot's own scheduler fires
them. Measured from the sandbox's request log:

* calls per digest — every REST request the bot made in the rush, divided by the subscribers;
* the rush — from its first request to its last; the global limit's bound is calls / 50 s, and the
  ratio rush / bound says how close the bot came to the fastest Discord allows for what it sent;
* 429s (by scope), 40003s, invalid requests (401/403/429), and how many digests arrived whole (every
  paper the bot planned for the person is in their DM; the planner may find fewer than 5 for some).

``--compare REV`` first runs the bot of another commit (a temporary ``git worktree``) against the same
sandbox set-up, then this checkout, and prints both rows and their ratios. Subscribers' DM channels
exist (everyone had a digest before); whether the bot knows them is the bot's business: ``--cold``
starts the bot with none stored.

Calls are counted at the sandbox, as Discord would count them (a request discord.py retries counts
each time), so neither the bot nor the CLI needs a trace of its own. ``--log-level`` and ``--keep-log``
keep the bot's log; the report counts its warnings and errors and describes, from the store, a digest
that arrived short.

Run: ``.venv/bin/python bench/digest_send_bench.py [--subscribers 10000] [--compare REV] [--cold]``
(needs nothing from ../shared; 10,000 subscribers take about 25 minutes a run at Discord's limits, far
longer for a bot that spends more calls; not under ``nice``: the bot is paced, not busy, and a niced
bot loses the CPU to other work at the moments it should send).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_common import commit_checkout

REPO = Path(__file__).resolve().parents[1]

#: Topics the shipped corpus answers well, so every digest has its papers.
TOPICS = (
    "quantization",
    "kv cache",
    "speculative decoding",
    "large language models",
    "attention",
    "reinforcement learning",
    "diffusion models",
    "in-context learning",
)
PAPERS_PER_DIGEST = 5
GLOBAL_RATE = 50.0


# ---- in the tree under test: the database the bot starts from ------------------------------------


async def prepare(db_path: Path, people: list[dict[str, int]], due: str, cold: bool) -> None:
    """Store the shipped corpus and one subscription per person (due at ``due`` UTC), with each person's
    DM channel stored when this tree stores them and ``cold`` is off."""
    from bot.runtime import open_services
    from bot.settings import Settings
    from storage.repositories.users import UserRepository

    rng = random.Random(7)
    if "db_path" in {f.name for f in dataclasses.fields(Settings)}:  # a tree from before PostgreSQL
        settings = Settings(discord_token="x" * 30, db_path=db_path)  # type: ignore[call-arg]
    else:
        from storage.store import StoreLocation

        settings = Settings(discord_token="x" * 30, store=StoreLocation(path=db_path))
    async with open_services(settings, load_shipped_corpus=True) as services:
        subscriptions = services.digests.subscriptions
        remember = None if cold else getattr(UserRepository(services.db), "set_dm_channel", None)
        for person in people:
            await subscriptions.subscribe(
                person["user"],
                topics=", ".join(rng.sample(TOPICS, 2)),
                time=due,
                timezone="UTC",
                count=PAPERS_PER_DIGEST,
            )
            if remember is not None:
                await remember(person["user"], person["dm"])


# ---- here: the sandbox, the bot process, the measurement -----------------------------------------


@dataclass
class Rush:
    label: str
    subscribers: int
    calls: int = 0
    first: float | None = None
    last: float | None = None
    statuses: Counter[str] = field(default_factory=Counter)
    routes: Counter[str] = field(default_factory=Counter)
    #: per route, the requests Discord refused (any status >= 400)
    refused_routes: Counter[str] = field(default_factory=Counter)
    invalid: int = 0
    whole: int = 0
    papers: int = 0
    #: people whose DM lacks a planned paper: (user, planned, arrived), the first few
    short: list[str] = field(default_factory=list)
    #: the bot's warnings and errors in the rush, by level, logger and the message's first words
    logged: Counter[str] = field(default_factory=Counter)
    started_late: float = 0.0

    @property
    def seconds(self) -> float:
        return (self.last - self.first) if self.first is not None and self.last is not None else math.nan

    @property
    def bound(self) -> float:
        return self.calls / GLOBAL_RATE

    def row(self) -> str:
        ratio = self.seconds / self.bound if self.bound else math.nan
        refused = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items())) or "none"
        return (
            f"| {self.label} | {self.subscribers:,} | {self.calls:,} | {self.calls / self.subscribers:.1f} | "
            f"{self.seconds:,.0f} s | {self.bound:,.0f} s | {ratio:.2f}× | {refused} | {self.invalid:,} | "
            f"{self.whole:,} / {self.subscribers:,} ({self.papers:,} papers) |"
        )


HEADER = (
    "| bot | subscribers | calls | calls/digest | rush | global bound (calls/50 s) | rush/bound | "
    "refused (status/scope: n) | invalid requests | digests whole |\n|---|---|---|---|---|---|---|---|---|---|"
)


async def measure(
    tree: Path,
    label: str,
    subscribers: int,
    *,
    cold: bool,
    lead: float,
    give_up_after: float,
    keep_log: Path | None = None,
    log_level: str = "WARNING",
    spread: str | None = None,
) -> Rush:
    sys.path.insert(0, str(REPO))
    from bot.sandbox import DISCORD_RATES, SandboxServer
    from bot.sandbox.emulator.state import SandboxUser

    async with SandboxServer(rates=DISCORD_RATES) as server:
        world = server.world
        people = []
        for n in range(subscribers):
            user = SandboxUser(world.snowflakes.next(), f"reader{n}", f"Reader {n}")
            world.users[user.id] = user
            people.append({"user": user.id, "dm": world.dm_channel(user).id})
        with tempfile.TemporaryDirectory(prefix="sendbench-") as tmp:
            work = Path(tmp)
            (work / "people.json").write_text(json.dumps(people))
            due_at = (datetime.now(UTC) + timedelta(seconds=lead)).replace(second=0, microsecond=0)
            due_at += timedelta(minutes=1)
            env = {**os.environ, "PYTHONPATH": str(tree)}
            started = time.monotonic()
            await asyncio.to_thread(
                subprocess.run,
                [
                    sys.executable,
                    __file__,
                    "--prepare",
                    str(work / "paperbot.db"),
                    "--people",
                    str(work / "people.json"),
                    "--due",
                    due_at.strftime("%H:%M"),
                    *(["--cold"] if cold else []),
                ],
                cwd=tree,
                env=env,
                check=True,
            )
            print(
                f"  {label}: prepared {subscribers:,} subscribers in {time.monotonic() - started:.0f} s; "
                f"due {due_at:%H:%M} UTC",
                flush=True,
            )
            bot_env = {
                **env,
                "DISCORD_TOKEN": server.token,
                "PAPERBOT_DB": str(work / "paperbot.db"),
                "DISCORD_API_BASE": server.api_base,
                "DISCORD_GATEWAY_URL": server.gateway_url,
                "PAPERBOT_DEV_GUILD": str(server.guild.id),
                "PAPERBOT_LOG_LEVEL": log_level,
                # unset: the setting this checkout ships (a digest at its minute unless the minute is full)
                **({"PAPERBOT_DIGEST_SPREAD_MINUTES": spread} if spread is not None else {}),
            }
            log = (work / "bot.log").open("w")
            bot = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "run",
                cwd=tree,
                env=bot_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                rush = await _watch(server, people, due_at, label, give_up_after)
            finally:
                bot.terminate()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(bot.wait(), 30)
                log.close()
                summarise_log(rush, work / "bot.log", keep_log)
            count_whole(rush, server, people, work / "paperbot.db")
    return rush


async def _watch(
    server: Any, people: list[dict[str, int]], due_at: datetime, label: str, give_up_after: float
) -> Rush:
    """Fold the request log into the rush's figures as it grows (so 200,000 requests stay small)."""
    loop = asyncio.get_running_loop()
    due_loop = loop.time() + (due_at - datetime.now(UTC)).total_seconds()
    rush = Rush(label, len(people))
    quiet_since = None
    report = loop.time()
    while True:
        await asyncio.sleep(1.0)
        batch, server.recorder.requests = server.recorder.requests, []
        for request in batch:
            if request.at < due_loop - 1:
                continue  # start-up: the handshake and the command sync
            rush.calls += 1
            rush.first = request.at if rush.first is None else rush.first
            rush.last = request.at
            route = f"{request.method} {request.route}"
            rush.routes[route] += 1
            if request.status >= 400:
                key = str(request.status) + (f"/{request.scope}" if request.scope else "")
                key += f"/{request.error_code}" if request.error_code else ""
                rush.statuses[key] += 1
                rush.refused_routes[route] += 1
        now = loop.time()
        if batch:
            quiet_since = now
        if now - report > 30 and rush.first is not None:
            report = now
            print(f"  {label}: {rush.calls:,} calls in {now - rush.first:,.0f} s", flush=True)
        if rush.first is not None and quiet_since is not None and now - quiet_since > 20:
            break
        if now - due_loop > give_up_after:
            print(f"  {label}: stopped after {give_up_after:,.0f} s", flush=True)
            break
    rush.started_late = (rush.first - due_loop) if rush.first is not None else math.nan
    rush.invalid = server.rates.invalid_total
    return rush


def count_whole(rush: Rush, server: Any, people: list[dict[str, int]], db_path: Path) -> None:
    """A digest is whole when its person's DM holds every paper the bot planned for them."""
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        planned = dict(
            conn.execute(
                "SELECT s.user_id, COUNT(i.paper_id) FROM subscriptions s JOIN digest_runs r ON r.subscription_id = s.id"
                " JOIN digest_items i ON i.run_id = r.id GROUP BY s.user_id"
            ).fetchall()
        )
    in_channel: dict[int, list[Any]] = {}
    for message in server.world.messages.values():  # once: a scan per person would be 10,000 × 60,000
        if not message.deleted and not message.ephemeral:
            in_channel.setdefault(message.channel.id, []).append(message)
    for person in people:
        messages = in_channel.get(person["dm"], [])
        papers = [m for m in messages if m.author is server.bot_user and m.embeds]
        if planned.get(person["user"]) and len(papers) == planned[person["user"]]:
            rush.whole += 1
        elif len(rush.short) < 5:
            rush.short.append(
                f"user {person['user']} got {len(papers)} of the {planned.get(person['user'], 0)} papers "
                f"planned; {len(messages)} messages in the DM; " + describe_run(db_path, person["user"])
            )
    rush.papers = sum(planned.values())


def describe_run(db_path: Path, user_id: int) -> str:
    """What the store says of a person's digest run: its state, header and papers sent."""
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        runs = conn.execute(
            "SELECT r.id, r.status, r.detail, r.header_sent_at, r.header_message_id,"
            " (SELECT COUNT(*) FROM digest_items i WHERE i.run_id = r.id AND i.sent_at IS NOT NULL),"
            " (SELECT COUNT(*) FROM digest_items i WHERE i.run_id = r.id AND i.message_id IS NOT NULL)"
            " FROM digest_runs r JOIN subscriptions s ON s.id = r.subscription_id WHERE s.user_id = ?",
            (user_id,),
        ).fetchall()
    return (
        "; ".join(
            f"run {run_id} {status} ({detail or 'no detail'}), header attempted {header_at or 'never'}"
            f"{' and confirmed' if header_id else ''}, {attempted} papers attempted, {confirmed} confirmed"
            for run_id, status, detail, header_at, header_id, attempted, confirmed in runs
        )
        or "no run"
    )


#: Lines discord.py and the bot log at start-up on any machine, not about sending.
START_UP_NOISE = ("PyNaCl is not installed", "davey is not installed")


def summarise_log(rush: Rush, path: Path, keep: Path | None) -> None:
    """Count the bot's WARNING and ERROR lines (``2026-… LEVEL logger: message``) by their first words,
    and keep a copy of the log when asked."""
    text = path.read_text()
    if keep is not None:
        keep.write_text(text)
    for line in text.splitlines():
        parts = line.split(" ", 4)
        if len(parts) < 5 or parts[2] not in ("WARNING", "ERROR", "CRITICAL"):
            continue
        if any(noise in parts[4] for noise in START_UP_NOISE):
            continue
        words = " ".join(parts[4].split()[:6])
        rush.logged[f"{parts[2]} {parts[3]} {words}"] += 1


def report(rows: list[Rush], args: argparse.Namespace) -> None:
    print(
        f"\n{args.subscribers:,} subscribers due the same minute, {PAPERS_PER_DIGEST} papers each, "
        f"sandbox with DISCORD_RATES{' (no DM channel stored)' if args.cold else ''}:\n"
    )
    print(HEADER)
    for rush in rows:
        print(rush.row())
    print("\nCalls per digest by route (answered / refused):\n")
    routes = sorted({route for rush in rows for route in rush.routes}, key=lambda r: -rows[0].routes[r])
    print("| route | " + " | ".join(rush.label for rush in rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for route in [*routes, "all"]:
        cells = []
        for rush in rows:
            made = rush.calls if route == "all" else rush.routes[route]
            refused = sum(rush.refused_routes.values()) if route == "all" else rush.refused_routes[route]
            per = rush.subscribers
            cells.append(f"{(made - refused) / per:.2f} / {refused / per:.2f}")
        print(f"| {route} | " + " | ".join(cells) + " |")
    for rush in rows:
        print(f"\n{rush.label}: first request {rush.started_late:.1f} s after the due minute")
        for short in rush.short:
            print(f"  short: {short}")
        for what, count in rush.logged.most_common(8):
            print(f"  bot log: {count:,} × {what}")
    if len(rows) == 2 and rows[1].calls:
        before, after = rows
        print(
            f"\ncalls per digest {before.calls / before.subscribers:.1f} → "
            f"{after.calls / after.subscribers:.1f}; rush {before.seconds:,.0f} s → {after.seconds:,.0f} s "
            f"({before.seconds / after.seconds:.1f}× faster)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--compare", metavar="REV", help="also run the bot of this commit, first")
    parser.add_argument("--cold", action="store_true", help="no DM channel stored: every digest opens one")
    parser.add_argument(
        "--lead", type=float, default=120.0, help="seconds from start to the due minute (min)"
    )
    parser.add_argument("--timeout", type=float, default=6 * 3600.0, help="give up a rush after this long")
    parser.add_argument("--keep-log", type=Path, help="copy this checkout's bot log here")
    parser.add_argument("--log-level", default="WARNING", help="the bot's PAPERBOT_LOG_LEVEL")
    parser.add_argument(
        "--spread",
        help="this checkout's PAPERBOT_DIGEST_SPREAD_MINUTES (default: as shipped); a --compare commit "
        "always runs with 0, every digest at once, as its rush was measured",
    )
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--people", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--due", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare is not None:
        asyncio.run(prepare(args.prepare, json.loads(args.people.read_text()), args.due, args.cold))
        return
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    runs = {"lead": args.lead, "cold": args.cold, "give_up_after": args.timeout, "log_level": args.log_level}
    rows: list[Rush] = []
    with tempfile.TemporaryDirectory(prefix="sendbench-trees-") as trees:
        if args.compare:
            with commit_checkout(args.compare, Path(trees)) as before:
                rows.append(
                    asyncio.run(
                        measure(before, f"before ({args.compare})", args.subscribers, spread="0", **runs)
                    )
                )
        rows.append(
            asyncio.run(
                measure(
                    REPO,
                    f"this checkout ({commit})",
                    args.subscribers,
                    keep_log=args.keep_log,
                    spread=args.spread,
                    **runs,
                )
            )
        )
    report(rows, args)


if __name__ == "__main__":
    main()
