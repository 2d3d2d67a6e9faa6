"""Turn titles, abstracts and queries into BM25 index terms.

One pipeline is used for papers and queries alike, so a query word and the same word in a paper
always become the same term.  The steps, each chosen on BEIR SciFact (training split, 809
queries; ``bench/scifact_eval.py`` prints the variants side by side):

1. Unicode NFKC normalisation and ``casefold`` ("ﬁne-tuning" → "fine-tuning", "ＧＰＴ" → "gpt").
2. Words are runs of letters and digits; a word may carry internal apostrophes, dots between
   digits and a trailing ``+``, so "3.5", "cd4+", "c++" and "model's" stay one word.  Hyphens
   separate words ("KV-cache" → "kv", "cach"; "GPT-4" → "gpt", "4"): on SciFact, also indexing
   the hyphenated whole as a term lowered nDCG@10 (0.7008 with digit compounds, 0.6982 with all
   compounds, vs 0.7020 without, title weight 3).
3. English stop words are dropped.  rank-bm25 floors the idf of every term found in more than
   half of the papers to 0.25 × the mean idf, which on ML abstracts gives "the", "of" and "we"
   more weight than "neural"; with function words removed only content words rank papers.
   Single letters (stray variables, list markers) go too; single digits stay ("1 in 5").
4. Snowball English stemming (PyStemmer), cached word → terms in a dict; a vowel-less acronym
   loses its plural "s", which Snowball keeps ("LLMs" → "llm", like "LLM").
5. Links are no words (:func:`without_links`): "https://github.com/…" gives no "github", "com" or
   repository name (SciFact unchanged; chosen for what searches and reasons showed, see
   bench/README.md).

The figures (nDCG@10, title counted once): 0.6959 with all of the above, 0.6680 without
stemming, 0.6951 with Lucene's 33 stop words instead of ours; rank-bm25 with plain lower-cased
word tokens 0.6584.  The engine, counting the title twice, reaches 0.7014.

Speed: ASCII text is cut into raw pieces by C-level ``bytes.translate`` + ``split``, other text
(after NFKC and casefold) at whitespace; each piece's terms come from a dict cache, so tokenising a
document runs no Python code per word (``iter_terms`` chains C iterators). Building the index
tokenises many papers at once through :mod:`paperindex.bulk_terms` (the same terms, from these
functions; ``bench/build_bench.py`` times the build).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Final

import Stemmer

#: Bump whenever the terms produced for some text change.
TOKENIZER_VERSION: Final = 3

#: A link in a text ("code at https://github.com/…/GANmemory_LifelongLearning") holds no words of the
#: paper: indexed, a repository's name became a term ("lifelonglearning") that a search for "lifelong
#: learning" asked for as a joined form, and "github", "com" and "https" were words of papers. A link is
#: found by its marks: a scheme just before "://", or "www."; it runs up to a space, quote or bracket.
_SCHEME_BEFORE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*\Z")
_LINK_TAIL: Final = re.compile(r"[^\s<>\"'{}()\[\]]*")
_LINK_MARKS: Final = ("://", "www.")

#: Joins the two terms of a phrase term ("graph neural"); no word's term holds it.
PHRASE_JOIN: Final = " "
#: What ends a phrase between two words (besides a stop word): sentence and clause punctuation.
_PHRASE_BREAK_RE: Final = re.compile(r"[.,;:()\[\]{}!?\"]")

#: English function words (pronouns, determiners, auxiliaries, prepositions, conjunctions).
#: Content words that look generic in papers ("model", "show", "result") are kept: BM25's idf
#: weighs them down already, and a user may search for them.
_STOP_WORDS_TEXT: Final = """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could couldn't did didn't do does doesn't
    doing don't down during each either etc few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've ie eg if in into is isn't it it's its itself just let's may me might more
    most must mustn't my myself neither no nor not of off on once only or other ought our ours
    ourselves out over own per same shall shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they they'd
    they'll they're they've this those though through thus to too under until up upon us very via
    was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    whether which while who who's whom whose why why's will with within without won't would
    wouldn't yet you you'd you'll you're you've your yours yourself yourselves
