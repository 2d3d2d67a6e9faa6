"""Saved papers as a BibTeX file: escaped field values, balanced braces, unique citation keys."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

from bot.services.papers.citation import landing_url, split_name
from storage.models import Paper

# LaTeX specials inside a brace-delimited field. Braces become text commands, not \{ \}: BibTeX
# counts every brace, escaped or not, so a lone "\{" would unbalance the entry.
_SPECIALS: Final = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_SPECIAL_RE: Final = re.compile(r"[\\{}&%$#_~^]")
_CONTROL_RE: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_KEY_WORD: Final = re.compile(r"[a-z0-9]+")
_SKIP_TITLE_WORDS: Final = frozenset(
    {"a", "an", "the", "on", "of", "in", "for", "to", "and", "with", "towards", "toward", "via", "from"}
    | {"is", "are", "do", "does", "can", "how", "what", "when", "why"}
)


def escape(text: str) -> str:
    """A value safe inside `{…}` of a BibTeX field (whitespace collapsed, specials escaped)."""
    text = _CONTROL_RE.sub(" ", text)
    text = " ".join(text.split())
    return _SPECIAL_RE.sub(lambda m: _SPECIALS[m.group()], text)


def verbatim(value: str) -> str:
    """A URL or DOI: kept verbatim (biblatex and the url package read these fields literally),
    with only braces, backslashes and whitespace percent-encoded so the entry stays balanced."""
    value = "".join(value.split())
    return value.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D")


def _ascii_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return _KEY_WORD.findall(folded)


def _last_name(author: str) -> str:
    parts = _ascii_words(split_name(author).family)
    return parts[-1] if parts else ""


def base_key(paper: Paper) -> str:
    """`<first author's last name><year><first significant title word>`, e.g. vaswani2017attention."""
    name = _last_name(paper.authors[0]) if paper.authors else ""
    year = str(paper.year) if paper.year else (paper.published or "")[:4]
    title_words = [w for w in _ascii_words(paper.title) if w not in _SKIP_TITLE_WORDS and not w.isdigit()]
    word = title_words[0] if title_words else ""
    key = f"{name or 'anon'}{year if year.isdigit() else ''}{word}"
    return key or f"paper{paper.id}"


def unique_keys(papers: Sequence[Paper]) -> list[str]:
    """One key per paper; repeats get a, b, c… suffixes (the first keeps the bare key)."""
    taken: set[str] = set()
    keys: list[str] = []
    for paper in papers:
        base = base_key(paper)
        key, n = base, 0
        while key in taken:
            key = f"{base}{_suffix(n)}"
            n += 1
        taken.add(key)
        keys.append(key)
    return keys


def _suffix(n: int) -> str:
    """a, b, …, z, aa, ab, …"""
    letters = ""
    n += 1
    while n > 0:
        n, rem = divmod(n - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return letters


def _field(name: str, value: str) -> str:
    return f"  {name} = {{{value}}}"


def entry(paper: Paper, key: str, *, include_abstract: bool = True) -> str:
    """One BibTeX entry for a paper."""
    fields: list[tuple[str, str]] = []
    # double braces keep the title's capitalisation ("BERT", "GPT-4") in any style
    fields.append(("title", "{" + escape(paper.title) + "}"))
    if paper.authors:
        fields.append(("author", " and ".join(escape(a) for a in paper.authors if a.strip())))
    if paper.year:
        fields.append(("year", str(paper.year)))
    kind = "misc"
    if paper.venue:
        kind = "inproceedings"
        fields.append(("booktitle", escape(paper.venue)))
    if paper.doi:
        fields.append(("doi", verbatim(paper.doi)))
    if paper.arxiv_id:
        fields.extend((("eprint", escape(paper.arxiv_id)), ("archiveprefix", "arXiv")))
    if url := landing_url(paper):
        fields.append(("url", verbatim(url)))
    notes = [f"OpenReview: {paper.openreview_id}"] if paper.openreview_id else []  # arXiv: eprint above
    if paper.title_derived:
        notes.append("Title derived from the abstract by paperbot")
    if notes:
        fields.append(("note", escape("; ".join(notes))))
    if include_abstract and paper.abstract.strip():
        fields.append(("abstract", escape(paper.abstract)))
    body = ",\n".join(_field(name, value) for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}"


def to_bibtex(papers: Iterable[Paper], *, include_abstract: bool = True) -> str:
    """A whole .bib file (UTF-8) for these papers, in the given order."""
    items = list(papers)
    keys = unique_keys(items)
    entries = [entry(p, k, include_abstract=include_abstract) for p, k in zip(items, keys, strict=True)]
    header = f"% {len(items)} saved paper{'s' if len(items) != 1 else ''}, exported by paperbot (UTF-8)\n\n"
    return header + "\n\n".join(entries) + "\n"
