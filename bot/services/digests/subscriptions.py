"""Digest subscriptions: a person's DM digest, a channel's feed, and the notice a paused one leaves.

Input is validated (:mod:`bot.services.digests.timing`) before anything is stored: bad input gets an
``InvalidScheduleError`` and writes nothing. The subscriptions table is the scheduler's source of
truth (:mod:`bot.services.digests.jobs` rebuilds its jobs from it at every start).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.clock import Clock
from bot.errors import InvalidScheduleError, NotFoundError, UserFacingError
from bot.services.digests.timing import (
    DueDigest,
    Period,
    Schedule,
    digest_calls,
    latest_due,
    make_schedule,
    moved_later,
    next_delivery,
    parse_topics,
)
from storage.db import Database
from storage.models import Subscription
from storage.repositories.digests import Recipient
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.follows import FollowRepository
from storage.repositories.interests import InterestLimitError, InterestRepository, topic_key
from storage.repositories.library_texts import LibraryTextRepository
from storage.repositories.subscriptions import FeedLimitError, ScheduleFields, SubscriptionRepository

log = logging.getLogger(__name__)

#: Channel feeds one server may have (PAPERBOT_FEEDS_PER_SERVER): every thread and forum post could be
#: one, and their posts share the bot's sending with every other server.
DEFAULT_FEEDS_PER_SERVER = 25


class TooManyFeedsError(UserFacingError):
    """The server has as many channel feeds as it may have."""


class NothingToPickByError(UserFacingError):
    """A digest without topics for someone paperbot knows nothing about: it could only ever say that
    nothing new was found."""


NEEDS_A_TOPIC = (
    "Give a topic to pick papers by, e.g. `/paper subscribe topics:kv cache quantization` (several, "
    "separated by commas). I don't know your interests yet — no topics, reactions or followed authors — "
    "so a digest would have nothing to choose papers by. Nothing was stored. (`/paper interests add` "
    "takes a topic or a paper you like, and then `/paper subscribe` without topics uses them.)"
)


NOTHING_TO_DIGEST_BY = (
    "I don't know your interests yet — no topics, reactions or followed authors — so a digest would "
    "have nothing to choose papers by, and none was sent. Add a topic with `/paper interests add "
    "topic:kv cache quantization` (or `/paper subscribe topics:…`), or 👍 papers in `/paper search` "
    "results, then ask again."
)


class InterestsLookup(Protocol):
    async def knows(self, user_id: int) -> bool:
        """Whether anything tells what the person wants to read: their topics, reactions or follows."""
        ...


class StoredInterests:
    """What a person told or taught paperbot: their topics, their 👍 👎 🔖, the authors they follow, the
    papers of their library the store lacks."""

    def __init__(self, db: Database) -> None:
        self.feedback = FeedbackRepository(db)
        self.follows = FollowRepository(db)
        self.library = LibraryTextRepository(db)

    async def knows(self, user_id: int) -> bool:
        topics, signals, _ = await self.feedback.learning_inputs(user_id)
        if topics or signals or await self.follows.count(user_id) > 0:
            return True
        return bool(await self.library.texts(user_id))


def subscription_schedule(sub: Subscription) -> Schedule:
    return Schedule(
        time_local=sub.time_local,
        timezone=sub.timezone,
        frequency=sub.frequency,
        weekday=sub.weekday,
        count=sub.count,
    )


@dataclass(frozen=True, slots=True)
class Arrival:
    """When a subscription's next digest goes out, and why when that is later than the time chosen."""

    #: when it goes out, in the subscriber's zone
    at: datetime
    #: how much later than the time chosen (zero unless more is due then than Discord's limits allow)
    moved: timedelta
    #: how many digests (and feed posts) are due at that same minute, this one included
    due_together: int


def due_at(subs: Iterable[Subscription], instant: datetime) -> list[Subscription]:
    """The subscriptions with a delivery due at exactly ``instant`` (each schedule worked out once)."""
    instant = instant.astimezone(UTC)
    by_schedule: dict[Schedule, list[Subscription]] = {}
    for sub in subs:
        by_schedule.setdefault(subscription_schedule(sub), []).append(sub)
    return [
        sub
        for schedule, same in by_schedule.items()
        if latest_due(schedule, instant).due_utc == instant
        for sub in same
    ]


def recipient_of(sub: Subscription) -> Recipient:
    if sub.kind == "channel":
        return Recipient(channel_id=sub.channel_id)
    return Recipient(user_id=sub.user_id)


