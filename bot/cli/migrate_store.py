"""`paperbot migrate-store --to postgresql://…`: move the SQLite store (`PAPERBOT_DB`) into an empty
PostgreSQL database, every count checked (`storage.transfer`), safe to run again.

Stop the bot first: what it writes to the SQLite file after the copy began is not in the copy (a
process holding the store's leader lock is noticed, and the copy refused). Holding that lock itself, it
then refuses a store whose writes still wait in an outbox: beside the SQLite file, or in the configured
state folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from bot.settings import Settings
from storage.outbox import Outbox
from storage.postgres import PostgresDatabase
from storage.sqlite import SQLiteDatabase
from storage.store import StoreLocation
from storage.transfer import TransferError, copy_store

#: Exit statuses (README.md lists them).
COPIED = 0
REFUSED = 1
USAGE = 2


async def migrate_store(
    settings: Settings, target: str, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        destination = StoreLocation.parse(target)
    except ValueError as error:
        print(f"paperbot migrate-store: --to {error}", file=err)
        return USAGE
    source = settings.store.path
    if source is None or settings.store.in_memory:
        print(
            f"paperbot migrate-store: PAPERBOT_DB must be the SQLite file to copy, not {settings.store}",
            file=err,
        )
        return USAGE
    if destination.url is None:
        print("paperbot migrate-store: --to must be a postgresql:// URL", file=err)
        return USAGE
    if not source.is_file():
        print(f"paperbot migrate-store: no SQLite store at {source} (PAPERBOT_DB)", file=err)
        return USAGE
    async with await SQLiteDatabase.open(source) as sqlite_store:
        # The lock first: a bot still running is named as such, rather than its outbox, which changes
        # as it works; with the lock held, the outboxes are read as the stopped bots left them.
        running = await sqlite_store.leader_lock()
        if not await running.acquire():
            print(
                f"paperbot migrate-store: a paperbot process is running on {source} (it leads the store); "
                "stop it first. Nothing was copied.",
                file=err,
            )
            return REFUSED
        try:
            waiting = await _writes_not_stored(settings, source)
            if waiting:
                where = ", ".join(f"{count} in {path}" for path, count in waiting.items())
                print(
                    f"paperbot migrate-store: {sum(waiting.values())} reactions or clicks the bot accepted "
                    f"are not in {source} yet ({where}); start the bot once on it and stop it (it stores "
                    "them), then run this again. Nothing was copied.",
                    file=err,
                )
                return REFUSED
            async with await PostgresDatabase.open(destination.url, name=str(destination)) as postgres:
                print(f"copying {source} into {destination} …", file=out)
                try:
                    report = await copy_store(
                        sqlite_store,
                        postgres,
                        progress=lambda table, rows: print(f"  {table}: {rows}", file=out),
                    )
                except TransferError as error:
                    print(f"paperbot migrate-store: {error}", file=err)
                    return REFUSED
        finally:
            await running.release()
    if report.already_done:
        print(f"{destination} already holds this store, every count equal: nothing to do", file=out)
    else:
        print(f"copied; every count equals the source's ({sum(report.counts.values())} rows)", file=out)
    print(f"now set PAPERBOT_DB={destination} (and PAPERBOT_STATE_DIR) and start paperbot", file=out)
    return COPIED


async def _writes_not_stored(settings: Settings, source: Path) -> dict[Path, int]:
    """Entries waiting in each outbox that may hold writes for the store at `source`: the one beside
    the SQLite file (where a process without a state folder keeps it) and the configured state
    folder's; only those holding some."""
    outboxes = {source.with_name(source.name + ".pending")}
    if (configured := settings.local_file(".pending")) is not None:
        outboxes.add(configured)
    waiting: dict[Path, int] = {}
    for path in sorted(outboxes):
        if not path.is_file():
            continue
        outbox = await Outbox.open(path)
        try:
            if count := len(await outbox.all()):
                waiting[path] = count
        finally:
            await outbox.close()
    return waiting
