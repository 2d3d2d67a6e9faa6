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
message shows is stored; it waits for the note up to `MESSAGE_GRACE` seconds (later reactions on
the same message wait behind it, so they stay in order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from bot.services.feedback import FeedbackService
from storage.db import is_busy, utcnow
from storage.models import Signal
from storage.outbox import Outbox, PendingWrite
from storage.repositories.feedback import as_signal
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


@dataclass(slots=True)
class _Entry:
    write: PendingWrite
    accepted: float  # clock() when this process took it (or found it in the outbox at start)

    @property
    def payload(self) -> dict[str, Any]:
        return self.write.payload


def _order_key(write: PendingWrite) -> Hashable | None:
    """Writes with the same key are applied in the order they came; a waiting one holds up the rest."""
    if write.kind == REACTION:
        return (REACTION, write.payload["message_id"])
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
        feedback: FeedbackService,
        searches: SearchRepository,
        messages: PostedMessageRepository,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._feedback = feedback
        self._searches = searches
        self._messages = messages
        self._clock = clock
        self._outbox: Outbox | None = None
        self._pending: dict[int, _Entry] = {}  # by outbox id, oldest first
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._said_busy = False
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
            self._pending[write.id] = _Entry(write, now)
        if self._pending:
            log.info("storing %d writes accepted before the last stop", len(self._pending))
        self._task = asyncio.create_task(self._run(), name="write-behind")
        self._wake.set()

    async def stop(self) -> None:
        """Stop applying (what is left stays in the outbox for the next start) and close the outbox."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._outbox is not None:
            await self._outbox.close()
            self._outbox = None
        self._pending.clear()

    @property
    def pending(self) -> int:
        """How many accepted writes the store does not have yet."""
        return len(self._pending)

    async def drained(self, *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Wait until the store has every accepted write (TimeoutError after `timeout`)."""
        async with asyncio.timeout(timeout):
            while self._pending or self._storing:  # (a pass removes what it stored from the outbox last)
                self._wake.set()
                await asyncio.sleep(0.02)

    # ------------------------------------------------------------------ accepting

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
        emoji: str,
        guild_id: int | None,
        added: bool,
        on_our_message: bool,
    ) -> None:
        """A 👍 👎 🔖 added or removed on a message (`on_our_message`: Discord says the bot wrote it)."""
        await self._accept(
            REACTION,
            {
                "user_id": user_id,
                "message_id": message_id,
                "emoji": emoji,
                "guild_id": guild_id,
                "added": added,
                "ours": on_our_message,
                "at": utcnow(),
            },
        )

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
                "at": utcnow(),
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
                "at": utcnow(),
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RETRY_EVERY if self._pending else None)
            self._wake.clear()
            try:
                await self._apply_pending()
            except Exception:  # never let the task die: the writes stay pending and are tried again
                log.exception("could not store pending writes; trying again shortly")

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
            waiting: set[Hashable] = set()
            stored: list[int] = []
            try:
                for entry_id, entry in list(self._pending.items()):
                    key = _order_key(entry.write)
                    if key is not None and key in waiting:
                        continue
                    if entry_id not in self._pending:  # discarded meanwhile (forget-me)
                        continue
                    try:
                        done = await self._applying_one(entry)
                    except Exception as error:
                        if is_busy(error):
                            if not self._said_busy:
                                log.warning(
                                    "the store cannot take writes now (%s): %d writes wait in %s",
                                    error,
                                    len(self._pending),
                                    self.path,
                                )
                                self._said_busy = True
                            return
                        log.exception("could not store a %s write; it is dropped", entry.write.kind)
                        done = True
                    if not done:
                        if key is not None:
                            waiting.add(key)
                        continue
                    stored.append(entry_id)
                    self._pending.pop(entry_id, None)
                    progress = True
            finally:
                await self._outbox.remove(stored)
        if self._said_busy and not self._pending:
            log.info("the database is free again: every waiting write is stored")
            self._said_busy = False

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
        """Store one write; False when it must wait (a reaction before its message's note)."""
        p, kind = entry.payload, entry.write.kind
        if kind == REACTION:
            change = await self._feedback.react(
                user_id=p["user_id"],
                message_id=p["message_id"],
                emoji=p["emoji"],
                guild_id=p["guild_id"],
                added=p["added"],
                now=datetime.fromisoformat(p["at"]),
            )
            return change is not None or not p["ours"] or self._clock() - entry.accepted >= MESSAGE_GRACE
        if kind == RATING:
            signal = _signal(p["signal"])
            if p["added"]:
                await self._feedback.set(
                    p["user_id"],
                    p["paper_id"],
                    signal,
                    guild_id=p["guild_id"],
                    now=datetime.fromisoformat(p["at"]),
                )
            else:
                await self._feedback.unset(p["user_id"], p["paper_id"], signal)
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
            )
            return True
        if kind == POSTED:
            await self._messages.record(
                p["message_id"], p["channel_id"], p["guild_id"], p["paper_id"], p["recipient_id"], p["kind"]
            )
            return True
        log.error("unknown kind of pending write %r in %s; dropped", kind, self.path)
        return True