def parse_stamp(text: str) -> datetime:
    """A stored ISO-8601 stamp as an aware datetime (UTC when the stamp names no zone)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class SubscriptionService:
    def __init__(
        self,
        subscriptions: SubscriptionRepository,
        *,
        clock: Clock,
        spread: timedelta = timedelta(0),
        calls_per_minute: int = 0,
        feeds_per_server: int = DEFAULT_FEEDS_PER_SERVER,
        interests: InterestsLookup | None = None,
        interest_store: InterestRepository | None = None,
    ) -> None:
        self.repository = subscriptions
        #: whether a person has interests a digest without topics can go by (None: not checked)
        self.interests = interests
        #: a digest's topics are followed as interests too (None: only stored with the subscription)
        self.interest_store = interest_store
        self.clock = clock
        #: the most a digest is moved past its minute when more is due then than Discord's limits allow
        self.spread = spread
        #: the requests all digests may make in one minute under Discord's global limit (0: never move one)
        self.calls_per_minute = calls_per_minute
        self.feeds_per_server = feeds_per_server

    def _stamp(self) -> str:
        """Now as stored in the database (ISO-8601 UTC, seconds), from the injected clock."""
        return self.clock().astimezone(UTC).isoformat(timespec="seconds")

    # ---- reading -----------------------------------------------------------------------------------

    async def get(self, subscription_id: int) -> Subscription | None:
        return await self.repository.get(subscription_id)

    async def for_user(self, user_id: int) -> Subscription | None:
        """The user's DM digest (paused or not), or None."""
        return await self.repository.for_user(user_id)

    async def can_pick_for(self, user_id: int) -> bool:
        """Whether a digest for ``user_id`` has anything to choose papers by: its subscription's topics,
        or the person's own topics, reactions or follows (True where that is not checked)."""
        if self.interests is None:
            return True
        sub = await self.repository.for_user(user_id)
        return bool(sub is not None and sub.topics) or await self.interests.knows(user_id)

    async def for_channel(self, channel_id: int) -> Subscription | None:
        return await self.repository.for_channel(channel_id)

    async def active(self) -> list[Subscription]:
        """Every subscription that is not paused: what the scheduler runs."""
        return await self.repository.active()

    def next_delivery(self, sub: Subscription, now: datetime | None = None) -> Period:
        return next_delivery(subscription_schedule(sub), now or self.clock())

    def moved(self, due: Sequence[Subscription]) -> dict[int, timedelta]:
        """How much later than their minute the digests ``due`` in the same minute go out (see
        :func:`~bot.services.digests.timing.moved_later`): only when their requests do not all fit in
        that minute under Discord's limits."""
        weighed = [
            DueDigest(sub.id, digest_calls(sub.count, channel=sub.is_channel), (sub.updated_at, sub.id))
            for sub in due
        ]
        return moved_later(weighed, self.calls_per_minute, self.spread)

    async def moved_at(self, instant: datetime) -> dict[int, timedelta]:
        """:meth:`moved` for every active subscription due at ``instant`` (one read of the store)."""
        return self.moved(due_at(await self.repository.active(), instant))

    async def arrivals(self, subs: Sequence[Subscription], now: datetime | None = None) -> dict[int, Arrival]:
        """When each of ``subs`` next goes out (one read of the store for all of them)."""
        now = now or self.clock()
        active = await self.repository.active() if subs else []
        found: dict[int, Arrival] = {}
        for sub in subs:
            period = self.next_delivery(sub, now)
            together = due_at(active, period.due_utc)
            if sub.active and all(other.id != sub.id for other in together):
                together.append(sub)
            moved = self.moved(together).get(sub.id, timedelta(0))
            found[sub.id] = Arrival(at=period.due_at + moved, moved=moved, due_together=len(together))
        return found

    async def arrival(self, sub: Subscription, now: datetime | None = None) -> Arrival:
        """When the next digest (or feed post) goes out, in the subscriber's zone."""
        return (await self.arrivals([sub], now))[sub.id]

    # ---- a person's digest --------------------------------------------------------------------------

    async def subscribe(
        self,
        user_id: int,
        *,
        topics: str | Sequence[str] | None = None,
        time: str | None = None,
        timezone: str | None = None,
        frequency: str | None = None,
        count: int | None = None,
        weekday: str | int | None = None,
        guild_id: int | None = None,
    ) -> Subscription:
        """Create or change a user's DM digest. Options not given keep their current value (or default).

        Also resumes a paused digest. Raises InvalidScheduleError (nothing stored) on bad input, and
        NothingToPickByError (nothing stored) when it has no topics and the person no interests.
        ``guild_id`` is the server it was set up from (its admins' stats count it; None from DMs keeps
        the server it was set up from before).
        """
        existing = await self.repository.for_user(user_id)
        base = subscription_schedule(existing) if existing else None
        schedule = make_schedule(
            time_local=time, timezone=timezone, frequency=frequency, count=count, weekday=weekday, base=base
        )
        new_topics = parse_topics(topics) if topics is not None else (existing.topics if existing else ())
        if not new_topics and self.interests is not None and not await self.interests.knows(user_id):
            raise NothingToPickByError(NEEDS_A_TOPIC)
        sub = await self.repository.upsert_user(
            user_id, _fields(schedule, new_topics), guild_id=guild_id, at=self._stamp()
        )
        log.info("user %s subscribed (subscription %s)", user_id, sub.id)
        log.debug("subscription %s: %s, topics=%s", sub.id, schedule.describe(), list(new_topics))
        if topics is not None and self.interest_store is not None:
            await self._follow_topics(user_id, new_topics)
        return sub

    async def _follow_topics(self, user_id: int, topics: Sequence[str]) -> None:
        """A digest's topics are the person's interests too (`/paper interests show` lists them; each
        gets its share of every digest and learns from the reactions to its picks)."""
        assert self.interest_store is not None
        followed = {row.topic.casefold() for row in await self.interest_store.interests(user_id) if row.topic}
        for topic in topics:
            if topic.casefold() in followed:
                continue
            try:
                await self.interest_store.add(
                    user_id, "topic", topic_key(topic), topic=topic, origin="subscribe", at=self._stamp()
                )
            except InterestLimitError:
                log.info("user %s follows as many interests as allowed: topic %r not added", user_id, topic)
                return

    async def unsubscribe(self, user_id: int) -> Subscription | None:
        """Stop a user's digest; returns what was removed (None when there was none)."""
        sub = await self.repository.for_user(user_id)
        if sub is None:
            return None
        await self.repository.delete(sub.id)
        log.info("user %s unsubscribed (subscription %s)", user_id, sub.id)
        return sub

    # ---- a channel's feed ---------------------------------------------------------------------------

    async def set_feed(
        self,
        guild_id: int,
        channel_id: int,
        *,
        created_by: int,
        topics: str | Sequence[str] | None = None,
        time: str | None = None,
        timezone: str | None = None,
        frequency: str | None = None,
        count: int | None = None,
        weekday: str | int | None = None,
    ) -> Subscription:
        """Create or change a channel's topic feed (a feed ranks by its topics only, so it needs some).
        A new feed in a server that has :attr:`feeds_per_server` already raises TooManyFeedsError
        (nothing stored); changing one of its feeds is always allowed."""
        existing = await self.repository.for_channel(channel_id)
        if existing is not None and existing.guild_id not in (None, guild_id):
            raise NotFoundError("That channel belongs to another server.")
        base = subscription_schedule(existing) if existing else None
        schedule = make_schedule(
            time_local=time, timezone=timezone, frequency=frequency, count=count, weekday=weekday, base=base
        )
        new_topics = parse_topics(topics) if topics is not None else (existing.topics if existing else ())
        if not new_topics:
            raise InvalidScheduleError(
                "A channel feed needs topics to pick papers by, e.g. topics: llm efficiency, kv cache."
            )
        try:
            sub = await self.repository.upsert_channel(
                channel_id,
                guild_id,
                _fields(schedule, new_topics),
                created_by=created_by,
                at=self._stamp(),
                max_feeds=self.feeds_per_server,
            )
        except FeedLimitError as full:
            raise TooManyFeedsError(
                f"This server already has {full.feeds} paper feeds; it may have at most {full.limit}. Stop one "
                "with `/paperadmin feed clear` (`/paperadmin feed list` shows them), then set this one again."
            ) from full
        log.info(
            "feed set for channel %s (guild %s) by %s: %s",
            channel_id,
            guild_id,
            created_by,
            schedule.describe(),
        )
        return sub

    async def clear_feed(self, guild_id: int, channel_id: int) -> Subscription | None:
        sub = await self.repository.for_channel(channel_id)
        if sub is None or sub.guild_id != guild_id:
            return None
        await self.repository.delete(sub.id)
        log.info("feed cleared for channel %s (guild %s)", channel_id, guild_id)
        return sub

    async def list_feeds(self, guild_id: int) -> list[Subscription]:
        return await self.repository.channel_feeds(guild_id)

    # ---- pausing, and telling the person why -------------------------------------------------------

    async def pause_unreachable(self, sub: Subscription, error: Exception) -> None:
        """The recipient cannot get messages (DMs closed, channel gone): pause it and leave a notice for
        the person who can fix it, shown at their next command."""
        if sub.is_channel:
            reason = f"channel unreachable: {error}"
            notice = (
                f"The paper feed for <#{sub.channel_id}> is paused: I cannot post there any more (the channel "
                "or thread is gone or locked, or I lost permission to see it, send messages or embed links). "
                "Fix that and run /paperadmin feed set for the channel to resume it."
            )
        else:
            reason = f"DMs closed: {error}"
            notice = (
                "Your paper digest is paused: I could not send it because your direct messages are closed to "
                "me. To fix it, allow direct messages from this server's members (right-click the server → "
                "Privacy Settings → Direct Messages), then run /paper subscribe to resume it."
            )
        await self.repository.pause(sub.id, reason, notice=notice, at=self._stamp())
        log.warning("subscription %s paused (%s)", sub.id, reason)

    async def take_notice(self, user_id: int) -> str | None:
        """What to tell a user at their next command (a paused digest or feed), cleared once read."""
        return await self.repository.take_notice(user_id)

    async def keep_notice(self, user_id: int, notice: str) -> None:
        """Keep a notice that could not be shown, for the next command."""
        await self.repository.set_notice(user_id, notice)


def _fields(schedule: Schedule, topics: tuple[str, ...]) -> ScheduleFields:
    return ScheduleFields(
        topics=topics,
        time_local=schedule.time_local,
        timezone=schedule.timezone,
        frequency=schedule.frequency,
        weekday=schedule.weekday,
        count=schedule.count,
    )
