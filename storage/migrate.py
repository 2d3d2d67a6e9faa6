"""Numbered SQL migrations, one set per engine with the same numbers and names:
`storage/migrations/NNNN_name.sql` (SQLite) and `storage/migrations/postgresql/NNNN_name.sql`.

Each file is applied together with its version in one transaction, so a crash mid-migration leaves the
database at the previous version. SQLite keeps the version in `PRAGMA user_version`; PostgreSQL in the
one row of `schema_version`, and takes an advisory lock first, so processes starting together apply
each migration once. Never edit an applied migration; add a new one, for both engines.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import aiosqlite

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
DIALECTS = ("sqlite", "postgresql")
#: pg_advisory_xact_lock key held while a PostgreSQL migration runs ("paperbot migrate")
_MIGRATION_LOCK = 0x70627467


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def _folder(dialect: str) -> Traversable:
    root = resources.files("storage") / "migrations"
    if dialect == "sqlite":
        return root
    if dialect == "postgresql":
        return root / "postgresql"
    raise ValueError(f"no migrations for {dialect!r}")


def available_migrations(dialect: str = "sqlite") -> list[Migration]:
    found: list[Migration] = []
    for entry in _folder(dialect).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"{dialect} migrations must be numbered 1..N without gaps, found {versions}")
    return found


def _check_not_newer(version: int, migrations: list[Migration]) -> None:
    if version > len(migrations):
        raise RuntimeError(
            f"database is at schema version {version}, newer than this paperbot "
            f"({len(migrations)}); upgrade paperbot"
        )


async def current_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


def _sqlite_statements(script: str) -> list[str]:
    """A script's statements, one each (a trigger's body, semicolons and all, stays whole)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():  # comments after the last statement (or an error SQLite will name)
        statements.append(pending.strip())
    return statements


async def apply_sqlite_migrations(conn: aiosqlite.Connection) -> list[int]:
    """Apply every migration newer than the database; returns the versions applied. Each one runs in
    a BEGIN IMMEDIATE transaction that reads the version first, so processes starting together apply
    it once."""
    migrations = available_migrations("sqlite")
    version = await current_version(conn)
    _check_not_newer(version, migrations)
    applied: list[int] = []
    for migration in migrations[version:]:  # (none: no write lock taken at all)
        await conn.execute("BEGIN IMMEDIATE")
        try:
            version = await current_version(conn)
            _check_not_newer(version, migrations)
            if version >= migration.version:
                await conn.execute("COMMIT")
                continue
            for statement in _sqlite_statements(migration.sql):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {migration.version}")
            await conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            log.exception("migration %s failed; database left at its previous version", migration.name)
            raise
        log.info("applied migration %s", migration.name)
        applied.append(migration.version)
    return applied


async def apply_postgres_migrations(conn: Any) -> list[int]:
    """The same for PostgreSQL, on an asyncpg connection; safe when several processes start at once."""
    migrations = available_migrations("postgresql")
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
            "INSERT INTO schema_version SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM schema_version);"
        )
    applied: list[int] = []
    for migration in migrations:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            version = int(await conn.fetchval("SELECT version FROM schema_version"))
            _check_not_newer(version, migrations)
            if version >= migration.version:
                continue
            try:
                await conn.execute(migration.sql)
            except Exception:
                log.exception("migration %s failed; database left at version %d", migration.name, version)
                raise
            await conn.execute("UPDATE schema_version SET version = $1", migration.version)
        log.info("applied migration %s", migration.name)
        applied.append(migration.version)
    return applied


async def postgres_version(conn: Any) -> int:
    """The schema version of a PostgreSQL store (0 when it was never migrated)."""
    exists = await conn.fetchval("SELECT to_regclass('schema_version') IS NOT NULL")
    return int(await conn.fetchval("SELECT version FROM schema_version")) if exists else 0
