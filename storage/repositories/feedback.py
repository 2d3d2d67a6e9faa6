"""Reactions (like / dislike / save), bookmarks, and which papers a user has already been shown.

like and dislike exclude each other (setting one removes the other in the same transaction);
save is independent. Every write is idempotent: repeating it changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from storage.db import Database, utcnow
from storage.models import OPPOSITE, as_signal
from storage.models import Signal as Signal  # defined with the records; importable from here too
from storage.repositories.users import ensure_user

#: a paper is popular in a server once this many people there 👍'd it (see FeedbackRepository.popular)
POPULAR_LIKERS: Final = 3


@dataclass(frozen=True, slots=True)
class FeedbackRow:
    paper_id: int
    signal: Signal
    created_at: str  # ISO-8601 UTC


@dataclass(frozen=True, slots=True)
class SetResult:
    added: bool  # False when the signal was already there
    replaced: Signal | None  # the opposite signal it removed (like <-> dislike), if any


@dataclass(frozen=True, slots=True)
class Rated:
    """What a rating did to the store (:meth:`FeedbackRepository.rate`)."""

    paper_id: int
    changed: bool  # False when it was already so (a repeat) or learning is paused
    replaced: Signal | None = None  # the opposite signal a like or dislike removed
    paused: bool = False  # a like or dislike not recorded because the person paused learning


@dataclass(frozen=True, slots=True)
class FeedbackCounts:
    likes: int = 0
    dislikes: int = 0
    saves: int = 0


def _signal(value: object) -> Signal:
    signal = as_signal(str(value))
    if signal is None:
        raise ValueError(f"unknown feedback signal {str(value)!r}")
    return signal


class FeedbackRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- writes ---------------------------------------------------------------------------------

    async def set_signal(
        self,
        user_id: int,
        paper_id: int,
        signal: Signal,
        *,
        guild_id: int | None,
        at: str | None = None,
        since: str | None = None,
    ) -> SetResult:
        """Record one signal (idempotent); a like removes a dislike of the same paper and vice versa.
        ``since``: when it was given, for one stored later (see `ensure_user`)."""
        at = at or utcnow()
        replaced: Signal | None = None
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, at, since=since)
            opposite = OPPOSITE.get(signal)
            if opposite is not None and await conn.execute(
                "DELETE FROM feedback WHERE user_id = ? AND paper_id = ? AND signal = ?",
                (user_id, paper_id, opposite),
            ):
                replaced = opposite
            added = (
                await conn.execute(
                    "INSERT INTO feedback (user_id, paper_id, signal, guild_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (user_id, paper_id, signal, guild_id, at),
                )
                > 0
            )
        return SetResult(added=added, replaced=replaced)

    async def remove_signal(self, user_id: int, paper_id: int, signal: Signal) -> bool:
        """Take one signal back; False when it was not there."""
        changed = await self._db.execute(
            "DELETE FROM feedback WHERE user_id = ? AND paper_id = ? AND signal = ?",
            (user_id, paper_id, signal),
        )
        return changed > 0

    async def rate(
        self,
        user_id: int,
        paper_id: int,
        signal: Signal,
        *,
        added: bool,
        guild_id: int | None,
        at: str | None = None,
        since: str | None = None,
    ) -> Rated:
        """A rating given (``added``) or taken back, as it reaches the store behind the answer: a like or
        dislike while the person's learning is paused is not recorded (a save is, and a take-back always
        is). ``since``: as for `set_signal`."""
        if not added:
            return Rated(paper_id, await self.remove_signal(user_id, paper_id, signal))
        if signal != "save" and await self._db.fetchval(
            "SELECT learning_paused FROM users WHERE id = ?", (user_id,)
        ):
            return Rated(paper_id, False, paused=True)
        result = await self.set_signal(user_id, paper_id, signal, guild_id=guild_id, at=at, since=since)
        return Rated(paper_id, result.added or result.replaced is not None, result.replaced)

    async def react(
        self,
        *,
        user_id: int,
        message_id: int,
        signal: Signal,
        added: bool,
        guild_id: int | None,
        at: str | None = None,
        since: str | None = None,
    ) -> Rated | None:
        """A rating on a message the bot posted, given or taken back (as :meth:`rate`, on the paper the
        message shows); None when the store knows no such message."""
        paper_id = await self._db.fetchval(
            "SELECT paper_id FROM posted_messages WHERE message_id = ?", (message_id,)
        )
        if paper_id is None:
            return None
        return await self.rate(
            user_id, int(paper_id), signal, added=added, guild_id=guild_id, at=at, since=since
        )

    async def clear_learned(self, user_id: int) -> FeedbackCounts:
        """Forget every like and dislike of the user (bookmarks stay); returns what was removed."""
        async with self._db.transaction() as conn:
            rows = await conn.fetchall(
                "SELECT signal, COUNT(*) FROM feedback WHERE user_id = ? AND signal IN ('like', 'dislike') "
                "GROUP BY signal",
                (user_id,),
            )
            counts = {str(row[0]): int(row[1]) for row in rows}
            await conn.execute(
                "DELETE FROM feedback WHERE user_id = ? AND signal IN ('like', 'dislike')", (user_id,)
            )
        return FeedbackCounts(likes=counts.get("like", 0), dislikes=counts.get("dislike", 0))

    async def mark_shown(
        self,
        user_id: int,
        paper_ids: Iterable[int],
        *,
        at: str | None = None,
        brought: Mapping[int, int | None] | None = None,
    ) -> None:
        """The person was shown these papers (not recommended again); ``brought``: the interest that
        brought each (paper id → interest id), so that their reactions to it teach that interest."""
        ids = list(dict.fromkeys(paper_ids))
        if not ids:
            return
        at = at or utcnow()
        brought = brought or {}
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, at)
            await conn.executemany(
                "INSERT INTO recommendations_shown (user_id, paper_id, shown_at, interest_id) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [(user_id, paper_id, at, brought.get(paper_id)) for paper_id in ids],
            )

    # -- reads ----------------------------------------------------------------------------------

    async def signals_for(self, user_id: int) -> list[FeedbackRow]:
        """Every signal of the user, oldest first."""
        rows = await self._db.fetchall(
            "SELECT paper_id, signal, created_at FROM feedback WHERE user_id = ? ORDER BY created_at, rowid",
            (user_id,),
        )
        return [FeedbackRow(int(r[0]), _signal(r[1]), str(r[2])) for r in rows]

    async def signals_on(self, user_id: int, paper_id: int) -> set[Signal]:
        rows = await self._db.fetchall(
            "SELECT signal FROM feedback WHERE user_id = ? AND paper_id = ?", (user_id, paper_id)
        )
        return {_signal(r[0]) for r in rows}

    async def counts(self, user_id: int) -> FeedbackCounts:
        rows = await self._db.fetchall(
            "SELECT signal, COUNT(*) FROM feedback WHERE user_id = ? GROUP BY signal", (user_id,)
        )
        counts = {str(r[0]): int(r[1]) for r in rows}
        return FeedbackCounts(counts.get("like", 0), counts.get("dislike", 0), counts.get("save", 0))

    async def saved(self, user_id: int, *, limit: int | None = None) -> list[int]:
        """Bookmarked paper ids, newest first."""
        sql = "SELECT paper_id FROM feedback WHERE user_id = ? AND signal = 'save' ORDER BY created_at DESC, rowid DESC"
        params: tuple[int, ...] = (user_id,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (user_id, limit)
        return [int(r[0]) for r in await self._db.fetchall(sql, params)]

    async def seen_ids(self, user_id: int) -> set[int]:
        """Papers the user must not be recommended again: shown, sent by a digest, or rated."""
        rows = await self._db.fetchall(
            "SELECT paper_id FROM recommendations_shown WHERE user_id = ? "
            "UNION SELECT paper_id FROM digest_sent WHERE user_id = ? "
            "UNION SELECT paper_id FROM feedback WHERE user_id = ?",
            (user_id, user_id, user_id),
        )
        return {int(r[0]) for r in rows}

    async def learns_from_reactions(self, user_id: int) -> bool:
        """Whether the person's reactions may order what they see: they gave at least one (a 👍, 👎
        or 🔖) and have not paused learning. One small read, where :meth:`learning_inputs` reads
        everything, so that a search by someone without reactions (most people) stops here."""
        value = await self._db.fetchval(
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM feedback WHERE user_id = ?) "
            "AND NOT EXISTS (SELECT 1 FROM users WHERE id = ? AND learning_paused <> 0) THEN 1 ELSE 0 END",
            (user_id, user_id),
        )
        return bool(value)

    async def learning_inputs(self, user_id: int) -> tuple[list[str], list[FeedbackRow], set[int]]:
        """What ranking needs of a user, in one read: (their active typed topics oldest first,
        :meth:`signals_for`, :meth:`seen_ids`)."""
        rows = await self._db.fetchall(
            "SELECT 0, topic, NULL, added_at, id FROM interests WHERE user_id = ? AND kind = 'topic' "
            "AND removed_at IS NULL AND paused_at IS NULL "
            "UNION ALL SELECT 1, CAST(paper_id AS TEXT), signal, created_at, rowid FROM feedback WHERE user_id = ? "
            "UNION ALL SELECT 2, CAST(paper_id AS TEXT), NULL, NULL, NULL FROM recommendations_shown "
            "WHERE user_id = ? "
            "UNION ALL SELECT 2, CAST(paper_id AS TEXT), NULL, NULL, NULL FROM digest_sent WHERE user_id = ?",
            (user_id, user_id, user_id, user_id),
        )
        topics = sorted((r for r in rows if r[0] == 0), key=lambda r: (str(r[3]), int(r[4])))
        signals = sorted((r for r in rows if r[0] == 1), key=lambda r: (str(r[3]), int(r[4])))
        seen = {int(r[1]) for r in rows if r[0] != 0}
        return (
            [str(r[1]) for r in topics],
            [FeedbackRow(int(r[1]), _signal(r[2]), str(r[3])) for r in signals],
            seen,
        )

    async def popular(
        self, *, guild_id: int | None, limit: int, exclude: Collection[int] = ()
    ) -> list[tuple[int, int]]:
        """(paper id, how many people liked it) of the papers popular in one server: 👍'd there by at
        least :data:`POPULAR_LIKERS` people, and by more people there than 👎'd it; the most liked
        first, then the most recently liked.

        Only 👍 and 👎 given in that server count: never a 🔖 (a bookmark is private), nor what was
        given in a DM or another server; a DM (no server) has nothing popular. Since so few people
        can stand behind a count, it takes several, so that nobody's own 👍 can be read off it.
        """
        if guild_id is None:
            return []
        likes = "SUM(CASE WHEN signal = 'like' THEN 1 ELSE 0 END)"
        dislikes = "SUM(CASE WHEN signal = 'dislike' THEN 1 ELSE 0 END)"
        rows = await self._db.fetchall(
            f"""
            SELECT paper_id, {likes} AS likes, MAX(CASE WHEN signal = 'like' THEN created_at END) AS latest
            FROM feedback
            WHERE guild_id = ? AND signal IN ('like', 'dislike')
            GROUP BY paper_id
            HAVING {likes} >= ? AND {likes} > {dislikes}
            ORDER BY likes DESC, latest DESC, paper_id DESC
            LIMIT ?
            """,
            (guild_id, POPULAR_LIKERS, limit + len(exclude)),
        )
        excluded = set(exclude)
        return [(int(r[0]), int(r[1])) for r in rows if int(r[0]) not in excluded][:limit]
