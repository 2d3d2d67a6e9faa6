"""Waiting for the bot: its next message, a request, a gateway dispatch, the end of its requests, a condition.

Every wait has a timeout and fails with a readable message (``SandboxTimeout``, with the recent
requests); none sleeps longer than it must (they wake on every change the emulator notes).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from .effects import Effects
from .gateway import Gateway
from .lookup import Lookup
from .recorder import Changes, GatewayRecord, RecordedRequest, Recorder, SandboxTimeout, route_matcher
from .state import SandboxChannel, SandboxMessage, SandboxUser, World


class Waits:
    def __init__(
        self,
        world: World,
        *,
        lookup: Lookup,
        effects: Effects,
        gateway: Gateway,
        changes: Changes,
        recorder: Recorder,
    ) -> None:
        self.world = world
        self.lookup = lookup
        self.effects = effects
        self.gateway = gateway
        self.changes = changes
        self.recorder = recorder
        self._taken: set[int] = set()

    async def next_message(
        self,
        *,
        channel: SandboxChannel | str | int | None = None,
        dm_of: SandboxUser | str | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
        predicate: Callable[[SandboxMessage], bool] | None = None,
        include_interactions: bool = False,
    ) -> SandboxMessage:
        """The next message the bot posts in `channel` (or the DM with `dm_of`) not returned before.

        Messages are queued as they come, so one sent just before this call is still "next".
        Interaction answers are left out unless include_interactions=True (run_command returns them).
        """
        if (channel is None) == (dm_of is None):
            raise ValueError("pass exactly one of channel= or dm_of=")
        if channel is not None:
            target = self.lookup.channel(channel)
        else:
            assert dm_of is not None
            target = self.world.dm_channel(self.lookup.user(dm_of))

        def find() -> SandboxMessage | None:
            pool = (
                self.effects.outbox
                if not include_interactions
                else [m for m in self.world.messages.values() if m.author is self.world.bot_user]
            )
            for message in pool:
                if (
                    message.channel is target
                    and message.id not in self._taken
                    and (predicate is None or predicate(message))
                ):
                    self._taken.add(message.id)
                    return message
            return None

        return await self.changes.wait_for(
            find,
            timeout=timeout,
            what=f"a bot message in {target.label()}",
            context=lambda: self.recorder.recent(),
        )

    async def wait_for_request(
        self,
        pattern: str,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        predicate: Callable[[RecordedRequest], bool] | None = None,
        after: int = 0,
    ) -> RecordedRequest:
        """The first recorded request (from index `after`) matching `pattern` (see requests_matching)."""
        match = route_matcher(pattern)

        def find() -> RecordedRequest | None:
            return next(
                (
                    r
                    for r in self.recorder.requests[after:]
                    if match(r.method, r.path) and (predicate is None or predicate(r))
                ),
                None,
            )

        return await self.changes.wait_for(
            find, timeout=timeout, what=f"a request {pattern}", context=lambda: self.recorder.recent()
        )

    async def wait_for_dispatch(
        self,
        event: str,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        after: int = 0,
        predicate: Callable[[GatewayRecord], bool] | None = None,
    ) -> GatewayRecord:
        """The first gateway dispatch `event` sent to the bot (from gateway_events index `after`)."""

        def find() -> GatewayRecord | None:
            return next(
                (
                    g
                    for g in self.recorder.gateway[after:]
                    if g.direction == "send" and g.t == event and (predicate is None or predicate(g))
                ),
                None,
            )

        return await self.changes.wait_for(find, timeout=timeout, what=f"gateway dispatch {event}")

    async def wait_until_connected(self, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Until a bot identified and got READY plus its GUILD_CREATEs."""

        def ready() -> bool:
            return any(
                s.connection is not None and s.connection.sent_index >= len(s.events) and s.events
                for s in self.gateway.live_sessions
            )

        await self.changes.wait_for(
            ready,
            timeout=timeout,
            what="the bot to connect to the gateway",
            context=lambda: self.recorder.recent(),
        )

    async def wait_quiet(self, *, quiet: float = 0.2, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """Until no REST request arrived for `quiet` seconds (the bot finished reacting)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            last = self.recorder.requests[-1].at if self.recorder.requests else 0.0
            idle = loop.time() - last
            if idle >= quiet:
                return
            if loop.time() >= deadline:
                raise SandboxTimeout(
                    f"the bot kept making requests for {timeout:g}s\n{self.recorder.recent()}"
                )
            await asyncio.sleep(min(quiet - idle, max(0.01, deadline - loop.time())))

    async def eventually(
        self,
        condition: Callable[[], Any] | Callable[[], Awaitable[Any]],
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        what: str = "a condition",
        interval: float = 0.02,
    ) -> Any:
        """Poll `condition` (sync or async) until it returns something truthy; returns it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            if loop.time() >= deadline:
                raise SandboxTimeout(
                    f"timed out after {timeout:g}s waiting for {what}\n{self.recorder.recent()}"
                )
            await asyncio.sleep(interval)
