"""bioRxiv and medRxiv through their public API (`api.biorxiv.org`, no key):

`GET https://api.biorxiv.org/details/{server}/{from}/{to}/{cursor}[?category=cell_biology]` answers
`{"messages": [{"status": "ok", "cursor", "count", "total", …}], "collection": [...]}`, 30 preprints
a page from `cursor` on; each preprint has `doi`, `title`, `authors` ("Last, F.; Last, F."),
`author_corresponding`, `date` (YYYY-MM-DD), `version`, `type`, `license`, `category`, `abstract`,
`published` (the journal DOI, or "NA") and `server`. The category filter takes the category's name
with underscores for spaces.

Each version of a preprint posted in the range is a row: a later version is an update of the same
paper (its DOI), never a new one; `published` becomes another DOI of the paper, so the journal
article's feed entry joins it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from datetime import date
from typing import Any

from bot.services.papers.ingest.normalise import clean_text, doi, iso_date
from bot.services.papers.sources.base import Cursor, SourceError, SourcePage, json_answer, parse_each
from bot.services.papers.sources.http import PoliteClient
from storage.models import PaperRecord

API_BASE = "https://api.biorxiv.org"
SERVERS = {"biorxiv": "bioRxiv", "medrxiv": "medRxiv"}
_CATEGORY = re.compile(r"[a-z][a-z_\- ]{1,60}")


def category_slug(category: str) -> str:
    """A category as the API's filter takes it: lower case, underscores for spaces."""
    slug = "_".join(category.strip().lower().replace("_", " ").split())
    if not _CATEGORY.fullmatch(slug):
        raise SourceError(
            f"{category!r} is not a bioRxiv/medRxiv category name (e.g. neuroscience, cell_biology)"
        )
    return slug


def _authors(value: Any) -> tuple[str, ...]:
    if not isinstance(value, str):
        return ()
    return tuple(name for part in value.split(";") if (name := clean_text(part)))


def preprint_record(item: Any, *, server: str) -> PaperRecord | str:
    """One row of `collection` as a record, or why it cannot be one."""
    if not isinstance(item, Mapping):
        return f"not a JSON object ({type(item).__name__})"
    found = doi(item.get("doi"))
    if found is None:
        return "no DOI"
    title = clean_text(item.get("title"))
    abstract = clean_text(item.get("abstract"))
    if not title and not abstract:
        return f"{found}: neither a title nor an abstract"
    version_text = str(item.get("version") or "").strip()
    version = int(version_text) if version_text.isdigit() else None
    published = iso_date(item.get("date"))
    journal = doi(item.get("published")) if isinstance(item.get("published"), str) else None
    name = SERVERS.get(str(item.get("server") or server).lower(), SERVERS[server])
    return PaperRecord(
        title=title,
        abstract=abstract,
        authors=_authors(item.get("authors")),
        venue=name,
        year=int(published[:4]) if published else None,
        url=f"https://www.{name.lower()}.org/content/{found}",  # the latest version
        doi=found,
        other_dois=(journal,) if journal and journal != found else (),
        external_id=found,
        source=name.lower(),
        published=published,
        version=version,
    )


def parse_details(data: bytes, *, server: str, where: str) -> tuple[list[PaperRecord], list[str], int, int]:
    """A details page: (records, problems, rows on this page, total rows in the range)."""
    answer = json_answer(data, where)
    if not isinstance(answer, Mapping) or not isinstance(answer.get("messages"), list):
        raise SourceError(f"{where}: not a details answer (no messages)")
    message = answer["messages"][0] if answer["messages"] else {}
    status = str(message.get("status", "")) if isinstance(message, Mapping) else ""
    collection = answer.get("collection")
    if not isinstance(collection, list):
        if status.startswith("no posts"):
            return [], [], 0, 0
        raise SourceError(f"{where}: the API says {status or 'nothing'!r}")
    try:
        total = int(message.get("total", len(collection)))
    except (TypeError, ValueError):
        total = len(collection)
    records, problems = parse_each(
        collection, lambda item: preprint_record(item, server=server), f"{where}: row"
    )
    return records, problems, len(collection), total


class BiorxivSource:
    """bioRxiv or medRxiv, optionally one category (see the module docstring)."""

    def __init__(self, server: str, category: str | None = None, *, api_base: str | None = None) -> None:
        if server not in SERVERS:
            raise SourceError(f"{server!r} is not one of {', '.join(SERVERS)}")
        self.server = server
        self.category = category_slug(category) if category else None
        self.api_base = (api_base or API_BASE).rstrip("/")
        self.name = f"{server}:{self.category}" if self.category else server
        self.service = f"{SERVERS[server]}'s API ({self.api_base})"

    async def pages(
        self, client: PoliteClient, since: date, until: date, cursor: Cursor | None
    ) -> AsyncIterator[SourcePage]:
        offset = int(cursor["cursor"]) if cursor else 0
        params = {"category": self.category} if self.category else {}
        while True:
            url = f"{self.api_base}/details/{self.server}/{since.isoformat()}/{until.isoformat()}/{offset}"
            response = await client.get(url, params)
            where = f"{self.server} {since}..{until} cursor {offset}"
            if response.status >= 300:
                raise SourceError(f"{SERVERS[self.server]}'s API answered HTTP {response.status} for {where}")
            records, problems, rows, total = parse_details(response.body, server=self.server, where=where)
            offset += rows
            more = rows > 0 and offset < total
            yield SourcePage(records, problems, {"cursor": offset} if more else None)
            if not more:
                return
