"""Each live source's fetch state (`source_fetches`): the cursor of an unfinished fetch, the day the
last finished one reached, its counts and its last error."""

from __future__ import annotations

from storage.db import Connection, Database, Row
from storage.models import SourceFetch

_COLUMNS = (
    "source, cursor, fetched_until, last_fetch_at, last_records, last_added, total_records, total_added, "
    "last_error, last_error_at"
)


def _fetch(row: Row) -> SourceFetch:
    return SourceFetch(
        str(row[0]),
        row[1],
        row[2],
        row[3],
        int(row[4]),
        int(row[5]),
        int(row[6]),
        int(row[7]),
        row[8],
        row[9],
    )


class SourceFetchRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, source: str) -> SourceFetch | None:
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM source_fetches WHERE source = ?", (source,))
        return None if row is None else _fetch(row)

    async def all(self) -> list[SourceFetch]:
        return [
            _fetch(r)
            for r in await self._db.fetchall(f"SELECT {_COLUMNS} FROM source_fetches ORDER BY source")
        ]

    async def save_cursor(self, conn: Connection, source: str, cursor: str) -> None:
        """Where an unfinished fetch resumes (in the transaction that stores the page's papers)."""
        await conn.execute(
            "INSERT INTO source_fetches (source, cursor) VALUES (?, ?) "
            "ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor",
            (source, cursor),
        )

    async def finish(
        self, conn: Connection, source: str, *, until: str, at: str, records: int, added: int
    ) -> None:
        """A finished fetch: no cursor, the day it reached, its counts; the last error is cleared."""
        await conn.execute(
            "INSERT INTO source_fetches (source, cursor, fetched_until, last_fetch_at, last_records, "
            "last_added, total_records, total_added) VALUES (?, NULL, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (source) DO UPDATE SET cursor = NULL, fetched_until = excluded.fetched_until, "
            "last_fetch_at = excluded.last_fetch_at, last_records = excluded.last_records, "
            "last_added = excluded.last_added, "
            "total_records = source_fetches.total_records + excluded.total_records, "
            "total_added = source_fetches.total_added + excluded.total_added, "
            "last_error = NULL, last_error_at = NULL",
            (source, until, at, records, added, records, added),
        )

    async def failed(self, source: str, *, error: str, at: str) -> None:
        """Why the last attempt stopped (its cursor, if any, stays for the next run)."""
        await self._db.execute(
            "INSERT INTO source_fetches (source, last_error, last_error_at) VALUES (?, ?, ?) "
            "ON CONFLICT (source) DO UPDATE SET last_error = excluded.last_error, "
            "last_error_at = excluded.last_error_at",
            (source, error[:500], at),
        )
