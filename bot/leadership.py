"""Which process does the background work: the one holding the store's leader lock.

Every process whose role includes the background work (`all`, `worker`) runs `Leadership.run`: it
tries the lock (`storage.leadership`) every `every` seconds while another process holds it, and
starts the work the moment it gets it — when the leader stopped or died, the next try finds the lock
free. A leader checks that it still holds the lock at the same pace and stops the work when it does
not (its connection to the server died, so another process may lead by now). Stopping the process
stops the work and lets go of the lock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from storage.leadership import LeaderLock

log = logging.getLogger(__name__)


class Leadership:
    def __init__(
        self,
        lock: LeaderLock,
        *,
        lead: Callable[[], Awaitable[None]],
        step_down: Callable[[], Awaitable[None]],
        every: float,
    ) -> None:
        self.lock = lock
        self._lead = lead
        self._step_down = step_down
        self.every = every
        self.leading = False

    async def step(self) -> None:
        """One look: take the lead if the lock is free, or step down if it was lost."""
        if not self.leading:
            if await self.lock.acquire():
                self.leading = True
                log.info("leading: this process does the background work (digests, arXiv fetch, pruning)")
                await self._lead()
        elif not await self.lock.held():
            self.leading = False
            log.warning("no longer leading (the leader lock was lost): stopping the background work")
            await self._step_down()

    async def run(self) -> None:
        """Look every `every` seconds until cancelled; then stop the work and let go of the lock."""
        try:
            while True:
                try:
                    await self.step()
                except Exception:
                    log.exception("could not check the leader lock; trying again shortly")
                await asyncio.sleep(self.every)
        finally:
            if self.leading:
                self.leading = False
                await self._step_down()
            await self.lock.release()
