"""How this process holds the digest runs it sends, so that several processes send each run once.

A claimed run is held by one process (``owner``: its host, pid and a random part) for a lease it
renews while it sends — a third of the lease at a time — and lets go of at a clean stop. A process
that died stops renewing; once its lease ran out, the process running the digests takes the run over
and resumes it (``storage.repositories.digests`` says how the store decides between processes).
Leases are in wall-clock time, whatever clock the digests' periods follow: they measure whether a
process is still alive, so the processes of one bot need clocks that agree (NTP) to well within one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

from storage.repositories.digests import DigestRepository

log = logging.getLogger(__name__)

#: How long a lease lasts unless the settings say otherwise (PAPERBOT_TAKEOVER_SECONDS).
DEFAULT_LEASE = timedelta(seconds=30)


def process_name() -> str:
    """This process, as the owner of the runs it sends: host, pid, and a random part (pids recur)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Leases:
    def __init__(
        self,
        digests: DigestRepository,
        *,
        owner: str | None = None,
        duration: timedelta = DEFAULT_LEASE,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.digests = digests
        self.owner = owner or process_name()
        self.duration = duration
        self._wall = wall
        self.lost: set[int] = set()  # runs another process took over while this one sent them

    def now(self) -> str:
        return datetime.fromtimestamp(self._wall(), UTC).isoformat(timespec="milliseconds")

    def until(self) -> str:
        """When a lease taken or renewed now runs out."""
        return (datetime.fromtimestamp(self._wall(), UTC) + self.duration).isoformat(timespec="milliseconds")

    async def take_over(self, run_id: int) -> bool:
        return await self.digests.take_over(run_id, self.owner, now=self.now(), lease_until=self.until())

    @contextlib.asynccontextmanager
    async def holding(self, run_id: int) -> AsyncIterator[None]:
        """Renew the lease of `run_id` until the block ends; a renewal that finds the run taken adds it
        to `lost` (the sender checks between papers)."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(self.duration.total_seconds() / 3)
                try:
                    if not await self.digests.renew(run_id, self.owner, lease_until=self.until()):
                        self.lost.add(run_id)
                        return
                except Exception:  # the store busy or away: try again; the lease may run out meanwhile
                    log.warning(
                        "could not renew the lease of digest run %s; trying again", run_id, exc_info=True
                    )

        self.lost.discard(run_id)
        renewing = asyncio.get_running_loop().create_task(renew(), name=f"digest-lease-{run_id}")
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def release(self, run_id: int) -> None:
        """Let go of a run this process stops sending at a clean stop (resumed at once elsewhere)."""
        try:
            await self.digests.release(run_id, self.owner)
        except Exception:  # its lease runs out instead
            log.warning("could not let go of digest run %s; its lease will run out", run_id, exc_info=True)
