"""The live arXiv fetcher on fake and recorded responses: paging, the cut-off, 3 s spacing, backoff,
the error feed, resuming an interrupted fetch, merging, and the real aiohttp transport on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from aiohttp import web
from aiohttp.client_reqrep import ConnectionKey
from shared_data import shared_path
from source_fakes import FakeTime

from bot.services.papers import arxiv_fetch
from bot.services.papers.arxiv_fetch import (
    AiohttpTransport,
    ArxivFetchError,
    ArxivUnreachableError,
    HttpResponse,
    fetch_arxiv,
    last_fetch,
)
from bot.services.papers.ingest.arxiv_atom import unwrap_recorded
from bot.services.papers.ingest.runner import ingest_bytes
from storage.db import Database
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository
from storage.repositories.state import StateRepository

NOW = datetime(2026, 4, 12, 22, 0, tzinfo=UTC)
NS = (
    'xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom"'
)


def feed(entries: list[tuple[str, str]], *, total: int, start: int = 0) -> bytes:
    """An arXiv API page: (versioned id, published date) per entry."""
    body = "".join(
        f"<entry><id>http://arxiv.org/abs/{ident}</id><title>Paper {ident}</title>"
        f"<summary>Abstract of {ident}: we study a problem about {ident} in depth, with experiments on "
        f"several datasets that show the method works well for {ident}.</summary>"
        f"<published>{day}T10:00:00Z</published><author><name>Author {ident}</name></author>"
        f'<arxiv:primary_category term="cs.LG"/></entry>'
        for ident, day in entries
    )
    return (
        f"<?xml version='1.0' encoding='UTF-8'?><feed {NS}><title>arXiv Query</title>"
        f"<opensearch:totalResults>{total}</opensearch:totalResults>"
        f"<opensearch:startIndex>{start}</opensearch:startIndex>"
        f"<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>{body}</feed>"
    ).encode()


ERROR = (
    f"<?xml version='1.0' encoding='UTF-8'?><feed {NS}><title>arXiv</title><entry>"
    "<id>https://arxiv.org/api/errors#incorrect_id_format_for_abc</id><title>Error</title>"
    "<summary>incorrect id format for abc</summary></entry></feed>"
).encode()


Scripted = HttpResponse | BaseException


class FakeArxiv:
    """Answers by `start`: a response, an exception, or a list of them consumed in order."""

    def __init__(self, clock: FakeTime, pages: Mapping[int, Scripted | list[Scripted]]) -> None:
        self.clock = clock
        self.pages = {start: list(v) if isinstance(v, list) else v for start, v in pages.items()}
        self.calls: list[tuple[datetime, dict[str, str]]] = []

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        self.calls.append((self.clock(), dict(params)))
        script = self.pages[int(params["start"])]
        item = script.pop(0) if isinstance(script, list) else script
        if isinstance(item, BaseException):
            raise item
        return item

    @property
    def starts(self) -> list[int]:
        return [int(params["start"]) for _, params in self.calls]

    def gaps(self) -> list[float]:
        times = [when for when, _ in self.calls]
        return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


def ok(entries: list[tuple[str, str]], total: int, start: int = 0) -> HttpResponse:
    return HttpResponse(200, feed(entries, total=total, start=start))


async def test_pages_newest_first_until_papers_are_older_than_the_cutoff(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(
        clock,
        {
            0: ok(
                [
                    ("2604.00007v1", "2026-04-12"),
                    ("2604.00006v2", "2026-04-11"),
                    ("2604.00005v1", "2026-04-11"),
                ],
                9,
            ),
            3: ok(
                [
                    ("2604.00004v1", "2026-04-10"),
                    ("2604.00003v1", "2026-04-10"),
                    ("2604.00002v1", "2026-04-09"),
                ],
                9,
                3,
            ),
        },
    )
    summary = await fetch_arxiv(
        db, categories=["cs.LG"], days=2, http=arxiv, sleep=clock.sleep, clock=clock, page_size=3
    )
    assert arxiv.starts == [0, 3], "stops at the page that reaches the cut-off"
    _, params = arxiv.calls[0]
    assert params == {
        "search_query": "cat:cs.LG",
        "sortBy": "submittedDate",
        "sortOrder": "descending",
        "start": "0",
        "max_results": "3",
    }
    assert (summary.added, summary.requests) == (5, 2)
    assert (summary.oldest, summary.newest) == ("2026-04-10", "2026-04-12")
    assert await PaperRepository(db).find_by_external("2604.00002") is None, "older than the cut-off"
    paper = await PaperRepository(db).find_by_external("arXiv:2604.00006v1")
    assert paper is not None
    assert paper.venue == "arXiv cs.LG"
    assert paper.published == "2026-04-11"
    assert all(gap >= 3.0 for gap in arxiv.gaps())
    assert await last_fetch(db) == (NOW + timedelta(seconds=3)).isoformat(timespec="seconds")
    assert await StateRepository(db).get("arxiv:cs.LG") is None, "a finished fetch leaves no cursor"
    assert "5 added" in summary.describe()
    listed = await SourceFetchRepository(db).get("arxiv:cs.LG")  # beside the other sources in the stats
    assert listed is not None
    assert (listed.last_records, listed.last_added, listed.fetched_until) == (5, 5, "2026-04-12")


async def test_stops_at_the_end_of_the_results(db: Database) -> None:
    clock = FakeTime(NOW)
    recent = "2026-04-12"
    arxiv = FakeArxiv(
        clock,
        {
            0: ok([("2604.00011v1", recent), ("2604.00012v1", recent)], 3),
            2: ok([("2604.00013v1", recent)], 3, 2),
        },
    )
    summary = await fetch_arxiv(
        db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock, page_size=2
    )
    assert arxiv.starts == [0, 2]
    assert summary.added == 3


async def test_5xx_and_timeouts_are_retried_with_backoff_and_spacing(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(
        clock,
        {
            0: [
                HttpResponse(503, b"busy"),
                TimeoutError(),
                OSError("connection reset"),
                HttpResponse(429, b""),
                ok([("2604.00021v1", "2026-04-12")], 1),
            ]
        },
    )
    summary = await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert summary.added == 1
    assert len(arxiv.calls) == 5
    assert clock.sleeps == [6.0, 12.0, 24.0, 48.0], "exponential backoff, never under the 3 s spacing"
    assert all(gap >= 3.0 for gap in arxiv.gaps())


async def test_a_machine_without_a_network_is_told_at_the_first_attempt(db: Database) -> None:
    """arXiv's name does not resolve (offline): no retry, no backoff, one clear error; a category is
    taken in any case and stored under arXiv's spelling."""
    clock = FakeTime(NOW)
    offline = aiohttp.ClientConnectorDNSError(
        ConnectionKey("export.arxiv.org", 443, True, True, None, None, None, None),
        OSError(-2, "Name or service not known"),
    )
    arxiv = FakeArxiv(clock, {0: offline})
    with pytest.raises(ArxivUnreachableError, match="this machine seems to be offline; nothing was fetched"):
        await fetch_arxiv(db, categories=["CS.lg"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert len(arxiv.calls) == 1
    assert clock.sleeps == []
    assert arxiv.calls[0][1]["search_query"] == "cat:cs.LG"


async def test_gives_up_after_the_retries_and_says_why(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: HttpResponse(502, b"")})
    with pytest.raises(
        ArxivUnreachableError, match=r"^arXiv did not answer for cs\.LG after 5 attempts \(HTTP 502\)$"
    ):
        await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert len(arxiv.calls) == arxiv_fetch.MAX_RETRIES + 1
    assert await last_fetch(db) is None


async def test_the_error_feed_is_not_retried(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: HttpResponse(400, ERROR)})
    with pytest.raises(ArxivFetchError, match=r"^arXiv API error: incorrect id format for abc$"):
        await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert len(arxiv.calls) == 1


