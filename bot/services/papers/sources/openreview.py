"""An OpenReview venue through API v2 (`api2.openreview.net`, public notes need no key):

`GET https://api2.openreview.net/notes?content.venueid=ICLR.cc/2025/Conference&offset=0&limit=1000`
(or `invitation=ICLR.cc/2025/Conference/-/Submission` when the argument names one) answers
`{"notes": [...], "count": N}`; each note has `id`, `forum`, `cdate`/`pdate` (ms since the epoch) and
`content`, whose fields hold `{"value": …}`: `title`, `abstract`, `authors` (a list), `venue`
("ICLR 2025 Poster": the decision, once public), `venueid`, `pdf` ("/pdf/…"). Paged by `offset`.

A venue is listed whole each time (its papers appear at the decision, not by posting date), and what
was stored before is merged, not duplicated; the offset is the cursor an interrupted fetch resumes at.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, date, datetime
from typing import Any

from bot.services.papers.ingest.normalise import clean_text, openreview_id, parse_venue
from bot.services.papers.sources.base import Cursor, SourceError, SourcePage, json_answer, parse_each
from bot.services.papers.sources.http import PoliteClient
from storage.models import PaperRecord

API_BASE = "https://api2.openreview.net"
PAGE_SIZE = 1000  # the API's largest page
_FINAL_STATES = {
    "Rejected_Submission": "Rejected",
    "Withdrawn_Submission": "Withdrawn",
    "Desk_Rejected_Submission": "Desk rejected",
}


def _value(content: Mapping[str, Any], key: str) -> Any:
    field = content.get(key)
    return field.get("value") if isinstance(field, Mapping) else field


def _day(milliseconds: Any) -> str | None:
    if not isinstance(milliseconds, int | float) or milliseconds <= 0:
        return None
    return datetime.fromtimestamp(milliseconds / 1000, UTC).date().isoformat()


def note_record(note: Any) -> PaperRecord | str:
    """One note as a record, or why it cannot be one."""
    if not isinstance(note, Mapping) or not isinstance(note.get("content"), Mapping):
        return "not a note (no content)"
    content = note["content"]
    ident = openreview_id(note.get("forum") or note.get("id"))
    if ident is None:
        return "no note id"
    title = clean_text(_value(content, "title"))
    abstract = clean_text(_value(content, "abstract"))
    if not title and not abstract:
        return f"{ident}: neither a title nor an abstract"
    authors = _value(content, "authors")
    names = tuple(clean_text(a) for a in authors if clean_text(a)) if isinstance(authors, list) else ()
    venue, year, status = parse_venue(_value(content, "venue"))
    venueid = clean_text(_value(content, "venueid"))
    for suffix, state in _FINAL_STATES.items():
        if venueid.endswith("/" + suffix):
            status = state
    pdf = clean_text(_value(content, "pdf"))
    published = _day(note.get("pdate")) or _day(note.get("cdate"))
    return PaperRecord(
        title=title,
        abstract=abstract,
        authors=names,
        venue=venue,
        year=year or (int(published[:4]) if published else None),
        status=status,
        url=f"https://openreview.net/forum?id={ident}",
        pdf_url=f"https://openreview.net{pdf}" if pdf.startswith("/") else (pdf or None),
        openreview_id=ident,
        external_id=ident,
        source="openreview",
        published=published,
    )


def parse_notes(data: bytes, *, where: str) -> tuple[list[PaperRecord], list[str], int, int]:
    """A notes page: (records, problems, notes on this page, count of all)."""
    answer = json_answer(data, where)
    if not isinstance(answer, Mapping) or not isinstance(answer.get("notes"), list):
        raise SourceError(f"{where}: not a notes answer")
    notes = answer["notes"]
    count = answer.get("count")
    total = count if isinstance(count, int) else len(notes)
    records, problems = parse_each(notes, note_record, f"{where}: note")
    return records, problems, len(notes), total


class OpenReviewSource:
    """One venue's notes (see the module docstring)."""

    def __init__(self, venue: str, *, api_base: str | None = None, page_size: int = PAGE_SIZE) -> None:
        venue = venue.strip()
        if not venue or " " in venue or "/" not in venue:
            raise SourceError(
                f"{venue!r} is not an OpenReview venue id: e.g. ICLR.cc/2025/Conference, or an invitation "
                "such as ICLR.cc/2025/Conference/-/Submission"
            )
        self.venue = venue
        self.api_base = (api_base or API_BASE).rstrip("/")
        self.page_size = page_size
        self.name = f"openreview:{venue}"
        self.service = f"OpenReview's API ({self.api_base})"

    async def pages(
        self, client: PoliteClient, since: date, until: date, cursor: Cursor | None
    ) -> AsyncIterator[SourcePage]:
        offset = int(cursor["offset"]) if cursor else 0
        key = "invitation" if "/-/" in self.venue else "content.venueid"
        while True:
            params = {key: self.venue, "offset": str(offset), "limit": str(self.page_size)}
            response = await client.get(f"{self.api_base}/notes", params)
            where = f"openreview {self.venue} offset {offset}"
            if response.status >= 300:
                raise SourceError(f"OpenReview answered HTTP {response.status} for {where}")
            records, problems, notes, total = parse_notes(response.body, where=where)
            if total == 0 and offset == 0:
                raise SourceError(
                    f"OpenReview has no public notes for {self.venue}: check the venue id (e.g. "
                    "ICLR.cc/2025/Conference), or its decisions are not public yet"
                )
            offset += notes
            more = notes > 0 and offset < total
            yield SourcePage(records, problems, {"offset": offset} if more else None)
            if not more:
                return
