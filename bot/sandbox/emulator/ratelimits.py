"""Discord's rate limits, answered as Discord answers them.

Always on: a bucket per route and top-level resource (``SandboxOptions.rate_limit``, generous by
default) whose ``X-RateLimit-*`` headers every answer carries; a burst past it gets a 429.

``SandboxOptions.rates`` adds the limits that bind a bot on Discord (:data:`DISCORD_RATES` has
Discord's own figures; each rule can be set on its own, ``None`` leaves it out):

* **global** — 50 requests in any second per bot, whatever the route; interaction endpoints are not
  counted. Past it: 429 with ``X-RateLimit-Global: true``, ``X-RateLimit-Scope: global`` and
  ``"global": true`` (docs, topics/rate-limits, "Global Rate Limit").
* **messages** — Create Message, 5 per 5 s per channel; its headers say so, so a client that follows
  them never sees the 429.
* **reactions** — Create Reaction, 1 per 0.25 s per channel, while the headers describe the route's
  ordinary bucket: they promise room the bucket does not have, so a client that trusts them gets a
  429 on nearly every second reaction (discord-api-docs #182 and #2886: the reaction route's headers
  do not match its real limit; a 429's ``retry_after`` shows the 0.25 s).
* **dm_opens** — Create DM (``POST /users/@me/channels``) more often than this in a window is
  answered 403 with code 40003 "You are opening direct messages too fast". Discord publishes no
  figure (reports put it at a few dozen at once); every attempt counts, refused ones too.
* **invalid_requests** — 10,000 answers with 401, 403 or 429 (a 429 of scope ``shared`` excepted)
  within 10 minutes, and every request is refused for ``ban_seconds`` (docs, "Invalid Request Limit
  aka Cloudflare bans").

Windows run on the sandbox clock, so ``server.clock.advance(...)`` lets one pass without sleeping.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
Rate = tuple[int, float]  # (requests, per seconds)

#: Routes Discord does not count toward the global limit: the interaction callback and the webhook
#: routes of an interaction's token.
INTERACTION_ROUTES = ("/interactions/", "/webhooks/")
CREATE_MESSAGE = "POST /channels/{channel_id}/messages"
CREATE_REACTION = "PUT /channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me"
CREATE_DM = "POST /users/@me/channels"
DM_TOO_FAST = {"message": "You are opening direct messages too fast.", "code": 40003}
BANNED = {
    "message": "You are being blocked from accessing our API temporarily due to exceeding our rate "
    "limits frequently. Please read our docs at https://discord.com/developers/docs/topics/rate-limits "
    "to prevent this moving forward.",
    "code": 0,
}


@dataclass(frozen=True)
class RateRules:
    """The Discord limits the sandbox enforces beyond its per-route buckets (``None``: not enforced)."""

    global_limit: Rate | None = None
    messages: Rate | None = None
    reactions: Rate | None = None
    dm_opens: Rate | None = None
    invalid_requests: Rate | None = None
    ban_seconds: float = 3600.0


#: Discord's limits that bind a bot. The DM-open figure is the sandbox's own (Discord publishes none).
DISCORD_RATES = RateRules(
    global_limit=(50, 1.0),
    messages=(5, 5.0),
    reactions=(1, 0.25),
    dm_opens=(20, 10.0),
    invalid_requests=(10_000, 600.0),
)


class SlidingWindow:
    """At most ``limit`` events in any ``per`` seconds, per key."""

    def __init__(self, rate: Rate, now: Callable[[], float]) -> None:
        self.limit, self.per = rate
        self._now = now
        self._events: dict[str, collections.deque[float]] = {}

    def _recent(self, key: str) -> collections.deque[float]:
        events = self._events.setdefault(key, collections.deque())
        cutoff = self._now() - self.per
        while events and events[0] <= cutoff:
            events.popleft()
        return events

    def wait(self, key: str = "") -> float:
        """Seconds until one more event fits (0 when it fits now)."""
        events = self._recent(key)
        if len(events) < self.limit:
            return 0.0
        return max(0.001, events[0] + self.per - self._now())

    def add(self, key: str = "") -> None:
        self._recent(key).append(self._now())

    def count(self, key: str = "") -> int:
        return len(self._recent(key))


class FixedWindows:
    """A bucket per key whose window opens at its first request: what the ``X-RateLimit-*`` headers describe."""

    def __init__(self, rate: Rate, now: Callable[[], float], wall: Callable[[], float]) -> None:
        self.limit, self.per = rate
        self._now = now
        self._wall = wall
        self._windows: dict[str, tuple[float, int]] = {}

    def take(self, key: str, label: str) -> tuple[bool, dict[str, str]]:
        """Count one request (when it fits) and return whether it fits, with the bucket's headers."""
        now = self._now()
        start, used = self._windows.get(key, (now, 0))
        if now - start >= self.per:
            start, used = now, 0
        reset_after = max(0.0, self.per - (now - start))
        allowed = used < self.limit
        if allowed:
            used += 1
        self._windows[key] = (start, used)
        return allowed, {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(0, self.limit - used)),
            "X-RateLimit-Reset": f"{self._wall() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": hashlib.sha1(label.encode()).hexdigest()[:16],  # noqa: S324 - a label
        }


