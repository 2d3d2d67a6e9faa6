"""Saved papers as an RIS file (the tagged format of the RIS specification, 2011), which Zotero,
EndNote and Mendeley import.

Each record is lines of ``TAG  - value``: a tag of two characters (a capital letter, then a capital
or a digit), two spaces, a hyphen, a space, the value on one line. A record opens with ``TY`` and
closes with ``ER  - ``. Lines end in CR LF, as the specification writes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from bot.services.papers.citation import id_lines, landing_url, split_name
from bot.services.papers.latex_text import readable
from storage.models import Paper

EOL: Final = "\r\n"
#: a paper with a venue is a conference paper (Zotero: conferencePaper), else a generic record
CONFERENCE, GENERIC = "CONF", "GEN"


def _value(text: str) -> str:
    """One line: newlines, tabs and control characters become spaces."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def record(paper: Paper, *, include_abstract: bool = True) -> list[tuple[str, str]]:
    """The (tag, value) lines of one paper, TY first and ER last."""
    tags: list[tuple[str, str]] = [
        ("TY", CONFERENCE if paper.venue else GENERIC),
        ("TI", readable(paper.title)),
    ]
    for author in paper.authors:
        family, given = split_name(author)
        tags.append(("AU", f"{family}, {given}" if given else family))
    if paper.year:
        tags.append(("PY", str(paper.year)))
    if paper.published:
        tags.append(("DA", paper.published.replace("-", "/")))
    if paper.venue:
        tags.append(("T2", paper.venue))
    if paper.doi:
        tags.append(("DO", paper.doi))
    if url := landing_url(paper):
        tags.append(("UR", url))
    if paper.pdf_url:
        tags.append(("L1", paper.pdf_url))
    if include_abstract and paper.abstract.strip():
        tags.append(("AB", readable(paper.abstract)))
    notes = id_lines(paper)
    if paper.title_derived:
        notes.append("Title derived from the abstract by paperbot")
    tags.extend(("N1", note) for note in notes)
    tags.append(("ER", ""))
    return [(tag, _value(value)) for tag, value in tags]


def to_ris(papers: Iterable[Paper], *, include_abstract: bool = True) -> str:
    """A whole .ris file (UTF-8) for these papers, in the given order, records apart by a blank line."""
    records = [
        EOL.join(f"{tag}  - {value}" for tag, value in record(paper, include_abstract=include_abstract))
        for paper in papers
    ]
    return (EOL + EOL).join(records) + EOL
