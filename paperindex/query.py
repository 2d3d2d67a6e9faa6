"""A search query read once: its terms, the words the person typed, its phrases and what the engine ranks by.

A ``/paper search`` makes one :class:`ParsedQuery` and hands it on (the engine ranks by it, the hits'
snippets bold its terms and phrases, the listing shows its words), so the query's text is tokenised once
(:func:`paperindex.tokenizer.text_words`) however many steps read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from paperindex.errors import QueryError
from paperindex.tokenizer import (
    PHRASE_JOIN,
    WORD_RE,
    Word,
    distinct_terms,
    normalize,
    text_words,
    without_links,
    word_pairs,
)

PHRASE_WEIGHT: Final = 0.3
PHRASE_MAX_TERMS: Final = 5  # longer queries (sentences, claims) ask for no phrases
MAX_QUERY_CHARS: Final = 300


@dataclass(frozen=True, slots=True, eq=False)
class ParsedQuery:
    """What a query says, worked out once (:meth:`parse`)."""

    text: str  # as typed, without surrounding whitespace
    terms: tuple[str, ...]  # its distinct index terms, in order
    words: tuple[str, ...]  # the same terms as the person wrote them (after NFKC), aligned with ``terms``
    weights: Mapping[str, float]  # what the engine ranks by (:func:`query_weights`)
    phrases: tuple[tuple[str, str], ...]  # adjacent pairs of distinct terms (bold as one in snippets)

    @classmethod
    def parse(cls, query: str) -> ParsedQuery:
        """The query read, or QueryError saying what is wrong with it."""
        text = query.strip()
        if not text:
            raise QueryError("The search query is empty: type a few words to look for.")
        if len(text) > MAX_QUERY_CHARS:
            raise QueryError(
                f"The search query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}. "
                "Try a few key words instead."
            )
        words = text_words(text)
        pairs = distinct_terms(words)
        if not pairs:
            if without_links(text) != text:  # (nothing else in it to search)
                raise QueryError(
                    "The search query is a link, and a link's parts are not searched: type a few words "
                    "of the paper instead."
                )
            if not WORD_RE.search(normalize(text)):
                raise QueryError(
                    "The search query has no words in it (only symbols or emoji): type a few words to look for."
                )
            raise QueryError(
                "The search query only has very common words (like “the” or “of”) or single letters, "
                "which every paper contains: add a more specific word."
            )
        adjacent = [(first, second) for first, second, _, _ in word_pairs(words)]
        return cls(
            text,
            tuple(term for _, term in pairs),
            tuple(word for word, _ in pairs),
            _weights(words, adjacent),
            tuple(dict.fromkeys(pair for pair in adjacent if pair[0] != pair[1])),
        )


def _weights(words: Sequence[Word], adjacent: Sequence[tuple[str, str]]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for word in words:  # with repeats: a repeated word counts again, as in rank-bm25
        for term in word.terms:
            weights[term] = weights.get(term, 0.0) + 1.0
    if len(weights) <= PHRASE_MAX_TERMS:
        for first, second in adjacent:
            phrase = first + PHRASE_JOIN + second
            weights[phrase] = weights.get(phrase, 0.0) + PHRASE_WEIGHT
    return weights


def query_weights(query: str) -> dict[str, float]:
    """The weighted terms a search asks for: each term as often as the query holds it, and, for a
    query of at most :data:`PHRASE_MAX_TERMS` distinct terms, each phrase term :data:`PHRASE_WEIGHT`."""
    words = text_words(query)
    return _weights(words, [(first, second) for first, second, _, _ in word_pairs(words)])


def parse_query(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(distinct index terms, words as typed) of a query, or QueryError saying what is wrong."""
    parsed = ParsedQuery.parse(query)
    return parsed.terms, parsed.words
