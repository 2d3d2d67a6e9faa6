"""Many strings held as UTF-8 bytes and where each ends, decoded one at a time when asked.

A Python ``str`` costs 49 bytes or more besides its text, and a list of them 8 more each: at 100k papers
the titles, author lists, index terms and external ids a start used to read as Python objects were
850,000 strings (62 MB, with the dicts over them another 40 MB). :class:`PackedStrings` keeps one buffer
of their UTF-8 (a snapshot's memory-mapped member, or bytes) and one array of where each string ends;
reading string ``n`` decodes its bytes then. Strings appended later collect in a list and are packed into
a buffer of their own every :data:`_TAIL` strings.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Final, Protocol, TypeAlias, overload

import numpy as np
import numpy.typing as npt

ENCODING: Final = "utf-8"
ERRORS: Final = "surrogatepass"  # a lone surrogate (from JSON's \ud800) survives a round trip
_TAIL: Final = 4096  # strings appended before they are packed into a buffer of their own
_MAX_CHUNKS: Final = 8  # appended buffers before they are joined into one
_BLOCK: Final = 1 << 18  # bytes decoded or counted at once (bounds the temporaries)

IntArray: TypeAlias = npt.NDArray[np.int64]


class Buffer(Protocol):
    """What a chunk's bytes are: ``bytes`` or a read-only ``mmap.mmap`` (both slice to bytes and find)."""

    def __getitem__(self, item: slice, /) -> bytes: ...

    def find(self, sub: bytes, start: int = ..., end: int = ..., /) -> int: ...

    def __len__(self) -> int: ...


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


class _Chunk:
    """Strings ``first ..`` of a :class:`PackedStrings`: bytes ``base + starts[n] .. base + ends[n]`` of
    ``buffer``."""

    __slots__ = ("_ends", "base", "buffer", "ends", "first")

    def __init__(self, buffer: Buffer, base: int, ends: npt.NDArray[np.integer], first: int) -> None:
        self.buffer = buffer
        self.base = base
        self.ends = ends  # exclusive, relative to base
        self._ends = np.ascontiguousarray(ends).data  # one item read as a Python int, fast
        self.first = first

    def span(self, n: int) -> tuple[int, int]:
        """Where local string ``n`` lies in the buffer."""
        ends, base = self._ends, self.base
        return base + (ends[n - 1] if n else 0), base + ends[n]

    def get(self, n: int) -> str:
        lo, hi = self.span(n)
        return str(self.buffer[lo:hi], ENCODING, ERRORS)

    def raw(self, n: int) -> bytes:
        lo, hi = self.span(n)
        return self.buffer[lo:hi]

    @property
    def nbytes(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def data(self) -> bytes:
        return self.buffer[self.base : self.base + self.nbytes]


def _narrow(ends: IntArray) -> npt.NDArray[np.integer]:
    """Byte ends in 4 bytes each where they fit (half the memory of int64)."""
    return ends.astype(np.uint32) if not len(ends) or int(ends[-1]) < (1 << 32) else ends


def pack(strings: Iterable[str]) -> tuple[bytes, IntArray]:
    """Strings as their UTF-8 joined and where each ends (exclusive byte offsets)."""
    encoded = [encode(s) for s in strings]
    ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), dtype=np.int64)
    return b"".join(encoded), ends


