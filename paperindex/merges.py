"""Merging an index's segments without holding the lock its searches take.

A segment is never changed once built, so merging two of them only reads what nobody writes: the
merge runs while searches go on (on the event loop, they wait for the lock whoever holds it). The
lock is held only to choose the pair and to put the merged segment in their place, a few list
operations, where the merge itself (tenths of a second to seconds for a large segment's postings and
titles) would make every search in flight wait.

One thread merges at a time. A thread that finds another one merging leaves the work to it; that
one looks again once it lets go, so a segment added meanwhile is never left out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class MergeJob(Generic[S]):
    """Adjacent segments ``first`` and ``second`` (None: ``first`` alone, rewritten), and ``build``,
    which makes what replaces them (called without the lock: it must read only what it was given)."""

    first: S
    second: S | None
    build: Callable[[], S]


def due_pair(segments: Sequence[S], size: Callable[[S], int], max_segments: int) -> tuple[S, S] | None:
    """The last two segments once the newest has grown to a quarter of the one before it, or there
    are more than ``max_segments``: sizes stay geometric, so each item is merged O(log n) times."""
    if len(segments) >= 2 and (size(segments[-2]) <= 4 * size(segments[-1]) or len(segments) > max_segments):
        return segments[-2], segments[-1]
    return None


def replace_pair(segments: list[S], job: MergeJob[S], merged: S) -> slice:
    """Put ``merged`` where ``job``'s segments are in ``segments`` (found by identity: segments
    added since sit after them); returns the positions they held. The caller holds the lock."""
    at = next(n for n, segment in enumerate(segments) if segment is job.first)
    if job.second is not None and segments[at + 1] is not job.second:
        raise RuntimeError("a merge's segments are no longer next to each other")
    held = slice(at, at + (1 if job.second is None else 2))
    segments[held] = [merged]
    return held


def run_merges(
    lock: threading.RLock,
    merging: threading.Lock,
    next_job: Callable[[], MergeJob[S] | None],
    install: Callable[[MergeJob[S], S], None],
) -> None:
    """Build and install merges while ``next_job`` (called holding ``lock``, without side effects)
    gives one. ``install`` is called holding ``lock``; ``build`` is not."""
    while merging.acquire(blocking=False):
        try:
            while True:
                with lock:
                    job = next_job()
                if job is None:
                    break
                merged = job.build()
                with lock:
                    install(job, merged)
        finally:
            merging.release()
        with lock:
            if next_job() is None:  # nothing came while this thread let go of `merging`
                return
