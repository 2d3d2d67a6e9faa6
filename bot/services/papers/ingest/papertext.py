"""Paper-list text (the seeds' format): a header line, then one abstract per blank-line-separated paragraph.

There are no titles: each paper gets a derived title (see `titles`), marked `title_derived`, and the
code or project URL its abstract names. A header that names a venue and year ("ICML 2024 论文列表")
gives every paper in the file that venue and year.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from bot.services.papers.ingest.normalise import Rejected, parse_venue
from bot.services.papers.ingest.titles import derive_title, extract_code_url
from storage.models import PaperRecord

MIN_ABSTRACT_WORDS = 12
_HEADER_MAX_CHARS = 200
_HEADER_VENUE = re.compile(r"(?P<venue>[A-Za-z][A-Za-z&\-]{1,15})\s*['’]?\s*(?P<year>(?:19|20)\d{2})\b")


def paragraphs(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each blank-line-separated paragraph, its lines joined by spaces."""
    start = 0
    chunk: list[str] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped:
            if not chunk:
                start = number
            chunk.append(stripped)
        elif chunk:
            yield start, " ".join(chunk)
            chunk = []
    if chunk:
        yield start, " ".join(chunk)


def _is_header(text: str) -> bool:
    """A title line such as "ICML 2024 论文列表", not an abstract."""
    return len(text) <= _HEADER_MAX_CHARS and len(text.split()) < MIN_ABSTRACT_WORDS


def header_venue(header: str) -> tuple[str | None, int | None]:
    """The venue and year a header names ("ICML 2024 paper list" → ("ICML", 2024)), if any."""
    for match in _HEADER_VENUE.finditer(header):
        name = match.group("venue")
        venue, _, _ = parse_venue(name)
        known = venue != name or sum(ch.isupper() for ch in name) >= 2
        if known:
            return venue, int(match.group("year"))
    return None, None


def parse_paper_list(text: str, *, source: str) -> Iterator[PaperRecord | Rejected]:
    """Records (and rejections, with their line) from paper-list text."""
    venue: str | None = None
    year: int | None = None
    first = True
    for line, paragraph in paragraphs(text.splitlines()):
        if first:
            first = False
            if _is_header(paragraph):
                venue, year = header_venue(paragraph)
                continue
        words = len(paragraph.split())
        if words < MIN_ABSTRACT_WORDS:
            yield Rejected(f"too short to be an abstract ({words} words)", line=line)
            continue
        title = derive_title(paragraph)
        if not title:
            yield Rejected("no text to derive a title from", line=line)
            continue
        yield PaperRecord(
            title=title,
            title_derived=True,
            abstract=paragraph,
            venue=venue,
            year=year,
            code_url=extract_code_url(paragraph),
            source=source,
        )