class PackedStrings(Sequence[str]):
    """A list of strings held as UTF-8 buffers and end offsets; appended to at the end only."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self._chunks: list[_Chunk] = []
        self._starts: list[int] = []  # first string of each chunk
        self._packed = 0  # strings in the chunks
        self._tail: list[str] = []
        self.extend(strings)

    @classmethod
    def from_buffer(cls, buffer: Buffer, base: int, ends: IntArray) -> PackedStrings:
        """Strings whose UTF-8 is ``buffer[base:base + ends[-1]]``, string ``n`` ending at ``ends[n]``
        (checked by the caller: see :func:`paperindex.snapshot.Snapshot.packed`)."""
        packed = cls()
        if len(ends):
            packed._add_chunk(buffer, base, _narrow(np.asarray(ends, dtype=np.int64)))
        return packed

    def _add_chunk(self, buffer: Buffer, base: int, ends: npt.NDArray[np.integer]) -> None:
        self._chunks.append(_Chunk(buffer, base, ends, self._packed))
        self._starts.append(self._packed)
        self._packed += len(ends)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return self._packed + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if type(index) is int and 0 <= index < self._packed and len(self._chunks) == 1:
            chunk = self._chunks[0]  # the usual case, as directly as it goes: one buffer
            ends, base = chunk._ends, chunk.base
            return str(
                chunk.buffer[base + (ends[index - 1] if index else 0) : base + ends[index]], ENCODING, ERRORS
            )
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:  # a run: decoded a block at a time
                return list(islice(self.iter_from(start), max(0, stop - start)))
            return [self._get(n) for n in range(start, stop, step)]
        n = index + len(self) if index < 0 else index
        if not 0 <= n < len(self):
            raise IndexError("string index out of range")
        return self._get(n)

    def _chunk(self, n: int) -> _Chunk:
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else chunks[bisect.bisect_right(self._starts, n) - 1]

    def _get(self, n: int) -> str:
        if n >= self._packed:
            return self._tail[n - self._packed]
        chunk = self._chunk(n)
        return chunk.get(n - chunk.first)

    def raw(self, n: int) -> bytes:
        """String ``n``'s UTF-8."""
        if n >= self._packed:
            return encode(self._tail[n - self._packed])
        chunk = self._chunk(n)
        return chunk.raw(n - chunk.first)

    def __iter__(self) -> Iterator[str]:
        return self.iter_from(0)

    def iter_from(self, start: int) -> Iterator[str]:
        """The strings from ``start`` on, decoded a block of them at a time (one decode, then slices)."""
        for chunk in self._chunks:
            count = len(chunk.ends)
            if chunk.first + count <= start:
                continue
            skip = max(0, start - chunk.first)
            for a, b in _blocks(chunk.ends):
                if b <= skip:
                    continue
                lo = int(chunk.ends[a - 1]) if a else 0
                text = str(
                    chunk.buffer[chunk.base + lo : chunk.base + int(chunk.ends[b - 1])], ENCODING, ERRORS
                )
                cuts = np.cumsum(
                    _char_counts(chunk.buffer, chunk.base, chunk.ends, a, b), dtype=np.int64
                ).tolist()
                begin = 0 if a >= skip else cuts[skip - a - 1]
                for end in cuts[max(0, skip - a) :]:
                    yield text[begin:end]
                    begin = end
        yield from self._tail[max(0, start - self._packed) :]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedStrings | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        """Bytes held in memory for the strings (a mapped buffer counted too)."""
        return sum(c.nbytes + c.ends.nbytes for c in self._chunks) + sum(49 + len(s) + 8 for s in self._tail)

    # ------------------------------------------------------------------ appending
    def append(self, text: str) -> None:
        self._tail.append(text)
        if len(self._tail) >= _TAIL:
            self._pack_tail()

    def extend(self, strings: Iterable[str]) -> None:
        for text in strings:
            self.append(text)

    def _pack_tail(self) -> None:
        data, ends = pack(self._tail)
        self._tail = []
        self._add_chunk(data, 0, _narrow(ends))
        if len(self._chunks) > _MAX_CHUNKS:
            self._join_appended()

    def _join_appended(self) -> None:
        """The chunks after the first joined into one buffer (the first may be a snapshot's mapping)."""
        first, rest = self._chunks[0], self._chunks[1:]
        pieces = [c.data() for c in rest]
        sizes = np.fromiter((c.nbytes for c in rest), dtype=np.int64, count=len(rest))
        shifted = [
            c.ends.astype(np.int64) + int(off) for c, off in zip(rest, np.cumsum(sizes) - sizes, strict=True)
        ]
        self._chunks, self._starts, self._packed = [first], [0], len(first.ends)
        self._add_chunk(b"".join(pieces), 0, _narrow(np.concatenate(shifted)))

    # ------------------------------------------------------------------ whole
    def arrays(self) -> tuple[npt.NDArray[np.uint8], IntArray]:
        """All the strings' UTF-8 and where each ends: what a snapshot saves."""
        tail_data, tail_ends = pack(self._tail)
        pieces, ends, offset = [], [], 0
        for chunk in self._chunks:
            pieces.append(chunk.data())
            ends.append(chunk.ends.astype(np.int64) + offset)
            offset += chunk.nbytes
        pieces.append(tail_data)
        ends.append(tail_ends + offset)
        joined = b"".join(pieces)
        return np.frombuffer(joined, dtype=np.uint8), np.concatenate([np.zeros(0, np.int64), *ends])

    def containing(self, needle: str) -> IntArray:
        """Indexes of the strings holding ``needle`` (a substring search in the buffers, nothing decoded
        but the strings not yet packed)."""
        wanted = encode(needle)
        found: list[int] = []
        for chunk in self._chunks:
            buffer, base, ends = chunk.buffer, chunk.base, chunk.ends
            stop = base + chunk.nbytes
            at = buffer.find(wanted, base, stop) if wanted else -1
            while at >= 0:
                n = int(np.searchsorted(ends, at - base, side="right"))  # the string holding byte ``at``
                end = base + int(ends[n])
                if at + len(wanted) <= end:  # wholly inside string n (not across its end)
                    found.append(chunk.first + n)
                    at = buffer.find(wanted, end, stop)
                else:
                    at = buffer.find(wanted, at + 1, stop)
            if not wanted:
                found.extend(range(chunk.first, chunk.first + len(ends)))
        found.extend(self._packed + n for n, text in enumerate(self._tail) if needle in text)
        return np.array(found, dtype=np.int64)

    def char_lengths(self) -> npt.NDArray[np.int32]:
        """Each string's length in characters (what ``len`` gives), counted in the buffers."""
        out = [_char_counts(c.buffer, c.base, c.ends) for c in self._chunks]
        out.append(np.fromiter(map(len, self._tail), dtype=np.int32, count=len(self._tail)))
        return np.concatenate(out)


