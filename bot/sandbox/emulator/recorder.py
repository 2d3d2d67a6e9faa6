"""What the sandbox saw: every REST request and gateway payload, and waits that time out cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
JSON = dict[str, Any]


class SandboxError(AssertionError):
    """Something a test should see as a failure: an unanswered interaction, a refused action."""


class SandboxTimeout(SandboxError):
    """A wait ran out of time; the message says what was awaited and what happened meanwhile."""


class InteractionFailed(SandboxError):
    """The bot did not answer an interaction properly (no answer, too late, or Discord refused it)."""


class ClientRefused(SandboxError):
    """The Discord client would not let the user do this (unknown command, missing permission…)."""


@dataclass
class RecordedRequest:
    """One REST request to the sandbox and the answer it got."""

    method: str
    path: str  # below the API base, e.g. "/channels/123/messages"
    query: dict[str, str]
    route: str | None  # the matched route template, e.g. "/channels/{channel_id}/messages"
    json: Any = None  # the JSON body, or the multipart `payload_json`
    files: list[tuple[str, int]] = field(default_factory=list)  # (filename, size)
    authorized: bool = False
    status: int = 0
    response: Any = None
    fault: str | None = None
    #: X-RateLimit-Scope of a 429 answer: "user", "global" or "shared"
    scope: str | None = None
    at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def error_code(self) -> int | None:
        if isinstance(self.response, dict) and self.status >= 400:
            code = self.response.get("code")
            return int(code) if isinstance(code, int) else None
        return None

    def describe(self) -> str:
        text = f"{self.method} {self.path} -> {self.status}"
        if self.status >= 400 and isinstance(self.response, dict):
            text += f" {self.response.get('code', '')} {self.response.get('message', '')}"
            if errors := self.response.get("errors"):
                text += f" {json.dumps(errors)[:400]}"
        if self.fault:
            text += f" (injected {self.fault})"
        return text


@dataclass
class GatewayRecord:
    """One gateway payload, either way. `direction` is "send" (to the bot) or "recv"."""

    direction: str
    op: int
    t: str | None
    s: int | None
    d: Any
    session_id: str | None
    connection: int
    at: float


def route_matcher(pattern: str) -> Callable[[str, str], bool]:
    """Match "METHOD /path" patterns: `*` and `{name}` match one path segment, `**` any rest.

    The method may be left out ("/channels/*/messages") or be "*".
    """
    method, _, path = pattern.strip().partition(" ")
    if not path:
        method, path = "*", method
    method = method.upper()
    if not path.startswith("/"):
        path = "/" + path
    parts = []
    for segment in path.strip("/").split("/"):
        if segment == "**":
            parts.append(".*")
        elif segment == "*" or (segment.startswith("{") and segment.endswith("}")):
            parts.append("[^/]+")
        else:
            parts.append(fnmatch.translate(segment).removeprefix("(?s:").removesuffix(")\\Z"))
    regex = re.compile("^/" + "/".join(parts) + "/?$")

    def match(request_method: str, request_path: str) -> bool:
        return (method in ("*", request_method.upper())) and bool(regex.match(request_path))

    return match


class Changes:
    """Wake every waiter when the sandbox's state changes; waits re-check their condition."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait_for(
        self,
        check: Callable[[], T | None],
        *,
        timeout: float,  # noqa: ASYNC109
        what: str,
        context: Callable[[], str] | None = None,
    ) -> T:
        """Return `check()`'s first truthy result; raise SandboxTimeout naming `what` after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = check()
            if result:
                return result
            remaining = deadline - loop.time()
            if remaining <= 0:
                detail = context() if context is not None else ""
                raise SandboxTimeout(
                    f"timed out after {timeout:g}s waiting for {what}" + (f"\n{detail}" if detail else "")
                )
            event = self._event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)


class Recorder:
    """The request and gateway logs, with `changes` notified on every new entry."""

    def __init__(self, changes: Changes) -> None:
        self.changes = changes
        self.requests: list[RecordedRequest] = []
        self.gateway: list[GatewayRecord] = []

    def add_request(self, request: RecordedRequest) -> None:
        self.requests.append(request)
        self.changes.notify()

    def add_gateway(self, record: GatewayRecord) -> None:
        self.gateway.append(record)
        self.changes.notify()

    def requests_matching(self, pattern: str) -> list[RecordedRequest]:
        match = route_matcher(pattern)
        return [r for r in self.requests if match(r.method, r.path)]

    def unhandled_requests(self) -> list[RecordedRequest]:
        """Requests for routes the sandbox does not implement (the bot called something new)."""
        return [r for r in self.requests if r.route is None and r.status == 404]

    def dispatched(self, event: str | None = None) -> list[GatewayRecord]:
        return [
            g for g in self.gateway if g.direction == "send" and g.op == 0 and (event is None or g.t == event)
        ]

    def recent(self, count: int = 8) -> str:
        lines = [f"  {r.describe()}" for r in self.requests[-count:]]
        return "recent requests:\n" + "\n".join(lines) if lines else "no requests were made"
