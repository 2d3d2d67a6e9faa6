"""The papers of a person's library that the store lacks, kept as their own text for that person only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from storage.db import Database, utcnow
from storage.repositories.users import ensure_user

#: the most such papers one person keeps (a library file holds at most 1,000 entries)
LIBRARY_TEXT_LIMIT: Final = 1000


@dataclass(frozen=True, slots=True)
class LibraryText:
    key: str  # the title, normalised (``storage.repositories.paper_keys.normalise_text``)
    title: str
    abstract: str | None


class LibraryTextRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def texts(self, user_id: int) -> list[LibraryText]:
        """The person's library papers kept as text, oldest first."""
        rows = await self._db.fetchall(
            "SELECT key, title, abstract FROM library_texts WHERE user_id = ? ORDER BY added_at, id",
            (user_id,),
        )
        return [LibraryText(str(r[0]), str(r[1]), None if r[2] is None else str(r[2])) for r in rows]

    async def add_many(
        self,
        user_id: int,
        texts: Sequence[LibraryText],
        *,
        limit: int = LIBRARY_TEXT_LIMIT,
        at: str | None = None,
    ) -> int:
        """Keep these texts for the person (one per key: a text kept before is left as it was), no more
        than ``limit`` in all; returns how many are new."""
        now = at or utcnow()
        added = 0
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, now)
            kept = int(
                await conn.fetchval("SELECT COUNT(*) FROM library_texts WHERE user_id = ?", (user_id,))
            )
            for text in texts:
                if kept + added >= limit:
                    break
                added += await conn.execute(
                    "INSERT INTO library_texts (user_id, key, title, abstract, added_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (user_id, text.key, text.title, text.abstract, now),
                )
        return added
