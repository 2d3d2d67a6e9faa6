"""The `paperbot` command line: run the bot, the sandbox, and the operator commands."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dotenv import dotenv_values

from bot.errors import USER_FACING, SettingsError, UserFacingError
from bot.log import setup_logging
from bot.settings import Settings, load_settings
from storage.models import IngestSummary
from storage.store import StoreLocation

log = logging.getLogger(__name__)

#: `paperbot ingest` exit codes (also in README.md).
INGEST_OK = 0
INGEST_SOME_REJECTED = 1
USAGE_ERROR = 2
INGEST_NOTHING = 3
INGEST_EXIT_CODES = f"""exit status:
  {INGEST_OK}  every record read was stored (added, merged, or already there)
  {INGEST_SOME_REJECTED}  some records were rejected (listed); the others were stored
  {USAGE_ERROR}  nothing was done: a missing file or folder, or an invalid setting
  {INGEST_NOTHING}  nothing was ingested: no supported file, or not one record could be read"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paperbot", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("run", help="run the bot on Discord (needs DISCORD_TOKEN)")
    start = commands.add_parser(
        "start", help="run on Discord when DISCORD_TOKEN is set, otherwise in the local sandbox"
    )
    arxiv_help = (
        "in the sandbox: start on the newest papers of this arXiv category (e.g. cs.LG; needs a "
        "network, else the shipped corpus); default: the first of PAPERBOT_ARXIV_CATEGORIES"
    )
    start.add_argument("--arxiv", metavar="CATEGORY", help=arxiv_help)
    sandbox = commands.add_parser("sandbox", help="try paperbot against a local Discord server")
    sandbox.add_argument(
        "--db", type=Path, help="use this database (default: PAPERBOT_DB if set, else a temporary one)"
    )
    sandbox.add_argument("--script", type=Path, help="run these console lines, then exit")
    sandbox.add_argument("--arxiv", metavar="CATEGORY", help=arxiv_help)

    ingest = commands.add_parser(
        "ingest",
        help="load papers from files or folders (.txt, .json, .jsonl, Atom, .gz)",
        epilog=INGEST_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ingest.add_argument("paths", nargs="+", type=Path)

    fetch = commands.add_parser("fetch", help="fetch recent papers from a live source")
    fetch_sources = fetch.add_subparsers(dest="source", required=True, metavar="SOURCE")
    arxiv = fetch_sources.add_parser("arxiv", help="recent arXiv papers (one request per 3 s)")
    arxiv.add_argument("--category", action="append", required=True, help="e.g. cs.LG (repeatable)")
    arxiv.add_argument("--days", type=int, default=1, help="how many days back (default 1)")

    search = commands.add_parser("search", help="search the corpus from the terminal")
    search.add_argument("query", nargs="?", help="the query (omit with --batch)")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="one JSON object per result")
    search.add_argument("--batch", type=Path, help="one query per line, or JSONL with _id and text")

    digest = commands.add_parser(
        "digest",
        help="send one user's digest by DM now (needs DISCORD_TOKEN), or print it with --dry-run",
        description="Send one user's digest by DM now, as their /paper digest would (the same papers, "
        "reactions and records; safe beside the running bot). Needs DISCORD_TOKEN.",
        epilog="exit status: 0 sent, 1 not sent (DMs closed, or another digest of theirs going out), "
        "2 bad usage or settings",
    )
    digest.add_argument("--user", type=int, required=True, help="Discord user id")
    digest.add_argument("--dry-run", action="store_true", help="print it; send and record nothing")

    move = commands.add_parser(
        "migrate-store",
        help="copy the SQLite store (PAPERBOT_DB) into an empty PostgreSQL database",
        description="Copy every table of the SQLite store PAPERBOT_DB names into an empty PostgreSQL "
        "database, check that every count is equal, and commit only then. Safe to run again. Stop the "
        "bot first.",
        epilog="exit status: 0 copied (or already there, every count equal), 1 refused (the target holds "
        "other data, writes still waiting beside the SQLite file, or a row PostgreSQL refused; nothing "
        "copied), 2 bad usage or settings",
    )
    move.add_argument("--to", required=True, metavar="URL", help="postgresql://USER@HOST[:PORT]/DATABASE")

    commands.add_parser(
        "health",
        help="is the paperbot run of these settings healthy? (its heartbeat in the state folder)",
        description="Read the heartbeat the running `paperbot run` with these settings (PAPERBOT_DB, "
        "PAPERBOT_STATE_DIR) writes every few seconds: healthy when it is recent and names no problem "
        "(store, gateway, login). For a container's health check.",
        epilog="exit status: 0 healthy, 1 not (no or an old heartbeat, or a problem it names), 2 bad settings",
    )
    commands.add_parser("stats", help="papers, users, subscriptions")
    backup = commands.add_parser("backup", help="online backup of the database (safe while the bot runs)")
    backup.add_argument("path", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"paperbot: {error}", file=sys.stderr)
        return USAGE_ERROR
    setup_logging(settings.log_level, token=settings.discord_token)
    handler = _HANDLERS[args.command]
    try:
        return asyncio.run(handler(args, settings))
    except (SettingsError, *USER_FACING) as error:
        print(f"paperbot: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from bot.runner import run_bot

    return await run_bot(settings)


async def _start(args: argparse.Namespace, settings: Settings) -> int:
    if settings.discord_token:
        print("paperbot: DISCORD_TOKEN is set: starting the bot on Discord.", file=sys.stderr)
        return await _run(args, settings)
    print(
        "paperbot: no DISCORD_TOKEN set: starting the local sandbox (a Discord on this machine, with a "
        "console where you type slash commands). Type 'help'.",
        flush=True,
    )
    return await _sandbox(argparse.Namespace(db=None, script=None, arxiv=args.arxiv), settings)


async def _sandbox(args: argparse.Namespace, settings: Settings) -> int:
    from bot.sandbox.console import run_console

    store = StoreLocation(path=args.db) if args.db is not None else _given_store(settings)
    arxiv = args.arxiv or (settings.arxiv_categories[0] if settings.arxiv_categories else None)
    return await run_console(settings, store=store, script=args.script, arxiv=arxiv)


def _given_store(settings: Settings, env_file: Path = Path(".env")) -> StoreLocation | None:
    """The store PAPERBOT_DB names, if it is set (in the environment or `.env`): the sandbox opens it
    rather than a temporary one."""
    if "PAPERBOT_DB" in os.environ or (env_file.is_file() and dotenv_values(env_file).get("PAPERBOT_DB")):
        return settings.store
    return None


async def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from bot.services.papers.ingest.runner import ingest_paths
    from storage.store import open_database

    missing = [str(path) for path in args.paths if not path.exists()]
    if missing:
        raise UserFacingError(f"no such file or folder: {', '.join(missing)}")
    bar = _ProgressBar()
    async with await open_database(settings.store) as db:
        summary = await ingest_paths(
            db, args.paths, progress=bar.update, max_bytes=settings.max_decompressed_bytes
        )
    bar.close()
    print(
        f"added {summary.added}, merged {summary.merged}, unchanged {summary.unchanged}, "
        f"rejected {summary.rejected}"
    )
    if summary.problems:
        print("problems (file:line: reason):")
    for problem in summary.problems:
        print(f"  {problem}")
    return ingest_exit_code(summary)


def ingest_exit_code(summary: IngestSummary) -> int:
    """What `paperbot ingest` exits with (see INGEST_EXIT_CODES)."""
    if not (summary.added or summary.merged or summary.unchanged):
        return INGEST_NOTHING
    return INGEST_SOME_REJECTED if summary.rejected else INGEST_OK


async def _fetch(args: argparse.Namespace, settings: Settings) -> int:
    from bot.services.papers.arxiv_fetch import fetch_arxiv_live
    from storage.store import open_database

    if not 1 <= args.days <= 30:
        raise UserFacingError("--days must be between 1 and 30")
    async with await open_database(settings.store) as db:
        summary = await fetch_arxiv_live(db, categories=args.category, days=args.days)
    print(summary.describe())
    return 0


async def _search(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.search import run_search

    return await run_search(args, settings)


async def _digest(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.digest import run_digest_dry_run, send_digest_now

    if args.dry_run:
        return await run_digest_dry_run(settings, user_id=args.user)
    return await send_digest_now(settings, user_id=args.user)


async def _migrate_store(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.migrate_store import migrate_store

    return await migrate_store(settings, args.to)


async def _stats(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import UTC, datetime

    from bot.services.admin.stats import gather_admin_stats
    from bot.services.papers.arxiv_fetch import last_fetch
    from storage.store import open_database

    async with await open_database(settings.store) as db:
        stats = await gather_admin_stats(db, datetime.now(UTC))
        fetched = await last_fetch(db)
    upcoming = stats.digests.next
    report = {
        "database": str(settings.store),
        **dataclasses.asdict(stats.counts),
        "last_arxiv_fetch": fetched,
        "next_digest": upcoming.due_utc.isoformat() if upcoming else None,
        "digests_due_24h": stats.digests.due_within_day,
    }
    print(json.dumps(report, indent=2))
    return 0


async def _health(args: argparse.Namespace, settings: Settings) -> int:
    from bot.health import judge

    path = settings.local_file(".health")
    if path is None:
        raise UserFacingError(
            f"{settings.store} is an in-memory database: no process keeps a heartbeat for it"
        )
    healthy, line = judge(path)
    print(line, file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else 1


async def _backup(args: argparse.Namespace, settings: Settings) -> int:
    from storage.sqlite import SQLiteDatabase

    source = settings.store.path
    if source is None:
        raise UserFacingError(
            f"{settings.store} is a PostgreSQL store: back it up with the server's own tools "
            "(pg_dump, or your host's snapshots); `paperbot backup` copies SQLite files"
        )
    if args.path.resolve() == source.resolve():
        raise UserFacingError("the backup path is the database itself; choose another file")
    if not source.exists():
        raise UserFacingError(f"no database at {source} (PAPERBOT_DB)")
    async with await SQLiteDatabase.open(source, migrate=False) as db:
        await db.backup(args.path)
    print(f"backed up {source} to {args.path}")
    return 0


class _ProgressBar:
    """A one-line progress bar on stderr for long ingests (only on a terminal)."""

    def __init__(self) -> None:
        self._shown = False

    def update(self, done: int, total: int) -> None:
        if not sys.stderr.isatty() or total < 1_000_000:  # done/total are bytes of input read
            return
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1)}%")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\n")


_HANDLERS = {
    "run": _run,
    "start": _start,
    "sandbox": _sandbox,
    "ingest": _ingest,
    "fetch": _fetch,
    "search": _search,
    "digest": _digest,
    "migrate-store": _migrate_store,
    "stats": _stats,
    "health": _health,
    "backup": _backup,
}
