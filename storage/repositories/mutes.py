"""Muted topics: the phrases whose papers a person, or a channel feed, is never shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.db import Connection, Database, Row, utcnow
from storage.repositories.users import ensure_user

#: the most muted topics one person or one feed may have (``bot.services.people.mutes`` says so first)
MUTE_LIMIT: Final = 25

_COLUMNS = "id, user_id, subscription_id, phrase, terms, added_at"


class MuteLimitError(Exception):
    """A mute not added: its owner has ``limit`` already (found by the add itself, when several adds at
    once passed the check made before it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} muted topics")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class MuteOwner:
    """Whose mute: a person's (``user_id``) or a channel feed's (``subscription_id``), never both."""

    user_id: int | None = None
    subscription_id: int | None = None

    def __post_init__(self) -> None:
        if (self.user_id is None) == (self.subscription_id is None):
            raise ValueError("a mute belongs to a person or to a feed")

    def where(self) -> tuple[str, tuple[int]]:
        if self.user_id is not None:
            return "user_id = ?", (self.user_id,)
        assert self.subscription_id is not None
        return "subscription_id = ?", (self.subscription_id,)


@dataclass(frozen=True, slots=True)
class MuteRow:
    id: int
    owner: MuteOwner
    phrase: str  # the words as typed
    terms: str  # their index terms, joined by spaces
    added_at: str


def _row(row: Row) -> MuteRow:
    owner = MuteOwner(
        user_id=None if row[1] is None else int(row[1]),
        subscription_id=None if row[2] is None else int(row[2]),
    )
    return MuteRow(int(row[0]), owner, str(row[3]), str(row[4]), str(row[5]))


class MuteRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def mutes(self, owner: MuteOwner) -> list[MuteRow]:
        """The owner's mutes, oldest first."""
        where, params = owner.where()
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM mutes WHERE {where} ORDER BY added_at, id", params
        )
        return [_row(row) for row in rows]

    async def add(
        self, owner: MuteOwner, phrase: str, terms: str, *, limit: int = MUTE_LIMIT, at: str | None = None
    ) -> tuple[MuteRow, bool]:
        """Add a mute; returns it and whether it is new (a mute with the same terms is returned as it
        is). :class:`MuteLimitError`, and nothing added, when the owner has ``limit`` already: counted in
        the transaction that adds, a person's row locked first on PostgreSQL."""
        now = at or utcnow()
        where, params = owner.where()
        async with self._db.transaction() as conn:
            if owner.user_id is not None:
                await ensure_user(conn, owner.user_id, now)
            elif conn.dialect == "postgresql":  # adds to one feed at the same moment count in turn
                await conn.fetchval("SELECT id FROM subscriptions WHERE id = ? FOR UPDATE", params)
            existing = await _by_terms(conn, where, params, terms)
            if existing is not None:
                return existing, False
            count = int(await conn.fetchval(f"SELECT COUNT(*) FROM mutes WHERE {where}", params))
            if count >= limit:
                raise MuteLimitError(limit)
            inserted = await conn.execute(
                "INSERT INTO mutes (user_id, subscription_id, phrase, terms, added_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (owner.user_id, owner.subscription_id, phrase, terms, now),
            )
            added = await _by_terms(conn, where, params, terms)
            assert added is not None
            return added, inserted > 0

    async def remove(self, owner: MuteOwner, terms: str) -> MuteRow | None:
        """Remove the owner's mute with these terms; returns it, or None when there was none."""
        where, params = owner.where()
        async with self._db.transaction() as conn:
            found = await _by_terms(conn, where, params, terms)
            if found is None:
                return None
            await conn.execute("DELETE FROM mutes WHERE id = ?", (found.id,))
            return found

    async def count(self) -> int:
        """Every stored mute (people's and feeds')."""
        return int(await self._db.fetchval("SELECT COUNT(*) FROM mutes"))


async def _by_terms(conn: Connection, where: str, params: tuple[int], terms: str) -> MuteRow | None:
    row = await conn.fetchone(f"SELECT {_COLUMNS} FROM mutes WHERE {where} AND terms = ?", (*params, terms))
    return None if row is None else _row(row)
