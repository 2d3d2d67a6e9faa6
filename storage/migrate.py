"""Numbered SQL migrations (`storage/migrations/NNNN_name.sql`) tracked by `PRAGMA user_version`.

Each file is applied together with its version bump in one transaction, so a crash mid-migration
leaves the database at the previous version. Never edit an applied migration; add a new one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources

import aiosqlite

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    folder = resources.files("storage") / "migrations"
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..N without gaps, found {versions}")
    return found


async def current_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def apply_migrations(conn: aiosqlite.Connection) -> list[int]:
    """Apply every migration newer than the database; returns the versions applied."""
    version = await current_version(conn)
    migrations = available_migrations()
    if version > len(migrations):
        raise RuntimeError(
            f"database is at schema version {version}, newer than this paperbot "
            f"({len(migrations)}); upgrade paperbot"
        )
    applied: list[int] = []
    for migration in migrations[version:]:
        # executescript() commits any open transaction first and ignores isolation_level,
        # so the transaction is spelled out in the script itself.
        script = f"BEGIN IMMEDIATE;\n{migration.sql}\nPRAGMA user_version = {migration.version};\nCOMMIT;"
        try:
            await conn.executescript(script)
        except Exception:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            log.exception("migration %s failed; database left at version %d", migration.name, version)
            raise
        log.info("applied migration %s", migration.name)
        applied.append(migration.version)
        version = migration.version
    return applied
