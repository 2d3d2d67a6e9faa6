"""The words of the papers' titles, for autocomplete: which titles hold a word, or a word starting with
what was typed.

Each segment holds the distinct words of a run of slots' titles, sorted, each with the slots holding it
(CSR), so the words starting with a prefix are one range of each segment (``bisect``). New papers form a
new segment; small segments are merged without the engine's lock (:mod:`paperindex.merges`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from paperindex.bulk_terms import title_words
from paperindex.merges import MergeJob, due_pair, replace_pair, run_merges
from paperindex.packed import PackedStrings, check_sorted, encode, sorted_bisect
from paperindex.snapshot import Snapshot, check_offsets, check_range, expect

_MAX_SEGMENTS = 6


@dataclass(slots=True)
class TitleSegment:
    """Title words of slots [start, stop): sorted distinct words → slots (CSR)."""

    start: int
    stop: int
    words: PackedStrings  # sorted
    indptr: npt.NDArray[np.int64]
    slots: npt.NDArray[np.int32]


def _title_count(segment: TitleSegment) -> int:
    return segment.stop - segment.start


def _build_title_segment(titles: Sequence[str], start: int, stop: int) -> TitleSegment:
    names, ptr, flat = title_words(titles[start:stop])
    words = sorted(names)
    rank = np.empty(len(words), dtype=np.int64)
    word_id = {w: n for n, w in enumerate(names)}
    rank[np.fromiter(map(word_id.__getitem__, words), dtype=np.int64, count=len(words))] = np.arange(
        len(words)
    )
    keys = rank[flat]
    slots_of = np.repeat(np.arange(start, stop, dtype=np.int32), np.diff(ptr))
    order = np.argsort(keys, kind="stable")
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=len(words)), out=indptr[1:])
    return TitleSegment(start, stop, PackedStrings(words), indptr, slots_of[order])


class TitleWords:
    """The titles' words in segments: what :meth:`paperindex.engine.SearchEngine.autocomplete` looks up."""

    def __init__(self, segments: list[TitleSegment] | None = None) -> None:
        self.segments: list[TitleSegment] = segments if segments is not None else []
        self._merging = threading.Lock()  # one merge at a time; searches never take it

    def append(self, titles: Sequence[str], start: int, stop: int) -> None:
        """A segment for the titles of slots ``start .. stop`` (the caller holds the engine's lock)."""
        self.segments.append(_build_title_segment(titles, start, stop))

    def merge(self, lock: threading.RLock, titles: Sequence[str]) -> None:
        """Merge small segments, without holding ``lock`` while merging (``titles``: every slot's title,
        only ever appended to)."""

        def due() -> MergeJob[TitleSegment] | None:
            pair = due_pair(self.segments, _title_count, _MAX_SEGMENTS)
            if pair is None:
                return None
            start, stop = pair[0].start, pair[1].stop
            # Titles are only ever appended: the slots start..stop are there for good.
            return MergeJob(*pair, lambda: _build_title_segment(titles, start, stop))

        def install(job: MergeJob[TitleSegment], merged: TitleSegment) -> None:
            replace_pair(self.segments, job, merged)

        run_merges(lock, self._merging, due, install)

    def mark(self, word: str, prefix: npt.NDArray[np.bool_], exact: npt.NDArray[np.int16]) -> None:
        """Set ``prefix`` for the slots whose title has a word starting with ``word``; add one to
        ``exact`` for those whose title has ``word`` itself."""
        raw, past = encode(word), encode(word + "\U0010ffff")
        for seg in self.segments:
            lo = sorted_bisect(seg.words, raw)
            hi = sorted_bisect(seg.words, past, lo)
            prefix[seg.slots[seg.indptr[lo] : seg.indptr[hi]]] = True
            if lo < len(seg.words) and seg.words.raw(lo) == raw:
                exact[seg.slots[seg.indptr[lo] : seg.indptr[lo + 1]]] += 1

    def save(self, arrays: dict[str, np.ndarray], strings: dict[str, Sequence[str]]) -> list[list[int]]:
        """Put the segments into a snapshot's arrays and strings; their layout, for its metadata (call
        holding the engine's lock: references only)."""
        segments = list(self.segments)
        for n, seg in enumerate(segments):
            strings[f"engine.title{n}.words"] = seg.words
            arrays[f"engine.title{n}.indptr"] = seg.indptr
            arrays[f"engine.title{n}.slots"] = seg.slots
        return [[seg.start, seg.stop] for seg in segments]

    @classmethod
    def from_snapshot(cls, layout: Any, saved: Snapshot, n_slots: int) -> TitleWords:
        """The segments :meth:`save` wrote, each checked (SnapshotError otherwise)."""
        expect(isinstance(layout, list), "no title segments")
        segments: list[TitleSegment] = []
        start = 0
        for n, entry in enumerate(layout):
            expect(
                isinstance(entry, list) and len(entry) == 2 and all(type(v) is int for v in entry),
                f"title segment {n} badly described",
            )
            lo, hi = entry
            expect(lo == start and lo <= hi <= n_slots, f"title segment {n} out of place")
            words = saved.packed(f"engine.title{n}.words")
            expect(check_sorted(words), f"engine.title{n}.words: not sorted")
            indptr = saved.array(f"engine.title{n}.indptr", (np.int64,), length=len(words) + 1)
            slots = saved.array(f"engine.title{n}.slots", (np.int32,))
            check_offsets(f"engine.title{n}.indptr", indptr, len(slots))
            check_range(f"engine.title{n}.slots", slots, lo, hi)
            segments.append(TitleSegment(lo, hi, words, indptr, slots))
            start = hi
        expect(start == n_slots, "the title segments do not cover every slot")
        return cls(segments)
