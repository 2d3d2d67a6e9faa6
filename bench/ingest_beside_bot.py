"""`paperbot ingest` in another process beside the running bot: how fast the bot answers meanwhile, and
how soon the new papers are searchable.

    .venv/bin/python bench/ingest_beside_bot.py [PATH…] [--searchable-within 420]

The real PaperBot runs against the in-process local Discord on a fresh database holding the shipped
corpus. A child process runs `python -m bot ingest PATH…` (default: the 35,712-paper
../shared/data/multivenue/multivenue_corpus.jsonl.gz) on the same database. While it runs, people
send `/paper search` four times a second (a handful of topics); each one's time to first response is
Discord's: from the INTERACTION_CREATE to the bot's callback (Discord refuses a first response after
3 s). After the child exits, the bench waits until the bot's index holds every stored paper and a
title from the end of the input is found by `/paper search`, and prints how long that took.
Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import (  # noqa: E402
    MULTIVENUE,
    QUERIES,
    first_response,
    last_title,
    load_average,
    percentile,
    start_ingest,
)

from bot.sandbox import SandboxServer  # noqa: E402
from bot.sandbox.harness import running_paperbot, sandbox_settings  # noqa: E402

SEARCHED = QUERIES[:6]  # the searches bench/README's figures were measured with
SEARCH_EVERY = 0.25  # seconds between two people's searches while the ingest runs


async def measure(paths: list[Path], patience: float) -> None:
    probe = last_title(paths[-1])
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "paperbot.db"
        async with SandboxServer() as server:
            settings = sandbox_settings(
                server, db_path, person_limits=False
            )  # two people searching 4 times a second
            async with running_paperbot(server, settings) as running:
                services = running.services
                started = time.perf_counter()
                child = await start_ingest(
                    paths,
                    {"PAPERBOT_DB": str(db_path), "PAPERBOT_LOG_LEVEL": "WARNING"},
                    stdout=asyncio.subprocess.DEVNULL,
                )
                searches: list[asyncio.Task[float | None]] = []
                while child.returncode is None:
                    query = SEARCHED[len(searches) % len(SEARCHED)]
                    user = ("bob", "carol")[len(searches) % 2]
                    searches.append(asyncio.create_task(first_response(server, user, query, timeout=15)))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(child.wait()), SEARCH_EVERY)
                await child.wait()
                ended = time.perf_counter()
                waits = [w for w in await asyncio.gather(*searches) if w is not None]
                stored = await services.papers.count()
                searchable: float | None = None
                while time.perf_counter() - ended < patience:
                    if len(services.search) >= stored:
                        result = await server.run_command("carol", "paper search", query=probe, check=False)
                        if probe[:40] in result.text.replace("\\", ""):  # titles are markdown-escaped
                            searchable = time.perf_counter() - ended
                            break
                    await asyncio.sleep(0.5)
                indexed = len(services.search)
    failed = len(searches) - len([w for w in waits if w <= 3.0])
    print(f"ingest child: exit {child.returncode} after {ended - started:.1f} s; {stored:,} papers stored")
    print(
        f"/paper search during the ingest: {len(searches)} sent, {failed} failed (no answer or past 3 s); "
        f"first response median {statistics.median(waits):.2f} s, p90 {percentile(waits, 0.9):.2f} s, "
        f"max {max(waits):.2f} s"
        if waits
        else f"/paper search during the ingest: {len(searches)} sent, none answered"
    )
    if searchable is None:
        print(
            f"not all searchable {patience:.0f} s after the ingest ended ({indexed:,} of {stored:,} indexed)"
        )
    else:
        print(f"every paper searchable {searchable:.1f} s after the ingest ended")
    print(f"load average: {load_average()} ({os.cpu_count()} cores)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", type=Path, default=[MULTIVENUE])
    parser.add_argument(
        "--searchable-within", type=float, default=420.0, help="seconds to wait after the ingest ends"
    )
    args = parser.parse_args()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"not found: {', '.join(missing)} (the default needs ../shared/data/)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(measure(args.paths, args.searchable_within))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
