"""Which of a query's or an interest's words say something about a paper: the corpus decides.

A word that most papers hold ("learning", "model", "method" in machine learning; "patient" in a
medical corpus) tells a reader nothing when a reason names it: "matched: cache, learning" says no more
than "matched: cache". A word is *generic* when more than :data:`GENERIC_SHARE` of the indexed papers
hold it (measured on ICML 2024 and on 35,712 papers of several venues: "learning" 59–60 %, "model"
59–68 %, "method" 49–51 %, "approach" 33–35 %, "novel" 24–29 %; words of a field stay far below:
"reinforcement" 10–12 %, "graph" 8–10 %, "transformer" 10–14 %, "language" 10–22 %, "quantization"
1–2 %). A phrase of the query ("reinforcement learning") is shown whole when one of its words is not
generic. Below :data:`MIN_PAPERS` indexed papers nothing is called generic (too few to tell).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final, Protocol

GENERIC_SHARE: Final = 0.25
MIN_PAPERS: Final = 20


class Frequencies(Protocol):
    """How many papers hold a term, of how many (``paperindex.index.BM25Index``)."""

    def df(self, term: str) -> int: ...

    def __len__(self) -> int: ...


def is_generic(df: int, papers: int) -> bool:
    """Whether a term ``df`` of ``papers`` indexed papers hold is too common to name as a reason."""
    return papers >= MIN_PAPERS and df > GENERIC_SHARE * papers


def generic_terms(terms: Collection[str], frequencies: Frequencies) -> frozenset[str]:
    """The terms of ``terms`` that are generic in the indexed corpus."""
    papers = len(frequencies)
    return frozenset(t for t in terms if is_generic(frequencies.df(t), papers))


def distinctive(
    shown: Sequence[str], term_of: Mapping[str, str], generic: Collection[str]
) -> tuple[str, ...]:
    """The entries of ``shown`` (words, or phrases of words, as a reason names them) that hold a word
    whose term (``term_of``: word → term) is not ``generic``: "cache, learning" → "cache"; "reinforcement
    learning" stays whole."""
    return tuple(
        entry for entry in shown if any(term_of.get(word, word) not in generic for word in entry.split())
    )
