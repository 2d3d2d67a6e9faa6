"""Taking turns between servers (and people): a server's hundreds of feeds due at once never hold back
another server's digest.

Work waiting for one of a few places (a delivery slot, the next request under Discord's global limit)
waits in the *lane* of whom it is for — a channel feed in its server's, a DM digest in its person's —
and the lanes take turns, first come first served within each, so one more digest in a busy lane waits
behind that lane's own work, not behind everyone's. A lane holds at most :attr:`FairSlots.per_lane`
places at once, so a lane arriving late still finds one free.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Hashable

from storage.models import Subscription

#: the lane of work that names no recipient (a DM open, a command-line digest)
SHARED_LANE = "shared"


def lane_of(sub: Subscription) -> tuple[str, int | None]:
    """Whose turn a subscription's digest takes: its server's for a channel feed, its person's for a DM."""
    if sub.is_channel:
        return ("server", sub.guild_id)
    return ("person", sub.user_id)


class FairSlots:
    """At most ``size`` holders at once, at most ``per_lane`` of them from one lane; waiting lanes are
    let in round robin (a lane served goes to the back of the line), each lane first come first served."""

    def __init__(self, size: int, *, per_lane: int | None = None) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self.per_lane = max(1, min(size, per_lane if per_lane is not None else size))
        self._held = 0
        self._held_by: collections.Counter[Hashable] = collections.Counter()
        self._waiting: collections.OrderedDict[Hashable, collections.deque[asyncio.Future[None]]] = (
            collections.OrderedDict()
        )

    @contextlib.asynccontextmanager
    async def slot(self, lane: Hashable = SHARED_LANE) -> AsyncIterator[None]:
        await self.acquire(lane)
        try:
            yield
        finally:
            self.release(lane)

    def waiting(self, lane: Hashable) -> int:
        return len(self._waiting.get(lane, ()))

    async def acquire(self, lane: Hashable = SHARED_LANE) -> None:
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(lane, collections.deque()).append(turn)
        self._let_in()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release(lane)  # given the place as it was cancelled: pass it on
            else:
                self._forget(lane, turn)
            raise

    def release(self, lane: Hashable = SHARED_LANE) -> None:
        self._held -= 1
        self._held_by[lane] -= 1
        if self._held_by[lane] <= 0:
            del self._held_by[lane]
        self._let_in()

    def _free_for(self, lane: Hashable) -> bool:
        return self._held < self.size and self._held_by[lane] < self.per_lane

    def _take(self, lane: Hashable) -> None:
        self._held += 1
        self._held_by[lane] += 1

    def _let_in(self) -> None:
        """Give the free places to the waiting lanes in turn, one each a round, skipping those holding
        their ``per_lane``."""
        given = True
        while given and self._held < self.size:
            given = False
            for lane in list(self._waiting):
                if self._held >= self.size:
                    return
                if not self._free_for(lane):
                    continue
                turns = self._waiting[lane]
                turn = turns.popleft()
                if turns:
                    self._waiting.move_to_end(lane)
                else:
                    del self._waiting[lane]
                self._take(lane)
                turn.set_result(None)
                given = True

    def _forget(self, lane: Hashable, turn: asyncio.Future[None]) -> None:
        turns = self._waiting.get(lane)
        if turns is not None and turn in turns:
            turns.remove(turn)
            if not turns:
                del self._waiting[lane]
        self._let_in()
