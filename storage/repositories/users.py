"""Users and their topics: the explicit half of a profile (the learned half lives in `feedback`); and
forgetting a person.

`/paper forget-me` deletes every row about the person and, in the same transaction, notes when they
asked (`forgotten_users`). A write about a person can begin before that and reach the store after it:
a reaction waiting in some process's outbox (that process may even be down), a digest going out. Every
such write says when it began (``since``), and `forgotten_since` refuses it when the person asked to be
forgotten at or after that, in the write's own transaction; on PostgreSQL both take the person's
advisory lock first (`lock_person`), so a forgetting and a write never interleave, in any process. A
write that began after the forgetting is stored as usual: a person who comes back starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from storage.db import Connection, Database, PersonForgottenError, utcnow, utcnow_precise

#: How long the note of a forgetting is kept (`prune_forgotten`), and so how long a write about a
#: person may take to reach the store: one that began before the oldest note still kept is refused,
#: since whether its person asked to be forgotten meanwhile is no longer known.
FORGOTTEN_KEEP: Final = timedelta(days=90)
#: `app_state` key: every forgetting since this time is noted (older notes were deleted)
_NOTED_SINCE: Final = "forgotten_users:noted_since"
#: The first key of the PostgreSQL advisory locks of `lock_person` ("pbus"); the second is the user's.
_PERSON_LOCK: Final = 0x70627573


@dataclass(frozen=True, slots=True)
class UserRow:
    id: int
    created_at: str
    learning_paused: bool
    pending_notice: str | None


def _moment(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def lock_person(conn: Connection, user_id: int) -> None:
    """Order this transaction against a forgetting of the person in any process: on PostgreSQL an
    advisory lock held until the transaction ends (SQLite runs one write transaction at a time)."""
    if conn.dialect == "postgresql":
        key = (user_id ^ (user_id >> 32)) & 0x7FFFFFFF
        await conn.fetchval("SELECT pg_advisory_xact_lock(?, ?)", (_PERSON_LOCK, key))


async def forgotten_since(conn: Connection, user_id: int | None, since: str | None) -> bool:
    """Whether a write about the person that began at ``since`` must not be stored: they asked to be
    forgotten at or after it, or it began before the oldest forgetting still noted (`prune_forgotten`
    deleted older notes, so whether they asked is no longer known). Takes `lock_person` first, so the
    answer holds until the transaction ends. Without a person or a ``since`` (a write made now), False."""
    if user_id is None or since is None:
        return False
    await lock_person(conn, user_id)
    row = await conn.fetchone(
        "SELECT (SELECT forgotten_at FROM forgotten_users WHERE user_id = ?), "
        "(SELECT value FROM app_state WHERE key = ?)",
        (user_id, _NOTED_SINCE),
    )
    assert row is not None
    began = _moment(since)
    return any(stamp is not None and _moment(str(stamp)) >= began for stamp in (row[0], row[1]))


async def refuse_forgotten(conn: Connection, user_id: int | None, since: str | None) -> None:
    """PersonForgottenError when a write about ``user_id`` that began at ``since`` must not be stored
    (`forgotten_since`); without a person or a ``since`` (a write made now) there is nothing to check."""
    if await forgotten_since(conn, user_id, since):
        raise PersonForgottenError(f"user {user_id} asked to be forgotten after this write began")


async def ensure_user(
    conn: Connection, user_id: int, at: str | None = None, *, since: str | None = None
) -> None:
    """Create the `users` row inside an open transaction (every per-user row references it). With
    ``since`` (when the write began, for one that reaches the store later), PersonForgottenError when
    the person asked to be forgotten since (`refuse_forgotten`)."""
    if since is None:
        await lock_person(conn, user_id)
    await refuse_forgotten(conn, user_id, since)
    await conn.execute(
        "INSERT INTO users (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", (user_id, at or utcnow())
    )


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

    async def set_dm_channel(self, user_id: int, channel_id: int | None, *, since: str | None = None) -> None:
        """Keep (or, with None, forget) the user's DM channel id. ``since``: when the DM was looked up
        (PersonForgottenError if the person asked to be forgotten since)."""
        async with self._db.transaction() as conn:
            if channel_id is not None:
                await ensure_user(conn, user_id, since=since)
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
    mutes: int = 0
    library_texts: int = 0
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
            + self.mutes
            + self.library_texts
            + self.user
        )


async def forget_user(db: Database, user_id: int, *, at: str | None = None) -> ForgetCounts:
    """Delete every row about the user, and note that they asked at ``at`` (ISO-8601 UTC, to the
    microsecond; default now), in one transaction (all or nothing): writes about them that began before it are
    refused from then on (`forgotten_since`).

    Channel feeds the user set up belong to their channel and stay, without the user's id.
    """
    counts: dict[str, int] = {}
    statements = (
        ("topics", "DELETE FROM interests WHERE user_id = ?"),
        ("feedback", "DELETE FROM feedback WHERE user_id = ?"),
        ("shown", "DELETE FROM recommendations_shown WHERE user_id = ?"),
        ("digests_sent", "DELETE FROM digest_sent WHERE user_id = ?"),
        # digest_runs and digest_items of the user's subscription go with it (ON DELETE CASCADE)
        ("subscriptions", "DELETE FROM subscriptions WHERE kind = 'user' AND user_id = ?"),
        ("posted_messages", "DELETE FROM posted_messages WHERE recipient_id = ?"),
        ("searches", "DELETE FROM searches WHERE user_id = ?"),
        ("follows", "DELETE FROM author_follows WHERE user_id = ?"),
        ("mutes", "DELETE FROM mutes WHERE user_id = ?"),
        ("library_texts", "DELETE FROM library_texts WHERE user_id = ?"),
        ("user", "DELETE FROM users WHERE id = ?"),
    )
    async with db.transaction() as conn:
        await lock_person(conn, user_id)
        await conn.execute(
            "UPDATE subscriptions SET created_by = NULL WHERE kind = 'channel' AND created_by = ?", (user_id,)
        )
        for name, sql in statements:
            counts[name] = await conn.execute(sql, (user_id,))
        await conn.execute(
            "INSERT INTO forgotten_users (user_id, forgotten_at) VALUES (?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET forgotten_at = excluded.forgotten_at",
            (user_id, at or utcnow_precise()),
        )
    return ForgetCounts(**counts)


async def prune_forgotten(db: Database, before: str) -> int:
    """Delete the notes of forgettings older than ``before`` (same format as `forget_user`'s ``at``),
    and refuse from now on every write about a person that began before it (`forgotten_since`)."""
    async with db.transaction() as conn:
        noted_since = await conn.fetchval("SELECT value FROM app_state WHERE key = ?", (_NOTED_SINCE,))
        if noted_since is not None and _moment(str(noted_since)) >= _moment(before):
            return 0
        await conn.execute(
            "INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (_NOTED_SINCE, before, utcnow()),
        )
        return await conn.execute("DELETE FROM forgotten_users WHERE forgotten_at < ?", (before,))