"""
STOP_WORDS: Final[frozenset[str]] = frozenset(_STOP_WORDS_TEXT.split())

# A word inside a raw piece: letters/digits joined by single apostrophes, or by dots between
# digits ("3.5"), with an optional run of trailing "+" ("cd4+", "c++").
WORD_RE: Final = re.compile(r"[^\W_]+(?:(?:'(?=[^\W_])|\.(?=\d))[^\W_]+)*\+*")
#: WORD_RE for text that is lower-case ASCII already (the same words, found 2-3× faster).
LOWER_ASCII_WORD_RE: Final = re.compile(r"[a-z0-9]+(?:(?:'(?=[a-z0-9])|\.(?=\d))[a-z0-9]+)*\+*")
_KEEP_ASCII: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789'.+")
_ASCII_TABLE: Final = bytes(c if c in _KEEP_ASCII else (c + 32 if 65 <= c <= 90 else 32) for c in range(256))
_APOSTROPHES: Final = ("’", "‘", "ʼ")
_CACHE_LIMIT: Final = 1_000_000

_stemmer = Stemmer.Stemmer("english")


def _keep(word: str) -> bool:
    if word in STOP_WORDS:
        return False
    return len(word) > 1 or word.isdigit()


_VOWELS: Final = frozenset("aeiouy")


def _stem(word: str) -> str:
    stem: str = _stemmer.stemWord(word)
    # Snowball keeps the "s" of vowel-less acronyms ("llms", "cnns"); a user types "LLM" too.
    if (
        stem == word
        and len(word) > 3
        and word[-1] == "s"
        and word[-2] != "s"
        and word[:-1].isalpha()
        and _VOWELS.isdisjoint(word[:-1])
    ):
        return word[:-1]
    return stem


def _word_terms(word: str) -> tuple[str, ...]:
    """Index terms of one normalised word: its stem, or nothing for a stop word."""
    return (_stem(word),) if _keep(word) else ()


def _piece_terms(piece: str) -> tuple[str, ...]:
    """Index terms of one raw piece (text between separators), e.g. "models." → ("model",)."""
    if piece.isalnum():
        return _word_terms(piece)
    return tuple(chain.from_iterable(_word_terms(w) for w in WORD_RE.findall(piece)))


class _StrCache(dict[str, tuple[str, ...]]):
    def __missing__(self, piece: str) -> tuple[str, ...]:
        terms = _piece_terms(piece)
        if len(self) < _CACHE_LIMIT:  # bounded on adversarial input
            self[piece] = terms
        return terms


class _BytesCache(dict[bytes, tuple[str, ...]]):
    def __missing__(self, piece: bytes) -> tuple[str, ...]:
        terms = _piece_terms(piece.decode("ascii"))
        if len(self) < _CACHE_LIMIT:
            self[piece] = terms
        return terms


_str_terms: Callable[[str], tuple[str, ...]] = _StrCache().__getitem__
_bytes_terms: Callable[[bytes], tuple[str, ...]] = _BytesCache().__getitem__


def _straight_apostrophes(text: str) -> str:
    for mark in _APOSTROPHES:  # str.replace is C-fast; str.translate is not on non-ASCII text
        if mark in text:
            text = text.replace(mark, "'")
    return text


def without_links(text: str) -> str:
    """``text`` with each link blanked out, a space for each of its characters (positions stay): a
    scheme's "…://…" or a "www.…", up to a space, quote or bracket. Found from its marks with
    ``str.find``: a pattern tried at every word cost a fifth of the bulk tokenizer's time."""
    if "://" not in text and "www." not in text:
        return text
    spans: list[tuple[int, int]] = []
    for mark in _LINK_MARKS:
        at = text.find(mark)
        while at != -1:
            begin: int | None
            if mark == "://":
                scheme = _SCHEME_BEFORE.search(text, max(0, at - 32), at)
                begin = None if scheme is None else scheme.start()
            else:  # ("awww." is no link)
                begin = None if at and text[at - 1].isalnum() else at
            tail = _LINK_TAIL.match(text, at + len(mark))
            end = tail.end() if tail else at + len(mark)
            if begin is not None:
                spans.append((begin, end))
            at = text.find(mark, max(end, at + 1))
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for begin, end in sorted(spans):
        if end <= last:
            continue
        begin = max(begin, last)
        parts += (text[last:begin], " " * (end - begin))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def normalize(text: str) -> str:
    """NFKC, casefold and one kind of apostrophe: the form in which words are compared."""
    return _straight_apostrophes(unicodedata.normalize("NFKC", text).casefold())


def _piece_term_tuples(text: str) -> Iterable[tuple[str, ...]]:
    """The terms of each raw piece of ``text``, piece by piece.

    ASCII text is cut at every character that cannot be part of a word; other text only at
    whitespace (the piece cache then sees "model," and "(llms)" as pieces of their own).  Words
    never span a separator either way, so both give the words WORD_RE finds in the whole text.
    """
    if text.isascii():
        return map(_bytes_terms, without_links(text).encode("ascii").translate(_ASCII_TABLE).split())
    return map(_str_terms, without_links(normalize(text)).split())


