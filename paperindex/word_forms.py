"""The other ways papers write a query's compound words: joined, hyphenated or spaced.

The tokenizer splits hyphens ("over-smoothing" → "over", "smoothing", "over" being a stop word leaves
"smooth"), so a paper writing "over-smoothing" and one writing "oversmoothing" hold different terms,
and a search for one form missed the other. Rather than index every compound twice (which changes
every paper's length, and so every score; and indexing hyphenated compounds cost SciFact 0.004, see
bench/README.md), a query asks for the other forms too, where the index shows they are written:

- two neighbouring query words, spaced or hyphenated ("over smoothing", "pre-training"): their
  joined word, when papers hold it ("oversmoothing", "pretraining");
- one query word that joins two ("pretraining", "metalearning"): its halves and their pair, when a
  title holds the pair ("Pre-training …": the index keeps the title's word pairs);
- one query word starting with "over" or "under", stop words that papers hyphenate
  ("over-smoothing", "under-explored"), where the index cannot show the hyphenated form: the second
  half, when its term is at least :data:`RARER` times as common as the whole word's. A compound is
  rarer than its head word ("oversmoothing" 5 papers, "smoothing" 123 on ICML 2024), where a word of
  its own is not ("understand", "overlooked").

Each form adds its terms with weight 1, as if the query held it too, so the three forms of a
compound ask for the same terms and their scores are rank-bm25's for that longer query. A query with
no such form asks for what it always did.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from paperindex.tokenizer import PHRASE_JOIN, WORD_RE, word_terms

#: Stop words that papers write as a hyphenated prefix ("over-smoothing", "under-explored").
HYPHEN_PREFIXES: Final = ("over", "under")
#: A word starting with a hyphen prefix counts as a compound when its second half's term is in this
#: many times as many papers as the whole word's.
RARER: Final = 2
#: The weight of a title pair asked for by a split word (the engine's weight for a query's pairs).
PAIR_WEIGHT: Final = 0.3
_JOINERS: Final = re.compile(r"[ \-‐‑]{1,3}")
_MIN_HALF: Final = 3
_MIN_SPLIT: Final = 6  # letters of a word worth splitting


@dataclass(frozen=True, slots=True)
class Form:
    """Another form of a query's compound: the word shown for the term it adds, the term, its weight,
    and the whole form ("pre-training" for the term "pre" of "pretraining")."""

    word: str
    term: str
    weight: float = 1.0
    compound: str = ""


def other_forms(text: str, papers_with: Callable[[str], int], asked: Iterable[str] = ()) -> list[Form]:
    """The forms of ``text``'s compounds that papers write and the query does not, as terms to add.

    ``papers_with(term)`` is the index's document frequency; ``asked`` the terms the query already
    asks for (never added twice).
    """
    have = set(asked)
    forms: list[Form] = []

    def add(form: Form) -> None:
        if form.term not in have:
            have.add(form.term)
            forms.append(form)

    text = unicodedata.normalize("NFKC", text)
    matches = list(WORD_RE.finditer(text))
    for first, second in itertools.pairwise(matches):
        if _JOINERS.fullmatch(text, first.end(), second.start()):
            joined = (first.group() + second.group()).casefold()
            for form in _joined(joined, papers_with):
                add(form)
    for match in matches:
        for form in _split(match.group().casefold(), papers_with):
            add(form)
    return forms


def _single_term(word: str) -> str | None:
    terms = word_terms(word)
    return terms[0] if len(terms) == 1 else None


def _joined(word: str, papers_with: Callable[[str], int]) -> list[Form]:
    term = _single_term(word)
    return [Form(word, term, compound=word)] if term is not None and papers_with(term) > 0 else []


def _split(word: str, papers_with: Callable[[str], int]) -> list[Form]:
    """The halves of a word that joins two, where the index shows the split form is written."""
    if len(word) < _MIN_SPLIT or not word.isalpha():
        return []
    whole = _single_term(word)
    if whole is None:
        return []
    for prefix in HYPHEN_PREFIXES:
        rest = word[len(prefix) :]
        if word.startswith(prefix) and len(rest) >= 5:
            head = _single_term(rest)
            whole_papers = papers_with(whole)
            if head is not None and whole_papers and papers_with(head) >= RARER * whole_papers:
                return [Form(f"{prefix}-{rest}", head, compound=f"{prefix}-{rest}")]
    best: tuple[int, list[Form]] | None = None
    for cut in range(_MIN_HALF, len(word) - _MIN_HALF + 1):
        first, second = word[:cut], word[cut:]
        a, b = _single_term(first), _single_term(second)
        if a is None or b is None or a == whole or b == whole:
            continue
        pair = a + PHRASE_JOIN + b
        titles = papers_with(pair)
        if titles and (best is None or titles > best[0]):
            compound = f"{first}-{second}"
            best = (
                titles,
                [
                    Form(first, a, compound=compound),
                    Form(second, b, compound=compound),
                    Form(f"{first} {second}", pair, PAIR_WEIGHT, compound),
                ],
            )
    return best[1] if best else []