async def test_an_interrupted_fetch_resumes_at_the_next_page(db: Database) -> None:
    clock = FakeTime(NOW)
    page0 = ok([("2604.00031v1", "2026-04-12"), ("2604.00032v1", "2026-04-12")], 6)
    page2 = ok([("2604.00033v1", "2026-04-12"), ("2604.00034v1", "2026-04-11")], 6, 2)
    page4 = ok([("2604.00035v1", "2026-04-11"), ("2604.00036v1", "2026-04-11")], 6, 4)
    broken = FakeArxiv(clock, {0: page0, 2: HttpResponse(500, b"")})
    with pytest.raises(ArxivFetchError):
        await fetch_arxiv(
            db, categories=["cs.LG"], days=3, http=broken, sleep=clock.sleep, clock=clock, page_size=2
        )
    assert await PaperRepository(db).count() == 2, "the first page is kept"
    cursor = json.loads(await StateRepository(db).get("arxiv:cs.LG") or "{}")
    assert cursor["start"] == 2
    assert cursor["days"] == 3

    clock.now += timedelta(hours=1)
    working = FakeArxiv(clock, {2: page2, 4: page4})
    summary = await fetch_arxiv(
        db, categories=["cs.LG"], days=3, http=working, sleep=clock.sleep, clock=clock, page_size=2
    )
    assert working.starts == [2, 4], "continues where the crash left off"
    assert summary.resumed == ("cs.LG",)
    assert summary.added == 4
    assert await PaperRepository(db).count() == 6
    assert await StateRepository(db).get("arxiv:cs.LG") is None
    assert "resumed at entry 2" in summary.describe()


