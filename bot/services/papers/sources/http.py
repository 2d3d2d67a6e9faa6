"""The HTTP every source shares: one request at a time per source, spaced, retried with backoff, and a
clear error (never a traceback) when the service cannot be reached.

- at most one request every `spacing` seconds (each source's own: arXiv asks 3 s, the others get 1 s);
- HTTP 5xx, 429, timeouts and connection errors are retried with exponential backoff (`backoff` s,
  doubling, at most `BACKOFF_MAX`), `retries` times;
- a machine that cannot reach the service at all (its name does not resolve, no route: offline) is
  told so at the first attempt (`SourceUnreachableError`) rather than after minutes of retries;
- other answers (2xx, 3xx, 4xx) are the caller's to read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime

import aiohttp

from bot.errors import UserFacingError
from bot.services.papers.arxiv_fetch import HttpResponse, Transport, is_offline

log = logging.getLogger(__name__)

BACKOFF_MAX = 120.0
USER_AGENT = "paperbot/0.1 (research paper digest bot; polite client, one request at a time)"


class SourceUnreachableError(UserFacingError):
    """The service could not be reached (offline) or kept failing: nothing more was fetched, what was
    stored stays and the next run resumes."""


def _now() -> datetime:
    return datetime.now(UTC)


class PoliteClient:
    """GETs for one source, spaced and retried (see the module docstring)."""

    def __init__(
        self,
        http: Transport,
        *,
        service: str,
        spacing: float = 1.0,
        retries: int = 4,
        backoff: float = 5.0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.http = http
        self.service = service
        self.spacing = spacing
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock
        self.requests = 0
        self._last: datetime | None = None

    async def _spaced(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        if self._last is not None:
            wait = self.spacing - (self.clock() - self._last).total_seconds()
            if wait > 0:
                await self.sleep(wait)
        self._last = self.clock()
        self.requests += 1
        return await self.http(url, params)

    async def get(self, url: str, params: Mapping[str, str] | None = None) -> HttpResponse:
        """The answer to one GET, after the retries a passing failure deserves."""
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                delay = min(self.backoff * 2 ** (attempt - 1), BACKOFF_MAX)
                log.warning(
                    "%s: %s; retry %d/%d in %.0fs", self.service, failure, attempt, self.retries, delay
                )
                await self.sleep(delay)
            try:
                response = await self._spaced(url, params or {})
            except (TimeoutError, OSError, aiohttp.ClientError) as error:
                failure = f"{type(error).__name__}: {error}".rstrip(": ")
                if is_offline(error):
                    raise SourceUnreachableError(
                        f"cannot reach {self.service} ({failure}): this machine seems to be offline; "
                        "nothing more was fetched. Run it again once it has a network."
                    ) from None
                continue
            if response.status >= 500 or response.status == 429:
                failure = f"HTTP {response.status}"
                continue
            return response
        raise SourceUnreachableError(
            f"{self.service} did not answer after {self.retries + 1} attempts ({failure}); what was "
            "stored stays and the next run resumes"
        )
