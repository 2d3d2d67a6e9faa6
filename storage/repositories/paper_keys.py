"""The keys that make two records one paper: canonical arXiv / OpenReview / DOI ids and the content key.

Pure functions, shared by the repository (merging, look-ups by external id) and the ingest parsers
(`bot.services.papers.ingest.normalise` re-exports them): storage may not import the application, so the
definition of "the same paper" lives here, next to the UNIQUE columns that enforce it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# New-style arXiv ids (2007-): YYMM.NNNN (to 2014) or YYMM.NNNNN, optional version.
_ARXIV_NEW = re.compile(r"(?P<id>(?P<yy>\d{2})(?P<mm>\d{2})\.\d{4,5})(?:v\d+)?")
# Old-style ids: archive[.SUBJECT]/YYMMNNN, optional version ("math.GT/0309136v2" is "math/0309136").
_ARXIV_OLD = re.compile(r"(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.[A-Za-z]{2})?/(?P<num>\d{7})(?:v\d+)?")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf|html|format)/(?P<rest>[^\s?#]+)", re.IGNORECASE)
_ARXIV_PREFIX = re.compile(r"^\s*arxiv\s*:\s*", re.IGNORECASE)

_OPENREVIEW_URL = re.compile(
    r"openreview\.net/(?:forum|pdf|attachment)\?(?:[^#\s]*&)?id=(?P<id>[A-Za-z0-9_\-]+)"
)
_OPENREVIEW_ID = re.compile(r"[A-Za-z0-9_\-]{5,40}")

_DOI = re.compile(r"10\.\d{4,9}/[^\s\"'<>]+")
_DOI_TRAILING = ".,;:"
_CLOSERS = {")": "(", "]": "[", "}": "{"}

# Abstracts shorter than this (after normalising) are too generic to identify a paper on their own
# ("Withdrawn", "Abstract unavailable", a truncated first sentence): their key includes the title.
SUBSTANTIVE_ABSTRACT = 100

_NOT_WORD = re.compile(r"[\W_]+")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_ASCII_NOT_ALNUM = bytes(b for b in range(128) if not chr(b).isalnum())


def normalise_text(text: str) -> str:
    """Case, accents, whitespace and punctuation folded away: what is left is letters and digits.

    "Low-rank **gradi**ent" and "low rank gradient" normalise alike; so do curly and straight quotes,
    full-width and ASCII characters, "naïve" and "naive".
    """
    if not text:
        return ""
    if text.isascii():  # most abstracts: byte-level delete, ~20x faster than the regex
        return text.encode("ascii").lower().translate(None, _ASCII_NOT_ALNUM).decode("ascii")
    folded = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    return _NOT_WORD.sub("", folded.casefold())


def content_key(title: str, abstract: str) -> str | None:
    """The dedupe key of a paper's text: its normalised abstract, or title + abstract when that is short.

    Seed papers have no title, so a substantive abstract alone has to identify a paper; a short or
    boilerplate abstract only identifies one together with its title. None when there is no text.
    """
    body = normalise_text(abstract)
    if len(body) >= SUBSTANTIVE_ABSTRACT:
        material = "a:" + body
    else:
        head = normalise_text(title)
        if not head and not body:
            return None
        material = "t:" + head + "|" + body
    return hashlib.blake2b(material.encode("utf-8"), digest_size=16).hexdigest()


def _valid_new_style(match: re.Match[str]) -> bool:
    return 1 <= int(match.group("mm")) <= 12


def arxiv_id(value: object) -> str | None:
    """The canonical arXiv id (no version) in an id, an "arXiv:" reference or an arxiv.org URL."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    url = _ARXIV_URL.search(text)
    if url:
        text = url.group("rest")
        if text.endswith(".pdf"):
            text = text[: -len(".pdf")]
    text = _ARXIV_PREFIX.sub("", text).strip().rstrip("/")
    new = _ARXIV_NEW.fullmatch(text)
    if new and _valid_new_style(new):
        return new.group("id")
    old = _ARXIV_OLD.fullmatch(text)
    if old:
        return f"{old.group('archive').lower()}/{old.group('num')}"
    return None


