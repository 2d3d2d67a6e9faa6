"""Every REST request, before and after its route: recorded, authenticated, faulted or rate limited, answered.

The aiohttp middleware of the emulator. A request without the bot token gets 401 (except the
interaction and webhook routes, which Discord authenticates by their token); an injected fault
(``faults``) answers instead of the route, or lets it run and drops the answer; past a bucket's rate
the answer is a real 429; a route that raises :class:`~.rest.ApiError` answers in Discord's error shape.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from .addresses import API_PREFIX
from .faults import Faults
from .interactions import InteractionRecord, Interactions
from .recorder import Changes, RecordedRequest, Recorder
from .rest import BODY_KEY, FILES_KEY, ApiError, json_response, read_body

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_UNAUTHENTICATED_PREFIXES = ("/interactions/", "/webhooks/", "/gateway")


class _RateLimiter:
    """Per-bucket windows; every API answer carries the full set of X-RateLimit headers."""

    def __init__(self, limit: int, per: float) -> None:
        self.limit = limit
        self.per = per
        self._windows: dict[str, tuple[float, int]] = {}

    def take(self, bucket: str, major: str) -> tuple[bool, dict[str, str]]:
        now = time.monotonic()
        key = f"{bucket}:{major}"
        start, used = self._windows.get(key, (now, 0))
        if now - start >= self.per:
            start, used = now, 0
        reset_after = max(0.0, self.per - (now - start))
        allowed = used < self.limit
        if allowed:
            used += 1
        self._windows[key] = (start, used)
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(0, self.limit - used)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": secrets.token_hex(8) if not bucket else _bucket_hash(bucket),
        }
        return allowed, headers


def _bucket_hash(route: str) -> str:
    return hashlib.sha1(route.encode()).hexdigest()[:16]  # noqa: S324 - a label, not security


class ApiRouter:
    def __init__(
        self,
        *,
        token: str,
        recorder: Recorder,
        faults: Faults,
        interactions: Interactions,
        changes: Changes,
        rate_limit: tuple[int, float],
    ) -> None:
        self.token = token
        self.recorder = recorder
        self.faults = faults
        self.interactions = interactions
        self.changes = changes
        self._rate_limiter = _RateLimiter(*rate_limit)

    async def handle(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        loop = asyncio.get_running_loop()
        path = request.path[len(API_PREFIX) :] or "/"
        record = RecordedRequest(
            method=request.method, path=path, query=dict(request.query), route=None, at=loop.time()
        )
        auth = request.headers.get("Authorization")
        record.authorized = auth == f"Bot {self.token}"
        response: web.StreamResponse
        try:
            body, files = await read_body(request)
        except ValueError:
            body, files = None, []
            response = json_response(
                {"message": "The request body contains invalid JSON.", "code": 50109}, status=400
            )
        else:
            request[BODY_KEY] = body
            request[FILES_KEY] = files
            record.json = body
            record.files = [(f.filename, len(f.data)) for f in files]
            response = await self._route(request, handler, record, path, auth)
        record.status = response.status
        if (
            isinstance(response, web.Response)
            and response.content_type == "application/json"
            and isinstance(response.body, bytes)
        ):
            record.response = json.loads(response.body)
        record.at = loop.time()
        self._attach_to_interaction(request, record)
        self.recorder.add_request(record)
        return response

    async def _route(
        self,
        request: web.Request,
        handler: Handler,
        record: RecordedRequest,
        path: str,
        auth: str | None,
    ) -> web.StreamResponse:
        match_info = request.match_info
        if match_info.http_exception is not None:
            status = match_info.http_exception.status
            log.warning(
                "sandbox: no route for %s %s (the bot called an endpoint the sandbox does not implement)",
                request.method,
                path,
            )
            return json_response(
                {"message": f"{status}: {'Not Found' if status == 404 else 'Method Not Allowed'}", "code": 0},
                status=status,
            )
        canonical = match_info.route.resource.canonical if match_info.route.resource is not None else ""
        record.route = canonical[len(API_PREFIX) :]
        if not record.route.startswith(_UNAUTHENTICATED_PREFIXES) and not record.authorized:
            return json_response({"message": "401: Unauthorized", "code": 0}, status=401)
        allowed, headers = self._rate_limiter.take(f"{request.method} {record.route}", _major(request))
        fault = self.faults.take(request.method, path, record.json)
        if fault is not None:
            record.fault = fault.kind
        if fault is not None and fault.drops_response:
            response = await self._answer(request, handler, path, allowed, headers)
            if request.transport is not None:
                request.transport.close()  # handled, but the client never hears the answer
            return response
        if fault is not None:
            status, body, extra = fault.response()
            if status == 429:
                headers["X-RateLimit-Remaining"] = "0"
                headers["X-RateLimit-Reset-After"] = f"{fault.retry_after:.3f}"
            return json_response(body, status=status, headers={**headers, **extra})
        return await self._answer(request, handler, path, allowed, headers)

    async def _answer(
        self,
        request: web.Request,
        handler: Handler,
        path: str,
        allowed: bool,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        """The route's answer: a 429 past the bucket, else the handler's (Discord's error shape on refusal)."""
        if not allowed:
            retry_after = float(headers["X-RateLimit-Reset-After"])
            return json_response(
                {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
                status=429,
                headers={
                    **headers,
                    "Retry-After": str(max(1, round(retry_after))),
                    "X-RateLimit-Scope": "user",
                    "Via": "1.1 google",
                },
            )
        try:
            response = await handler(request)
        except ApiError as error:
            return json_response(error.body, status=error.status, headers=headers)
        except Exception:
            log.exception("sandbox: %s %s crashed (a sandbox bug)", request.method, path)
            return json_response(
                {"message": "500: Internal Server Error", "code": 0}, status=500, headers=headers
            )
        response.headers.update(headers)
        return response

    def _attach_to_interaction(self, request: web.Request, record: RecordedRequest) -> None:
        """Remember refused requests about an interaction, to explain a failed run_command."""
        if record.status < 400:
            return
        info = request.match_info
        interaction: InteractionRecord | None = None
        if "interaction_id" in info and info["interaction_id"].isdigit():
            interaction = self.interactions.get(int(info["interaction_id"]))
        elif "webhook_token" in info:
            interaction = self.interactions.for_token(info["webhook_token"])
        if interaction is not None:
            interaction.rejected.append(record)
            self.changes.notify()


def _major(request: web.Request) -> str:
    info = request.match_info
    return "+".join(
        info[k]
        for k in (
            "channel_id",
            "guild_id",
            "webhook_id",
            "webhook_token",
            "interaction_id",
            "interaction_token",
        )
        if k in info
    )