async def test_a_stale_cursor_is_ignored(db: Database) -> None:
    stale = {
        "start": 500,
        "cutoff": "2026-01-01",
        "days": 1,
        "started": (NOW - timedelta(days=3)).isoformat(),
    }
    await StateRepository(db).set("arxiv:cs.LG", json.dumps(stale))
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: ok([("2604.00041v1", "2026-04-12")], 1)})
    summary = await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert arxiv.starts == [0]
    assert summary.resumed == ()


async def test_an_empty_page_inside_the_results_is_retried(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(
        clock,
        {
            0: ok([("2604.00051v1", "2026-04-12")], 2),
            1: [ok([], 2, 1), ok([("2604.00052v1", "2026-04-12")], 2, 1)],
        },
    )
    summary = await fetch_arxiv(
        db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock, page_size=1
    )
    assert arxiv.starts == [0, 1, 1]
    assert summary.added == 2
    assert summary.incomplete == ()


async def test_fetched_papers_merge_with_ingested_ones(db: Database) -> None:
    ingested = json.dumps({"arxiv_id": "2604.00061", "title": "Ingested earlier", "abstract": "Short."})
    await ingest_bytes(db, "mine.jsonl", ingested.encode())
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: ok([("2604.00061v3", "2026-04-12")], 1)})
    summary = await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)
    assert (summary.added, summary.merged) == (0, 1)
    paper = await PaperRepository(db).find_by_external("2604.00061")
    assert paper is not None
    assert paper.title == "Ingested earlier"
    assert paper.authors == ("Author 2604.00061v3",)


async def test_several_categories_keep_the_spacing_between_them(db: Database) -> None:
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: ok([("2604.00071v1", "2026-04-12")], 1)})
    summary = await fetch_arxiv(
        db, categories=["cs.LG", "stat.ML"], days=1, http=arxiv, sleep=clock.sleep, clock=clock
    )
    assert [p["search_query"] for _, p in arxiv.calls] == ["cat:cs.LG", "cat:stat.ML"]
    assert arxiv.gaps() == [3.0]
    assert (summary.added, summary.unchanged) == (1, 1)
    assert await StateRepository(db).get("arxiv:last_fetch:stat.ML") is not None