def find_arxiv_id(text: str) -> str | None:
    """An arXiv id mentioned anywhere in free text (a URL or "arXiv:2401.01234")."""
    url = _ARXIV_URL.search(text)
    if url:
        found = arxiv_id(url.group(0))
        if found:
            return found
    ref = re.search(r"arxiv\s*:\s*(\S+)", text, re.IGNORECASE)
    if ref:
        return arxiv_id(ref.group(1).rstrip(".,;)"))
    return None


def openreview_id(value: object) -> str | None:
    """The OpenReview forum id in an id field or an openreview.net URL."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    url = _OPENREVIEW_URL.search(text)
    if url:
        return url.group("id")
    if "/" in text or ":" in text:
        return None
    return text if _OPENREVIEW_ID.fullmatch(text) else None


def doi(value: object) -> str | None:
    """The lower-cased DOI in "10.x/y", "doi:10.x/y" or a doi.org URL."""
    if not isinstance(value, str):
        return None
    match = _DOI.search(value)
    if not match:
        return None
    found = match.group(0)
    while found:
        if found[-1] in _DOI_TRAILING:
            found = found[:-1]
        elif found[-1] in _CLOSERS and found.count(found[-1]) > found.count(_CLOSERS[found[-1]]):
            found = found[:-1]  # a bracket closing the sentence, not part of the DOI
        else:
            break
    return found.lower() or None


# A one-word title ("Introduction", "Editorial", "Correction", "HyperNetworks") or one shorter than this
# (normalised) is too generic to identify a paper even with its first author; "Deep Sets" by Zaheer is
# not. A record joins a paper by such a title only when its abstract says the same as well.
SUBSTANTIVE_TITLE = 8
#: the share of the shorter abstract's word triples the other must hold for the two to say the same
#: (a journal's edit, a sentence cut or added, keeps most; two papers' abstracts share almost none)
ABSTRACTS_AGREE = 0.5
_ABSTRACT_WORDS = re.compile(r"[^\W_]+")


def surname(author: str) -> str:
    """An author's family name, normalised: the last word before a comma, else the last word.
    "Smith, John" and "John Smith" both give "smith", "de la Cruz, María" and "María de la Cruz"
    "cruz"; marks beside a name ("John Smith *", "Smith, John †") are not part of it, and a list
    given as one string ("Martín Abadi, David G. Andersen") gives its first author's ("abadi")."""
    name = " ".join(part for part in author.split() if normalise_text(part))
    parts = name.split(",", 1)[0].split()
    return normalise_text(parts[-1]) if parts else ""


def generic_title(title: str) -> bool:
    """Whether a title is too generic to tell a paper by, with its first author, on its own."""
    return len(normalise_text(title)) < SUBSTANTIVE_TITLE or len(title.split()) < 2


def title_author_key(title: str, authors: tuple[str, ...] | list[str]) -> str | None:
    """The key of a normalised title and its first author's family name: what tells a journal article
    and its preprint (different DOIs, an abstract edited between them) to be one paper; with a
    `generic_title`, only when their abstracts agree too. None when there is no title or author."""
    head = normalise_text(title)
    first = surname(authors[0]) if authors else ""
    if not head or not first:
        return None
    return hashlib.blake2b(f"ta:{head}|{first}".encode(), digest_size=16).hexdigest()


def _word_triples(text: str) -> set[tuple[str, ...]]:
    words = _ABSTRACT_WORDS.findall(_COMBINING.sub("", unicodedata.normalize("NFKD", text)).casefold())
    return set(zip(words, words[1:], words[2:], strict=False))


def abstracts_agree(one: str, other: str) -> bool:
    """Whether two abstracts say the same: both substantive, and most word triples of the shorter
    are in the other (a journal's edit of its preprint's abstract agrees; two papers' do not)."""
    if min(len(normalise_text(one)), len(normalise_text(other))) < SUBSTANTIVE_ABSTRACT:
        return False
    mine, theirs = _word_triples(one), _word_triples(other)
    shorter = min(len(mine), len(theirs))
    return shorter > 0 and len(mine & theirs) >= ABSTRACTS_AGREE * shorter
