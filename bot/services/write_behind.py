"""Writes people cause but need not wait for: reactions, rating clicks, search listings, and the note
of which paper a message the bot posted shows.

The Discord layer hands them to `WriteBehind`, which keeps each in the outbox (`storage.outbox`: on
disk at once, never waiting for the store's write lock) and returns, so the answer goes out at once.
One background task applies them to the store in the order they came and removes each from the
outbox once the store has it. So a reaction or a click is never lost to a busy store (another
process ingesting holds the lock) or to a crash: what is left in the outbox is applied at the next
start. Until then the bot counts its own pending writes where people would notice: a listing's page
buttons find the listing, and a second press of a rating button takes the first one back.

A reaction on a message the bot posted a moment ago can arrive before the note of which paper that
message shows is stored; it waits for the note up to `MESSAGE_GRACE` seconds, or as long as the note
itself waits in the outbox (the same person's later reactions on the message wait behind it, so they
stay in order).

What the store refuses:

* "busy" (another writer holds the lock, the server is unreachable or restarting): the pass stops and
  everything is tried again `RETRY_EVERY` seconds later;
* "never" (`storage.db.is_refused`: the person asked to be forgotten after the write was accepted, the
  paper or message it names is gone): the write is dropped, as it can never be stored;
* anything else (a read-only database after a failover, a full disk, a cancelled statement, an I/O
  error, a bug): the write is tried again with a backoff doubling from `BACKOFF_FIRST` up to
  `BACKOFF_MAX` seconds, for as long as it takes, while writes with other order keys go on. One the
  store has refused for `DEAD_AFTER` seconds moves to the outbox's dead letter
  (`storage.outbox.Outbox.bury`), where it is tried every `DEAD_RETRY_EVERY` seconds, and at once
  whenever the store takes writes again: it leaves the file only once stored.

An outage is logged once when it begins and once when it ends, never per retry, and names the error's
kind and code only (no paper, query or topic: those are logged at DEBUG). `state()` says what waits,
for the heartbeat (`bot.health`) and `/paperadmin stats`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from storage.db import describe_error, is_busy, is_refused, utcnow
from storage.models import Signal, as_signal, signal_for_emoji
from storage.outbox import Outbox, PendingWrite
from storage.repositories.feedback import FeedbackRepository, Rated
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.searches import SearchRepository, StoredSearch

log = logging.getLogger(__name__)

REACTION: Final = "reaction"
RATING: Final = "rating"
LISTING: Final = "listing"
POSTED: Final = "posted"

#: How long a reaction on one of the bot's own messages waits for the note of the message's paper.
MESSAGE_GRACE: Final = 60.0
#: While writes wait (a busy store, a reaction waiting for its message), they are tried this often.
RETRY_EVERY: Final = 1.0
#: A write the store refused is tried again after this many seconds, twice that after the next refusal,
#: and so on up to `BACKOFF_MAX`.
BACKOFF_FIRST: Final = 1.0
BACKOFF_MAX: Final = 60.0
#: A write the store has refused for this long (about 60 tries) moves to the dead letter ...
DEAD_AFTER: Final = 3600.0
#: ... where it is tried this often (and at once whenever the store takes writes again).
DEAD_RETRY_EVERY: Final = 600.0
#: The heartbeat names waiting writes as a problem once the store has refused writes this long.
STUCK_AFTER: Final = 60.0


@dataclass(slots=True)
class _Entry:
    write: PendingWrite
    accepted: float  # clock() when this process took it (or found it in the outbox at start)
    dead: bool = False  # in the dead letter
    failing_since: float | None = None  # clock() of the first of the refusals in a row, if any
    failing_since_utc: str | None = None  # the same, as stored in the dead letter
    failures: int = 0
    next_try: float = 0.0  # clock() before which it is not tried again

    @property
    def payload(self) -> dict[str, Any]:
        return self.write.payload


@dataclass(slots=True)
class _Outage:
    since: float  # clock()
    error: str  # the last refusal's kind and code
    buried: bool = False  # a write moved to the dead letter during it (said once)


@dataclass(frozen=True, slots=True)
class OutboxState:
    """What the outbox holds that the store does not have yet."""

    waiting: int  # accepted, not stored yet (not in the dead letter)
    dead: int  # in the dead letter
    refused_for: float | None  # seconds the store has refused writes (busy or not), if it does now
    error: str | None  # what it answered last
    path: str = ""

    def problems(self) -> list[str]:
        """What the heartbeat names: writes the store has refused for `STUCK_AFTER` s or more, and any
        in the dead letter."""
        found = []
        if self.waiting and self.refused_for is not None and self.refused_for >= STUCK_AFTER:
            found.append(
                f"accepted writes (reactions, clicks, listings) not stored for {self.refused_for:.0f} s: "
                f"{self.waiting}, kept in {self.path}; the store refuses them ({self.error})"
            )
        if self.dead:
            found.append(
                f"writes in the dead letter of {self.path}: {self.dead}, refused by the store for "
                f"{DEAD_AFTER / 3600:g} h or more; tried every {DEAD_RETRY_EVERY / 60:g} min until stored"
            )
        return found


def _log_rated(user_id: int, signal: Signal, rated: Rated, *, added: bool) -> None:
    """Who rated which paper, at DEBUG only (it is personal: never at INFO)."""
    if rated.paused:
        log.debug("learning paused: %s on paper %d by user %d not recorded", signal, rated.paper_id, user_id)
    elif rated.changed and added:
        log.debug("feedback: user %d %s paper %d", user_id, signal, rated.paper_id)
    elif rated.changed:
        log.debug("feedback: user %d took back %s on paper %d", user_id, signal, rated.paper_id)


def _order_key(write: PendingWrite) -> Hashable | None:
    """Writes with the same key are applied in the order they came; a waiting one holds up the rest
    (one person's reactions on one message, one person's rating clicks on one paper)."""
    if write.kind == REACTION:
        return (REACTION, write.payload["message_id"], write.payload["user_id"])
    if write.kind == RATING:
        return (RATING, write.payload["user_id"], write.payload["paper_id"])
    return None


def _is_about(entry: _Entry, user_id: int) -> bool:
    return user_id in (entry.payload.get("user_id"), entry.payload.get("recipient_id"))


def _signal(value: object) -> Signal:
    signal = as_signal(str(value))
    if signal is None:
        raise ValueError(f"unknown signal {value!r} in the outbox")
    return signal


class WriteBehind:
    def __init__(
        self,
        path: Path,
        *,
        feedback: FeedbackRepository,
        searches: SearchRepository,
        messages: PostedMessageRepository,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        dead_after: float = DEAD_AFTER,
    ) -> None:
        """``clock`` times retries and grace periods; ``wall`` stamps when each write was given (the
        time every service reads, from the root)."""
        self.path = path
        self._wall = wall
        self._feedback = feedback
        self._searches = searches
        self._messages = messages
        self._clock = clock
        self.dead_after = dead_after
        self._outbox: Outbox | None = None
        self._pending: dict[int, _Entry] = {}  # by outbox id, oldest first
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._outage: _Outage | None = None  # the store refuses writes (busy or not) since
        #: reactions being accepted, by (message, user): a lock keeping them in order, and how many
        self._turns: dict[tuple[int, int], tuple[asyncio.Lock, int]] = {}
        self._storing = False  # a pass over the pending writes is under way
        self._applying: _Entry | None = None  # the write being stored right now
        self._applied = asyncio.Event()  # set whenever no write is being stored
        self._applied.set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the outbox, and apply what an earlier run left in it, then everything accepted."""
        if self._outbox is not None:
            return
        self._outbox = await Outbox.open(self.path)
        now = self._clock()
        for write in await self._outbox.all():
            self._pending[write.id] = _Entry(write, now, dead=write.dead)
        if self._pending:
            dead = sum(entry.dead for entry in self._pending.values())
            log.info(
                "storing %d writes accepted before the last stop (%d of them from the dead letter)",
                len(self._pending),
                dead,
            )
        self._task = asyncio.create_task(self._run(), name="write-behind")
        self._wake.set()

    async def stop(self) -> None:
        """Stop applying (what is left stays in the outbox for the next start) and close the outbox."""
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            await asyncio.wait({task})  # (its end awaited, a cancellation of this stop not swallowed)
        if self._outbox is not None:
            await self._outbox.close()
            self._outbox = None
        self._pending.clear()

    @property
    def pending(self) -> int:
        """How many accepted writes the store does not have yet (the dead letter's included)."""
        return len(self._pending)

    def state(self) -> OutboxState:
        dead = sum(entry.dead for entry in self._pending.values())
        outage = self._outage
        return OutboxState(
            waiting=len(self._pending) - dead,
            dead=dead,
            refused_for=None if outage is None else self._clock() - outage.since,
            error=None if outage is None else outage.error,
            path=str(self.path),
        )

    async def drained(self, *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Wait until the store has every accepted write (TimeoutError after `timeout`): what the
        sandbox console (`paperbot sandbox`) waits on before a reaction's line ends, so the next command
        sees it stored."""
        async with asyncio.timeout(timeout):
            while self._pending or self._storing:  # (a pass removes what it stored from the outbox last)
                self._wake.set()
                await asyncio.sleep(0.02)

    # ------------------------------------------------------------------ accepting

    def _stamp(self) -> str:
        return self._wall().astimezone(UTC).isoformat(timespec="seconds")

    async def _accept(self, kind: str, payload: dict[str, Any]) -> None:
        if self._outbox is None:
            raise RuntimeError("WriteBehind.start() was not called")
        write = await self._outbox.add(kind, payload)
        self._pending[write.id] = _Entry(write, self._clock())
        self._wake.set()

    async def reaction(
        self,
        *,
        user_id: int,
        message_id: int,
        signal: Signal,
        guild_id: int | None,
        added: bool,
        on_our_message: bool | None,
    ) -> bool:
        """A 👍 👎 🔖 added or removed on a message (`on_our_message`: Discord says the bot wrote it;
        None when it does not say, as on a removal: kept only if the bot knows the message,
        `knows_message`). False when it was not kept. One person's reactions on one message are kept
        in the order they came, though a look-up holds one of them up."""
        async with self._in_turn((message_id, user_id)):
            ours = on_our_message if on_our_message is not None else await self.knows_message(message_id)
            if not ours:
                return False
            await self._accept(
                REACTION,
                {
                    "user_id": user_id,
                    "message_id": message_id,
                    "signal": signal,
                    "guild_id": guild_id,
                    "added": added,
                    "ours": ours,
                    "at": self._stamp(),
                },
            )
            return True

    @contextlib.asynccontextmanager
    async def _in_turn(self, key: tuple[int, int]) -> AsyncIterator[None]:
        """One at a time for `key`, in the order they asked."""
        lock, users = self._turns.get(key, (asyncio.Lock(), 0))
        self._turns[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[key]
            if users == 1:
                del self._turns[key]
            else:
                self._turns[key] = (lock, users - 1)

    async def rating(
        self, *, user_id: int, paper_id: int, signal: Signal, added: bool, guild_id: int | None
    ) -> None:
        """A rating button's effect (see `FeedbackService.plan_button`): set or take back a signal."""
        await self._accept(
            RATING,
            {
                "user_id": user_id,
                "paper_id": paper_id,
                "signal": signal,
                "added": added,
                "guild_id": guild_id,
                "at": self._stamp(),
            },
        )

    async def listing(self, stored: StoredSearch, *, user_id: int) -> None:
        """A search or similar-papers listing, so its paging buttons work (its id is already chosen)."""
        await self._accept(
            LISTING,
            {
                "id": stored.id,
                "kind": stored.kind,
                "query": stored.query,
                "paper_id": stored.paper_id,
                "author": stored.author,
                "venue": stored.venue,
                "year": stored.year,
                "page_size": stored.page_size,
                "user_id": user_id,
                "at": self._stamp(),
            },
        )

    async def posted_message(
        self,
        *,
        message_id: int,
        channel_id: int,
        guild_id: int | None,
        paper_id: int,
        recipient_id: int | None,
        kind: str = "paper",
    ) -> None:
        """The bot posted a single-paper message: reactions on it rate that paper."""
        await self._accept(
            POSTED,
            {
                "message_id": message_id,
                "channel_id": channel_id,
                "guild_id": guild_id,
                "paper_id": paper_id,
                "recipient_id": recipient_id,
                "kind": kind,
            },
        )

    # ------------------------------------------------------------------ what is not stored yet

    async def knows_message(self, message_id: int) -> bool:
        """Whether a message is one of the bot's single-paper messages: its note is stored or waits in
        the outbox, or a reaction Discord said is on the bot's message waits there. A store that cannot
        answer counts as yes: storing the reaction decides then."""
        if self._note_waits(message_id) or any(
            e.write.kind == REACTION and e.payload["message_id"] == message_id and e.payload["ours"]
            for e in self._pending.values()
        ):
            return True
        try:
            return await self._messages.paper_for(message_id) is not None
        except Exception as error:
            log.debug("could not look up message %s: %s", message_id, describe_error(error))
            return True

    def pending_listing(self, search_id: int) -> StoredSearch | None:
        for entry in self._pending.values():
            if entry.write.kind == LISTING and entry.payload["id"] == search_id:
                p = entry.payload
                return StoredSearch(
                    p["id"],
                    p["kind"],
                    p["query"],
                    p["paper_id"],
                    p["author"],
                    p["venue"],
                    p["year"],
                    p["page_size"],
                    p["user_id"],
                )
        return None

    def pending_ratings(self, user_id: int, paper_id: int) -> list[tuple[bool, Signal]]:
        """(added, signal) of this user's rating clicks on this paper the store does not have yet."""
        return [
            (bool(entry.payload["added"]), _signal(entry.payload["signal"]))
            for entry in self._pending.values()
            if entry.write.kind == RATING
            and entry.payload["user_id"] == user_id
            and entry.payload["paper_id"] == paper_id
        ]

    async def discard_user(self, user_id: int) -> int:
        """Drop every pending write about a user (forget-me): none may be stored after the deletion.
        One already being stored is let finish first, so the deletion that follows removes it."""
        mine = [entry_id for entry_id, entry in self._pending.items() if _is_about(entry, user_id)]
        for entry_id in mine:
            del self._pending[entry_id]
        if self._outbox is not None:
            await self._outbox.remove(mine)
        while self._applying is not None and _is_about(self._applying, user_id):
            await self._applied.wait()
        return len(mine)

    # ------------------------------------------------------------------ applying

    async def _run(self) -> None:
        while True:
            # (asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that comes as
            # the wait ends, and a stop then waited for this loop forever)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RETRY_EVERY if self._pending else None):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self._apply_pending()
            except Exception as error:  # never let the task die: the writes stay pending and are tried again
                log.error("could not store pending writes (%s); trying again shortly", describe_error(error))
                log.debug("the error", exc_info=True)

    async def _apply_pending(self) -> None:
        """Apply every pending write that can be, in order; again while that lets waiting ones go."""
        self._storing = True
        try:
            await self._apply_in_order()
        finally:
            self._storing = False

    async def _apply_in_order(self) -> None:
        assert self._outbox is not None
        progress = True
        while progress and self._pending:
            progress = False
            held: set[Hashable] = set()  # order keys of writes that wait: later ones wait behind them
            gone: list[int] = []
            try:
                for entry_id, entry in list(self._pending.items()):
                    key = _order_key(entry.write)
                    if entry_id not in self._pending or (key is not None and key in held):
                        continue  # (discarded meanwhile: forget-me)
                    outcome = "wait" if entry.next_try > self._clock() else await self._try(entry)
                    if outcome == "busy":
                        return
                    if outcome == "wait":
                        if key is not None:
                            held.add(key)
                        continue
                    gone.append(entry_id)
                    self._pending.pop(entry_id, None)
                    progress = True
            finally:
                await self._outbox.remove(gone)
        self._end_outage_if_over()

    async def _try(self, entry: _Entry) -> str:
        """Apply one write: "gone" (stored, or it never can be), "wait", or "busy" (stop the pass)."""
        try:
            stored = await self._applying_one(entry)
        except Exception as error:
            if is_busy(error):
                self._refused(error)
                return "busy"
            if is_refused(error):
                log.info(
                    "a %s write can never be stored (%s): dropped", entry.write.kind, describe_error(error)
                )
                return "gone"
            await self._failed(entry, error)
            return "wait"
        if entry.failing_since is not None:
            entry.failing_since, entry.failures = None, 0
        return "gone" if stored else "wait"

    async def _failed(self, entry: _Entry, error: Exception) -> None:
        """The store refused a write for a reason that may pass: try it again later (with a backoff);
        into the dead letter once it has refused it for `dead_after`."""
        assert self._outbox is not None
        now = self._clock()
        log.debug("a %s write was refused: %r", entry.write.kind, error)
        entry.failures += 1
        if entry.failing_since is None:
            entry.failing_since, entry.failing_since_utc = now, utcnow()
        if entry.dead:  # (already said when it was moved there)
            entry.next_try = now + DEAD_RETRY_EVERY
            return
        outage = self._refused(error)
        entry.next_try = now + min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (entry.failures - 1))
        if now - entry.failing_since < self.dead_after:
            return
        await self._outbox.bury(
            entry.write.id, failing_since=entry.failing_since_utc or utcnow(), error=describe_error(error)
        )
        entry.dead, entry.next_try = True, now + DEAD_RETRY_EVERY
        if not outage.buried:
            outage.buried = True
            log.warning(
                "writes the store has refused for %.0f min move to the dead letter of %s, tried every %.0f min "
                "until stored",
                self.dead_after / 60,
                self.path,
                DEAD_RETRY_EVERY / 60,
            )

    def _refused(self, error: Exception) -> _Outage:
        """The store refused a write (busy or not): the outage begins (said once) or goes on."""
        if self._outage is None:
            self._outage = _Outage(self._clock(), describe_error(error))
            log.warning(
                "the store does not take writes now (%s): %d writes wait in %s and are tried again until it does",
                self._outage.error,
                len(self._pending),
                self.path,
            )
        self._outage.error = describe_error(error)
        return self._outage

    def _end_outage_if_over(self) -> None:
        """After a pass the store went through without being busy: the outage is over once no write
        outside the dead letter is being refused. Said once; the dead letter is tried at once."""
        outage = self._outage
        if outage is None or any(e.failing_since is not None and not e.dead for e in self._pending.values()):
            return
        self._outage = None
        for entry in self._pending.values():
            if entry.dead:
                entry.next_try = 0.0
        log.info(
            "the store takes writes again after %.0f s: %d writes still wait (%d of them in the dead letter, "
            "tried again now)",
            self._clock() - outage.since,
            len(self._pending),
            sum(entry.dead for entry in self._pending.values()),
        )
        self._wake.set()

    async def _applying_one(self, entry: _Entry) -> bool:
        """`_apply`, known meanwhile as the write being stored (forget-me waits for it)."""
        self._applying = entry
        self._applied.clear()
        try:
            return await self._apply(entry)
        finally:
            self._applying = None
            self._applied.set()

    async def _apply(self, entry: _Entry) -> bool:
        """Store one write; False when it must wait (a reaction before its message's note). Each says
        when it was accepted (``since``), so the store refuses one about a person forgotten since."""
        p, kind, since = entry.payload, entry.write.kind, entry.write.created_at
        if kind == REACTION:
            # (an outbox an older version wrote names the emoji)
            signal = _signal(p["signal"]) if "signal" in p else signal_for_emoji(p["emoji"])
            if signal is None:
                return True
            rated = await self._feedback.react(
                user_id=p["user_id"],
                message_id=p["message_id"],
                signal=signal,
                guild_id=p["guild_id"],
                added=p["added"],
                at=p["at"],
                since=since,
            )
            if rated is not None:
                _log_rated(p["user_id"], signal, rated, added=p["added"])
            if rated is not None or not p["ours"]:
                return True
            return not self._note_waits(p["message_id"]) and self._clock() - entry.accepted >= MESSAGE_GRACE
        if kind == RATING:
            rated = await self._feedback.rate(
                p["user_id"],
                p["paper_id"],
                _signal(p["signal"]),
                added=p["added"],
                guild_id=p["guild_id"],
                at=p["at"],
                since=since,
            )
            _log_rated(p["user_id"], _signal(p["signal"]), rated, added=p["added"])
            return True
        if kind == LISTING:
            await self._searches.save(
                search_id=p["id"],
                kind=p["kind"],
                query=p["query"],
                paper_id=p["paper_id"],
                author=p["author"],
                venue=p["venue"],
                year=p["year"],
                page_size=p["page_size"],
                user_id=p["user_id"],
                created_at=p["at"],
                since=since,
            )
            return True
        if kind == POSTED:
            await self._messages.record(
                p["message_id"],
                p["channel_id"],
                p["guild_id"],
                p["paper_id"],
                p["recipient_id"],
                p["kind"],
                since=since,
            )
            return True
        raise ValueError(f"unknown kind of pending write {kind!r}")  # (kept: a newer version may know it)

    def _note_waits(self, message_id: int) -> bool:
        """Whether the note of which paper a message shows is still in the outbox."""
        return any(
            e.write.kind == POSTED and e.payload["message_id"] == message_id for e in self._pending.values()
        )
