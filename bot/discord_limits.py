"""Discord's rate limits, kept by the bot itself rather than learnt from 429s.

discord.py follows the ``X-RateLimit-*`` headers and retries a 429, which is enough for one
message at a time. It is not enough for a 09:00 rush: the global limit (50 requests a second)
has no headers until it is exceeded, and the reaction route's headers promise more than its bucket
allows (one reaction per 0.25 s per channel), so a client trusting them collects a 429 for nearly
every second reaction — and 10,000 invalid requests in 10 minutes get the bot banned. So:

* :class:`RequestPacer` — a token bucket shared by everything that sends in bulk (digests, feeds),
  at :data:`BULK_RATE`, a little under the global limit, so interactive answers keep headroom. Its
  requests take turns by lane (a feed's server, a DM digest's person:
  :mod:`bot.services.digests.fairness`), so a server's hundreds of feeds get one request in turn with
  every other server's digests, not all of theirs first. When
  Discord answers a request with a global 429 anyway, the pacer lets nothing through for the wait the
  answer's ``Retry-After`` names (:func:`global_limit_trace` sees it on the client's HTTP session).
  discord.py pauses its own requests only for the body's ``retry_after``, often a few milliseconds;
  after that, the requests it held and those the pacer kept letting through went out together, into
  the same crowded second;
* :class:`ChannelSpacer` — at most one reaction per :data:`REACTION_INTERVAL` in each channel;
* :class:`ChannelWindow` — at most :data:`MESSAGES_PER_WINDOW` messages in any :data:`MESSAGE_WINDOW`
  in each channel, waited for *before* the pacer: a message that passed the pacer and then waited in
  discord.py for its channel's bucket would go out at a moment the pacer never chose, bunched with
  others (a digest's sixth message in its DM does, every time);
* :data:`DIGEST_CONCURRENCY` — how many digests may be in flight for the pacer to be the limit:
  each one waits on its DM channel's message bucket (5 per 5 s) between its messages. One server's
  feeds hold at most half of them (``bot.services.digests.jobs``): still enough for the pacer to be
  their limit, and another server's digest always finds a place.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from types import SimpleNamespace

import aiohttp

from bot.services.digests.fairness import SHARED_LANE, FairSlots

#: Discord's global limit: requests per second per bot (interaction answers not counted).
GLOBAL_RATE = 50.0
#: What bulk sending may use of it.
BULK_RATE = 45.0
#: The requests digests may make in one minute: more due in one minute than this, and the rest are
#: moved to the minutes after it (``bot.services.digests.timing.moved_later``), as the pacer would send them.
BULK_CALLS_PER_MINUTE = int(BULK_RATE * 60)
#: Create Message per channel: this many per MESSAGE_WINDOW seconds.
MESSAGES_PER_WINDOW = 5
MESSAGE_WINDOW = 5.0
#: Beyond MESSAGE_WINDOW, for the time an answer takes to arrive and the clocks to differ.
MESSAGE_MARGIN = 0.1
#: Create Reaction per channel: one per 0.25 s, plus a margin for the time a request is on its way.
REACTION_INTERVAL = 0.3


class RequestPacer:
    """A token bucket: at most ``rate`` requests a second on average, ``burst`` at once.

    In any one second it lets through at most ``rate + burst`` requests, so with the defaults a rush
    stays under the global limit however the second is counted, with a little room for requests that
    bunch up on their way. Waiting requests go in turns by their ``lane`` (round robin between lanes,
    in order within one).
    """

    def __init__(
        self, rate: float = BULK_RATE, burst: int = 2, *, monotonic: Callable[[], float] = time.monotonic
    ):
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = rate
        self.burst = burst
        self._monotonic = monotonic
        self._tokens = float(burst)
        self._updated = monotonic()
        self._held_until = 0.0
        self._turns = FairSlots(1)

    def hold(self, seconds: float) -> None:
        """Discord refused a request with its global limit: let nothing through for ``seconds`` (or
        longer, if an earlier hold lasts longer), then start again from an empty bucket, so the
        requests discord.py releases when its own wait ends are not joined by a burst."""
        self._held_until = max(self._held_until, self._monotonic() + max(0.0, seconds))
        self._tokens = 0.0
        self._updated = self._held_until

    async def wait(self, lane: Hashable = SHARED_LANE) -> None:
        async with self._turns.slot(lane):
            while True:
                now = self._monotonic()
                if now < self._held_until:
                    await asyncio.sleep(self._held_until - now)
                    continue
                self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
                self._updated = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self.rate)


def global_retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """The seconds to wait that a global 429 names (None for any other answer): its ``Retry-After``
    header (whole seconds, sent beside the body's ``retry_after``: Discord's docs, "Exceeding A Rate
    Limit"), 1 s when the header is missing or unreadable."""
    if status != 429 or headers.get("X-RateLimit-Global", "").lower() != "true":
        return None
    try:
        return max(0.0, float(headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


def global_limit_trace(pacer: RequestPacer) -> aiohttp.TraceConfig:
    """An aiohttp trace for the discord.py client (``http_trace=``): every global 429 it gets holds
    the pacer for the wait Discord names."""

    async def on_request_end(
        session: aiohttp.ClientSession, context: SimpleNamespace, params: aiohttp.TraceRequestEndParams
    ) -> None:
        wait = global_retry_after(params.response.status, params.response.headers)
        if wait is not None:
            pacer.hold(wait)

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(on_request_end)
    return trace


class ChannelSpacer:
    """At most one call per ``interval`` in each channel (the reaction bucket), in call order."""

    def __init__(
        self, interval: float = REACTION_INTERVAL, *, monotonic: Callable[[], float] = time.monotonic
    ):
        self.interval = interval
        self._monotonic = monotonic
        self._next: dict[int, float] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def wait(self, channel_id: int) -> None:
        async with self._locks.setdefault(channel_id, asyncio.Lock()):
            delay = self._next.get(channel_id, 0.0) - self._monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next[channel_id] = self._monotonic() + self.interval


class ChannelWindow:
    """At most ``limit`` sends in any ``window`` seconds in each channel, one at a time per channel.

    ``async with window.slot(channel_id):`` waits until the channel has room and holds it for the send
    inside the block; the send counts from the moment the block ends (its answer arrived), so the
    window is measured at least as strictly as Discord measures it.
    """

    #: channels kept before idle ones are forgotten
    KEEP = 1024

    def __init__(
        self,
        limit: int = MESSAGES_PER_WINDOW,
        window: float = MESSAGE_WINDOW + MESSAGE_MARGIN,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be at least 1 and window positive")
        self.limit = limit
        self.window = window
        self._monotonic = monotonic
        self._sent: dict[int, collections.deque[float]] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def slot(self, channel_id: int) -> AsyncIterator[None]:
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            sent = self._sent.setdefault(channel_id, collections.deque(maxlen=self.limit))
            if len(sent) == self.limit:
                delay = sent[0] + self.window - self._monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            try:
                yield
            finally:
                sent.append(self._monotonic())
        if len(self._sent) > self.KEEP:
            self._forget_idle()

    def _forget_idle(self) -> None:
        cutoff = self._monotonic() - self.window
        for channel_id in [c for c, sent in self._sent.items() if not sent or sent[-1] <= cutoff]:
            lock = self._locks.get(channel_id)
            if lock is None or not lock.locked():
                self._sent.pop(channel_id, None)
                self._locks.pop(channel_id, None)


#: Digests in flight at once: a digest posts at most MESSAGES_PER_WINDOW messages per MESSAGE_WINDOW in
#: its DM (Discord's bucket per channel), so this many sending together let the pacer, not the
#: channels, set the pace.
DIGEST_CONCURRENCY = math.ceil(BULK_RATE * MESSAGE_WINDOW / MESSAGES_PER_WINDOW)
