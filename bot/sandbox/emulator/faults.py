"""Injectable failures: make the next matching request fail the way Discord fails it.

server.faults.add("POST /channels/*/messages", "50007")          # cannot DM this user
server.faults.add("PUT /channels/**", "429", retry_after=0.2)     # rate limited, retried by discord.py
server.faults.add("/interactions/**", "500", times=2)
server.faults.add("POST /channels/*/messages", "drop_response")  # done, but the answer is lost
server.faults.add("PUT /channels/**", "drop_request")               # the connection drops: not done

``drop_response`` is the fault a timeout hides: Discord carries the request out (the message is
created, MESSAGE_CREATE is dispatched) and the connection closes before the answer arrives, so the
client cannot tell whether it happened (aiohttp raises ServerDisconnectedError). ``drop_request`` looks
the same to the client, but the connection closed before Discord acted on the request: nothing happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .recorder import route_matcher

JSON = dict[str, Any]

#: kind -> (HTTP status, body). 429 is built separately (it needs retry_after and headers).
ERRORS: dict[str, tuple[int, JSON]] = {
    "50007": (403, {"message": "Cannot send messages to this user", "code": 50007}),
    "10003": (404, {"message": "Unknown Channel", "code": 10003}),
    "10008": (404, {"message": "Unknown Message", "code": 10008}),
    "10013": (404, {"message": "Unknown User", "code": 10013}),
    "10062": (404, {"message": "Unknown interaction", "code": 10062}),
    "50001": (403, {"message": "Missing Access", "code": 50001}),
    "50013": (403, {"message": "Missing Permissions", "code": 50013}),
    "500": (500, {"message": "500: Internal Server Error", "code": 0}),
    "502": (502, {"message": "502: Bad Gateway", "code": 0}),
    "503": (503, {"message": "503: Service Unavailable", "code": 0}),
    "504": (504, {"message": "504: Gateway Timeout", "code": 0}),
}
#: the request is handled, then the connection closes without an answer
DROP_RESPONSE = "drop_response"
#: the connection closes before the request is handled: nothing is done, no answer
DROP_REQUEST = "drop_request"
ALIASES = {
    "ratelimit": "429",
    "rate_limit": "429",
    "cannot_dm": "50007",
    "unknown_channel": "10003",
    "unknown_message": "10008",
    "unknown_interaction": "10062",
    "missing_access": "50001",
    "missing_permissions": "50013",
    "server_error": "500",
    "lost_response": DROP_RESPONSE,
    "timeout_after_accept": DROP_RESPONSE,
    "connection_reset": DROP_REQUEST,
}


@dataclass
class Fault:
    pattern: str
    kind: str
    times: int | None = 1  # None: until removed
    retry_after: float = 0.25
    is_global: bool = False
    when: Callable[[str, str, Any], bool] | None = None
    hits: int = 0
    _match: Callable[[str, str], bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.kind = ALIASES.get(str(self.kind), str(self.kind))
        if self.kind not in ("429", DROP_RESPONSE, DROP_REQUEST) and self.kind not in ERRORS:
            raise ValueError(
                f"unknown fault kind {self.kind!r}; one of 429, {DROP_RESPONSE}, {DROP_REQUEST}, "
                f"{', '.join(ERRORS)}, {', '.join(ALIASES)}"
            )
        self._match = route_matcher(self.pattern)

    @property
    def drops_response(self) -> bool:
        """The request is carried out and its answer lost (not an error answer)."""
        return self.kind == DROP_RESPONSE

    @property
    def drops_request(self) -> bool:
        """The connection closes before the request is carried out (nothing happens, no answer)."""
        return self.kind == DROP_REQUEST

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, method: str, path: str, body: Any) -> bool:
        if self.exhausted or not self._match(method, path):
            return False
        return self.when is None or self.when(method, path, body)

    def response(self) -> tuple[int, JSON, dict[str, str]]:
        if self.kind == "429":
            body = {
                "message": "You are being rate limited.",
                "retry_after": self.retry_after,
                "global": self.is_global,
            }
            headers = {
                "Retry-After": str(max(1, round(self.retry_after))),
                "X-RateLimit-Scope": "global" if self.is_global else "user",
                "Via": "1.1 google",
            }
            if self.is_global:
                headers["X-RateLimit-Global"] = "true"
            return 429, body, headers
        status, body = ERRORS[self.kind]
        return status, dict(body), {}


class Faults:
    """The active faults, checked in the order they were added."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(
        self,
        pattern: str,
        kind: str | int,
        *,
        times: int | None = 1,
        retry_after: float = 0.25,
        is_global: bool = False,
        when: Callable[[str, str, Any], bool] | None = None,
    ) -> Fault:
        """Fail the next `times` requests matching `pattern` ("METHOD /path", `*` one segment, `**` rest).

        `kind`: "429" (with `retry_after`), "50007", "10003", "10008", "10013", "10062", "50001",
        "50013", "500", "502", "503", "504", "drop_response" (carried out, then the connection
        closes before the answer), "drop_request" (the connection closes first: nothing is done), or an
        alias such as "cannot_dm".
        `when(method, path, json_body)` narrows it further.
        """
        fault = Fault(
            pattern, str(kind), times=times, retry_after=retry_after, is_global=is_global, when=when
        )
        self._faults.append(fault)
        return fault

    def take(self, method: str, path: str, body: Any) -> Fault | None:
        for fault in self._faults:
            if fault.matches(method, path, body):
                fault.hits += 1
                return fault
        return None

    def remove(self, fault: Fault) -> None:
        self._faults.remove(fault)

    def clear(self) -> None:
        self._faults.clear()

    def __iter__(self) -> Iterator[Fault]:
        return iter(list(self._faults))

    def __len__(self) -> int:
        return len(self._faults)