def iter_terms(text: str) -> Iterator[str]:
    """Index terms of ``text`` in order, lazily (C-level iterators all the way down)."""
    return chain.from_iterable(_piece_term_tuples(text))


def tokenize(text: str) -> list[str]:
    """Index terms of ``text`` in order, with repeats (BM25 counts them)."""
    return list(chain.from_iterable(_piece_term_tuples(text)))


def count_terms(text: str, *, weight: int = 1, into: dict[str, int] | None = None) -> int:
    """Add ``weight`` × the term frequencies of ``text`` to ``into``; return the tokens added.

    Equivalent to counting ``tokenize(text) * weight``: same counts, and new terms are added
    in first-seen order, which keeps BM25 statistics identical.
    """
    fresh = Counter(chain.from_iterable(_piece_term_tuples(text)))
    if into is not None:
        get = into.get
        for term, n in fresh.items():
            into[term] = get(term, 0) + n * weight
    return fresh.total() * weight


def word_terms(word: str) -> tuple[str, ...]:
    """Index terms of one word as it appears in text (``()`` for a stop word)."""
    return _str_terms(normalize(word))


#: :func:`word_terms` of a word already in its normal form (lower-case ASCII is): no normalising.
normal_word_terms: Final[Callable[[str], tuple[str, ...]]] = _str_terms


@dataclass(frozen=True, slots=True)
class Word:
    """A word of a text as written (after NFKC, apostrophes straightened) and where it stands."""

    text: str
    start: int
    end: int
    terms: tuple[str, ...]  # its index terms (none for a stop word or a single letter)
    broken: bool  # punctuation that ends a phrase stands between it and the word before


def text_words(text: str) -> list[Word]:
    """Every word of ``text`` (``WORD_RE`` over its NFKC form, case kept) with its index terms: one walk
    of a text that gives its terms, the words as the person wrote them and its phrases at once."""
    text = without_links(_straight_apostrophes(unicodedata.normalize("NFKC", text)))
    found: list[Word] = []
    last_end = 0
    for match in WORD_RE.finditer(text):
        start, end = match.span()
        broken = bool(found) and _PHRASE_BREAK_RE.search(text, last_end, start) is not None
        found.append(Word(match.group(), start, end, _str_terms(match.group().casefold()), broken))
        last_end = end
    return found


def distinct_terms(words: Iterable[Word]) -> list[tuple[str, str]]:
    """(word as written, index term) for each distinct term of ``words``, the first word giving it."""
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for word in words:
        for term in word.terms:
            if term not in seen:
                seen.add(term)
                pairs.append((word.text, term))
    return pairs


def word_pairs(words: Iterable[Word]) -> list[tuple[str, str, int, int]]:
    """Adjacent pairs of index terms among ``words``: ``(first term, second term, start, end)``.

    Two terms are adjacent when their words stand next to each other with only spaces or a hyphen
    between: a stop word, a dropped single letter or punctuation (``. , ; : ( ) [ ] { } ! ? "``) ends a
    phrase."""
    out: list[tuple[str, str, int, int]] = []
    previous: str | None = None
    previous_start = 0
    for word in words:
        if word.broken or not word.terms:
            previous = None
        for term in word.terms:
            if previous is not None:
                out.append((previous, term, previous_start, word.end))
            previous, previous_start = term, word.start
    return out


def display_terms(query: str) -> list[tuple[str, str]]:
    """(word as the user wrote it, index term) for each distinct searchable term of ``query``.

    The word keeps the user's spelling (after NFKC), so callers can say "matched: KV, caching"
    while the index matched "kv" and "cach".
    """
    return distinct_terms(text_words(query))


def phrase_spans(text: str) -> list[tuple[str, str, int, int]]:
    """Adjacent pairs of index terms in ``text``: ``(first term, second term, start, end)``, the span
    running from the first word's start to the second's end in ``text`` after NFKC.

    Two terms are adjacent when their words stand next to each other with only spaces or a hyphen
    between ("graph neural networks" → "graph neural", "neural network"; "KV-cache" → "kv cach"): a
    stop word, a dropped single letter or punctuation (``. , ; : ( ) [ ] { } ! ? "``) ends a phrase.
    """
    return word_pairs(text_words(text))


def phrase_terms(text: str) -> list[str]:
    """The phrase terms of ``text`` in order: each adjacent pair of :func:`phrase_spans` as one term."""
    return [first + PHRASE_JOIN + second for first, second, _, _ in phrase_spans(text)]
