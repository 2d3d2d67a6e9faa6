"""Every REST request, before and after its route: recorded, authenticated, faulted or rate limited, answered.

The aiohttp middleware of the emulator. A request without the bot token gets 401 (except the
interaction and webhook routes, which Discord authenticates by their token); an injected fault
(``faults``) answers instead of the route, or lets it run and drops the answer; past a rate limit
(``ratelimits``) the answer is Discord's (a 429, or 403 40003 for DMs opened too fast); a route that raises :class:`~.rest.ApiError` answers in Discord's error shape.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from .addresses import API_PREFIX
from .faults import DROP_REQUEST, Faults
from .interactions import InteractionRecord, Interactions
from .ratelimits import RateLimits, Refusal
from .recorder import Changes, RecordedRequest, Recorder
from .rest import BODY_KEY, FILES_KEY, ApiError, json_response, read_body

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_UNAUTHENTICATED_PREFIXES = ("/interactions/", "/webhooks/", "/gateway")


class ApiRouter:
    def __init__(
        self,
        *,
        token: str,
        recorder: Recorder,
        faults: Faults,
        interactions: Interactions,
        changes: Changes,
        rates: RateLimits,
    ) -> None:
        self.token = token
        self.recorder = recorder
        self.faults = faults
        self.interactions = interactions
        self.changes = changes
        self.rates = rates

    async def handle(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        loop = asyncio.get_running_loop()
        path = request.path[len(API_PREFIX) :] or "/"
        record = RecordedRequest(
            method=request.method, path=path, query=dict(request.query), route=None, at=loop.time()
        )
        record.authorized = request.headers.get("Authorization") == f"Bot {self.token}"
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
            response = await self._route(request, handler, record, path)
        record.status = 0 if record.fault == DROP_REQUEST else response.status  # 0: no answer
        if response.status == 429:
            record.scope = response.headers.get("X-RateLimit-Scope")
        self.rates.answered(response.status, record.scope)
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
        refusal, headers = self.rates.check(f"{request.method} {record.route}", _major(request), path)
        if (
            refusal is None
            and not record.route.startswith(_UNAUTHENTICATED_PREFIXES)
            and not record.authorized
        ):
            return json_response({"message": "401: Unauthorized", "code": 0}, status=401)
        fault = self.faults.take(request.method, path, record.json)
        if fault is not None:
            record.fault = fault.kind
        if fault is not None and fault.drops_request:
            if request.transport is not None:
                request.transport.close()  # gone before it was carried out: nothing happens
            return web.Response(status=204)  # (never reaches the client)
        if fault is not None and fault.drops_response:
            response = await self._answer(request, handler, path, refusal, headers)
            if request.transport is not None:
                request.transport.close()  # handled, but the client never hears the answer
            return response
        if fault is not None and refusal is None:
            status, body, extra = fault.response()
            if status == 429:
                headers["X-RateLimit-Remaining"] = "0"
                headers["X-RateLimit-Reset-After"] = f"{fault.retry_after:.3f}"
            return json_response(body, status=status, headers={**headers, **extra})
        return await self._answer(request, handler, path, refusal, headers)

    async def _answer(
        self,
        request: web.Request,
        handler: Handler,
        path: str,
        refusal: Refusal | None,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        """The route's answer: the refusal of a limit, else the handler's (Discord's error shape on refusal)."""
        if refusal is not None:
            return json_response(refusal.body, status=refusal.status, headers=refusal.headers)
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
