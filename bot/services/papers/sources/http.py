"""The HTTP every source shares: one request at a time per source, spaced, retried with backoff, and a
clear error (never a traceback) when the service cannot be reached.

- at most one request every `spacing` seconds (each source's own: arXiv asks 3 s, the others get 1 s);
- HTTP 5xx, 429, timeouts and connection errors are retried with exponential backoff (`backoff` s,
  doubling, at most `BACKOFF_MAX`), `retries` times;
- a machine that cannot reach the service at all (its name does not resolve, no route: offline) is
  told so at the first attempt (`SourceUnreachableError`) rather than after minutes of retries;
- other answers (2xx, 3xx, 4xx) are the caller's to read.

A caller that words these failures its own way (`paperbot fetch arxiv` and its `ArxivUnreachableError`)
passes its `Wording`: its error class and its two messages.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import aiohttp

from bot.errors import UserFacingError

log = logging.getLogger(__name__)

BACKOFF_MAX = 120.0
USER_AGENT = "paperbot/0.1 (research paper digest bot; polite client, one request at a time)"

#: connection failures that mean this machine cannot reach the service at all, not a passing hiccup
_OFFLINE_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN})


class SourceUnreachableError(UserFacingError):
    """The service could not be reached (offline) or kept failing: nothing more was fetched, what was
    stored stays and the next run resumes."""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: bytes


class Transport(Protocol):
    """GET `url` with query `params`; raises TimeoutError / OSError / aiohttp.ClientError on failure."""

    def __call__(self, url: str, params: Mapping[str, str]) -> Awaitable[HttpResponse]: ...


class AiohttpTransport:
    """The real transport: one aiohttp session, a total timeout per request."""

    def __init__(self, session: aiohttp.ClientSession, *, timeout: float = 60.0) -> None:
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        async with self._session.get(url, params=dict(params), timeout=self._timeout) as response:
            return HttpResponse(response.status, await response.read())


def is_offline(error: BaseException) -> bool:
    """Whether a failed request means no network to the service (its name does not resolve, no route)."""
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return True
    return isinstance(error, aiohttp.ClientConnectorError) and error.os_error.errno in _OFFLINE_ERRNOS


@dataclass(frozen=True, slots=True)
class Wording:
    """How a caller words a GET that gave up: its error class and two messages, formatted with
    `{service}`, `{failure}` (the last one: "HTTP 502", "ClientConnectorDNSError: …"), `{attempts}` and
    `{what}` (what was asked for, as named in `PoliteClient.get(what=)`)."""

    error: Callable[[str], Exception]
    offline: str  # this machine cannot reach the service at all (said at the first attempt)
    exhausted: str  # the service kept failing through every retry

    def error_for(self, *, offline: bool, service: str, failure: str, attempts: int, what: str) -> Exception:
        template = self.offline if offline else self.exhausted
        return self.error(template.format(service=service, failure=failure, attempts=attempts, what=what))


#: the sources' wording
SOURCE_WORDING = Wording(
    SourceUnreachableError,
    offline="cannot reach {service} ({failure}): this machine seems to be offline; nothing more was "
    "fetched. Run it again once it has a network.",
    exhausted="{service} did not answer after {attempts} attempts ({failure}); what was stored stays and "
    "the next run resumes",
)


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
        wording: Wording = SOURCE_WORDING,
    ) -> None:
        self.http = http
        self.service = service
        self.spacing = spacing
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock
        self.wording = wording
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

    async def get(self, url: str, params: Mapping[str, str] | None = None, *, what: str = "") -> HttpResponse:
        """The answer to one GET, after the retries a passing failure deserves; `what` names what was
        asked for in the log and in the error (`{what}` in a `Wording`)."""
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                delay = min(self.backoff * 2 ** (attempt - 1), BACKOFF_MAX)
                log.warning(
                    "%s%s: %s; retry %d/%d in %.0fs",
                    self.service,
                    f" {what}" if what else "",
                    failure,
                    attempt,
                    self.retries,
                    delay,
                )
                await self.sleep(delay)
            try:
                response = await self._spaced(url, params or {})
            except (TimeoutError, OSError, aiohttp.ClientError) as error:
                failure = f"{type(error).__name__}: {error}".rstrip(": ")
                if is_offline(error):
                    raise self.wording.error_for(
                        offline=True, service=self.service, failure=failure, attempts=attempt + 1, what=what
                    ) from error
                continue
            if response.status >= 500 or response.status == 429:
                failure = f"HTTP {response.status}"
                continue
            return response
        raise self.wording.error_for(
            offline=False, service=self.service, failure=failure, attempts=self.retries + 1, what=what
        )