@pytest.mark.parametrize(
    ("categories", "days", "message"),
    [
        ([], 1, "at least one"),
        (["cs LG"], 1, "not an arXiv category"),
        (["notacat"], 1, "'notacat' is not an arXiv category"),
        (["cs.LGG"], 1, "Did you mean cs.LG"),
        (["cs.LG"], 0, "at least 1"),
    ],
)
async def test_bad_arguments_are_refused(
    db: Database, categories: list[str], days: int, message: str
) -> None:
    arxiv = FakeArxiv(FakeTime(NOW), {})
    with pytest.raises(ArxivFetchError, match=message):
        await fetch_arxiv(db, categories=categories, days=days, http=arxiv)
    assert arxiv.calls == []


# ----------------------------------------------------------------------------- recorded responses


@pytest.mark.shared
async def test_paging_through_recorded_api_responses(db: Database) -> None:
    folder = shared_path("data", "arxiv-api", "lukasschwab-arxiv.py-2026")
    pages: dict[int, Scripted | list[Scripted]] = {}
    ids: set[str] = set()
    for start in range(0, 60, 10):
        (path,) = folder.glob(f"q_testing_s{start}_m10_*.json")
        body, status = unwrap_recorded(path.read_text("utf-8")) or ("", 0)
        pages[start] = HttpResponse(status or 200, body.encode("utf-8"))
        ids.update(
            line.split("/abs/")[1].split("v")[0]
            for line in body.splitlines()
            if "<id>http://arxiv.org/abs/" in line
        )
    clock = FakeTime(datetime(2026, 4, 13, tzinfo=UTC))
    arxiv = FakeArxiv(clock, pages)
    summary = await fetch_arxiv(
        db,
        categories=["cs.SE"],
        days=40 * 365,
        http=arxiv,
        sleep=clock.sleep,
        clock=clock,
        page_size=10,
        max_papers=60,
    )
    assert arxiv.starts == [0, 10, 20, 30, 40, 50]
    assert all(gap >= 3.0 for gap in arxiv.gaps())
    assert summary.added == len(ids) == await PaperRepository(db).count()


@pytest.mark.shared
async def test_the_recorded_error_feed_stops_the_fetch(db: Database) -> None:
    path = shared_path("data", "arxiv-api", "lukasschwab-arxiv.py-2026", "id_abc_s0_m100_b79c8dcf6bc3.json")
    body, status = unwrap_recorded(path.read_text("utf-8")) or ("", 0)
    clock = FakeTime(NOW)
    arxiv = FakeArxiv(clock, {0: HttpResponse(status or 0, body.encode())})
    with pytest.raises(ArxivFetchError, match="incorrect id format for abc"):
        await fetch_arxiv(db, categories=["cs.LG"], days=1, http=arxiv, sleep=clock.sleep, clock=clock)


# ----------------------------------------------------------------------------- the real transport


async def test_the_aiohttp_transport_against_a_local_server(db: Database) -> None:
    answers = [
        web.Response(status=503, text="busy"),
        web.Response(
            body=feed([("2604.00081v1", "2026-04-12")], total=1), content_type="application/atom+xml"
        ),
    ]
    seen: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(dict(request.query))
        return answers.pop(0)

    app = web.Application()
    app.router.add_get("/api/query", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    clock = FakeTime(NOW)
    try:
        async with aiohttp.ClientSession() as session:
            summary = await fetch_arxiv(
                db,
                categories=["cs.LG"],
                days=1,
                http=AiohttpTransport(session, timeout=5),
                sleep=clock.sleep,
                clock=clock,
                url=f"http://127.0.0.1:{port}/api/query",
            )
    finally:
        await runner.cleanup()
    assert summary.added == 1
    assert len(seen) == 2
    assert seen[0]["search_query"] == "cat:cs.LG"
