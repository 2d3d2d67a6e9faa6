"""A person's interests (typed topics, papers they named, groups of liked papers), and what the
recommender reads to serve each: which interest brought each paper they were shown or sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from storage.db import Database, Row, utcnow
from storage.repositories.feedback import FeedbackRow, _signal
from storage.repositories.users import ensure_user

InterestKind = Literal["topic", "paper", "liked"]
Origin = Literal["interests", "subscribe", "reaction"]

#: the most interests a person may have at once (``bot.services.recommend.interests`` tells them first)
INTEREST_LIMIT: Final = 25

_COLUMNS = "id, user_id, kind, key, topic, paper_id, origin, paused_at, removed_at, added_at, narrowed_by"


class InterestLimitError(Exception):
    """An interest not added: the person has ``limit`` already (found by the add itself, when several
    adds at once passed the check made before it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} interests")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class InterestRow:
    id: int
    user_id: int
    kind: InterestKind
    key: str  # "topic:<text as typed>" or "paper:<id>"
    topic: str | None  # the words typed (a topic)
    paper_id: int | None  # the paper named, or the first liked paper of a group
    origin: Origin
    paused_at: str | None
    removed_at: str | None
    added_at: str
    #: a topic's: the paper the person named as the part of it they mean (its words then bind no pick)
    narrowed_by: int | None = None

    @property
    def active(self) -> bool:
        return self.paused_at is None and self.removed_at is None


def topic_key(topic: str) -> str:
    return f"topic:{topic}"


def paper_key(paper_id: int) -> str:
    return f"paper:{paper_id}"


def _kind(value: object) -> InterestKind:
    if value == "topic" or value == "paper" or value == "liked":
        return value
    raise ValueError(f"unknown interest kind {value!r}")


def _origin(value: object) -> Origin:
    if value == "interests" or value == "subscribe" or value == "reaction":
        return value
    raise ValueError(f"unknown interest origin {value!r}")


def _row(row: Row) -> InterestRow:
    return InterestRow(
        id=int(row[0]),
        user_id=int(row[1]),
        kind=_kind(row[2]),
        key=str(row[3]),
        topic=None if row[4] is None else str(row[4]),
        paper_id=None if row[5] is None else int(row[5]),
        origin=_origin(row[6]),
        paused_at=None if row[7] is None else str(row[7]),
        removed_at=None if row[8] is None else str(row[8]),
        added_at=str(row[9]),
        narrowed_by=None if row[10] is None else int(row[10]),
    )


@dataclass(frozen=True, slots=True)
class PersonInputs:
    """Everything the recommender reads of a person, in one read: their interests (removed ones too,
    oldest first), their reactions (oldest first), every paper they have seen (shown, sent or rated)
    and the interest that brought each paper shown or sent (None: none did)."""

    interests: tuple[InterestRow, ...]
    signals: tuple[FeedbackRow, ...]
    seen: frozenset[int]
    brought: Mapping[int, int]
    learning_paused: bool


@dataclass(frozen=True, slots=True)
class PickCounts:
    """Of the papers one interest brought: how many, and how many the person 👍'd (or 🔖'd)."""

    picks: int = 0
    liked: int = 0


class InterestRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def interests(self, user_id: int, *, removed: bool = False) -> list[InterestRow]:
        """The person's interests, oldest first (with ``removed``, the removed ones too)."""
        where = "" if removed else " AND removed_at IS NULL"
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM interests WHERE user_id = ?{where} ORDER BY added_at, id", (user_id,)
        )
        return [_row(row) for row in rows]

    async def topics(self, user_id: int) -> list[str]:
        """The words of the person's typed topics (paused ones too), oldest first."""
        return [i.topic for i in await self.interests(user_id) if i.kind == "topic" and i.topic is not None]

    async def add(
        self,
        user_id: int,
        kind: InterestKind,
        key: str,
        *,
        topic: str | None = None,
        paper_id: int | None = None,
        origin: Origin = "interests",
        limit: int = INTEREST_LIMIT,
        at: str | None = None,
    ) -> tuple[InterestRow, bool]:
        """Add an interest; returns it and whether it is new. One removed before comes back (its id,
        and so what its picks taught, with it). :class:`InterestLimitError`, and nothing added, when
        the person has ``limit`` interests already: counted in the transaction that adds, the
        person's row locked first on PostgreSQL, so adds at the same moment cannot all pass."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, now)
            if conn.dialect == "postgresql":
                await conn.execute("SELECT 1 FROM users WHERE id = ? FOR UPDATE", (user_id,))
            row = await conn.fetchone(
                f"SELECT {_COLUMNS} FROM interests WHERE user_id = ? AND key = ?", (user_id, key)
            )
            if row is not None and row[8] is None:
                return _row(row), False
            active = await conn.fetchval(
                "SELECT COUNT(*) FROM interests WHERE user_id = ? AND removed_at IS NULL", (user_id,)
            )
            if int(active) >= limit:
                raise InterestLimitError(limit)
            if row is not None:  # removed before: back, as it was
                await conn.execute(
                    "UPDATE interests SET removed_at = NULL, paused_at = NULL, origin = ?, added_at = ? "
                    "WHERE id = ?",
                    (origin, now, int(row[0])),
                )
                interest_id = int(row[0])
            else:
                interest_id = int(
                    await conn.fetchval(
                        "INSERT INTO interests (user_id, kind, key, topic, paper_id, origin, added_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                        (user_id, kind, key, topic, paper_id, origin, now),
                    )
                )
            stored = await conn.fetchone(f"SELECT {_COLUMNS} FROM interests WHERE id = ?", (interest_id,))
            assert stored is not None
            return _row(stored), True

    async def retopic(self, user_id: int, interest_id: int, topic: str) -> bool:
        """The interest's words become ``topic`` (a broad topic narrowed: what its picks taught stays);
        False when it is not the person's, or they follow ``topic`` already as another interest."""
        async with self._db.transaction() as conn:
            taken = await conn.fetchone(
                "SELECT id FROM interests WHERE user_id = ? AND key = ?", (user_id, topic_key(topic))
            )
            if taken is not None and int(taken[0]) != interest_id:
                return False
            changed = await conn.execute(
                "UPDATE interests SET topic = ?, key = ? WHERE id = ? AND user_id = ? AND kind = 'topic' "
                "AND removed_at IS NULL",
                (topic, topic_key(topic), interest_id, user_id),
            )
            return changed > 0

    async def narrow_by(self, user_id: int, interest_id: int, paper_id: int) -> bool:
        """The topic interest is narrowed to the part of it ``paper_id`` shows (the paper the person
        named for it); False when it is no active topic of theirs."""
        changed = await self._db.execute(
            "UPDATE interests SET narrowed_by = ? WHERE id = ? AND user_id = ? AND kind = 'topic' "
            "AND removed_at IS NULL",
            (paper_id, interest_id, user_id),
        )
        return changed > 0

    async def give_paper(
        self, user_id: int, interest_id: int, paper_id: int, *, at: str | None = None
    ) -> bool:
        """The paper the person named goes to the topic interest and nowhere else, in one transaction:
        the topic is narrowed by it, the interest the paper had started is removed and another topic it
        had narrowed is narrowed no longer (among interests neither paused nor removed); False, nothing
        changed, when it is no active topic of theirs."""
        async with self._db.transaction() as conn:
            changed = await conn.execute(
                "UPDATE interests SET narrowed_by = ? WHERE id = ? AND user_id = ? AND kind = 'topic' "
                "AND removed_at IS NULL",
                (paper_id, interest_id, user_id),
            )
            if not changed:
                return False
            await conn.execute(
                "UPDATE interests SET removed_at = ? WHERE user_id = ? AND kind = 'paper' AND paper_id = ? "
                "AND removed_at IS NULL AND paused_at IS NULL",
                (at or utcnow(), user_id, paper_id),
            )
            await conn.execute(
                "UPDATE interests SET narrowed_by = NULL WHERE user_id = ? AND narrowed_by = ? AND id <> ? "
                "AND removed_at IS NULL AND paused_at IS NULL",
                (user_id, paper_id, interest_id),
            )
            return True

    async def remove(self, user_id: int, interest_id: int, *, at: str | None = None) -> bool:
        """Stop serving the interest (kept as removed: a 👍 on a paper it brought does not start it
        again); False when it is not one of the person's."""
        changed = await self._db.execute(
            "UPDATE interests SET removed_at = ? WHERE id = ? AND user_id = ? AND removed_at IS NULL",
            (at or utcnow(), interest_id, user_id),
        )
        return changed > 0

    async def set_paused(
        self, user_id: int, interest_id: int, paused: bool, *, at: str | None = None
    ) -> bool:
        """Pause (or resume) one interest; False when it is not one of the person's."""
        if paused:
            sql = "UPDATE interests SET paused_at = ? WHERE id = ? AND user_id = ? AND paused_at IS NULL"
            params: tuple[object, ...] = (at or utcnow(), interest_id, user_id)
        else:
            sql = "UPDATE interests SET paused_at = NULL WHERE id = ? AND user_id = ?"
            params = (interest_id, user_id)
        changed = await self._db.execute(sql + " AND removed_at IS NULL", params)
        return changed > 0

    async def pick_counts(self, user_id: int) -> dict[int, PickCounts]:
        """Per interest: the papers it brought (shown or sent) and how many of them were 👍'd or 🔖'd."""
        rows = await self._db.fetchall(
            "SELECT brought.interest_id, COUNT(*), "
            "SUM(CASE WHEN EXISTS (SELECT 1 FROM feedback f WHERE f.user_id = ? AND f.paper_id = brought.paper_id "
            "AND f.signal IN ('like', 'save')) THEN 1 ELSE 0 END) "
            "FROM (SELECT paper_id, interest_id FROM recommendations_shown WHERE user_id = ? "
            "AND interest_id IS NOT NULL "
            "UNION SELECT paper_id, interest_id FROM digest_sent WHERE user_id = ? AND interest_id IS NOT NULL) "
            "AS brought GROUP BY brought.interest_id",
            (user_id, user_id, user_id),
        )
        return {int(r[0]): PickCounts(int(r[1]), int(r[2] or 0)) for r in rows}

    async def inputs(self, user_id: int) -> PersonInputs:
        """:class:`PersonInputs` in one read."""
        rows = await self._db.fetchall(
            "SELECT 1, paper_id, signal, created_at, rowid FROM feedback WHERE user_id = ? "
            "UNION ALL SELECT 2, paper_id, NULL, NULL, interest_id FROM recommendations_shown "
            "WHERE user_id = ? "
            "UNION ALL SELECT 3, paper_id, NULL, NULL, interest_id FROM digest_sent WHERE user_id = ? "
            "UNION ALL SELECT 4, learning_paused, NULL, NULL, NULL FROM users WHERE id = ?",
            (user_id, user_id, user_id, user_id),
        )
        signals = sorted((r for r in rows if r[0] == 1), key=lambda r: (str(r[3]), int(r[4])))
        brought: dict[int, int] = {}
        for r in rows:
            if r[0] in (2, 3) and r[4] is not None:
                brought.setdefault(int(r[1]), int(r[4]))
        return PersonInputs(
            interests=tuple(await self.interests(user_id, removed=True)),
            signals=tuple(FeedbackRow(int(r[1]), _signal(r[2]), str(r[3])) for r in signals),
            seen=frozenset(int(r[1]) for r in rows if r[0] in (1, 2, 3)),
            brought=brought,
            learning_paused=any(r[0] == 4 and r[1] for r in rows),
        )
