"""bioRxiv, medRxiv and OpenReview on their fixture pages: the requests, counts, versions, decisions,
resuming an interrupted fetch at its cursor, and a service that keeps failing."""

from __future__ import annotations

import json

import pytest
from source_fakes import FakeService, FakeTime, biorxiv_pages, client, fixture, openreview_pages

from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.sources.base import SourceError
from bot.services.papers.sources.biorxiv import BiorxivSource, parse_details
from bot.services.papers.sources.fetch import fetch_source
from bot.services.papers.sources.http import SourceUnreachableError
from bot.services.papers.sources.openreview import OpenReviewSource
from storage.db import Database
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository

CORL = "robot-learning.org/CoRL/2024/Conference"


def revised_row() -> dict:
    rows = json.loads(fixture("biorxiv_details_30.json"))["collection"]
    return next(r for r in rows if isinstance(r, dict) and r.get("version") == "2")


async def test_biorxiv_pages_by_cursor_and_a_second_version_updates_its_paper(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(biorxiv_pages("biorxiv"))
    summary = await fetch_source(db, BiorxivSource("biorxiv", "neuroscience"), client(service, clock), days=7)
    base = "https://api.biorxiv.org/details/biorxiv/2024-11-25/2024-12-02"
    assert service.calls == [
        (f"{base}/0", {"category": "neuroscience"}),
        (f"{base}/30", {"category": "neuroscience"}),
    ]
    assert clock.sleeps == [1.0], "one second between two requests"
    assert (summary.added, summary.merged, summary.unchanged, summary.rejected) == (54, 1, 0, 3)
    assert summary.problems[0].endswith("row 13: no DOI")
    papers = PaperRepository(db)
    assert await papers.count() == 54
    revised = revised_row()
    paper = await papers.find_by_external(revised["doi"])
    assert paper is not None
    assert paper.abstract == revised["abstract"], "version 2 replaced version 1's abstract"
    assert paper.venue == "bioRxiv"
    assert paper.url == f"https://www.biorxiv.org/content/{revised['doi']}"


async def test_medrxiv_counts_and_its_rejected_rows(db: Database) -> None:
    clock = FakeTime()
    summary = await fetch_source(
        db, BiorxivSource("medrxiv"), client(FakeService(biorxiv_pages("medrxiv")), clock), days=7
    )
    assert (summary.added, summary.merged, summary.rejected) == (52, 0, 2)
    assert summary.source == "medrxiv"
    assert any("no DOI" in p for p in summary.problems)


def test_an_empty_interval_is_no_posts_not_an_error() -> None:
    body = b'{"messages": [{"status": "no posts found"}], "collection": []}'
    assert parse_details(body, server="biorxiv", where="x") == ([], [], 0, 0)
    with pytest.raises(SourceError, match="not the API's JSON"):
        parse_details(b"<html>", server="biorxiv", where="x")


async def test_an_openreview_venue_pages_by_offset_with_its_decisions(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(openreview_pages)
    summary = await fetch_source(db, OpenReviewSource(CORL, page_size=40), client(service, clock))
    assert [params["offset"] for _, params in service.calls] == ["0", "40"]
    assert service.calls[0] == (
        "https://api2.openreview.net/notes",
        {"content.venueid": CORL, "offset": "0", "limit": "40"},
    )
    assert (summary.added, summary.merged, summary.rejected) == (60, 0, 3)
    papers = PaperRepository(db)
    first = json.loads(fixture("openreview_corl2024_0.json"))["notes"][0]
    paper = await papers.find_by_external(f"https://openreview.net/forum?id={first['id']}")
    assert paper is not None
    assert (paper.title, paper.venue, paper.year) == (first["content"]["title"]["value"], "CoRL", 2024)
    assert paper.authors == tuple(first["content"]["authors"]["value"])
    assert paper.pdf_url == "https://openreview.net" + first["content"]["pdf"]["value"]
    rejected = [
        n for n in json.loads(fixture("openreview_corl2024_40.json"))["notes"] if "Rejected" in json.dumps(n)
    ]
    for note in rejected:
        found = await papers.find_by_external(note["id"])
        assert found is not None
        assert found.status == "Rejected"


async def test_an_unknown_venue_is_refused() -> None:
    clock = FakeTime()
    source = OpenReviewSource("robot-learning.org/CoRL/2031/Conference")
    with pytest.raises(SourceError, match="no public notes"):
        async for _ in source.pages(
            client(FakeService(openreview_pages), clock), clock().date(), clock().date(), None
        ):
            pass


async def test_an_interrupted_fetch_resumes_at_its_cursor(db: Database) -> None:
    """Page 0 stored, then the service stops answering: the papers stay, the cursor points at page 30,
    and the next run asks for page 30 only."""
    clock = FakeTime()
    pages = biorxiv_pages("biorxiv")
    failing = FakeService(lambda url, params: TimeoutError() if url.endswith("/30") else pages(url, params))
    source = BiorxivSource("biorxiv")
    with pytest.raises(SourceUnreachableError, match="did not answer after 5 attempts"):
        await fetch_source(db, source, client(failing, clock), days=7)
    assert clock.sleeps == [1.0, 5.0, 10.0, 20.0, 40.0], "spaced, then backed off"
    state = await SourceFetchRepository(db).get("biorxiv")
    assert state is not None
    assert state.cursor is not None
    assert json.loads(state.cursor)["page"] == {"cursor": 30}
    assert state.last_error is not None
    assert "did not answer" in state.last_error
    stored = await PaperRepository(db).count()
    assert 0 < stored < 54
    working = FakeService(pages)
    resumed = await fetch_source(db, source, client(working, clock))
    assert [url.rsplit("/", 1)[1] for url, _ in working.calls] == ["30"]
    assert resumed.resumed
    assert (resumed.since, resumed.until) == ("2024-11-25", "2024-12-02")
    assert await PaperRepository(db).count() == 54
    state = await SourceFetchRepository(db).get("biorxiv")
    assert state is not None
    assert (state.cursor, state.last_error, state.fetched_until) == (None, None, "2024-12-02")


async def test_4xx_is_a_refusal_not_retried(db: Database) -> None:
    clock = FakeTime()
    service = FakeService(lambda url, params: HttpResponse(400, b"bad request"))
    with pytest.raises(SourceError, match="HTTP 400"):
        await fetch_source(db, BiorxivSource("medrxiv"), client(service, clock))
    assert len(service.calls) == 1


def test_bad_names_are_refused_before_any_request() -> None:
    with pytest.raises(SourceError, match="not one of biorxiv, medrxiv"):
        BiorxivSource("chemrxiv")
    with pytest.raises(SourceError, match="category"):
        BiorxivSource("biorxiv", "cell/biology")
    with pytest.raises(SourceError, match="venue id"):
        OpenReviewSource("ICLR 2025")
