"""Any RSS or Atom feed as a source: journal tables of contents (Nature, Science, PLOS, Cell…), a lab's
blog, an arXiv listing feed.

One request per fetch (a feed has no pages); entries dated before the range are left out (an entry
without a date is kept: what comes again is merged). Each entry gives a title, its abstract (the
summary or content, HTML and the "Published online: …; doi:…" line journals put first taken out),
its authors, date and link, the feed's (or `prism:publicationName`'s) title as venue, and its DOI
from `prism:doi`, `dc:identifier`, the entry's id or its links (doi.org, a publisher's `/doi/` path,
PLOS's `info:doi/`), so an article and the preprint a bioRxiv record names as published are one paper.
An entry with neither a title nor an abstract is rejected, with its position.
"""

from __future__ import annotations

import html
import io
import re
import time
from collections.abc import AsyncIterator, Mapping
from datetime import date
from typing import Any
from urllib.parse import unquote, urlparse

import feedparser

from bot.services.papers.ingest.normalise import arxiv_id, clean_text, clean_url, doi, iso_date
from bot.services.papers.sources.base import Cursor, SourceError, SourcePage, parse_each
from bot.services.papers.sources.http import PoliteClient
from storage.models import PaperRecord

_TAG = re.compile(r"<[^>]+>")
_BOILERPLATE = re.compile(r"^\s*<p>[^<]*(?:Published online|doi:)[\s\S]*?</p>", re.IGNORECASE)
_DOI_FIELDS = ("prism_doi", "dc_identifier", "id", "link", "guid")


def plain_text(markup: str) -> str:
    """HTML as one line of text: the journals' leading "Published online" paragraph, tags and
    entities taken out."""
    without = _BOILERPLATE.sub("", markup or "")
    return clean_text(html.unescape(_TAG.sub(" ", without)))


def _doi_in(value: object) -> str | None:
    """A DOI in a field or a URL's path (a link's query string, "?af=R", is not part of it)."""
    if not isinstance(value, str) or "10." not in value:
        return None
    if value.startswith(("http://", "https://")):
        value = unquote(urlparse(value).path)
    return doi(value)


def entry_doi(entry: Mapping[str, Any]) -> str | None:
    """The entry's DOI: `prism:doi`, `dc:identifier`, its id or link, or any of its links."""
    for key in _DOI_FIELDS:
        if found := _doi_in(entry.get(key)):
            return found
    for link in entry.get("links") or ():
        if isinstance(link, Mapping) and (found := _doi_in(link.get("href"))):
            return found
    return None


def _date(entry: Mapping[str, Any]) -> str | None:
    for key in ("published_parsed", "updated_parsed", "created_parsed"):
        parsed = entry.get(key)
        if isinstance(parsed, time.struct_time):
            return f"{parsed.tm_year:04d}-{parsed.tm_mon:02d}-{parsed.tm_mday:02d}"
    for key in ("prism_publicationdate", "dc_date", "published", "updated"):
        found = iso_date(entry.get(key))
        if found:
            return found
    return None


def _authors(entry: Mapping[str, Any]) -> tuple[str, ...]:
    names = [clean_text(a.get("name")) for a in entry.get("authors") or () if isinstance(a, Mapping)]
    names = [name for name in names if name]
    if not names and isinstance(entry.get("author"), str):
        names = [part.strip() for part in re.split(r";| and |,(?=\s*[A-Z][^,]* [A-Z])", entry["author"])]
    return tuple(name for name in names if name)


def entry_record(entry: Mapping[str, Any], *, venue: str | None, source: str) -> PaperRecord | str:
    """One feed entry as a record, or why it cannot be one."""
    title = plain_text(entry.get("title") or "")
    content = entry.get("content") or ()
    body = content[0].get("value", "") if content and isinstance(content[0], Mapping) else ""
    abstract = plain_text(body or entry.get("summary") or "")
    if abstract == title:
        abstract = ""
    if not title and not abstract:
        return "neither a title nor an abstract"
    link = clean_url(entry.get("link"))
    published = _date(entry)
    found_arxiv = arxiv_id(link) if link and "arxiv.org" in link else None
    return PaperRecord(
        title=title,
        abstract=abstract,
        authors=_authors(entry),
        venue=clean_text(entry.get("prism_publicationname")) or venue,
        year=int(published[:4]) if published else None,
        url=link,
        arxiv_id=found_arxiv,
        doi=entry_doi(entry),
        external_id=clean_text(entry.get("id")) or link,
        source=source,
        published=published,
    )


def parse_feed(data: bytes, *, name: str, since: date | None = None) -> SourcePage:
    """A feed's entries as records; `SourceError` when it is not a feed at all."""
    feed = feedparser.parse(io.BytesIO(data))
    if not feed.get("version") and not feed.entries:
        reason = getattr(feed.get("bozo_exception"), "getMessage", lambda: "")() or "no RSS or Atom feed"
        raise SourceError(f"{name} is not an RSS or Atom feed ({reason})")
    venue = clean_text(feed.feed.get("title")) or None
    parsed, problems = parse_each(
        feed.entries, lambda entry: entry_record(entry, venue=venue, source="rss"), f"{name}: entry"
    )
    first = since.isoformat() if since is not None else None
    records = [r for r in parsed if first is None or r.published is None or r.published >= first]
    return SourcePage(records, problems, None, len(parsed) - len(records))


class RssSource:
    """One RSS or Atom feed (see the module docstring)."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SourceError(f"a feed is an http(s) URL, got {url!r}")
        self.url = url
        self.name = f"rss:{url}"
        self.service = parsed.netloc

    async def pages(
        self, client: PoliteClient, since: date, until: date, cursor: Cursor | None
    ) -> AsyncIterator[SourcePage]:
        response = await client.get(self.url)
        if response.status >= 300:
            raise SourceError(f"{self.url} answered HTTP {response.status}: no feed there")
        yield parse_feed(response.body, name=self.url, since=since)
