"""The index's terms numbered: term → id, a new term given the next id as it is first looked up."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex.tokenizer import PHRASE_JOIN

IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


class TermIds(dict[str, int]):
    """term → id; looking up a new term gives it the next id."""

    def __init__(self, terms: list[str]) -> None:
        super().__init__()
        self.terms = terms
        self.is_word: BoolArray = np.zeros(0, dtype=bool)  # per term id: not a phrase term

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self.terms)
        self.terms.append(term)
        return tid

    def word_mask(self, ids: IntArray) -> BoolArray:
        """Which of these term ids are word terms, not phrase terms (the mask grows with the vocabulary)."""
        known = len(self.is_word)
        if known < len(self.terms):
            fresh = np.fromiter((PHRASE_JOIN not in t for t in self.terms[known:]), dtype=bool)
            self.is_word = np.concatenate([self.is_word, fresh])
        return self.is_word[ids]
