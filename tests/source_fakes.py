"""A fake service answering from the fixture files, and a clock that moves only when slept."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.sources.http import PoliteClient

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sources"
#: the fixtures cover 2024-11-25 .. 2024-12-02
NOW = datetime(2024, 12, 2, 12, 0, tzinfo=UTC)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class FakeTime:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += timedelta(seconds=seconds)


Answer = HttpResponse | BaseException | Callable[[str, Mapping[str, str]], HttpResponse]


class FakeService:
    """Answers a GET by a function of (url, params), or by a list of answers consumed in order."""

    def __init__(self, answer: Callable[[str, Mapping[str, str]], Answer]) -> None:
        self.answer = answer
        self.calls: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        self.calls.append((url, dict(params)))
        found = self.answer(url, params)
        if isinstance(found, BaseException):
            raise found
        assert isinstance(found, HttpResponse)
        return found


def client(service: FakeService, clock: FakeTime, *, spacing: float = 1.0) -> PoliteClient:
    return PoliteClient(service, service="the test service", spacing=spacing, sleep=clock.sleep, clock=clock)


def biorxiv_pages(server: str) -> Callable[[str, Mapping[str, str]], Answer]:
    """The details API over the fixture pages of `server` (any range: the fixtures have one)."""

    def answer(url: str, params: Mapping[str, str]) -> Answer:
        cursor = url.rstrip("/").rsplit("/", 1)[1]
        path = FIXTURES / f"{server}_details_{cursor}.json"
        if not path.exists():
            return HttpResponse(200, b'{"messages": [{"status": "no posts found"}], "collection": []}')
        return HttpResponse(200, path.read_bytes())

    return answer


def openreview_pages(url: str, params: Mapping[str, str]) -> Answer:
    path = FIXTURES / f"openreview_corl2024_{params['offset']}.json"
    if params.get("content.venueid") != "robot-learning.org/CoRL/2024/Conference" or not path.exists():
        return HttpResponse(200, b'{"notes": [], "count": 0}')
    return HttpResponse(200, path.read_bytes())
