"""What every export format (BibTeX, RIS, CSL-JSON) takes from a paper the same way: a person's name
split into family and given names, the landing URL, and the paper's other ids as a note line."""

from __future__ import annotations

from typing import NamedTuple

from storage.models import Paper

#: lower-case words that start a family name ("Ludwig van Beethoven" → "van Beethoven")
PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "ter", "ten"}
)


class PersonName(NamedTuple):
    family: str
    given: str  # "" for a one-word name


def split_name(name: str) -> PersonName:
    """ "Ada Lovelace" → (Lovelace, Ada); "Lovelace, Ada" stays so; particles go with the family name."""
    name = " ".join(name.split())
    if "," in name:
        family, given = (part.strip() for part in name.split(",", 1))
        return PersonName(family, given)
    words = name.split(" ")
    if len(words) == 1:
        return PersonName(name, "")
    start = len(words) - 1
    while start > 1 and words[start - 1] in PARTICLES:
        start -= 1
    return PersonName(" ".join(words[start:]), " ".join(words[:start]))


def landing_url(paper: Paper) -> str | None:
    """The paper's own page: its URL, else its arXiv, OpenReview or DOI page."""
    if paper.url:
        return paper.url
    if paper.arxiv_id:
        return f"https://arxiv.org/abs/{paper.arxiv_id}"
    if paper.openreview_id:
        return f"https://openreview.net/forum?id={paper.openreview_id}"
    if paper.doi:
        return f"https://doi.org/{paper.doi}"
    return None


def id_lines(paper: Paper) -> list[str]:
    """ "arXiv: 2401.01234", "OpenReview: abc": the lines Zotero reads into an item's Extra field."""
    lines = []
    if paper.arxiv_id:
        lines.append(f"arXiv: {paper.arxiv_id}")
    if paper.openreview_id:
        lines.append(f"OpenReview: {paper.openreview_id}")
    return lines
