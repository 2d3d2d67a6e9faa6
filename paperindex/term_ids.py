"""The index's terms numbered: term → id, a new term given the next id as it is first added.

:class:`TermIds` is a dict (a batch of documents numbering its own terms); :class:`TermTable` is the
index's vocabulary, held without a Python object per term: the terms as packed UTF-8
(:class:`paperindex.packed.PackedStrings`) and a sorted array of their hashes (Python's, of this process)
with the id of each, so finding a term's id is a binary search and a comparison of its bytes (a hash
two terms share only makes the search compare both). At 100k papers (334,455 terms) the dict and its strings were 38 MB;
the table is 9 MB.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex.packed import PackedStrings, encode, hashes, holding_byte
from paperindex.tokenizer import PHRASE_JOIN

IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
_PHRASE_BYTE = ord(PHRASE_JOIN)
_RECENT = 4096  # term ids kept in a dict, the most recently found


class TermIds(dict[str, int]):
    """term → id; looking up a new term gives it the next id."""

    def __init__(self, terms: list[str]) -> None:
        super().__init__()
        self.terms = terms

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self.terms)
        self.terms.append(term)
        return tid


class DuplicateTermError(ValueError):
    """A table built from terms one of which comes twice."""


class TermTable:
    """term → id over packed terms; :meth:`add` gives new terms the next ids."""

    def __init__(self, terms: PackedStrings | None = None) -> None:
        self.terms = terms if terms is not None else PackedStrings()
        self.is_word: BoolArray = np.zeros(0, dtype=bool)  # per term id: not a phrase term
        # the ids of the terms last found: a search looks each of its terms up three times or more, and
        # people search the same words (a dict of a few thousand, where all of them was 18 MB)
        self._recent: dict[str, int] = {}
        keys = hashes(self.terms)
        order = np.argsort(keys, kind="stable")
        self._hashes = keys[order]
        self._ids = order.astype(np.int32)
        self._lookup = self._hashes.data, self._ids.data  # bisect and items as ints, fast
        # Terms sharing a hash (a run of them in the sorted hashes): never the same term twice.
        same = np.flatnonzero(self._hashes[1:] == self._hashes[:-1])
        starts = same[np.concatenate([[True], same[1:] != same[:-1] + 1])] if len(same) else same
        for start in starts.tolist():
            stop = start + 1
            while stop < len(self._hashes) and self._hashes[stop] == self._hashes[start]:
                stop += 1
            raws = {self.terms.raw(int(tid)) for tid in self._ids[start:stop]}
            if len(raws) < stop - start:
                raise DuplicateTermError(f"a term twice among {stop - start} of one hash")

    def __len__(self) -> int:
        return len(self.terms)

    @property
    def nbytes(self) -> int:
        return self.terms.nbytes + self._hashes.nbytes + self._ids.nbytes + self.is_word.nbytes

    def get(self, term: str, default: int | None = None) -> int | None:
        """The id of ``term``, ``default`` if it has none."""
        found = self._recent.get(term)
        if found is not None:
            return found
        found = self._find(term, hash(term))
        if found < 0:
            return default
        recent = self._recent
        if len(recent) >= _RECENT:
            del recent[next(iter(recent))]  # the longest held first
        recent[term] = found  # a term's id never changes: nothing to invalidate
        return found

    def _find(self, term: str, key: int) -> int:
        keys, ids = self._lookup
        at = bisect.bisect_left(keys, key)
        data: bytes | None = None
        while at < len(keys) and keys[at] == key:
            tid = ids[at]
            data = encode(term) if data is None else data
            if self.terms.raw(tid) == data:
                return tid
            at += 1
        return -1

    def add(self, terms: Sequence[str]) -> npt.NDArray[np.int32]:
        """The ids of ``terms``, those not in the table given the next ids (in their order)."""
        keys = hashes(terms)
        ids = np.full(len(terms), -1, dtype=np.int32)
        known = self._hashes
        at = np.searchsorted(known, keys)
        maybe = np.flatnonzero(known[np.minimum(at, len(known) - 1)] == keys) if len(known) else at[:0]
        for n in maybe.tolist():  # a hash the table has: the term's, unless another term's
            ids[n] = self._find(terms[n], int(keys[n]))
        missing = np.flatnonzero(ids < 0)
        if not len(missing):
            return ids
        new: dict[str, int] = {}
        first = len(self.terms)
        fresh: list[int] = []  # index in ``terms`` of each new term
        for n in missing.tolist():
            tid = new.get(terms[n], -1)
            if tid < 0:
                tid = new[terms[n]] = first + len(fresh)
                fresh.append(n)
            ids[n] = tid
        self.terms.extend(terms[n] for n in fresh)
        fresh_keys = keys[fresh]
        order = np.argsort(fresh_keys, kind="stable")
        where = np.searchsorted(known, fresh_keys[order], side="right")
        self._hashes = np.insert(known, where, fresh_keys[order])
        self._ids = np.insert(self._ids, where, (order + first).astype(np.int32))
        self._lookup = self._hashes.data, self._ids.data
        return ids

    def word_mask(self, ids: IntArray) -> BoolArray:
        """Which of these term ids are word terms, not phrase terms (the mask grows with the vocabulary)."""
        if len(self.is_word) < len(self.terms):
            mask = np.ones(len(self.terms), dtype=bool)
            mask[holding_byte(self.terms, _PHRASE_BYTE)] = False
            self.is_word = mask
        return self.is_word[ids]
