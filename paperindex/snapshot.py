"""The search snapshot file: numpy arrays and JSON in an uncompressed zip, nothing that can run code.

The file sits beside the database, which may come from someone else (a backup, a shared volume), so
reading it must never execute anything and must check everything before the engine uses it:

* the container is a zip whose members are all stored (not compressed) ``.npy`` arrays, no bigger
  together than the file (no zip bomb);
* every member's ``.npy`` header is read first: its dtype must be one of the few plain numeric dtypes
  the engine saves (never ``object``, so nothing is unpickled: ``np.load(..., allow_pickle=False)``
  refuses pickled data anyway) and its size must fit in the member;
* ``meta`` is UTF-8 JSON (scalars and small lists) in a ``uint8`` array; a list of strings is two
  arrays, the UTF-8 of the strings one after the other and the byte where each one ends
  (:meth:`Snapshot.strings`, :meth:`Snapshot.packed`), checked to be UTF-8 cut between characters,
  so it can only ever give back strings; the engine then checks format and tokenizer versions, the fingerprint, every array's
  dtype, shape and bounds, and the consistency of the structures (see
  :meth:`paperindex.index.BM25Index.from_snapshot` and :meth:`paperindex.engine.SearchEngine.load`).

Anything wrong raises :class:`SnapshotError`; the caller then rebuilds the index (with a log line).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import tempfile
import zipfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final

import numpy as np
import numpy.typing as npt

from paperindex.packed import ENCODING, ERRORS, PackedStrings, as_packed

#: 1 a pickle, 2 documents' term ids as int32, 3 a byte or more a tf (widened for all past 255),
#: 5 strings as UTF-8 and byte ends (read in place, paperindex.packed), not joined by NUL
FORMAT: Final = 5
_SUFFIX: Final = ".npy"


def _plain(dtype: np.dtype[Any]) -> bool:
    """A dtype a snapshot may hold: booleans, integers and floats in native order (never object or
    records)."""
    return dtype.kind in "biuf" and dtype.names is None and dtype.subdtype is None and dtype.isnative


class SnapshotError(ValueError):
    """The file is not a whole snapshot this version wrote: it is never used."""


def _json_array(value: object) -> npt.NDArray[np.uint8]:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _string_arrays(strings: Sequence[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """A list of strings as two plain arrays: their UTF-8 one after the other, and the byte where each
    one ends."""
    return as_packed(strings).arrays()


def write(
    path: Path,
    meta: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    strings: Mapping[str, Sequence[str]],
) -> None:
    """Write a snapshot to ``path`` atomically (a temporary file of its own beside it, then a rename),
    readable by its owner only; missing folders are made owner-only too."""
    members: dict[str, np.ndarray] = {"meta": _json_array(dict(meta))}
    for name, values in strings.items():
        members[name + ".utf8"], members[name + ".ends"] = _string_arrays(values)
    for name, array in arrays.items():
        if name in members or not _plain(array.dtype):
            raise ValueError(f"cannot save {name!r} of dtype {array.dtype} in a snapshot")
        members[name] = array
    for folder in reversed([p for p in (path.parent, *path.parent.parents) if not p.exists()]):
        folder.mkdir(mode=0o700, exist_ok=True)
    # A temporary name of this writer's own (two processes may save the same snapshot at once), made
    # owner-only (0600) as the snapshot then is: it holds the titles the index was built from.
    descriptor, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with (
            os.fdopen(descriptor, "wb") as fh,
            zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive,
        ):
            for name, array in members.items():
                with archive.open(name + _SUFFIX, "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


class Snapshot:
    """A snapshot file opened for reading, its container checked; arrays are read and checked on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("rb")  # one open file: what is checked is what is read
        self._map: mmap.mmap | None = None  # mapped when packed strings are asked for
        try:
            self._offsets = self._check_container(self._file)
            self._names = frozenset(self._offsets)
            self._file.seek(0)
            self._npz = np.load(self._file, allow_pickle=False)
            self.meta = self._json("meta")
        except SnapshotError:
            self.close()
            raise
        except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
            self.close()
            raise SnapshotError(f"not a snapshot this version can read ({error})") from error
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file. What was read from the mapping (every array checked, every string) stays
        mapped, but its pages are given back: read again from the file (the system's page cache) when
        next used, so the process holds only what it uses after its start."""
        if hasattr(self, "_npz"):
            self._npz.close()
        if self._map is not None and hasattr(mmap, "MADV_DONTNEED"):
            # Nothing wrote to the private mapping: dropping its pages loses nothing.
            self._map.madvise(mmap.MADV_DONTNEED)
        self._file.close()

    @staticmethod
    def _check_container(file: BinaryIO) -> dict[str, tuple[int, int]]:
        """Each member's name → (where its ``.npy`` starts in the file, its size), all checked."""
        size = os.fstat(file.fileno()).st_size
        names: dict[str, tuple[int, int]] = {}
        total = 0
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                name = info.filename
                if (
                    not name.endswith(_SUFFIX)
                    or "/" in name
                    or info.compress_type != zipfile.ZIP_STORED
                    or info.file_size != info.compress_size
                    or name[: -len(_SUFFIX)] in names
                ):
                    raise SnapshotError(f"unexpected member {name!r}")
                total += info.file_size
                with archive.open(info) as member:
                    _check_header(name, member, info.file_size)
                names[name[: -len(_SUFFIX)]] = (_member_start(file, info), info.file_size)
        if total > size:
            raise SnapshotError("members larger than the file")
        return names

    def _json(self, name: str) -> Any:
        raw = self.array(name, (np.uint8,))
        try:
            return json.loads(raw.tobytes().decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError) as error:
            raise SnapshotError(f"{name}: not JSON ({error})") from error

    def strings(self, name: str, *, length: int | None = None) -> list[str]:
        """The list of strings ``name`` (of ``length`` items if given): always strings, by construction."""
        return list(self.packed(name, length=length, mapped=False))

    def packed(self, name: str, *, length: int | None = None, mapped: bool = True) -> PackedStrings:
        """The strings ``name`` (of ``length`` items if given), checked, held as their UTF-8: mapped from
        the file (``mapped``; its pages read when a string is, and the system's to drop again) or read.
        The check reads the file, not the mapping, so the process holds none of its pages for it."""
        ends = self.array(name + ".ends", (np.int64,), length=length)
        start, size = self._data_range(name + ".utf8", np.uint8)
        expect(not len(ends) or int(ends[0]) >= 0, f"{name}: ends out of range")
        expect(bool(np.all(ends[1:] >= ends[:-1])), f"{name}: ends out of order")
        expect((int(ends[-1]) if len(ends) else 0) == size, f"{name}: ends do not match the text")
        self._check_utf8(name, start, ends)
        if not len(ends):
            return PackedStrings()
        if mapped:
            return PackedStrings.from_buffer(self._mapping(), start, ends)
        self._file.seek(start)
        return PackedStrings.from_buffer(self._file.read(size), 0, ends)

    def _check_utf8(self, name: str, start: int, ends: npt.NDArray[np.int64]) -> None:
        """The bytes of every string are UTF-8 on their own: read a block of whole strings at a time
        from the file, decoded (and dropped), and no string starts inside a character."""
        block = 1 << 20
        n, first = len(ends), 0
        while first < n:
            lo = int(ends[first - 1]) if first else 0
            last = max(int(np.searchsorted(ends, lo + block, side="right")), first + 1)
            last = min(last, n)
            hi = int(ends[last - 1])
            self._file.seek(start + lo)
            data = self._file.read(hi - lo)
            expect(len(data) == hi - lo, f"{name}: text cut short")
            try:
                data.decode(ENCODING, ERRORS)
            except UnicodeDecodeError as error:
                raise SnapshotError(f"{name}: not UTF-8 ({error})") from error
            # each string's first byte (where one ends and the next starts) begins a character
            cuts = ends[first : last - 1] - lo
            cuts = cuts[cuts < len(data)]
            if len(cuts):
                leads = np.frombuffer(data, dtype=np.uint8)[cuts]
                expect(not bool(np.any((leads & 0xC0) == 0x80)), f"{name}: a string cut inside a character")
            first = last

    def _mapping(self) -> mmap.mmap:
        """The whole file mapped privately (once; what packed strings and :meth:`in_place` read). Copy
        on write: nothing writes to it, but the arrays on it are writeable ones."""
        if self._map is None:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_COPY)
        return self._map

    def _data_range(self, name: str, dtype: type[np.generic]) -> tuple[int, int]:
        """Where the data of the 1-D member ``name`` of ``dtype`` lies in the file, and its size in bytes."""
        start, count, _ = self._member_data(name, (dtype,))
        return start, count * np.dtype(dtype).itemsize

    def _member_data(
        self, name: str, dtypes: Collection[type[np.generic]], length: int | None = None
    ) -> tuple[int, int, np.dtype[Any]]:
        """Where the data of the 1-D member ``name`` starts in the file, its items and its dtype (one of
        ``dtypes``; ``length`` items if given), its header checked."""
        if name not in self._names:
            raise SnapshotError(f"{name}: missing")
        start, size = self._offsets[name]
        self._file.seek(start)
        try:
            version = np.lib.format.read_magic(self._file)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, found = read_header(self._file)
        except (ValueError, EOFError, OSError) as error:
            raise SnapshotError(f"{name}: unreadable ({error})") from error
        header = self._file.tell() - start
        if len(shape) != 1 or fortran or found not in {np.dtype(t) for t in dtypes}:
            raise SnapshotError(f"{name}: {found} of shape {shape} is not what was saved")
        if length is not None and shape[0] != length:
            raise SnapshotError(f"{name}: {shape[0]} items where {length} were saved")
        if int(shape[0]) * found.itemsize > size - header:
            raise SnapshotError(f"{name}: header promises more data than the member holds")
        return start + header, int(shape[0]), found

    def in_place(
        self, name: str, dtypes: Collection[type[np.generic]], *, length: int | None = None
    ) -> npt.NDArray[Any]:
        """The 1-D array ``name`` as :meth:`array` checks it, read in place from a private mapping of the
        file (its data aligned for its dtype; read otherwise): its pages are read when used and, once the
        snapshot is closed, left to the system again (see :meth:`close`). The array is writeable as numpy
        arrays are (what the compiled loops were compiled for), but nothing may write to it."""
        start, count, dtype = self._member_data(name, dtypes, length)
        if count == 0 or start % dtype.itemsize:
            return self.array(name, dtypes, length=length)
        return np.frombuffer(self._mapping(), dtype=dtype, count=count, offset=start)

    def array(
        self, name: str, dtypes: Collection[type[np.generic]], *, length: int | None = None
    ) -> npt.NDArray[Any]:
        """The 1-D array ``name``, checked to have one of ``dtypes`` (and ``length`` items if given)."""
        if name not in self._names:
            raise SnapshotError(f"{name}: missing")
        try:
            array: npt.NDArray[Any] = self._npz[name]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise SnapshotError(f"{name}: unreadable ({error})") from error
        if array.ndim != 1 or array.dtype not in {np.dtype(t) for t in dtypes}:
            raise SnapshotError(f"{name}: {array.dtype} of shape {array.shape} is not what was saved")
        if length is not None and len(array) != length:
            raise SnapshotError(f"{name}: {len(array)} items where {length} were saved")
        return array

    def mapped(
        self, name: str, dtypes: Collection[type[np.generic]], *, length: int | None = None
    ) -> npt.NDArray[Any]:
        """The 1-D array ``name`` as :meth:`array` checks it, but memory-mapped read-only from the file
        rather than read: its pages are read from the disk when used, and the system may drop them
        again (they are the file's), so an array a process mostly leaves alone costs it no memory."""
        start, count, dtype = self._member_data(name, dtypes, length)
        if count == 0:
            return np.zeros(0, dtype=dtype)
        return np.memmap(self._file, dtype=dtype, mode="r", offset=start, shape=(count,))


