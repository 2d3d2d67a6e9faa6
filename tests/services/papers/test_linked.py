"""The paper a link points to: found in the store, fetched from arXiv (one polite request), or refused
with a reason and nothing stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import aiohttp
import pytest

from bot.errors import NotFoundError
from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.arxiv_lookup import ArxivLookup
from bot.services.papers.linked import NO_LINK, LinkedPapers
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository

RECORDED = Path(__file__).parents[2] / "e2e" / "recorded" / "arxiv_id_1605.08386.atom"


class Recorded:
    """arXiv's API as recorded, or failing in a given way a given number of times first."""

    def __init__(self, *, failures: list[object] | None = None) -> None:
        self.failures = list(failures or [])
        self.asked: list[Mapping[str, str]] = []

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        self.asked.append(dict(params))
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, BaseException):
                raise failure
            return HttpResponse(int(str(failure)), b"")
        if params["id_list"] == "1605.08386":
            return HttpResponse(200, RECORDED.read_bytes())
        empty = b"<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><title>arXiv</title></feed>"
        return HttpResponse(200, empty)


async def _linked(db: Database, http: Recorded | None, stored: list[str]) -> LinkedPapers:
    async def no_wait(seconds: float) -> None:
        return None

    async def stored_hook() -> None:
        stored.append("refreshed")

    lookup = ArxivLookup(db, url="http://arxiv.test/api/query", http=http, sleep=no_wait) if http else None
    return LinkedPapers(PaperRepository(db), arxiv=lookup, on_stored=stored_hook)


async def test_a_stored_paper_is_found_by_any_of_its_links(db: Database) -> None:
    await PaperRepository(db).upsert_many(
        [PaperRecord(title="Tree drafts", abstract="Speculative decoding. " * 8, arxiv_id="2401.01234")]
    )
    http, refreshed = Recorded(), []
    linked = await _linked(db, http, refreshed)
    paper = await linked.find("DOI 10.1/unknown, then https://arxiv.org/pdf/2401.01234v3")
    assert paper.title == "Tree drafts"
    assert http.asked == []
    assert refreshed == []


async def test_an_arxiv_paper_not_stored_is_fetched_once_and_indexed(db: Database) -> None:
    http, refreshed = Recorded(failures=[503]), []
    linked = await _linked(db, http, refreshed)
    paper = await linked.find("https://arxiv.org/abs/1605.08386v1")
    assert paper.title == "Heat-bath random walks with Markov bases"
    assert [a["id_list"] for a in http.asked] == ["1605.08386", "1605.08386"]  # a 503, then the answer
    assert refreshed == ["refreshed"]
    assert (await linked.find("arXiv:1605.08386")).id == paper.id  # stored now: arXiv not asked again
    assert len(http.asked) == 2


@pytest.mark.parametrize(
    ("text", "http", "said"),
    [
        ("no links here", Recorded, NO_LINK),
        (
            "https://doi.org/10.1234/not-here",
            Recorded,
            "I don't have the paper this links to (DOI 10.1234/not-here)",
        ),
        ("https://arxiv.org/abs/2401.99999", Recorded, "arXiv has no paper arXiv 2401.99999"),
        (
            "https://arxiv.org/abs/1605.08386",
            lambda: Recorded(failures=[aiohttp.ClientConnectionError(), TimeoutError()]),
            "arXiv could not be reached (TimeoutError)",
        ),
        ("https://arxiv.org/abs/1605.08386", lambda: None, "fetching from arXiv is turned off here"),
    ],
)
async def test_what_cannot_be_found_is_said_and_nothing_is_stored(
    db: Database, text: str, http: Callable[[], Recorded | None], said: str
) -> None:
    refreshed: list[str] = []
    linked = await _linked(db, http(), refreshed)
    with pytest.raises(NotFoundError) as refused:
        await linked.find(text)
    assert said in str(refused.value)
    assert await db.fetchval("SELECT COUNT(*) FROM papers") == 0
    assert refreshed == []
