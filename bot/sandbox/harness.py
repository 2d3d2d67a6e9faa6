"""Run a discord.py client against a SandboxServer in-process, and notice when it breaks.

Used by the end-to-end fixtures (tests/e2e/paperbot_e2e.py) and by `paperbot sandbox`. The client runs
as `asyncio.create_task(client.start(token))` — never `client.run()` — so the test's event loop
drives both the server and the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord
import yarl

from bot.sandbox.emulator.server import SandboxServer
from storage.store import StoreLocation

if TYPE_CHECKING:
    from bot.app import PaperBot
    from bot.runtime import Services
    from bot.settings import Settings

log = logging.getLogger(__name__)


class ErrorCapture(logging.Handler):
    """Collects ERROR-and-above records from every logger (attach it to the root logger)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self.allowed: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def allow(self, substring: str) -> None:
        """Expect an error whose message (or exception text) contains `substring`: not a failure."""
        self.allowed.append(substring)

    def unexpected(self) -> list[logging.LogRecord]:
        return [r for r in self.records if not any(a in _record_text(r) for a in self.allowed)]

    def describe(self, records: list[logging.LogRecord] | None = None) -> str:
        return "\n".join(
            f"  {r.levelname} {r.name}: {_record_text(r)}"
            for r in (records if records is not None else self.records)
        )


def _record_text(record: logging.LogRecord) -> str:
    text = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        text += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
    return text


@contextlib.contextmanager
def capture_errors() -> Any:
    """Attach an ErrorCapture to the root logger for the duration."""
    capture = ErrorCapture()
    root = logging.getLogger()
    root.addHandler(capture)
    try:
        yield capture
    finally:
        root.removeHandler(capture)


@contextlib.contextmanager
def pointed_at(server: SandboxServer) -> Any:
    """Point discord.py's REST base and default gateway at `server`; restore them afterwards."""
    old_base, old_gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = server.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(server.gateway_url)
    try:
        yield
    finally:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


@dataclass
class RunningClient:
    client: discord.Client
    task: asyncio.Task[None]
    problems: list[str] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return not self.task.done()

    def death(self) -> str | None:
        """Why the client's task ended, if it did (None while it runs)."""
        if not self.task.done():
            return None
        if self.task.cancelled():
            return "the bot task was cancelled"
        error = self.task.exception()
        if error is not None:
            return f"the bot task died: {type(error).__name__}: {error}"
        return "the bot task returned (the client stopped)"


@contextlib.asynccontextmanager
async def running_client(
    client: discord.Client,
    server: SandboxServer,
    *,
    ready_timeout: float = 15.0,
    ready: Callable[[], Coroutine[Any, Any, object]] | None = None,
) -> AsyncIterator[RunningClient]:
    """Start `client` against `server`, wait for on_ready (or `ready`), yield; close it and await its
    task after.

    The client must not have been started. If it dies before it is ready, this raises with why.
    """
    with pointed_at(server):
        task = asyncio.create_task(client.start(server.token), name=f"sandbox-client-{type(client).__name__}")
        running = RunningClient(client, task)
        try:
            started = asyncio.create_task((ready or client.wait_until_ready)())
            done, _ = await asyncio.wait(
                {started, task}, timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if started not in done:
                started.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await started
                reason = running.death() or f"the bot was not ready after {ready_timeout:g}s"
                raise AssertionError(f"{reason}\n{server.recorder.recent()}")
            yield running
        finally:
            was_alive = running.alive
            if not client.is_closed():
                await client.close()
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            except Exception as error:  # its death is reported through running.death()
                if was_alive:
                    running.problems.append(
                        f"the bot task raised while closing: {type(error).__name__}: {error}"
                    )


def sandbox_settings(server: SandboxServer, store: StoreLocation | Path | str, **overrides: Any) -> Settings:
    """paperbot Settings pointing at `server` and the store at `store` (a SQLite path or a
    postgresql:// URL), with commands synced to its guild."""
    from bot.settings import Settings

    values: dict[str, Any] = {
        "discord_token": server.token,
        "store": store if isinstance(store, StoreLocation) else StoreLocation.parse(store),
        "dev_guild_id": server.guild.id,
        "api_base": server.api_base,
        "gateway_url": server.gateway_url,
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class RunningPaperBot:
    server: SandboxServer
    bot: PaperBot
    services: Services
    settings: Settings
    running: RunningClient


#: discord.py waits this long after the last GUILD_CREATE before on_ready (2 s by default, for
#: guilds that might still come); the sandbox sends them all at once, so a short wait is enough.
SANDBOX_CLIENT_OPTIONS: dict[str, Any] = {"guild_ready_timeout": 0.1}


@contextlib.asynccontextmanager
async def running_paperbot(
    server: SandboxServer,
    settings: Settings,
    *,
    load_shipped_corpus: bool = True,
    ready_timeout: float = 30.0,
    client_options: dict[str, Any] | None = None,
    clock: Callable[[], datetime] | None = None,
    progress: Callable[[str], None] | None = None,
) -> AsyncIterator[RunningPaperBot]:
    """The real paperbot (open_services + build_bot) running against `server`; ``clock``, the time
    every service reads (the wall clock by default); `progress` is told what takes time at start, a
    line each."""
    from bot.clock import utc_now
    from bot.runtime import build_bot, open_services

    options = SANDBOX_CLIENT_OPTIONS if client_options is None else client_options
    async with open_services(
        settings, load_shipped_corpus=load_shipped_corpus, clock=clock or utc_now, progress=progress
    ) as services:
        bot = build_bot(settings, services, **options)
        async with running_client(
            bot, server, ready_timeout=ready_timeout, ready=bot.wait_until_serving
        ) as running:
            yield RunningPaperBot(server, bot, services, settings, running)
