"""A search that forgives typing: unknown words corrected, compounds in every form papers write.

:meth:`ForgivingSearch.repair` reads a query as typed and says what to search: each word the index
does not know replaced by its correction (:mod:`paperindex.spelling`), and the other forms of its
compounds asked for too (:mod:`paperindex.word_forms`). A query in double quotes is searched exactly
as typed, which is how a person overrides a correction. A query whose words are all known and have
no other forms is searched as it always was: the same terms, rank-bm25's scores.
"""

from __future__ import annotations

import unicodedata
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from paperindex.engine import SearchEngine, SearchResults
from paperindex.index import BM25Index
from paperindex.query import MAX_QUERY_CHARS, PHRASE_MAX_TERMS, ParsedQuery
from paperindex.spelling import Correction, SpellingCorrector
from paperindex.tokenizer import WORD_RE
from paperindex.word_forms import Form, other_forms

#: Quote pairs that ask for a query exactly as typed.
QUOTES: Final = (('"', '"'), ("“", "”"), ("„", "“"), ("«", "»"))


@dataclass(frozen=True, slots=True)
class Repair:
    """What a typed query is searched as."""

    typed: str  # the query as typed (stripped)
    text: str  # what is searched: typed, its unknown words corrected (its quotes taken off)
    parsed: ParsedQuery  # ``text`` read (the typed query's own reading when nothing was corrected)
    corrections: tuple[Correction, ...] = ()
    forms: tuple[Form, ...] = ()
    verbatim: bool = False  # quoted: searched exactly as typed

    @property
    def corrected(self) -> bool:
        return bool(self.corrections)

    def form_terms(self) -> list[tuple[str, str, float]]:
        """The forms as ``SearchEngine.search(forms=...)`` takes them."""
        return [(form.word, form.term, form.weight) for form in self.forms]


def unquoted(query: str) -> str | None:
    """The inside of a query wrapped in double quotes, else None."""
    text = query.strip()
    for opening, closing in QUOTES:
        if len(text) >= 2 and text.startswith(opening) and text.endswith(closing):
            return text[1:-1].strip()
    return None


def _slips(parsed: ParsedQuery) -> bool:
    """Whether a rare word of the query is taken for a slip: in a short query only (a sentence names
    rare things)."""
    return len(parsed.terms) <= PHRASE_MAX_TERMS


class ForgivingSearch:
    """Repairs queries against one engine's vocabulary, then searches them."""

    def __init__(self) -> None:
        self._correctors: weakref.WeakKeyDictionary[BM25Index, SpellingCorrector] = (
            weakref.WeakKeyDictionary()
        )

    def corrector(self, engine: SearchEngine) -> SpellingCorrector:
        """The corrector over ``engine``'s vocabulary (one per index, kept while the index lives)."""
        found = self._correctors.get(engine.index)
        if found is None:
            found = self._correctors[engine.index] = SpellingCorrector(engine.index, engine.vocabulary)
        return found

    def corrects(self, engine: SearchEngine, query: str | ParsedQuery) -> bool:
        """Whether :meth:`repair` looks for a correction of a word of ``query`` (one the index does not
        know, or a rare one), and so needs the corrector to have read the index's words; a query of
        known words is searched as typed whatever the corrector has read."""
        typed = query.text if isinstance(query, ParsedQuery) else query.strip()
        if unquoted(typed) is not None:
            return False
        parsed = query if isinstance(query, ParsedQuery) else ParsedQuery.parse(typed)
        corrector, slips = self.corrector(engine), _slips(parsed)
        text = unicodedata.normalize("NFKC", typed)
        return any(corrector.looks_for(match.group(), slips=slips) for match in WORD_RE.finditer(text))

    def repair(self, engine: SearchEngine, query: str | ParsedQuery) -> Repair:
        """What to search for ``query`` (QueryError, as the engine words it, for a query it refuses);
        a query already read is not read again unless a word of it is corrected."""
        typed = query.text if isinstance(query, ParsedQuery) else query.strip()
        inside = unquoted(typed)
        if inside is not None:
            return Repair(typed, inside, ParsedQuery.parse(inside), verbatim=True)
        parsed = query if isinstance(query, ParsedQuery) else ParsedQuery.parse(typed)
        corrector = self.corrector(engine)
        slips = _slips(parsed)
        text = unicodedata.normalize("NFKC", typed)
        corrections: list[Correction] = []
        pieces: list[str] = []
        last = 0
        for match in WORD_RE.finditer(text):
            correction = corrector.correct(match.group(), slips=slips)
            if correction is not None:
                pieces += [text[last : match.start()], correction.text]
                last = match.end()
                corrections.append(correction)
        searched = "".join(pieces) + text[last:] if corrections else typed
        if len(searched) > MAX_QUERY_CHARS:  # corrections that lengthen a query at the limit: none
            searched, corrections = typed, []
        if corrections:
            parsed = ParsedQuery.parse(searched)
        forms = other_forms(searched, engine.index, parsed.terms)
        return Repair(typed, searched, parsed, tuple(corrections), tuple(forms))

    def search(
        self,
        engine: SearchEngine,
        query: str | ParsedQuery,
        **options: int | str | bool | Collection[int] | None,
    ) -> tuple[SearchResults, Repair]:
        """``engine.search`` of the repaired query (its options passed on), and the repair."""
        repair = self.repair(engine, query)
        results = engine.search(repair.parsed, forms=repair.form_terms(), **options)  # type: ignore[arg-type]
        return results, repair
