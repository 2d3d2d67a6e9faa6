"""An RSS or Atom feed as a source: a journal's table of contents (the Nature-style RSS 1.0 fixture),
DOIs from prism:doi, dc:identifier, ids and links, dates, rejects, and a URL that is no feed."""

from __future__ import annotations

import pytest
from source_fakes import NOW, FakeService, FakeTime, client, fixture

from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.sources.base import SourceError
from bot.services.papers.sources.fetch import fetch_source
from bot.services.papers.sources.rss import RssSource, parse_feed
from storage.db import Database
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository

FEED = "https://www.nature.com/neuro.rss"


def test_the_journal_feed_parses_with_its_dois_authors_and_dates() -> None:
    page = parse_feed(fixture("rss_nature_neuroscience.xml"), name=FEED)
    assert len(page.records) == 50
    assert len(page.problems) == 2
    assert page.problems == [f"{FEED}: entry {n}: neither a title nor an abstract" for n in (51, 52)]
    first = page.records[0]
    assert first.doi == "10.1038/s41593-024-01800"
    assert first.venue == "Nature Neuroscience"
    assert first.published == "2024-11-25"
    assert first.year == 2024
    assert len(first.authors) >= 1
    assert first.source == "rss"
    assert "Published online" not in first.abstract
    assert "<" not in first.abstract
    assert all(r.doi for r in page.records)


def test_dois_come_from_ids_and_links_in_atom_feeds() -> None:
    atom = b"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>PLOS ONE</title>
<entry><id>info:doi/10.1371/journal.pone.0312345</id><title>A PLOS paper on sleep</title>
<author><name>Ada Lovelace</name></author><updated>2024-11-30T00:00:00Z</updated>
<summary type="html">&lt;p&gt;Sleep matters.&lt;/p&gt;</summary></entry>
<entry><id>tag:science.org,2024:1</id><title>A Science paper</title>
<link href="https://www.science.org/doi/10.1126/science.adq1234?af=R"/><updated>2024-11-29T00:00:00Z</updated>
<summary>We show a thing.</summary></entry>
</feed>"""
    page = parse_feed(atom, name="atom")
    assert [r.doi for r in page.records] == ["10.1371/journal.pone.0312345", "10.1126/science.adq1234"]
    assert page.records[0].abstract == "Sleep matters."
    assert page.records[0].venue == "PLOS ONE"


async def test_the_feed_is_fetched_into_the_store_with_its_counts(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(lambda url, params: HttpResponse(200, fixture("rss_nature_neuroscience.xml")))
    summary = await fetch_source(db, RssSource(FEED), client(service, clock), days=8)
    assert service.calls == [(FEED, {})]
    assert (summary.added, summary.merged, summary.unchanged, summary.rejected, summary.older) == (
        49,
        0,
        0,
        2,
        1,
    )
    assert await PaperRepository(db).count() == 49
    state = await SourceFetchRepository(db).get(f"rss:{FEED}")
    assert state is not None
    assert state.fetched_until == "2024-12-02"
    assert state.cursor is None
    assert (state.last_records, state.last_added, state.last_error) == (51, 49, None)
    again = await fetch_source(db, RssSource(FEED), client(service, clock), days=8)
    assert (again.added, again.unchanged) == (0, 49), "a second fetch of the same feed adds nothing"


async def test_a_first_fetch_reaches_back_two_days_and_the_next_starts_where_it_ended(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(lambda url, params: HttpResponse(200, fixture("rss_nature_neuroscience.xml")))
    summary = await fetch_source(db, RssSource(FEED), client(service, clock))
    assert (summary.since, summary.until) == ("2024-11-30", "2024-12-02")
    clock.now = NOW.replace(day=5)
    later = await fetch_source(db, RssSource(FEED), client(service, clock))
    assert (later.since, later.until) == ("2024-12-01", "2024-12-05"), "from the day before the last end"


async def test_a_page_that_is_no_feed_is_refused_and_recorded(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(lambda url, params: HttpResponse(200, b"<html><body>Sign in</body>"))
    with pytest.raises(SourceError, match="is not an RSS or Atom feed"):
        await fetch_source(db, RssSource(FEED), client(service, clock))
    state = await SourceFetchRepository(db).get(f"rss:{FEED}")
    assert state is not None
    assert state.last_error
    assert "not an RSS or Atom feed" in state.last_error
    missing = FakeService(lambda url, params: HttpResponse(404, b"not found"))
    with pytest.raises(SourceError, match="HTTP 404"):
        await fetch_source(db, RssSource(FEED), client(missing, clock))


def test_a_feed_url_must_be_http() -> None:
    with pytest.raises(SourceError, match="http"):
        RssSource("ftp://example.org/feed")
