"""Moving a SQLite store into an empty PostgreSQL one (`paperbot migrate-store`).

Both stores are migrated to the same version first, so they have the same tables and columns. Every
table of the SQLite store (papers, people and their topics, reactions, followed authors, what was recommended,
subscriptions, digest runs, their items and what was sent, posted messages, searches, operational
state) is copied whole — every column the source has, tables in the order their foreign keys need,
rows in insertion order (so the PostgreSQL `rowid` columns keep it) — from one read transaction of
the source, inside one transaction of the target. Before that commits, each table's count is
compared with the source's; a difference rolls everything back. So an interrupted or failed copy
leaves the target empty, and running it again is safe: a target that already holds exactly the
source's counts is reported as done and left alone, and a target holding anything else is refused.

What the copy does not carry: the target's change sequence numbers the papers afresh (its own
`paper_changes` row; a search-index snapshot is rebuilt for the new store), and the outbox beside the
SQLite file (writes the bot accepted but had not stored) must be empty — start the bot once on the
SQLite store and stop it, and it stores them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from storage.db import Connection
from storage.postgres import PostgresDatabase
from storage.sqlite import SQLiteDatabase

log = logging.getLogger(__name__)

#: Tables the copy leaves to each store: its schema version and its own change sequence.
NOT_COPIED = frozenset({"paper_changes", "schema_version"})
#: Columns each store fills itself (the change sequence a paper got in that store).
FILLED_BY_THE_STORE = frozenset({("papers", "change_seq")})
CHUNK = 1000


class TransferError(Exception):
    """The copy was refused or did not match; the target was left as it was."""


@dataclass
class TransferReport:
    #: rows per table, as copied (or as found, when the target already held them)
    counts: dict[str, int] = field(default_factory=dict)
    already_done: bool = False


async def _tables_in_dependency_order(source: Connection) -> list[str]:
    names = [
        str(row[0])
        for row in await source.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    names = [name for name in names if name not in NOT_COPIED]
    needs = {
        name: {str(row[2]) for row in await source.fetchall(f"PRAGMA foreign_key_list({name})")} - {name}
        for name in names
    }
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [name for name in names if name not in ordered and needs[name] <= set(ordered)]
        if not ready:
            raise TransferError(f"the foreign keys of {sorted(set(names) - set(ordered))} form a cycle")
        ordered.extend(ready)
    return ordered


async def _columns(source: Connection, table: str) -> list[str]:
    rows = await source.fetchall(f"PRAGMA table_info({table})")
    return [str(row[1]) for row in rows if (table, str(row[1])) not in FILLED_BY_THE_STORE]


async def _counts(conn: Connection, tables: list[str]) -> dict[str, int]:
    return {table: int(await conn.fetchval(f"SELECT COUNT(*) FROM {table}")) for table in tables}


async def _copy_table(source: Connection, target: Connection, table: str, columns: list[str]) -> int:
    listed = ", ".join(columns)
    insert = f"INSERT INTO {table} ({listed}) VALUES ({', '.join('?' * len(columns))})"
    copied, last = 0, None
    while True:
        after = "" if last is None else "WHERE rowid > ? "
        rows = await source.fetchall(
            f"SELECT rowid, {listed} FROM {table} {after}ORDER BY rowid LIMIT {CHUNK}",
            () if last is None else (last,),
        )
        if not rows:
            return copied
        try:
            await target.executemany(insert, [tuple(row)[1:] for row in rows])
        except Exception as error:
            raise TransferError(
                f"{table}: one of the rows with rowid {rows[0][0]}–{rows[-1][0]} could not be copied: {error}"
            ) from error
        copied += len(rows)
        last = rows[-1][0]


async def _restart_identities(target: Connection) -> None:
    """Ids the target picks next come after the copied ones."""
    for row in await target.fetchall(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND is_identity = 'YES' AND column_name <> 'rowid'"
    ):
        table, column = str(row[0]), str(row[1])
        await target.fetchval(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
        )


async def copy_store(
    source: SQLiteDatabase,
    target: PostgresDatabase,
    *,
    progress: Callable[[str, int], Any] | None = None,
) -> TransferReport:
    """Copy `source` into the empty `target` (rules in the module docstring); TransferError when refused
    or when a count differs (the target then holds what it held before)."""
    async with source.snapshot() as reading:
        tables = await _tables_in_dependency_order(reading)
        expected = await _counts(reading, tables)
        found = await _counts_in(target, tables)
        if any(found.values()):
            if found == expected:
                return TransferReport(counts=found, already_done=True)
            held = ", ".join(f"{table} {found[table]}" for table in tables if found[table])
            raise TransferError(
                f"{target} already holds other data ({held} rows, not this store's counts); nothing was "
                "copied. Copy into an empty PostgreSQL database (drop and create it again)."
            )
        async with target.transaction() as writing:
            for table in tables:
                copied = await _copy_table(reading, writing, table, await _columns(reading, table))
                if progress is not None:
                    progress(table, copied)
            await _restart_identities(writing)
            copied_counts = await _counts(writing, tables)
            if copied_counts != expected:
                raise TransferError(f"the counts differ after the copy: {copied_counts} != {expected}")
    return TransferReport(counts=expected)


async def _counts_in(target: PostgresDatabase, tables: list[str]) -> dict[str, int]:
    async with target.snapshot() as conn:
        return await _counts(conn, tables)
