"""Users and their topics: the explicit half of a profile (the learned half lives in `feedback`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.db import Connection, Database, utcnow


@dataclass(frozen=True, slots=True)
class UserRow:
    id: int
    created_at: str
    learning_paused: bool
    pending_notice: str | None


async def ensure_user(conn: Connection, user_id: int, at: str | None = None) -> None:
    """Create the `users` row inside an open transaction (every per-user row references it)."""
    await conn.execute(
        "INSERT INTO users (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", (user_id, at or utcnow())
    )


#: the most topics a person may follow (``bot.services.profile.MAX_TOPICS`` tells them before this)
TOPIC_LIMIT: Final = 25


class TopicLimitError(Exception):
    """A topic not added: the person follows ``limit`` topics already (found by the add itself, when
    several adds at once passed the check made before it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the person follows {limit} topics already")


class UserRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, user_id: int) -> UserRow | None:
        row = await self._db.fetchone(
            "SELECT id, created_at, learning_paused, pending_notice FROM users WHERE id = ?", (user_id,)
        )
        if row is None:
            return None
        return UserRow(int(row[0]), str(row[1]), bool(row[2]), row[3])

    async def dm_channel(self, user_id: int) -> int | None:
        """The id of the user's DM channel with the bot, once known."""
        value = await self._db.fetchval("SELECT dm_channel_id FROM users WHERE id = ?", (user_id,))
        return None if value is None else int(value)

    async def set_dm_channel(self, user_id: int, channel_id: int | None) -> None:
        """Keep (or, with None, forget) the user's DM channel id."""
        async with self._db.transaction() as conn:
            if channel_id is not None:
                await ensure_user(conn, user_id)
            await conn.execute("UPDATE users SET dm_channel_id = ? WHERE id = ?", (channel_id, user_id))

    async def learning_paused(self, user_id: int) -> bool:
        value = await self._db.fetchval("SELECT learning_paused FROM users WHERE id = ?", (user_id,))
        return bool(value)

    async def set_learning_paused(self, user_id: int, paused: bool) -> None:
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id)
            await conn.execute(
                "UPDATE users SET learning_paused = ? WHERE id = ?", (1 if paused else 0, user_id)
            )

    async def topics(self, user_id: int) -> list[str]:
        """The user's topics, oldest first."""
        rows = await self._db.fetchall(
            "SELECT topic FROM user_topics WHERE user_id = ? ORDER BY added_at, rowid", (user_id,)
        )
        return [str(row[0]) for row in rows]

    async def add_topic(self, user_id: int, topic: str, *, limit: int = TOPIC_LIMIT) -> bool:
        """Add a topic; False when the user already had it (exact text). :class:`TopicLimitError`, and
        nothing added, when they follow ``limit`` topics already: counted in the transaction that
        adds, the person's row locked first on PostgreSQL, so that adds at the same moment cannot all
        pass the count."""
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id)
            if conn.dialect == "postgresql":
                await conn.execute("SELECT 1 FROM users WHERE id = ? FOR UPDATE", (user_id,))
            if await conn.fetchone(
                "SELECT 1 FROM user_topics WHERE user_id = ? AND topic = ?", (user_id, topic)
            ):
                return False
            if await conn.fetchval("SELECT COUNT(*) FROM user_topics WHERE user_id = ?", (user_id,)) >= limit:
                raise TopicLimitError(limit)
            added = await conn.execute(
                "INSERT INTO user_topics (user_id, topic, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (user_id, topic, utcnow()),
            )
            return added > 0

    async def replace_topic(self, user_id: int, old: str, new: str) -> bool:
        """Follow ``new`` in place of ``old`` (exact texts), in one transaction; False (and nothing
        written) when the user does not follow ``old``."""
        async with self._db.transaction() as conn:
            if not await conn.execute(
                "DELETE FROM user_topics WHERE user_id = ? AND topic = ?", (user_id, old)
            ):
                return False
            await conn.execute(
                "INSERT INTO user_topics (user_id, topic, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (user_id, new, utcnow()),
            )
            return True

    async def remove_topic(self, user_id: int, topic: str) -> bool:
        """Remove a topic (exact text); False when the user did not have it."""
        return (
            await self._db.execute(
                "DELETE FROM user_topics WHERE user_id = ? AND topic = ?", (user_id, topic)
            )
            > 0
        )


@dataclass(frozen=True, slots=True)
class ForgetCounts:
    """How many rows about one user `forget_user` deleted, by kind."""

    topics: int = 0
    feedback: int = 0
    shown: int = 0
    subscriptions: int = 0
    digests_sent: int = 0
    posted_messages: int = 0
    searches: int = 0
    follows: int = 0
    user: int = 0

    @property
    def total(self) -> int:
        return (
            self.topics
            + self.feedback
            + self.shown
            + self.subscriptions
            + self.digests_sent
            + self.posted_messages
            + self.searches
            + self.follows
            + self.user
        )


async def forget_user(db: Database, user_id: int) -> ForgetCounts:
    """Delete every row about the user, in one transaction (all or nothing).

    Channel feeds the user set up belong to their channel and stay, without the user's id.
    """
    counts: dict[str, int] = {}
    statements = (
        ("topics", "DELETE FROM user_topics WHERE user_id = ?"),
        ("feedback", "DELETE FROM feedback WHERE user_id = ?"),
        ("shown", "DELETE FROM recommendations_shown WHERE user_id = ?"),
        ("digests_sent", "DELETE FROM digest_sent WHERE user_id = ?"),
        # digest_runs and digest_items of the user's subscription go with it (ON DELETE CASCADE)
        ("subscriptions", "DELETE FROM subscriptions WHERE kind = 'user' AND user_id = ?"),
        ("posted_messages", "DELETE FROM posted_messages WHERE recipient_id = ?"),
        ("searches", "DELETE FROM searches WHERE user_id = ?"),
        ("follows", "DELETE FROM author_follows WHERE user_id = ?"),
        ("user", "DELETE FROM users WHERE id = ?"),
    )
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE subscriptions SET created_by = NULL WHERE kind = 'channel' AND created_by = ?", (user_id,)
        )
        for name, sql in statements:
            counts[name] = await conn.execute(sql, (user_id,))
    return ForgetCounts(**counts)
