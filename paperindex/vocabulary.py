"""The words an engine's papers write for each index term, to show a term as a word ("cache", not "cach").

Each :class:`~paperindex.engine.SearchEngine` holds its own :class:`Vocabulary`, learned from the papers
it indexes (how many distinct pieces of their text hold each word, counted as the papers are tokenised
in bulk) and saved with its snapshot; a query never changes it.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from paperindex.packed import PackedStrings, encode, hashes
from paperindex.snapshot import Snapshot, check_range
from paperindex.tokenizer import normal_word_terms

#: Terms kept at the most (bounded on adversarial input), and words kept per term.
_MAX_TERMS: Final = 1_000_000
_MAX_FORMS: Final = 64


class _Saved:
    """A snapshot's ``(term, word, count)`` rows, held packed, found by a sorted array of the terms'
    hashes (Python's, of this process) and the row of each: no Python object per row."""

    def __init__(self, terms: PackedStrings, words: PackedStrings, counts: npt.NDArray[np.int64]) -> None:
        self.terms, self.words, self.counts = terms, words, counts
        keys = hashes(terms)
        order = np.argsort(keys, kind="stable").astype(np.int32)
        self.n_terms = len(np.unique(keys))  # about: terms whose hashes are the same count once
        # memoryviews: bisect and one item read as Python ints, fast (numpy's scalars are not)
        self.keys, self.order = keys[order].data, order.data
        self._counts = np.ascontiguousarray(counts).data

    def rows(self, term: str) -> list[int]:
        """The rows of ``term``, in their saved order."""
        key = hash(term)
        keys = self.keys
        at = bisect.bisect_left(keys, key)
        found: list[int] = []
        data = None
        while at < len(keys) and keys[at] == key:
            row = self.order[at]
            data = encode(term) if data is None else data
            if self.terms.raw(row) == data:
                found.append(row)
            at += 1
        found.sort()
        return found

    def forms(self, term: str) -> dict[str, int]:
        counts = self._counts
        return {self.words[row]: counts[row] for row in self.rows(term)}


class Vocabulary:
    """term → {word → count}, and the word to show for each term: the most widespread one.

    Papers are added in worker threads while the event loop reads the words and a snapshot copies the
    counts, so every read and write of the counts holds the vocabulary's own lock. Counts loaded from a
    snapshot stay packed (:class:`_Saved`); those learned since are a dict beside them."""

    def __init__(self, saved: _Saved | None = None) -> None:
        self._forms: dict[str, dict[str, int]] = {}  # learned since the snapshot (all, without one)
        self._best: dict[str, str] = {}
        self._lock = threading.Lock()
        self._saved = saved

    def learn(self, words: Iterable[tuple[str, str, int]]) -> None:
        """Count ``(term, word, count)`` triples: words (normal form) seen ``count`` more times."""
        with self._lock:
            self._learn(words)

    def _learn(self, words: Iterable[tuple[str, str, int]]) -> None:
        forms, best, saved = self._forms, self._best, self._saved
        known = saved.n_terms if saved is not None else 0
        for term, word, n in words:
            mine = forms.get(term)
            if mine is None:
                before = saved.forms(term) if saved is not None else {}
                if not before and len(forms) + known >= _MAX_TERMS:
                    continue
                mine = forms[term] = before
            if word in mine or len(mine) < _MAX_FORMS:
                mine[word] = mine.get(word, 0) + n
            best.pop(term, None)

    def _forms_of(self, term: str) -> dict[str, int]:
        """The counts of ``term``'s words (holding the lock)."""
        mine = self._forms.get(term)
        if mine is not None:
            return mine
        return self._saved.forms(term) if self._saved is not None else {}

    def learn_words(self, words: Sequence[str], counts: npt.NDArray[np.int64]) -> None:
        """Count normalised ``words`` (as :func:`paperindex.tokenizer.text_words` finds them, casefolded),
        each ``counts[n]`` times, under its index term; a stop word counts under none."""
        self.learn(
            (terms[0], word, n)
            for word, n in zip(words, counts.tolist(), strict=True)
            if n and (terms := normal_word_terms(word))
        )

    def form(self, term: str) -> str:
        """A readable word for an index term: the most widespread word seen that stems to it."""
        best = self._best.get(term)
        if best is None:
            with self._lock:
                forms = self._forms_of(term)
                if not forms:
                    return term
                best = self._best[term] = min(forms, key=lambda w: (-forms[w], len(w), w))
        return best

    def words(self, term: str) -> tuple[str, ...]:
        """The words (normal form) seen for an index term, none for a term no paper gave."""
        with self._lock:
            return tuple(self._forms_of(term))

    def counts(self) -> dict[str, dict[str, int]]:
        """A copy of the counts: term → {word → count}."""
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            saved = self._saved
            if saved is not None:
                for term, word, n in zip(saved.terms, saved.words, saved.counts.tolist(), strict=True):
                    out.setdefault(term, {})[word] = n
            out.update((term, dict(forms)) for term, forms in self._forms.items())
            return out

    def save(self, arrays: dict[str, np.ndarray], strings: dict[str, Sequence[str]]) -> None:
        """Put the counts into a snapshot's arrays and strings, as ``(term, word, count)`` rows."""
        rows = [(term, word, n) for term, words in self.counts().items() for word, n in words.items()]
        strings["surface.terms"] = [term for term, _, _ in rows]
        strings["surface.words"] = [word for _, word, _ in rows]
        arrays["surface.counts"] = np.fromiter((n for _, _, n in rows), dtype=np.int64, count=len(rows))

    @classmethod
    def from_snapshot(cls, saved: Snapshot) -> Vocabulary:
        """The vocabulary :meth:`save` wrote, checked (SnapshotError otherwise)."""
        counts = saved.array("surface.counts", (np.int64,))
        terms = saved.packed("surface.terms", length=len(counts), mapped=False)
        words = saved.packed("surface.words", length=len(counts))
        check_range("surface.counts", counts, 1, 1 << 62)
        return cls(_Saved(terms, words, counts))
