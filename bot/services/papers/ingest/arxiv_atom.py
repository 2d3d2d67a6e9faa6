"""arXiv API responses (Atom), in the current and the 2016 layout, raw or in a recorded-response wrapper.

`export.arxiv.org/api/query` answers with an Atom feed: one `<entry>` per paper with its versioned
id, title, summary, authors, dates, categories and, when set, `arxiv:doi`, `arxiv:journal_ref` and
`arxiv:comment`. An empty result is a feed with no entries; a bad query is HTTP 400 with a single
entry titled "Error" whose summary says what was wrong ("incorrect id format for abc"): that
becomes `ArxivApiError("arXiv API error: incorrect id format for abc")`.

Recorded responses (`{"url", "status_code", "body"}` JSON, as in `../shared/data/arxiv-api/`) are
accepted too; their bodies were decoded as Latin-1 by the recorder, which is repaired.
"""

from __future__ import annotations

import io
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import feedparser

from bot.services.papers.ingest.normalise import FileRejected, Rejected, arxiv_id, clean_text, doi, iso_date
from bot.services.papers.ingest.titles import extract_code_url
from storage.models import PaperRecord

log = logging.getLogger(__name__)


class ArxivApiError(FileRejected):
    """The arXiv API refused the query; str() is "arXiv API error: <its message>"."""


@dataclass(frozen=True, slots=True)
class AtomPage:
    """One parsed response: its papers, the entries that could not be used, and the paging numbers."""

    records: list[PaperRecord] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    total_results: int | None = None
    start_index: int | None = None
    items_per_page: int | None = None


def repair_mojibake(text: str) -> str:
    """UTF-8 text that was decoded as Latin-1 ("Î±" for "α") back to what it was; anything else as is."""
    if text.isascii():
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def unwrap_recorded(text: str) -> tuple[str, int | None] | None:
    """(body, status) of a recorded response `{"url", "status_code", "body"}`; None for anything else."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    try:
        document = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):  # (not JSON, or nested too deeply: not a response)
        return None
    if not isinstance(document, dict) or not isinstance(document.get("body"), str):
        return None
    body = document["body"]
    if not body.lstrip().startswith("<"):
        return None
    status = document.get("status_code")
    return repair_mojibake(body), status if isinstance(status, int) else None


def is_atom(text: str) -> bool:
    head = text.lstrip()[:1000]
    return head.startswith("<") and ("<feed" in head or "http://www.w3.org/2005/Atom" in head)


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _record(entry: Any, *, source: str) -> PaperRecord | str:
    """A record from one feed entry, or the reason it cannot be one."""
    found_id = arxiv_id(entry.get("id", ""))
    if found_id is None:
        return f"entry without an arXiv id ({clean_text(entry.get('id', ''))[:80] or 'none'})"
    title = clean_text(entry.get("title"))
    summary = clean_text(entry.get("summary"))
    if not title and not summary:
        return f"arXiv {found_id}: neither a title nor an abstract"
    published = iso_date(entry.get("published")) or iso_date(entry.get("updated"))
    primary = entry.get("arxiv_primary_category") or {}
    category = primary.get("term") if isinstance(primary, dict) else None
    if not category:
        tags = entry.get("tags") or []
        category = tags[0].get("term") if tags else None
    journal_ref = clean_text(entry.get("arxiv_journal_ref"))
    comment = clean_text(entry.get("arxiv_comment"))
    authors = tuple(name for author in entry.get("authors") or [] if (name := clean_text(author.get("name"))))
    return PaperRecord(
        title=title or summary[:90],
        title_derived=not title,
        abstract=summary,
        authors=authors,
        venue=f"arXiv {category}" if category else "arXiv",
        year=int(published[:4]) if published else None,
        status=f"Published in {journal_ref}" if journal_ref else None,
        url=f"https://arxiv.org/abs/{found_id}",
        pdf_url=f"https://arxiv.org/pdf/{found_id}",
        code_url=extract_code_url(f"{summary} {comment}".strip()),
        arxiv_id=found_id,
        doi=doi(entry.get("arxiv_doi")),
        external_id=found_id,
        source=source,
        published=published,
        version=_version(entry.get("id", "")),
    )


_VERSION = re.compile(r"v(\d+)/?$")


def _version(ident: object) -> int | None:
    """The version an entry's id names ("…/abs/2401.01234v2" is 2)."""
    match = _VERSION.search(ident) if isinstance(ident, str) else None
    return int(match.group(1)) if match else None


def parse_atom(data: str | bytes, *, source: str, status: int | None = None) -> AtomPage:
    """Parse one arXiv API response; ArxivApiError for the error feed, FileRejected for non-Atom text."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    feed = feedparser.parse(io.BytesIO(raw))
    entries = list(feed.entries)
    for entry in entries:
        if "/api/errors" in str(entry.get("id", "")) or (
            clean_text(entry.get("title")) == "Error" and not arxiv_id(entry.get("id", ""))
        ):
            raise ArxivApiError(f"arXiv API error: {clean_text(entry.get('summary')) or 'unknown error'}")
    if status is not None and status >= 400:
        raise ArxivApiError(f"arXiv API error: HTTP {status}")
    if not feed.get("version") and not entries:
        reason = getattr(feed.get("bozo_exception"), "getMessage", lambda: "")() or "no feed element"
        raise FileRejected(f"not an Atom feed ({reason})")
    page = AtomPage(
        total_results=_int(feed.feed.get("opensearch_totalresults")),
        start_index=_int(feed.feed.get("opensearch_startindex")),
        items_per_page=_int(feed.feed.get("opensearch_itemsperpage")),
    )
    for position, entry in enumerate(entries, start=1):
        made = _record(entry, source=source)
        if isinstance(made, PaperRecord):
            page.records.append(made)
        else:
            page.rejected.append(Rejected(made, item=position))
    return page