def _blocks(ends: npt.NDArray[np.integer], first: int = 0) -> Iterator[tuple[int, int]]:
    """Runs of strings ``[a, b)`` from ``first`` on, of about :data:`_BLOCK` bytes each (a longer string
    alone)."""
    n, a = len(ends), first
    while a < n:
        start = int(ends[a - 1]) if a else 0
        b = int(np.searchsorted(ends, start + _BLOCK, side="right"))
        b = max(b, a + 1)
        yield a, min(b, n)
        a = b


def _char_counts(
    buffer: Buffer, base: int, ends: npt.NDArray[np.integer], first: int = 0, stop: int | None = None
) -> npt.NDArray[np.int32]:
    """Characters of strings ``first .. stop``: their bytes that do not continue a UTF-8 sequence."""
    stop = len(ends) if stop is None else stop
    counts = np.empty(stop - first, dtype=np.int32)
    for a, b in _blocks(ends[:stop], first):
        lo = int(ends[a - 1]) if a else 0
        data = np.frombuffer(buffer[base + lo : base + int(ends[b - 1])], dtype=np.uint8)
        leads = (data & 0xC0) != 0x80  # a byte that starts a character
        local = ends[a:b].astype(np.int64) - lo
        before = np.concatenate([[0], local[:-1]])
        filled = local > before
        found = np.zeros(b - a, dtype=np.int32)
        if filled.any():
            found[filled] = np.add.reduceat(leads, before[filled], dtype=np.int32)
        counts[a - first : b - first] = found
    return counts


def hashes(strings: Iterable[str]) -> npt.NDArray[np.int64]:
    """Python's ``hash`` of each string (this process's: what a table built in it looks strings up by),
    the strings decoded a few at a time (none kept)."""
    return np.fromiter(map(hash, strings), dtype=np.int64)


def sorted_bisect(strings: PackedStrings, key: bytes, lo: int = 0, hi: int | None = None) -> int:
    """The first index in ``lo .. hi`` whose string's UTF-8 is not below ``key`` (``strings`` sorted; UTF-8
    sorts as the code points do)."""
    hi = len(strings) if hi is None else hi
    if len(strings._chunks) == 1 and not strings._tail:  # the usual case: one buffer, read in place
        chunk = strings._chunks[0]
        buffer, base, ends = chunk.buffer, chunk.base, chunk._ends
        while lo < hi:
            mid = (lo + hi) // 2
            if buffer[base + (ends[mid - 1] if mid else 0) : base + ends[mid]] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo
    while lo < hi:
        mid = (lo + hi) // 2
        if strings.raw(mid) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def as_packed(strings: Sequence[str]) -> PackedStrings:
    return strings if isinstance(strings, PackedStrings) else PackedStrings(strings)


def holding_byte(strings: PackedStrings, byte: int) -> IntArray:
    """Indexes of the strings whose UTF-8 holds ``byte`` (an ASCII character), found in the buffers at
    once."""
    found: list[IntArray] = []
    for chunk in strings._chunks:
        data = np.frombuffer(chunk.buffer[chunk.base : chunk.base + chunk.nbytes], dtype=np.uint8)
        at = np.flatnonzero(data == byte)
        found.append(np.unique(np.searchsorted(chunk.ends, at, side="right")).astype(np.int64) + chunk.first)
    char = chr(byte)
    found.append(np.array([strings._packed + n for n, t in enumerate(strings._tail) if char in t], np.int64))
    return np.concatenate([np.zeros(0, np.int64), *found])


def check_sorted(strings: PackedStrings) -> bool:
    """Whether the strings are in strictly increasing order (what a bisect over them needs)."""
    previous: bytes | None = None
    for chunk in strings._chunks:
        data = chunk.data()
        ends = chunk.ends.tolist()
        start = 0
        for end in ends:
            current = data[start:end]
            if previous is not None and not previous < current:
                return False
            previous, start = current, end
    for text in strings._tail:
        current = encode(text)
        if previous is not None and not previous < current:
            return False
        previous = current
    return True


class PackedSlice(Sequence[str]):
    """Strings ``start .. stop`` of a :class:`PackedStrings`, decoded when read: its length (and
    whether it is empty) costs nothing."""

    def __init__(self, strings: PackedStrings, start: int, stop: int) -> None:
        self._strings, self._start, self._stop = strings, start, max(start, stop)

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[n] for n in range(*index.indices(len(self)))]
        n = index + len(self) if index < 0 else index
        if not 0 <= n < len(self):
            raise IndexError("string index out of range")
        return self._strings[self._start + n]

    def __iter__(self) -> Iterator[str]:
        return islice(self._strings.iter_from(self._start), len(self))
