"""Query words the index does not know, corrected to the nearest words it does.

The vocabulary is the index's own: every word seen in the indexed papers whose term (its stem) some
live paper holds, with that term's document frequency. A word is compared with the words, not the
stems ("mechanisim" is one edit from "mechanism", four from its stem "mechan"). The nearest word wins,
by optimal-string-alignment distance (a swap of two neighbouring letters is one edit, as a typed
"teh" is one slip), then by the number of papers holding its term: the frequent word, where two are as
near. A word of ``n`` letters may be :func:`max_edits` edits away; shorter words and words holding a
digit are never corrected (an acronym or a model name is as likely as a slip).

A word that runs two words together ("graphneural", "selfattention") is split where both halves are
known; a stop word may be the first half ("self-attention", "over-smoothing": written so in papers,
whose index holds the second half alone).

The distances are computed by rapidfuzz (C++, bit-parallel) over the words of lengths within reach
(a word two edits away is at most two letters longer or shorter): Levenshtein distances for all of
them at once, then the exact distance for the few near enough: ~10 ms a word at 62k words (the
multivenue corpus, on a loaded 2-core machine); a
correction is only looked for when a query holds an unknown word, so a query the index knows costs
nothing more, and the last corrections are kept (a listing's next page asks again). The words are
read from the index as it grows (its term ids only grow; the words of each new term from the
engine's :class:`~paperindex.vocabulary.Vocabulary`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA, Levenshtein

from paperindex import tokenizer
from paperindex.index import BM25Index
from paperindex.tokenizer import PHRASE_JOIN, STOP_WORDS
from paperindex.vocabulary import Vocabulary

#: Words shorter than this are never corrected ("kv", "rl", "gan": more likely an acronym than a slip).
MIN_CORRECTED: Final = 4
#: From this many letters a word may be two edits from its correction, below it one.
TWO_EDITS_FROM: Final = 6
#: The shortest half of a split word (the second half; a stop word may be shorter as the first).
_MIN_HALF: Final = 3
#: A known word this rare (papers holding its term) is a slip when a word within reach is in
#: :data:`SLIP_RATIO` times as many papers: papers have typos too ("diffsuion" in 1 of 36k papers,
#: "diffusion" in 5,000). Chosen on the keyword tune split (bench/README.md). Only in short queries
#: (``slips``): in a sentence a rare word is more likely the point (a gene, a compound) than a slip,
#: and correcting them cost SciFact's claims 0.006 nDCG@10.
RARE_PAPERS: Final = 2
SLIP_RATIO: Final = 100
#: Corrections kept (word → correction), forgotten when the vocabulary grows.
_KEPT: Final = 512


def max_edits(word: str) -> int:
    """How many edits a word may be from its correction: 0 for short words and words with a digit."""
    if len(word) < MIN_CORRECTED or any(c.isdigit() for c in word):
        return 0
    return 2 if len(word) >= TWO_EDITS_FROM else 1


@dataclass(frozen=True, slots=True)
class Correction:
    """A word as typed (folded) and what it is searched as: one word, or two it ran together."""

    typed: str
    text: str  # "mechanism", "graph neural", "self-attention"
    edits: int  # edits from typed to text (a split counts one)
    papers: int  # papers holding the correction's (rarest) term


class SpellingCorrector:
    """Nearest known words for unknown query words, over an index's vocabulary (thread-safe)."""

    def __init__(self, index: BM25Index, vocabulary: Vocabulary) -> None:
        self._index = index
        self._vocabulary = vocabulary
        self._lock = threading.RLock()  # a refresh in a worker thread, corrections on the loop
        self._read = 0  # index term ids read so far
        # every known word (folded) by its length, and the index term of each
        self._words: dict[int, list[str]] = {}
        self._terms: dict[int, list[str]] = {}
        self._kept: OrderedDict[str, tuple[int, int, Correction | None]] = OrderedDict()

    # ------------------------------------------------------------------ vocabulary
    def papers_with(self, word: str) -> int | None:
        """Papers holding the word's term: None for a stop word (it is never searched), 0 if unknown."""
        terms = tokenizer.word_terms(word)
        if not terms:
            return None
        return min(self._index.df(term) for term in terms)

    def knows(self, word: str) -> bool:
        """Whether a search for this word finds papers (a stop word is known: it is left out)."""
        papers = self.papers_with(word)
        return papers is None or papers > 0

    def behind(self) -> bool:
        """Whether the index gained terms since the last look (their words are read at the next
        correction, or by :meth:`refresh` in a worker thread beforehand)."""
        return bool(self._index.terms_since(self._read))

    def refresh(self) -> None:
        """Read the words of the terms the index gained since the last look (0.2 s of CPU for the
        first look at 36k papers: a caller on an event loop runs it in a worker thread)."""
        with self._lock:
            fresh = self._index.terms_since(self._read)
            if not fresh:
                return
            for term in fresh:
                if PHRASE_JOIN in term:
                    continue
                for word in self._vocabulary.words(term) or (term,):
                    self._words.setdefault(len(word), []).append(word)
                    self._terms.setdefault(len(word), []).append(term)
            self._read += len(fresh)

    # ------------------------------------------------------------------ corrections
    def looks_for(self, word: str, *, slips: bool = True) -> bool:
        """Whether :meth:`correct` looks for a correction of ``word`` (it is unknown, or rare and
        ``slips``), and so reads the words of the vocabulary; a known word needs none of them."""
        return self._rare(tokenizer.normalize(word), slips) is not None

    def _rare(self, word: str, slips: bool) -> int | None:
        """The papers holding a normalised word that may be corrected (unknown or rare), else None."""
        papers = self.papers_with(word) if max_edits(word) else None
        return None if papers is None or papers > (RARE_PAPERS if slips else 0) else papers

    def correct(self, word: str, *, slips: bool = True) -> Correction | None:
        """The correction of an unknown word, or of a rare one that is a slip (unless not ``slips``);
        None: known, too short, or nothing near."""
        word = tokenizer.normalize(word)
        papers = self._rare(word, slips)
        if papers is None:
            return None
        limit = max_edits(word)
        if not self._lock.acquire(blocking=False):
            return None  # the words are being read in a worker thread (a start's first look): none yet
        try:
            best = self._correct(word, limit)
        finally:
            self._lock.release()
        if best is None or best.papers < SLIP_RATIO * papers:
            return None
        return best

    def _correct(self, word: str, limit: int) -> Correction | None:
        self.refresh()
        # The same vocabulary and papers (a removal changes no term id): the same answer.
        state = (self._read, len(self._index))
        kept = self._kept.get(word)
        if kept is not None and kept[:2] == state:
            self._kept.move_to_end(word)
            return kept[2]
        candidates = [c for c in (self._nearest(word, limit), self._split(word)) if c is not None]
        best = min(candidates, key=lambda c: (c.edits, -c.papers, c.text), default=None)
        self._kept[word] = (*state, best)
        if len(self._kept) > _KEPT:
            self._kept.popitem(last=False)
        return best

    def _nearest(self, word: str, limit: int) -> Correction | None:
        near: list[tuple[int, str, str]] = []  # (edits, word, term)
        for length in range(len(word) - limit, len(word) + limit + 1):
            words = self._words.get(length)
            if not words:
                continue
            # Levenshtein first (rapidfuzz's SIMD path), with room for a swap (two Levenshtein edits, one
            # here), then the exact optimal-string-alignment distance of the few left
            rough = process.cdist([word], words, scorer=Levenshtein.distance, score_cutoff=limit + 1)[0]
            for n in np.flatnonzero(rough <= limit + 1).tolist():
                edits = OSA.distance(word, words[n], score_cutoff=limit)
                if 0 < edits <= limit:
                    near.append((edits, words[n], self._terms[length][n]))
        if not near:
            return None
        papers = self._index.doc_freqs(self._index.term_ids(term for _, _, term in near)).tolist()
        best = min(
            ((edits, -df, text) for (edits, text, _), df in zip(near, papers, strict=True) if df > 0),
            default=None,
        )
        if best is None:
            return None
        distance, minus_df, text = best
        return Correction(word, text, distance, -minus_df)

    def _split(self, word: str) -> Correction | None:
        """Two known words run together, the split whose rarer half has the most papers."""
        best: Correction | None = None
        for cut in range(2, len(word) - _MIN_HALF + 1):
            first, second = word[:cut], word[cut:]
            second_papers = self.papers_with(second)
            if not second_papers or len(second) < _MIN_HALF:
                continue
            if first in STOP_WORDS:
                text, papers = f"{first}-{second}", second_papers
            else:
                first_papers = self.papers_with(first)
                if not first_papers:
                    continue
                text, papers = f"{first} {second}", min(first_papers, second_papers)
            if best is None or papers > best.papers:
                best = Correction(word, text, 1, papers)
        return best
