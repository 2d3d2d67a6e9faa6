"""Stored search listings, looked up when someone pages through one."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Database, utcnow
from storage.repositories.users import refuse_forgotten


@dataclass(frozen=True, slots=True)
class StoredSearch:
    id: int
    kind: str  # "search" or "similar"
    query: str
    paper_id: int | None
    author: str | None
    venue: str | None
    year: int | None
    page_size: int
    user_id: int | None = None  # who ran it: only their model may order it


class SearchRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(
        self,
        *,
        kind: str,
        query: str = "",
        paper_id: int | None = None,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        page_size: int,
        user_id: int | None = None,
        search_id: int | None = None,
        created_at: str | None = None,
        since: str | None = None,
    ) -> StoredSearch:
        """Store a listing. With `search_id` (the interaction's id, known before the store has the
        row) saving again is a no-op; without it the store picks the id. ``since``: when the search
        was made, for one stored later (PersonForgottenError if its person asked to be forgotten since)."""
        columns = "kind, query, paper_id, author, venue, year, page_size, user_id, created_at"
        values = (kind, query, paper_id, author, venue, year, page_size, user_id, created_at or utcnow())
        marks = ", ".join("?" * len(values))
        async with self._db.transaction() as conn:
            await refuse_forgotten(conn, user_id, since)
            if search_id is None:
                row = await conn.fetchone(
                    f"INSERT INTO searches ({columns}) VALUES ({marks}) RETURNING id", values
                )
                assert row is not None
                search_id = int(row[0])
            else:
                await conn.execute(
                    f"INSERT INTO searches (id, {columns}) VALUES (?, {marks}) ON CONFLICT DO NOTHING",
                    (search_id, *values),
                )
        return StoredSearch(search_id, kind, query, paper_id, author, venue, year, page_size, user_id)

    async def delete_older_than(self, cutoff: str) -> int:
        """Delete the listings stored before ``cutoff`` (an ISO-8601 UTC stamp); returns how many."""
        return await self._db.execute("DELETE FROM searches WHERE created_at < ?", (cutoff,))

    async def get(self, search_id: int) -> StoredSearch | None:
        row = await self._db.fetchone(
            "SELECT id, kind, query, paper_id, author, venue, year, page_size, user_id FROM searches "
            "WHERE id = ?",
            (search_id,),
        )
        return None if row is None else StoredSearch(*row)