def _member_start(file: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Where a stored member's data starts in the file: past its local header (30 bytes, its name and
    its extra field, whose lengths the local header gives; they may differ from the central directory's)."""
    here = file.tell()
    file.seek(info.header_offset)
    local = file.read(30)
    file.seek(here)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise SnapshotError(f"{info.filename}: no local header")
    name_length = int.from_bytes(local[26:28], "little")
    extra_length = int.from_bytes(local[28:30], "little")
    return info.header_offset + 30 + name_length + extra_length


def _check_header(name: str, member: Any, member_size: int) -> None:
    """Read the ``.npy`` header only: a plain numeric dtype whose data fits in the member."""
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise SnapshotError(f"{name}: .npy version {version}")
    except (ValueError, EOFError, OSError) as error:
        raise SnapshotError(f"{name}: not an .npy array ({error})") from error
    if not _plain(dtype):
        raise SnapshotError(f"{name}: dtype {dtype} is not one a snapshot holds")
    count = 1
    for extent in shape:
        count *= int(extent)
    if count * dtype.itemsize > member_size:
        raise SnapshotError(f"{name}: header promises more data than the member holds")


def expect(condition: bool, problem: str) -> None:
    """Raise SnapshotError(problem) unless ``condition``."""
    if not condition:
        raise SnapshotError(problem)


def check_offsets(name: str, offsets: npt.NDArray[np.int64], end: int) -> None:
    """CSR offsets: start at 0, never decrease, end at ``end``."""
    expect(len(offsets) >= 1 and int(offsets[0]) == 0 and int(offsets[-1]) == end, f"{name}: bad bounds")
    expect(bool(np.all(offsets[1:] >= offsets[:-1])), f"{name}: offsets decrease")


def check_range(name: str, values: npt.NDArray[np.integer[Any]], low: int, high: int) -> None:
    """Every value in ``[low, high)``."""
    if len(values):
        expect(int(values.min()) >= low and int(values.max()) < high, f"{name}: values out of range")
