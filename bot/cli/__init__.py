"""The `paperbot` command line: run the bot, the sandbox, and the operator commands."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from bot.services.papers.arxiv_fetch import ArxivUnreachableError
from bot.services.papers.sources.http import SourceUnreachableError
from bot.settings import Settings, load_settings
from storage.models import IngestSummary
from storage.store import StoreLocation

log = logging.getLogger(__name__)

#: Exit statuses every command keeps to (README.md's "Exit status" table): 0 done; 1 it ran but could
#: not do (all of) what was asked, and says why; 2 nothing was done: bad usage, a bad setting, a path or
#: store that does not exist or cannot be written; `paperbot ingest` adds 3. Never a traceback.
OK = 0
NOT_DONE = 1
#: `paperbot ingest` exit codes (also in README.md).
INGEST_OK = OK
INGEST_SOME_REJECTED = 1
USAGE_ERROR = 2
INGEST_NOTHING = 3
INGEST_EXIT_CODES = f"""exit status:
  {INGEST_OK}  every record read was stored (added, merged, or already there)
  {INGEST_SOME_REJECTED}  some records were rejected (listed); the others were stored
  {USAGE_ERROR}  nothing was done: a missing file or folder, or an invalid setting
  {INGEST_NOTHING}  nothing was ingested: no supported file, or not one record could be read"""
FETCH_EXIT_CODES = f"""exit status:
  {OK}  every record fetched was stored (added, merged, or already there; none new is 0 too)
  {NOT_DONE}  some records were rejected (listed; the others were stored), or the source could not be
     reached (offline: said at the first attempt) or kept failing: what was stored stays and the
     next run resumes where it stopped
  {USAGE_ERROR}  nothing was done: bad usage (a category arXiv does not have, a URL that is no feed, a
     venue OpenReview does not know) or an invalid setting
  {INGEST_NOTHING}  not one of the records fetched could be read"""


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

    fetch = commands.add_parser(
        "fetch",
        help="fetch recent papers from a live source (arXiv, an RSS/Atom feed, bioRxiv, medRxiv, OpenReview)",
        epilog=FETCH_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fetch_sources = fetch.add_subparsers(dest="source", required=True, metavar="SOURCE")
    arxiv = fetch_sources.add_parser("arxiv", help="recent arXiv papers (one request per 3 s)")
    arxiv.add_argument("--category", action="append", required=True, help="e.g. cs.LG (repeatable)")
    arxiv.add_argument("--days", type=int, default=1, help="how many days back (default 1)")
    days_help = "how many days back (default: from where the last fetch of this source ended, else 2)"
    rss = fetch_sources.add_parser("rss", help="an RSS or Atom feed: a journal's table of contents")
    rss.add_argument("url", help="the feed's URL")
    rss.add_argument("--days", type=int, help=days_help)
    for server in ("biorxiv", "medrxiv"):
        preprints = fetch_sources.add_parser(
            server, help=f"{server} preprints posted lately (its public API)"
        )
        preprints.add_argument("--category", help="e.g. neuroscience, cell_biology (default: all)")
        preprints.add_argument("--days", type=int, help=days_help)
    openreview = fetch_sources.add_parser("openreview", help="an OpenReview venue's public papers")
    openreview.add_argument("venue", metavar="VENUE_ID", help="e.g. ICLR.cc/2025/Conference")

    search = commands.add_parser(
        "search",
        help="search the corpus from the terminal",
        description="Search the store PAPERBOT_DB names. Results alone go to stdout (one JSON object a "
        "line with --json); only warnings and errors are logged (everything at PAPERBOT_LOG_LEVEL=DEBUG).",
        epilog="exit status: 0 searched (no match included), 2 bad usage, a query that cannot be searched, "
        "or no store at PAPERBOT_DB",
    )
    search.add_argument("query", nargs="?", help="the query (omit with --batch)")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="one JSON object per result")
    search.add_argument("--batch", type=Path, help="one query per line, or JSONL with _id and text")

    digest = commands.add_parser(
        "digest",
        help="send one user's digest by DM now (needs DISCORD_TOKEN), or print it with --dry-run",
        description="Send one user's digest by DM now, as their /paper digest would (the same papers, "
        "reactions and records; safe beside the running bot). Needs DISCORD_TOKEN.",
        epilog="exit status: 0 sent (or shown), 1 not sent (a person paperbot does not know, DMs closed, or "
        "another digest of theirs going out), 2 bad usage or settings, or no store at PAPERBOT_DB",
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
    commands.add_parser(
        "stats",
        help="papers, users, subscriptions",
        epilog="exit status: 0 shown, 2 no store at PAPERBOT_DB (nothing created) or bad settings",
    )
    backup = commands.add_parser(
        "backup",
        help="online backup of the database (safe while the bot runs)",
        description="Copy the SQLite store PAPERBOT_DB names into PATH (created owner-only), consistent "
        "even while the bot writes. An existing PATH is kept unless --force.",
        epilog="exit status: 0 written, 2 nothing written (PATH exists without --force, cannot be written, "
        "no store at PAPERBOT_DB, a PostgreSQL store)",
    )
    backup.add_argument("path", type=Path)
    backup.add_argument("--force", action="store_true", help="replace PATH if it exists")
    return parser


#: What each operator command does with the store PAPERBOT_DB names: "read" one that must exist
#: already, or "open" one that may be created (in a folder that must exist: Docker's volume, systemd's
#: StateDirectory). `migrate-store` says so itself.
STORE_USE = {
    "run": "open",
    "ingest": "open",
    "fetch": "open",
    "search": "read",
    "digest": "read",
    "stats": "read",
    "backup": "read",
}
#: Commands whose output is for a script or a pipe: they log only warnings and errors (unless DEBUG).
QUIET_COMMANDS = frozenset({"search", "stats"})


def check_store(settings: Settings, use: str) -> None:
    """Refuse, before anything is created, a SQLite store in a folder that does not exist, and for a
    command that reads the store, a store that does not exist: a misspelt PAPERBOT_DB must not leave an
    empty store behind and answer as if it were the real one."""
    store = settings.store
    path = store.path
    if path is None or store.in_memory:
        return
    if use == "read" and not path.is_file():
        if path.is_dir():
            raise UserFacingError(f"PAPERBOT_DB names {path}, a folder: it must name the store's file")
        folder = "" if path.parent.is_dir() else f" (nor its folder {path.parent})"
        raise UserFacingError(
            f"no paperbot store at {path}{folder}: check PAPERBOT_DB (`paperbot ingest` or `paperbot run` "
            "creates one); nothing was created"
        )
    if not path.parent.is_dir():
        raise UserFacingError(
            f"PAPERBOT_DB names {path}, but its folder {path.parent} does not exist: create the folder or "
            "fix the path; nothing was created"
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"paperbot: {error}", file=sys.stderr)
        return USAGE_ERROR
    level = settings.log_level
    if args.command in QUIET_COMMANDS and level != "DEBUG":
        level = "WARNING"  # their output is read by scripts: progress lines would only be noise
    setup_logging(level, token=settings.discord_token)
    handler = _HANDLERS[args.command]
    try:
        if args.command in STORE_USE:
            check_store(settings, STORE_USE[args.command])
        return asyncio.run(handler(args, settings))
    except (ArxivUnreachableError, SourceUnreachableError) as error:
        print(f"paperbot: {error}", file=sys.stderr)
        return NOT_DONE
    except (SettingsError, *USER_FACING) as error:
        print(f"paperbot: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    except OSError as error:  # a file or folder it could not read or write, named by the system
        where = f" {error.filename}" if error.filename else ""
        print(f"paperbot:{where} {error.strerror or error}", file=sys.stderr)
        return USAGE_ERROR
    except Exception as error:
        log.debug("paperbot %s failed", args.command, exc_info=True)
        print(
            f"paperbot {args.command} failed: {type(error).__name__}: {error} "
            "(PAPERBOT_LOG_LEVEL=DEBUG shows where)",
            file=sys.stderr,
        )
        return NOT_DONE


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from bot.runner import run_bot

    return await run_bot(settings)


async def _start(args: argparse.Namespace, settings: Settings) -> int:
    if settings.discord_token:
        check_store(settings, STORE_USE["run"])
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
    if args.source != "arxiv":
        return await _fetch_source(args, settings)
    from bot.services.papers.arxiv_fetch import fetch_arxiv_live
    from bot.services.papers.arxiv_taxonomy import arxiv_category
    from storage.store import open_database

    if not 1 <= args.days <= 30:
        raise UserFacingError("--days must be between 1 and 30")
    categories = [arxiv_category(category) for category in args.category]  # before the store is opened
    async with await open_database(settings.store) as db:
        summary = await fetch_arxiv_live(db, categories=categories, days=args.days)
    print(summary.describe())
    return 0


async def _fetch_source(args: argparse.Namespace, settings: Settings) -> int:
    from bot.services.papers.sources.live import fetch_live
    from bot.services.papers.sources.specs import SourceSpec
    from storage.store import open_database

    argument = {"rss": "url", "openreview": "venue"}.get(args.source, "category")
    spec = SourceSpec(args.source, getattr(args, argument) or "")
    spec.build()  # a bad URL, category or venue id is refused before the store is opened
    async with await open_database(settings.store) as db:
        summary = await fetch_live(db, spec, days=args.days if args.source != "openreview" else None)
    print(summary.describe())
    if summary.problems:
        print("problems:")
    for problem in summary.problems:
        print(f"  {problem}")
    if summary.rejected and not summary.records:
        return INGEST_NOTHING
    return INGEST_SOME_REJECTED if summary.rejected else OK


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
        "sources": [
            {
                "source": f.source,
                "last_fetch": f.last_fetch_at,
                "fetched_until": f.fetched_until,
                "last_records": f.last_records,
                "last_added": f.last_added,
                "total_records": f.total_records,
                "total_added": f.total_added,
                "unfinished": f.cursor is not None,
                "last_error": f.last_error,
            }
            for f in stats.sources
        ],
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
    target = check_backup_target(args.path, source, force=args.force)
    # Into a file of its own beside the target, renamed over it once whole: a failure leaves no half
    # backup, and an existing file is replaced only by a complete one.
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        async with await SQLiteDatabase.open(source, migrate=False) as db:
            await db.backup(partial)
        os.replace(partial, target)
    except OSError as error:
        reason = error.strerror or str(error)
        raise UserFacingError(f"cannot write the backup to {target}: {reason}; nothing was written") from None
    finally:
        with contextlib.suppress(OSError):  # (a folder that is not one has no partial file either)
            partial.unlink(missing_ok=True)
    print(f"backed up {source} to {target}")
    return OK


def check_backup_target(target: Path, source: Path, *, force: bool) -> Path:
    """``target`` when a backup of ``source`` may be written there, else why not (nothing written)."""
    if target.resolve() == source.resolve():
        raise UserFacingError("the backup path is the database itself; choose another file")
    if not source.exists():
        raise UserFacingError(f"no database at {source} (PAPERBOT_DB)")
    if target.is_dir():
        raise UserFacingError(
            f"{target} is a folder: give the backup's file name, e.g. {target / 'paperbot.db'}"
        )
    if target.exists() and not force:
        raise UserFacingError(f"{target} exists: nothing was written (--force replaces it)")
    return target


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
