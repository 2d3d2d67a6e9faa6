"""Per-person limits on the commands that cost the bot the most, so one person cannot slow it for all.

Every command shares one process: its event loop, its CPU and the pacer every digest's messages go
through under Discord's global limit. A person repeating `/paper digest` holds up everyone's scheduled
digests; one sending searches or recommendations in a loop holds up everyone's answers. So each person
may use each of these a few times at once, then once every so often (a token bucket per person and
command), and may have one `/paper digest` going out at a time. A refused use is told how long to wait,
and nothing of it is done or kept for later.

The limits are per process (a bot of several gateway processes lets a person who uses it in servers on
two of them do twice as much); `PAPERBOT_PERSON_LIMITS=off` lifts them, for load tests.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from bot.errors import UserFacingError


@dataclass(frozen=True, slots=True)
class Limit:
    """Up to ``burst`` uses at once, then one more every ``every`` seconds."""

    command: str  # as the person typed it, for the message: "`/paper digest`"
    burst: int
    every: float

    def describe(self) -> str:
        return f"{self.burst} at once, then one every {_duration(self.every)}"


DIGEST_NOW: Final = Limit("`/paper digest`", burst=2, every=600)
RECOMMEND: Final = Limit("`/paper recommend`", burst=5, every=10)
SEARCH: Final = Limit("searching (`/paper search`, `/paper similar`, ◀ ▶)", burst=20, every=2)
SUBSCRIBE: Final = Limit("`/paper subscribe`", burst=5, every=10)
LIBRARY: Final = Limit("`/paper interests add file:`", burst=2, every=60)
#: the limit of each guarded action, by the name the commands use
LIMITS: Final[Mapping[str, Limit]] = {
    "digest": DIGEST_NOW,
    "recommend": RECOMMEND,
    "search": SEARCH,
    "subscribe": SUBSCRIBE,
    "library": LIBRARY,
}
#: buckets kept before the full ones (nothing to remember) are dropped
_PRUNE_AT: Final = 10_000


class TooSoonError(UserFacingError):
    """A person used a command more often than its limit allows; ``wait`` is how long until they may."""

    def __init__(self, limit: Limit, wait: float) -> None:
        self.limit = limit
        self.wait = wait
        super().__init__(
            f"⏳ Try again in {_duration(wait)}: {limit.command} is limited to {limit.describe()} for each "
            "person, so that the bot stays quick for everyone."
        )


class AlreadyRunningError(UserFacingError):
    """The person's previous use of this command is still under way."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float  # when ``tokens`` was counted (the clock's time)


class PersonLimits:
    """Each person's budget per command (:data:`LIMITS`), and what each has in flight.

    ``clock`` gives seconds (monotonic); ``enabled=False`` allows everything (nothing is counted).
    """

    def __init__(
        self,
        limits: Mapping[str, Limit] = LIMITS,
        *,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
    ) -> None:
        self.limits = limits
        self.enabled = enabled
        self._clock = clock
        self._buckets: dict[tuple[str, int], _Bucket] = {}
        self._running: set[tuple[str, int]] = set()

    def take(self, action: str, user_id: int) -> None:
        """Count one use of ``action`` by the person, or raise :class:`TooSoonError` (nothing counted)."""
        if not self.enabled:
            return
        limit, now = self.limits[action], self._clock()
        bucket = self._buckets.get((action, user_id))
        if bucket is None:
            if len(self._buckets) >= _PRUNE_AT:
                self._prune(now)
            bucket = self._buckets[(action, user_id)] = _Bucket(float(limit.burst), now)
        bucket.tokens = min(float(limit.burst), bucket.tokens + (now - bucket.at) / limit.every)
        bucket.at = now
        if bucket.tokens < 1.0:
            raise TooSoonError(limit, (1.0 - bucket.tokens) * limit.every)
        bucket.tokens -= 1.0

    @contextlib.contextmanager
    def one_at_a_time(self, action: str, user_id: int, *, busy: str) -> Iterator[None]:
        """Hold the person's one ``action`` in flight; :class:`AlreadyRunningError` with ``busy`` when
        they have one going already."""
        key = (action, user_id)
        if not self.enabled:
            yield
            return
        if key in self._running:
            raise AlreadyRunningError(busy)
        self._running.add(key)
        try:
            yield
        finally:
            self._running.discard(key)

    def _prune(self, now: float) -> None:
        """Forget the buckets that have filled up again: a new one starts full as well."""
        for key, bucket in list(self._buckets.items()):
            limit = self.limits[key[0]]
            if bucket.tokens + (now - bucket.at) / limit.every >= limit.burst:
                del self._buckets[key]


def _duration(seconds: float) -> str:
    """ "7 s", "2 min", "9 min 12 s": whole seconds, rounded up (never "0 s")."""
    whole = max(1, math.ceil(seconds - 1e-9))
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min" + (f" {rest} s" if rest else "")
