"""One process at a time leads a store: the one holding its leader lock does the background work
(digests, the arXiv fetch, pruning) that must not run twice, while other processes stand by.

- PostgreSQL: a session advisory lock (`pg_try_advisory_lock`, keyed by the store's own id) on a
  connection of its own, outside the pool (a pooled connection is reset, and its locks let go, when it
  goes back). The server lets go of it the moment that connection ends — the process exited or was
  killed (SIGKILL included), or the network between them died (TCP keepalives every few seconds find
  that out) — and a standby's next try gets it.
- SQLite: an exclusive `flock` on a file beside the database (`paperbot.db.leader`), which the
  operating system lets go of when the process ends, however it ends.

`held()` says whether the lock is still this process's: a leader asks it between pieces of work and
stops when it is not (its connection to the server died, so another process may be leading by now).
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import asyncpg

log = logging.getLogger(__name__)

#: How long a leader's check of its lock connection may take before the lock counts as lost.
CHECK_TIMEOUT_S = 5.0
#: TCP keepalives on the lock connection, so the server notices a leader that vanished from the
#: network (not only one that exited) within seconds (idle 5 s, then 3 probes 2 s apart).
_KEEPALIVE = {"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"}


class LeaderLock(abc.ABC):
    @abc.abstractmethod
    async def acquire(self) -> bool:
        """Take the lock if no other process holds it (never waits); True when this process holds it."""

    @abc.abstractmethod
    async def held(self) -> bool:
        """Whether this process still holds it."""

    @abc.abstractmethod
    async def release(self) -> None:
        """Let go (also when this process never held it)."""


class FileLeaderLock(LeaderLock):
    """SQLite's: an exclusive flock on `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    async def acquire(self) -> bool:
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    async def held(self) -> bool:
        return self._fd is not None

    async def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the file lets go of its flock


class AlwaysLeader(LeaderLock):
    """An in-memory database has one process: it leads."""

    async def acquire(self) -> bool:
        return True

    async def held(self) -> bool:
        return True

    async def release(self) -> None:
        return None


def advisory_key(store_id: str) -> int:
    """A store's advisory lock key, from its id: stores sharing a server never share one."""
    digest = hashlib.blake2b(f"paperbot leader {store_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1  # a non-negative bigint


class PostgresLeaderLock(LeaderLock):
    """PostgreSQL's: a session advisory lock on a connection of its own."""

    def __init__(self, url: str, key: int) -> None:
        self._url = url
        self._key = key
        self._conn: Any = None

    async def acquire(self) -> bool:
        if await self.held():
            return True
        try:
            self._conn = await asyncpg.connect(self._url, server_settings=_KEEPALIVE, timeout=CHECK_TIMEOUT_S)
            if await self._conn.fetchval("SELECT pg_try_advisory_lock($1)", self._key):
                return True
        except Exception as error:  # whatever the connection says, the lock is not known to be held
            log.warning("could not try the store's leader lock: %s", error)
        await self._drop()
        return False

    async def held(self) -> bool:
        """The server keeps a session's advisory lock as long as the session lives: held while its
        connection still answers."""
        if self._conn is None or self._conn.is_closed():
            return False
        try:
            await self._conn.fetchval("SELECT 1", timeout=CHECK_TIMEOUT_S)
        except Exception as error:  # whatever the connection says, the lock is not known to be held
            log.warning("lost the connection that holds the store's leader lock: %s", error)
            await self._drop()
            return False
        return True

    async def release(self) -> None:
        await self._drop()  # the session's end lets go of its advisory locks

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await conn.close(timeout=CHECK_TIMEOUT_S)
