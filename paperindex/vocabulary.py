"""The words an engine's papers write for each index term, to show a term as a word ("cache", not "cach").

Each :class:`~paperindex.engine.SearchEngine` holds its own :class:`Vocabulary`, learned from the papers
it indexes (how many distinct pieces of their text hold each word, counted as the papers are tokenised
in bulk) and saved with its snapshot; a query never changes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from paperindex.snapshot import Snapshot, check_range
from paperindex.tokenizer import normal_word_terms

#: Terms kept at the most (bounded on adversarial input), and words kept per term.
_MAX_TERMS: Final = 1_000_000
_MAX_FORMS: Final = 64


class Vocabulary:
    """term → {word → count}, and the word to show for each term: the most widespread one.

    Papers are added in worker threads while the event loop reads the words and a snapshot copies the
    counts, so every read and write of the counts holds the vocabulary's own lock. Counts loaded from a
    snapshot stay in its mapped file until first used (a start needs none of them)."""

    def __init__(self, saved: Callable[[], Iterable[tuple[str, str, int]]] | None = None) -> None:
        self._forms: dict[str, dict[str, int]] = {}
        self._best: dict[str, str] = {}
        self._lock = threading.Lock()
        self._saved = saved

    def learn(self, words: Iterable[tuple[str, str, int]]) -> None:
        """Count ``(term, word, count)`` triples: words (normal form) seen ``count`` more times."""
        with self._lock:
            self._load_saved()
            self._learn(words)

    def _load_saved(self) -> None:
        """The snapshot's counts taken in, at their first use (holding the lock)."""
        saved, self._saved = self._saved, None
        if saved is not None:
            self._learn(saved())

    def _learn(self, words: Iterable[tuple[str, str, int]]) -> None:
        forms, best = self._forms, self._best
        for term, word, n in words:
            mine = forms.get(term)
            if mine is None:
                if len(forms) >= _MAX_TERMS:
                    continue
                mine = forms[term] = {}
            if word in mine or len(mine) < _MAX_FORMS:
                mine[word] = mine.get(word, 0) + n
            best.pop(term, None)

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
                self._load_saved()
                forms = self._forms.get(term)
                if not forms:
                    return term
                best = self._best[term] = min(forms, key=lambda w: (-forms[w], len(w), w))
        return best

    def words(self, term: str) -> tuple[str, ...]:
        """The words (normal form) seen for an index term, none for a term no paper gave."""
        with self._lock:
            self._load_saved()
            return tuple(self._forms.get(term, ()))

    def counts(self) -> dict[str, dict[str, int]]:
        """A copy of the counts: term → {word → count}."""
        with self._lock:
            self._load_saved()
            return {term: dict(forms) for term, forms in self._forms.items()}

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
        terms = saved.packed("surface.terms", length=len(counts))
        words = saved.packed("surface.words", length=len(counts))
        check_range("surface.counts", counts, 1, 1 << 62)
        return cls(lambda: zip(terms, words, counts.tolist(), strict=True))
