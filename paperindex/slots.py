"""Which slot of the index holds each document id: a table indexed by id while ids are dense.

Paper ids are the store's row ids, 1, 2, 3, …: a table of int32 slots indexed by id (−1 where no
document is) takes 4 bytes an id where a dict of Python ints takes about 100 bytes an entry. Ids that
would make the table much larger than the documents it holds (negative ones, or a few very large
ones) turn it into a dict, for good.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import numpy as np
import numpy.typing as npt

_SPARE: Final = 1024  # ids the table may hold beyond 4 per document


class SlotMap(Mapping[int, int]):
    """id → slot, with the dict operations the index uses."""

    def __init__(self) -> None:
        self._table: npt.NDArray[np.int32] | None = np.full(0, -1, dtype=np.int32)
        self._dict: dict[int, int] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count if self._table is not None else len(self._dict)

    def __getitem__(self, doc_id: int) -> int:
        table = self._table
        if table is None:
            return self._dict[doc_id]
        if 0 <= doc_id < len(table):
            slot = int(table[doc_id])
            if slot >= 0:
                return slot
        raise KeyError(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        table = self._table
        if table is None:
            return doc_id in self._dict
        if not isinstance(doc_id, int | np.integer) or not 0 <= doc_id < len(table):
            return False
        return bool(table[doc_id] >= 0)

    def __iter__(self) -> Iterator[int]:
        if self._table is None:
            return iter(self._dict)
        return iter(np.flatnonzero(self._table >= 0).tolist())

    def assign(self, doc_ids: Iterable[int], slots: Iterable[int]) -> None:
        """Point each id at its slot (ids already present move)."""
        ids = np.fromiter(doc_ids, dtype=np.int64)
        where = np.fromiter(slots, dtype=np.int64, count=len(ids))
        if not len(ids):
            return
        table = self._table
        if table is not None:
            top = int(ids.max())
            if int(ids.min()) < 0 or top >= 4 * (len(self) + len(ids)) + _SPARE:
                self._dict = dict(self.items())
                self._table = table = None
            elif top >= len(table):
                grown = np.full(max(top + 1, 2 * len(table)), -1, dtype=np.int32)
                grown[: len(table)] = table
                self._table = table = grown
        if table is None:
            self._dict.update(zip(ids.tolist(), where.tolist(), strict=True))
            return
        self._count += int(np.count_nonzero(table[ids] < 0))
        table[ids] = where

    def pop(self, doc_id: int) -> int:
        slot = self[doc_id]
        if self._table is None:
            del self._dict[doc_id]
        else:
            self._table[doc_id] = -1
            self._count -= 1
        return slot

    def slots_array(self, doc_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The slot of each id, at once (KeyError for the first id not present)."""
        table = self._table
        if table is None:
            return np.array([self._dict[int(i)] for i in doc_ids], dtype=np.int64)
        inside = (doc_ids >= 0) & (doc_ids < len(table))
        found = np.full(len(doc_ids), -1, dtype=np.int64)
        found[inside] = table[doc_ids[inside]]
        missing = np.flatnonzero(found < 0)
        if len(missing):
            raise KeyError(int(doc_ids[missing[0]]))
        return found

    def slots(self, doc_ids: Iterable[int]) -> list[int]:
        """The slots of those of ``doc_ids`` that are present."""
        return [self[i] for i in doc_ids if i in self]

    @property
    def nbytes(self) -> int:
        if self._table is not None:
            return self._table.nbytes
        return len(self._dict) * (8 * 3 + 28 + 28)  # entry, key and value objects
