"""The piece of an abstract to show under a search hit, with the query's words in bold; one-line cuts
of reasons and titles."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, pairwise
from operator import attrgetter, not_
from typing import Final

from bot.services.papers import shorten
from paperindex.tokenizer import LOWER_ASCII_WORD_RE, WORD_RE, normal_word_terms, word_terms

DEFAULT_WIDTH: Final = 300
_MARKDOWN_RE: Final = re.compile(r"([\\*_~`|>\[\]#])")
#: what makes Discord ping: @everyone, @here, <@id>, <@!id>, <@&id>
_MENTION_RE: Final = re.compile(r"@(everyone|here|[!&]?\d{15,21})")
#: the scheme of a link Discord would make clickable ("https:" before "//")
_LINK_SCHEME_RE: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)")
#: keeps an @ from starting a mention, as discord.utils.escape_mentions does
_ZERO_WIDTH_SPACE: Final = "\u200b"
_SENTENCE_END_RE: Final = re.compile(r"[.!?]\s+")
_ELLIPSIS: Final = "…"
_WORD_REACH: Final = 24  # a snippet's cut goes on to a word's end at most this far (a giant "word" is cut)
_PHRASE_GAP_RE: Final = re.compile(r"\s+|\s*-\s*")  # what may stand between two words of a phrase


def _collapse(text: str) -> str:
    """``text`` with each run of whitespace one space, none at either end."""
    return " ".join(text.split())


def one_line(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters at a word's end (ending in
    "…") when longer."""
    return shorten.one_line(text, limit)


def escape_markdown(text: str) -> str:
    """Backslash-escape the characters Discord markdown gives a meaning (* _ ~ ` | > [ ] # \\)."""
    return _MARKDOWN_RE.sub(r"\\\1", text)


def echo(text: str, limit: int | None = None) -> str:
    """What a person typed, to repeat back in a message exactly as they typed it and nothing more: one
    line (cut to ``limit`` characters), its markdown escaped (``**bold**`` shows its asterisks), its
    mentions inert (``@everyone`` pings no one, even where mentions are allowed) and its links plain text
    (``https\\://…`` is not made clickable)."""
    line = one_line(text, limit) if limit is not None else _collapse(text)
    line = escape_markdown(line)
    line = _MENTION_RE.sub(_ZERO_WIDTH_SPACE.join(("@", r"\1")), line)
    return _LINK_SCHEME_RE.sub(r"\1\\:", line)


@dataclass(frozen=True, slots=True)
class _Match:
    start: int
    end: int
    term: str


def _matches(text: str, terms: frozenset[str]) -> list[_Match]:
    """The words of ``text`` one of whose index terms is in ``terms`` (the first such term each)."""
    if not terms:
        return []
    if not text.isascii():
        return _matches_word_by_word(text, terms)
    # ASCII: casefolding is lower() and keeps every offset, so the words are found by a regex in C,
    # each distinct word's terms are looked up once (C iterators), and only the few words that
    # matched are looked for again, with str.find, to place them.
    lowered = text.lower()
    distinct = list(set(LOWER_ASCII_WORD_RE.findall(lowered)))
    held = compress(distinct, map(not_, map(terms.isdisjoint, map(normal_word_terms, distinct))))
    found: list[_Match] = []
    for word in held:
        term = next(t for t in normal_word_terms(word) if t in terms)
        plus = word.endswith("+")
        at = lowered.find(word)
        while at >= 0:
            end = at + len(word)
            if _word_starts(lowered, at) and _word_ends(lowered, end, plus):
                found.append(_Match(at, end, term))
            at = lowered.find(word, at + 1)
    found.sort(key=attrgetter("start"))
    return found


def _word_starts(text: str, at: int) -> bool:
    """Whether a word of LOWER_ASCII_WORD_RE starts at ``at`` (not inside "model's", "1.5" or "ab")."""
    if at == 0:
        return True
    before = text[at - 1]
    if before.isalnum():
        return False
    joins = before == "'" or (before == "." and text[at].isdigit())
    return not (joins and at >= 2 and text[at - 2].isalnum())


def _word_ends(text: str, end: int, plus: bool) -> bool:
    """Whether a word of LOWER_ASCII_WORD_RE can end at ``end``: not before "'s", ".5", "+" or a letter,
    nor, when it ends in "+" (``plus``), before another "+"."""
    if end == len(text):
        return True
    after = text[end]
    if plus or after == "+":
        return after != "+"
    if after.isalnum():
        return False
    if after == "'" or after == ".":
        following = text[end + 1] if end + 1 < len(text) else ""
        return not (following.isalnum() if after == "'" else following.isdigit())
    return True


def _matches_word_by_word(text: str, terms: frozenset[str]) -> list[_Match]:
    found: list[_Match] = []
    for word in WORD_RE.finditer(text):
        for term in word_terms(word.group()):
            if term in terms:
                found.append(_Match(word.start(), word.end(), term))
                break
    return found


def _joined(text: str, first: _Match, second: _Match, phrases: Collection[tuple[str, str]]) -> bool:
    """Whether two matches read as one of the query's phrases: its two terms, in order, with only
    spaces or a hyphen between."""
    return (first.term, second.term) in phrases and bool(
        _PHRASE_GAP_RE.fullmatch(text, first.end, second.start)
    )


def _phrases_among(
    text: str, matches: list[_Match], phrases: Collection[tuple[str, str]]
) -> set[tuple[str, str]]:
    return {(a.term, b.term) for a, b in pairwise(matches) if _joined(text, a, b, phrases)}