@dataclass
class Refusal:
    """How the sandbox refuses a request a limit does not let through."""

    status: int
    body: JSON
    headers: dict[str, str] = field(default_factory=dict)
    scope: str | None = None  # X-RateLimit-Scope of a 429


def too_many(retry_after: float, *, scope: str, headers: dict[str, str] | None = None) -> Refusal:
    """Discord's 429: JSON ``retry_after`` and ``Retry-After``, with the route's headers."""
    is_global = scope == "global"
    extra = {
        "Retry-After": str(max(1, round(retry_after))),
        "X-RateLimit-Scope": scope,
        "Via": "1.1 google",
    }
    if is_global:
        extra["X-RateLimit-Global"] = "true"
    body = {
        "message": "You are being rate limited.",
        "retry_after": round(retry_after, 3),
        "global": is_global,
    }
    return Refusal(429, body, {**(headers or {}), **extra}, scope)


class RateLimits:
    """Every limit of one sandbox: :meth:`check` before a route runs, :meth:`answered` after."""

    def __init__(
        self, route_rate: Rate, rules: RateRules, *, now: Callable[[], float], wall: Callable[[], float]
    ) -> None:
        self.rules = rules
        self._now = now
        self._routes = FixedWindows(route_rate, now, wall)
        self._global = SlidingWindow(rules.global_limit, now) if rules.global_limit else None
        self._messages = FixedWindows(rules.messages, now, wall) if rules.messages else None
        self._reactions = SlidingWindow(rules.reactions, now) if rules.reactions else None
        self._dm_opens = SlidingWindow(rules.dm_opens, now) if rules.dm_opens else None
        self._invalid = SlidingWindow(rules.invalid_requests, now) if rules.invalid_requests else None
        self.banned_until: float | None = None
        #: every invalid answer so far (401, 403, 429 other than scope shared), ban or not
        self.invalid_total = 0

    @property
    def banned(self) -> bool:
        return self.banned_until is not None and self._now() < self.banned_until

    @property
    def invalid_recent(self) -> int:
        """Invalid answers within the invalid-request window (0 when that limit is off)."""
        return self._invalid.count() if self._invalid is not None else 0

    def check(self, route: str, major: str, path: str) -> tuple[Refusal | None, dict[str, str]]:
        """Whether ``route`` ("METHOD /template") on resource ``major`` may run now, and the headers its
        answer carries. Counts the request in every bucket it passes."""
        if self.banned:
            assert self.banned_until is not None
            return Refusal(
                429, dict(BANNED), {"Retry-After": str(round(self.banned_until - self._now()))}
            ), {}
        if self._global is not None and not path.startswith(INTERACTION_ROUTES):
            wait = self._global.wait()
            if wait:
                return too_many(wait, scope="global"), {}
            self._global.add()
        if route == CREATE_MESSAGE and self._messages is not None:
            allowed, headers = self._messages.take(major, route)
        else:
            allowed, headers = self._routes.take(f"{route}:{major}", route)
        if not allowed:
            return too_many(float(headers["X-RateLimit-Reset-After"]), scope="user", headers=headers), headers
        if route == CREATE_REACTION and self._reactions is not None:
            wait = self._reactions.wait(major)
            if wait:
                return too_many(wait, scope="user", headers=headers), headers
            self._reactions.add(major)
        if route == CREATE_DM and self._dm_opens is not None:
            too_fast = self._dm_opens.wait()
            self._dm_opens.add()
            if too_fast:
                return Refusal(403, dict(DM_TOO_FAST), headers), headers
        return None, headers

    def answered(self, status: int, scope: str | None) -> None:
        """Count an answer toward the invalid-request limit; past it, every request is refused."""
        if status not in (401, 403, 429) or scope == "shared" or self.banned:
            return
        self.invalid_total += 1
        if self._invalid is None:
            return
        self._invalid.add()
        if self._invalid.count() >= self._invalid.limit:
            self.banned_until = self._now() + self.rules.ban_seconds
