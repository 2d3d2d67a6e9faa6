"""The other ways papers write a query's compound words: joined, hyphenated or spaced.

The tokenizer splits hyphens ("over-smoothing" → "over", "smoothing", "over" being a stop word leaves
"smooth"), so a paper writing "over-smoothing" and one writing "oversmoothing" hold different terms,
and a search for one form missed the other. Rather than index every compound twice (which changes
every paper's length, and so every score; and indexing hyphenated compounds cost SciFact 0.004, see
bench/README.md), a query asks for the other forms too, where the index shows they are written:

- two neighbouring query words, spaced or hyphenated ("over smoothing", "pre-training"): their
  joined word, when papers hold it ("oversmoothing", "pretraining");
- one query word that joins two ("pretraining", "metalearning"): the pair of its halves, which the
  index keeps for titles ("Pre-training …"), when titles hold it. Not the halves apart: "hyper" and
  "parameter" searched apart match every paper on parameters (with the halves too, the held-out
  keyword queries lost 0.005 nDCG@10, "hyperparameter optimization" 0.75 → 0.49, where the tune
  split had gained 0.0016; bench/README.md);
- one query word starting with "over" or "under", stop words that papers hyphenate
  ("over-smoothing", "under-explored"), where the index cannot show the hyphenated form: the second
  half, when its term is at least :data:`RARER` times as common as the whole word's. A compound is
  rarer than its head word ("oversmoothing" 5 papers, "smoothing" 123 on ICML 2024), where a word of
  its own is not ("understand", "overlooked").

Each form adds its terms as if the query held it too, weighted so that a paper writing the other
form scores as a paper writing the typed one would: the form's terms together weigh the idf the
typed form's terms weigh (at most 1 each; a title pair 0.3 of that, the engine's weight for a
query's pairs). A rare joined form ("neuralnetwork", in 3 of 36k papers,
idf 9) would otherwise lift its few papers above every paper writing "neural network" (idf 1.5 +
1.0); on the keyword tune split weight 1 cost 0.004 nDCG@10, this weighting nothing (bench/README.md).
A join with a hyphen prefix weighs 1: the typed form lost its prefix ("over-smoothing" asks for
"smooth", as label smoothing does), the joined word alone names the compound. Other joins with a
stop word ("and safety") are left out. The scores are
rank-bm25's for the longer, weighted query. A query with no such form asks for what it always did.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from paperindex.tokenizer import PHRASE_JOIN, STOP_WORDS, WORD_RE, normal_word_terms

#: Stop words that papers write as a hyphenated prefix ("over-smoothing", "under-explored").
HYPHEN_PREFIXES: Final = ("over", "under")
#: A word starting with a hyphen prefix counts as a compound when its second half's term is in this
#: many times as many papers as the whole word's.
RARER: Final = 2
#: A form is asked for when its papers are at least this share of the typed form's (its rarer
#: term's; for a split word, the title pairs against the whole word's papers). Junk joins sit below
#: it ("neuralnetwork" 0.0001, "languagemodel" 0.0011, "deeplearn" 0.0017 of their words' papers on
#: the multivenue corpus), compounds written both ways above ("timeseries" 0.005, "metalearning" 0.009,
#: "oversmoothing" 0.015, "multitask" 0.027): chosen on the keyword tune split.
MIN_SHARE: Final = 0.003
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


class IndexStats(Protocol):
    """What is read of the index (:class:`paperindex.index.BM25Index`)."""

    def df(self, term: str) -> int: ...

    def idf(self, term: str) -> float: ...

    def term_ids(self, terms: Iterable[str]) -> npt.NDArray[np.int64]: ...

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...


def other_forms(text: str, index: IndexStats, asked: Iterable[str] = ()) -> list[Form]:
    """The forms of ``text``'s compounds that papers write and the query does not, as terms to add
    (``asked``: the terms the query asks for already, never added twice)."""
    have = set(asked)
    forms: list[Form] = []

    def add(found: list[Form]) -> None:
        fresh = [form for form in found if form.term not in have]
        have.update(form.term for form in fresh)
        forms.extend(fresh)

    text = unicodedata.normalize("NFKC", text)
    matches = list(WORD_RE.finditer(text))
    for first, second in itertools.pairwise(matches):
        if _JOINERS.fullmatch(text, first.end(), second.start()):
            add(_joined(first.group().casefold(), second.group().casefold(), index))
    for match in matches:
        add(_split(match.group().casefold(), index))
    return forms


def _single_term(word: str) -> str | None:
    terms = normal_word_terms(word)  # words here are folded already
    return terms[0] if len(terms) == 1 else None


def _weight(typed_idf: float, form_idf: float) -> float:
    """The weight that makes the form's terms weigh what the typed terms do (at most 1)."""
    return min(1.0, typed_idf / form_idf) if form_idf > 0 else 0.0


def _joined(first: str, second: str, index: IndexStats) -> list[Form]:
    if second in STOP_WORDS or (first in STOP_WORDS and first not in HYPHEN_PREFIXES):
        return []
    word = first + second
    term = _single_term(word)
    typed_terms = (*normal_word_terms(first), *normal_word_terms(second))
    if term is None or not typed_terms or index.df(term) < MIN_SHARE * min(map(index.df, typed_terms)):
        return []
    # "over-smoothing" is searched as "smoothing" (a stop word goes): the joined form alone names it
    lossy = first in HYPHEN_PREFIXES
    weight = 1.0 if lossy else _weight(sum(map(index.idf, typed_terms)), index.idf(term))
    return [Form(word, term, weight, compound=word)] if weight else []


def _split(word: str, index: IndexStats) -> list[Form]:
    """The halves of a word that joins two, where the index shows the split form is written."""
    if len(word) < _MIN_SPLIT or not word.isalpha():
        return []
    whole = _single_term(word)
    if whole is None or not index.df(whole):
        return []
    whole_papers, whole_idf = index.df(whole), index.idf(whole)
    for prefix in HYPHEN_PREFIXES:
        rest = word[len(prefix) :]
        if word.startswith(prefix) and len(rest) >= 5:
            head = _single_term(rest)
            if head is not None and index.df(head) >= RARER * whole_papers:
                compound = f"{prefix}-{rest}"
                return [Form(compound, head, _weight(whole_idf, index.idf(head)), compound)]
    cuts: list[tuple[str, str, str, str]] = []  # (first, second, their terms)
    for cut in range(_MIN_HALF, len(word) - _MIN_HALF + 1):
        first, second = word[:cut], word[cut:]
        a, b = _single_term(first), _single_term(second)
        if a is not None and b is not None and whole not in (a, b):
            cuts.append((first, second, a, b))
    if not cuts:
        return []
    # every cut's title pair looked up at once (one call under the index's lock, not one per cut)
    titles = index.doc_freqs(index.term_ids(a + PHRASE_JOIN + b for _, _, a, b in cuts)).tolist()
    papers, (first, second, a, b) = max(zip(titles, cuts, strict=True), key=lambda found: found[0])
    if not papers or papers < MIN_SHARE * whole_papers:
        return []
    # the pair alone: its halves searched apart ("hyper", "parameter") match every paper on
    # parameters, and cost the keyword queries 0.005 (see the module)
    weight = PAIR_WEIGHT * _weight(whole_idf, index.idf(a) + index.idf(b))
    return [Form(f"{first} {second}", a + PHRASE_JOIN + b, weight, f"{first}-{second}")]