def group_phrases(
    terms: Sequence[str], words: Sequence[str], matched: Collection[str], found: Collection[tuple[str, str]]
) -> tuple[str, ...]:
    """The matched words of a query (``words``, aligned with its ``terms``) with each run of phrase
    pairs the paper holds (``found``) shown as one phrase: "graph neural networks", not three words."""
    out: list[str] = []
    run: list[str] = []
    for n, (term, word) in enumerate(zip(terms, words, strict=True)):
        if word not in matched:
            continue
        run.append(word)
        following = terms[n + 1] if n + 1 < len(terms) else None
        if following is None or (term, following) not in found or words[n + 1] not in matched:
            out.append(" ".join(run))
            run = []
    return tuple(out)


def _best_window(matches: list[_Match], width: int) -> tuple[int, int]:
    """Indexes [i, j) of the matches inside the densest window of ``width`` characters.

    Densest = most distinct terms, then most matches, then earliest.
    """
    best = (0, 1)
    best_key = (0, 0)
    j = 0
    for i, first in enumerate(matches):
        j = max(j, i + 1)
        while j < len(matches) and matches[j].end - first.start <= width:
            j += 1
        window = matches[i:j]
        key = (len({m.term for m in window}), len(window))
        if key > best_key:
            best, best_key = (i, j), key
    return best


def _word_boundary_before(text: str, pos: int, reach: int = 24) -> int:
    """The start of the word containing ``pos``, or ``pos`` itself when that word starts more
    than ``reach`` characters earlier (a giant "word" is cut, not kept whole)."""
    start = pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
        if pos - start > reach:
            return pos
    return start


def _cut_end(text: str, start: int, width: int, at_least: int) -> int:
    """End of a cut of about ``width`` characters from ``start`` that keeps [.., at_least)."""
    end = min(len(text), start + width)
    if end >= len(text):
        return len(text)
    space = text.rfind(" ", at_least, end + 1)
    if space > at_least:
        return space
    end = max(at_least, end)
    word_end = text.find(" ", end)  # no space to cut at: the word under the cut is kept whole
    word_end = len(text) if word_end < 0 else word_end
    return word_end if word_end - end <= _WORD_REACH else end


def snippet(
    abstract: str,
    terms: Iterable[str],
    width: int = DEFAULT_WIDTH,
    phrases: Collection[tuple[str, str]] = (),
) -> str:
    """About ``width`` characters of ``abstract`` around the most query-dense place.

    ``terms`` are index terms (as :func:`paperindex.tokenizer.tokenize` makes them); each word of
    the abstract whose term is among them is put in **bold**, and a phrase of the query (``phrases``:
    pairs of terms, as :class:`paperindex.engine.SearchResults` gives them) in one bold run
    ("**graph neural networks**").  Other markdown characters are
    escaped, whitespace is collapsed to single spaces, and an ellipsis marks each cut.  The
    visible text is at most ``width`` characters plus the ellipses (the markup adds 4 characters
    per bold word and 1 per escaped character).
    """
    text = _collapse(abstract)
    return _snippet(text, _matches(text, frozenset(terms)), width, phrases)


def snippet_and_phrases(
    abstract: str,
    title: str,
    terms: Iterable[str],
    phrases: Collection[tuple[str, str]],
    width: int = DEFAULT_WIDTH,
) -> tuple[str, set[tuple[str, str]]]:
    """:func:`snippet` of ``abstract``, and which of the query's ``phrases`` (pairs of index terms)
    the title or the abstract holds as a phrase: what a search hit shows, the abstract's words looked
    up once for both."""
    wanted = frozenset(terms)
    text = _collapse(abstract)
    matches = _matches(text, wanted)
    found: set[tuple[str, str]] = set()
    if phrases:
        heading = _collapse(title)
        found = _phrases_among(text, matches, phrases) | _phrases_among(
            heading, _matches(heading, wanted), phrases
        )
    return _snippet(text, matches, width, phrases), found


def _snippet(text: str, matches: list[_Match], width: int, phrases: Collection[tuple[str, str]]) -> str:
    """The snippet of ``text`` (whitespace collapsed and stripped) given its matches."""
    if not text:
        return ""
    if not matches:
        end = _cut_end(text, 0, width, 0)
        return escape_markdown(text[:end]) + (_ELLIPSIS if end < len(text) else "")
    i, j = _best_window(matches, width)
    first, last = matches[i], matches[j - 1]
    if last.end - first.start > width:  # a single word longer than the window
        last = first
        j = i + 1
    slack = width - (last.end - first.start)
    # Start at the sentence holding the first match when it fits, else a little before it.
    sentence_start = 0
    for found in _SENTENCE_END_RE.finditer(text, 0, first.start):
        sentence_start = found.end()
    start = sentence_start if first.start - sentence_start <= slack else first.start - slack // 4
    start = _word_boundary_before(text, max(start, 0))
    if start > first.start:
        start = first.start
    end = _cut_end(text, start, width, last.end)
    pieces: list[str] = [_ELLIPSIS] if start > 0 else []
    pos = start
    bold_from = -1  # start of the bold run being built (adjacent matches share one pair of **)
    previous: _Match | None = None
    for match in matches:
        if match.start < start or match.end > end:
            continue
        joined = previous is not None and previous.end == pos and _joined(text, previous, match, phrases)
        previous = match
        if bold_from >= 0 and (match.start == pos or joined):
            pieces[-1] = f"**{escape_markdown(text[bold_from : match.end])}**"
        else:
            pieces.append(escape_markdown(text[pos : match.start]))
            pieces.append(f"**{escape_markdown(text[match.start : match.end])}**")
            bold_from = match.start
        pos = match.end
    pieces.append(escape_markdown(text[pos:end]).rstrip())
    if end < len(text):
        pieces.append(_ELLIPSIS)
    return "".join(pieces)
