"""Digest subscriptions: one DM digest per user, one feed per channel (the scheduler's source of truth)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from storage.db import Connection, Database, Row, utcnow
from storage.models import Subscription
from storage.repositories.users import ensure_user, lock_person

_COLUMNS = (
    "id, kind, user_id, guild_id, channel_id, topics, time_local, timezone, frequency, weekday, "
    "count, active, paused_reason, created_by, created_at, updated_at, mutes"
)


@dataclass(frozen=True, slots=True)
class ScheduleFields:
    """What a subscribe or feed-set call stores (already validated by the service)."""

    topics: tuple[str, ...]
    time_local: str
    timezone: str
    frequency: str
    weekday: int
    count: int


class FeedLimitError(Exception):
    """The server has as many feeds as it may have: a new one was not stored."""

    def __init__(self, feeds: int, limit: int) -> None:
        super().__init__(f"the server has {feeds} feeds, its limit is {limit}")
        self.feeds = feeds
        self.limit = limit


def _feeds_lock_key(guild_id: int) -> int:
    """The advisory lock that serialises new feeds of one server (PostgreSQL)."""
    digest = hashlib.blake2b(f"paperbot feeds {guild_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _texts(value: str | None) -> tuple[str, ...]:
    """A JSON list of texts as stored (topics, mutes); most are empty, which need no parsing."""
    return () if not value or value == "[]" else tuple(map(str, json.loads(value)))


def _row_to_subscription(row: Row | Sequence[Any]) -> Subscription:
    # (unpacked once: the digest jobs' rebuild turns 10,000 rows on the event loop at every start)
    (id_, kind, user, guild, channel, topics, time_local, zone, frequency, weekday, count, active, paused,
     created_by, created_at, updated_at, mutes) = row  # fmt: skip
    return Subscription(
        id=int(id_),
        kind=str(kind),
        user_id=None if user is None else int(user),
        guild_id=None if guild is None else int(guild),
        channel_id=None if channel is None else int(channel),
        topics=_texts(topics),
        time_local=str(time_local),
        timezone=str(zone),
        frequency=str(frequency),
        weekday=int(weekday),
        count=int(count),
        active=bool(active),
        paused_reason=paused,
        created_by=None if created_by is None else int(created_by),
        created_at=str(created_at),
        updated_at=str(updated_at),
        mutes=_texts(mutes),
    )


MutesChange = Callable[[tuple[str, ...]], tuple[str, ...]]


class SubscriptionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, subscription_id: int) -> Subscription | None:
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM subscriptions WHERE id = ?", (subscription_id,)
        )
        return None if row is None else _row_to_subscription(row)

    async def for_user(self, user_id: int) -> Subscription | None:
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM subscriptions WHERE kind = 'user' AND user_id = ?", (user_id,)
        )
        return None if row is None else _row_to_subscription(row)

    async def for_channel(self, channel_id: int) -> Subscription | None:
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM subscriptions WHERE kind = 'channel' AND channel_id = ?", (channel_id,)
        )
        return None if row is None else _row_to_subscription(row)

    async def channel_feeds(self, guild_id: int) -> list[Subscription]:
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM subscriptions WHERE kind = 'channel' AND guild_id = ? ORDER BY id",
            (guild_id,),
        )
        return [_row_to_subscription(row) for row in rows]

    async def active(self) -> list[Subscription]:
        """Every subscription the scheduler should run."""
        rows = await self._db.fetchall(f"SELECT {_COLUMNS} FROM subscriptions WHERE active = 1 ORDER BY id")
        return [_row_to_subscription(row) for row in rows]

    async def upsert_user(
        self, user_id: int, fields: ScheduleFields, *, guild_id: int | None = None, at: str | None = None
    ) -> Subscription:
        """Create or replace a user's DM digest; (re)activates it and clears any pause. ``guild_id`` is the
        server it was set up from (None, from DMs, keeps the one recorded before)."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, now)
            await conn.execute(
                """
                INSERT INTO subscriptions (kind, user_id, guild_id, topics, time_local, timezone, frequency,
                                           weekday, count, active, paused_reason, created_by, created_at,
                                           updated_at)
                VALUES ('user', ?, ?, ?, ?, ?, ?, ?, ?, 1, NULL, ?, ?, ?)
                ON CONFLICT (user_id) WHERE kind = 'user' DO UPDATE SET
                    guild_id = COALESCE(excluded.guild_id, subscriptions.guild_id),
                    topics = excluded.topics, time_local = excluded.time_local,
                    timezone = excluded.timezone, frequency = excluded.frequency,
                    weekday = excluded.weekday, count = excluded.count,
                    active = 1, paused_reason = NULL, updated_at = excluded.updated_at
                """,
                (user_id, guild_id, *_field_values(fields), user_id, now, now),
            )
            row = await conn.fetchone(
                f"SELECT {_COLUMNS} FROM subscriptions WHERE kind = 'user' AND user_id = ?", (user_id,)
            )
        assert row is not None
        return _row_to_subscription(row)

    async def upsert_channel(
        self,
        channel_id: int,
        guild_id: int,
        fields: ScheduleFields,
        *,
        created_by: int,
        at: str | None = None,
        max_feeds: int | None = None,
    ) -> Subscription:
        """Create or replace a channel's feed; (re)activates it and clears any pause. A new feed in a
        server that has ``max_feeds`` already raises FeedLimitError and stores nothing (decided under a
        lock per server, so feeds set at once never pass the limit together)."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            if max_feeds is not None:
                if conn.dialect == "postgresql":
                    await conn.fetchval("SELECT pg_advisory_xact_lock(?)", (_feeds_lock_key(guild_id),))
                feeds = int(
                    await conn.fetchval(
                        "SELECT COUNT(*) FROM subscriptions WHERE kind = 'channel' AND guild_id = ?",
                        (guild_id,),
                    )
                )
                new = await conn.fetchval(
                    "SELECT 1 FROM subscriptions WHERE kind = 'channel' AND channel_id = ?", (channel_id,)
                )
                if new is None and feeds >= max_feeds:
                    raise FeedLimitError(feeds, max_feeds)
            await conn.execute(
                """
                INSERT INTO subscriptions (kind, guild_id, channel_id, topics, time_local, timezone, frequency,
                                           weekday, count, active, paused_reason, created_by, created_at,
                                           updated_at)
                VALUES ('channel', ?, ?, ?, ?, ?, ?, ?, ?, 1, NULL, ?, ?, ?)
                ON CONFLICT (channel_id) WHERE kind = 'channel' DO UPDATE SET
                    guild_id = excluded.guild_id, topics = excluded.topics,
                    time_local = excluded.time_local, timezone = excluded.timezone,
                    frequency = excluded.frequency, weekday = excluded.weekday, count = excluded.count,
                    active = 1, paused_reason = NULL, created_by = excluded.created_by,
                    updated_at = excluded.updated_at
                """,
                (guild_id, channel_id, *_field_values(fields), created_by, now, now),
            )
            row = await conn.fetchone(
                f"SELECT {_COLUMNS} FROM subscriptions WHERE kind = 'channel' AND channel_id = ?",
                (channel_id,),
            )
        assert row is not None
        return _row_to_subscription(row)

    async def delete(self, subscription_id: int) -> bool:
        """Remove a subscription (its run history goes with it)."""
        return await self._db.execute("DELETE FROM subscriptions WHERE id = ?", (subscription_id,)) > 0

    async def change_mutes(self, subscription_id: int, change: MutesChange) -> tuple[str, ...] | None:
        """Replace a feed's muted topics by ``change`` of them, read and written in one transaction (the
        row locked first on PostgreSQL, so two changes at once both count; an exception ``change``
        raises stores nothing). None when there is no such subscription."""
        async with self._db.transaction() as conn:
            lock = " FOR UPDATE" if conn.dialect == "postgresql" else ""
            value = await conn.fetchval(
                f"SELECT mutes FROM subscriptions WHERE id = ?{lock}", (subscription_id,)
            )
            if value is None:
                return None
            before = tuple(str(m) for m in json.loads(value))
            after = change(before)
            if after != before:
                await conn.execute(
                    "UPDATE subscriptions SET mutes = ? WHERE id = ?",
                    (json.dumps(list(after)), subscription_id),
                )
            return after

    async def pause(
        self, subscription_id: int, reason: str, *, notice: str | None = None, at: str | None = None
    ) -> None:
        """Stop delivering; with ``notice``, leave it in the same transaction for the next command of the
        person the subscription names as stored now (a DM digest's subscriber, a feed's creator): never
        for one who was forgotten meanwhile (their digest, or their name on the feed, is gone)."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            person = None if notice is None else await _told(conn, subscription_id)
            if person is not None:
                await lock_person(conn, person)  # then read again: a forgetting may have just committed
                if await _told(conn, subscription_id) != person:
                    person = None
            await conn.execute(
                "UPDATE subscriptions SET active = 0, paused_reason = ?, updated_at = ? WHERE id = ?",
                (reason, now, subscription_id),
            )
            if person is not None:
                await ensure_user(conn, person, now)
                await conn.execute("UPDATE users SET pending_notice = ? WHERE id = ?", (notice, person))

    async def set_notice(self, user_id: int, notice: str) -> None:
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id)
            await conn.execute("UPDATE users SET pending_notice = ? WHERE id = ?", (notice, user_id))

    async def add_notice(self, user_id: int, notice: str, *, since: str | None = None) -> None:
        """Leave a notice for the user's next command, after any notice already waiting for them.
        ``since``: when whatever led to it began (PersonForgottenError if the user asked to be
        forgotten since)."""
        async with self._db.transaction() as conn:
            await ensure_user(conn, user_id, since=since)
            await conn.execute(
                "UPDATE users SET pending_notice = CASE WHEN pending_notice IS NULL THEN CAST(? AS TEXT) "
                "ELSE pending_notice || CAST(? AS TEXT) END WHERE id = ?",
                (notice, "\n\n" + notice, user_id),
            )

    async def take_notice(self, user_id: int) -> str | None:
        """The notice left for a user's next command (e.g. "your digest is paused"), cleared as it is read."""
        # Almost every command finds none: check without taking the write lock first.
        if await self._db.fetchval("SELECT pending_notice FROM users WHERE id = ?", (user_id,)) is None:
            return None
        async with self._db.transaction() as conn:
            notice = await conn.fetchval("SELECT pending_notice FROM users WHERE id = ?", (user_id,))
            # Cleared only if still the one read: a process taking it meanwhile has said it.
            if notice is None or not await conn.execute(
                "UPDATE users SET pending_notice = NULL WHERE id = ? AND pending_notice = ?",
                (user_id, notice),
            ):
                return None
        return str(notice)


async def _told(conn: Connection, subscription_id: int) -> int | None:
    """Who hears that a subscription was paused: a DM digest's subscriber, a feed's creator."""
    value = await conn.fetchval(
        "SELECT CASE WHEN kind = 'user' THEN user_id ELSE created_by END FROM subscriptions WHERE id = ?",
        (subscription_id,),
    )
    return None if value is None else int(value)


def _field_values(fields: ScheduleFields) -> tuple[object, ...]:
    return (
        json.dumps(list(fields.topics), ensure_ascii=False),
        fields.time_local,
        fields.timezone,
        fields.frequency,
        fields.weekday,
        fields.count,
    )
