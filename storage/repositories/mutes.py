"""A person's muted topics: the phrases whose papers they are never shown. (A channel feed's muted
topics sit beside its topics, in ``subscriptions.mutes``: ``SubscriptionRepository.change_mutes``.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.db import Connection, Database, Row, utcnow
from storage.repositories.users import ensure_user

#: the most muted topics one person or one feed may have (``bot.services.people.mutes`` says so first)
MUTE_LIMIT: Final = 25

_COLUMNS = "id, user_id, phrase, terms, added_at"


class MuteLimitError(Exception):
    """A mute not added: the person has ``limit`` already (found by the add itself, when several adds at
    once passed the check made before it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} muted topics")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class MuteRow:
    id: int
    user_id: int
    phrase: str  # the words as typed
    terms: str  # their index terms, joined by spaces
    added_at: str


def _row(row: Row) -> MuteRow:
    return MuteRow(int(row[0]), int(row[1]), str(row[2]), str(row[3]), str(row[4]))


class MuteRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def mutes(self, user_id: int) -> list[MuteRow]:
        """The person's mutes, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM mutes WHERE user_id = ? ORDER BY added_at, id", (user_id,)
        )
        return [_row(row) for row in rows]

    async def add(
        self, user_id: int, phrase: str, terms: str, *, limit: int = MUTE_LIMIT, at: str | None = None
    ) -> tuple[MuteRow, bool]:
        """Add a mute; returns it and whether it is new (a mute with the same terms is returned as it
        is). :class:`MuteLimitError`, and nothing added, when the person has ``limit`` already: counted
        in the transaction that adds, the person's row locked first on PostgreSQL."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, now)
            existing = await _by_terms(conn, user_id, terms)
            if existing is not None:
                return existing, False
            count = int(await conn.fetchval("SELECT COUNT(*) FROM mutes WHERE user_id = ?", (user_id,)))
            if count >= limit:
                raise MuteLimitError(limit)
            inserted = await conn.execute(
                "INSERT INTO mutes (user_id, phrase, terms, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (user_id, phrase, terms, now),
            )
            added = await _by_terms(conn, user_id, terms)
            assert added is not None
            return added, inserted > 0

    async def remove(self, user_id: int, terms: str) -> MuteRow | None:
        """Remove the person's mute with these terms; returns it, or None when there was none."""
        async with self._db.transaction() as conn:
            found = await _by_terms(conn, user_id, terms)
            if found is None:
                return None
            await conn.execute("DELETE FROM mutes WHERE id = ?", (found.id,))
            return found


async def _by_terms(conn: Connection, user_id: int, terms: str) -> MuteRow | None:
    row = await conn.fetchone(
        f"SELECT {_COLUMNS} FROM mutes WHERE user_id = ? AND terms = ?", (user_id, terms)
    )
    return None if row is None else _row(row)
