"""The real paperbot running against the sandbox, for end-to-end tests (the fixtures are in conftest.py).

`E2E` is what the `e2e` fixture yields: `e2e.server`, `e2e.bot`, `e2e.services`, `e2e.db`,
`e2e.settings`, `e2e.allow_error("text")`, `e2e.check()`. `run_paperbot` starts one and, when it
stops, FAILS the test if the bot's task died, if anything logged at ERROR (or an exception went
unhandled in a task), or if the bot called a REST route the sandbox does not implement.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.sandbox import SandboxServer
from bot.sandbox.harness import (
    ErrorCapture,
    RunningPaperBot,
    capture_errors,
    running_paperbot,
    sandbox_settings,
)
from storage.store import StoreLocation

if TYPE_CHECKING:
    from bot.app import PaperBot
    from bot.runtime import Services
    from bot.settings import Settings
    from storage.db import Database


class E2E:
    """The running paperbot and its sandbox: `e2e.server`, `e2e.bot`, `e2e.services`, `e2e.db`."""

    def __init__(self, running: RunningPaperBot, errors: ErrorCapture) -> None:
        self._running = running
        self.errors = errors

    @property
    def server(self) -> SandboxServer:
        return self._running.server

    @property
    def bot(self) -> PaperBot:
        return self._running.bot

    @property
    def services(self) -> Services:
        return self._running.services

    @property
    def settings(self) -> Settings:
        return self._running.settings

    @property
    def db(self) -> Database:
        return self._running.services.db

    @property
    def alive(self) -> bool:
        return self._running.running.alive

    def allow_error(self, substring: str) -> None:
        """This test expects an ERROR log line containing `substring`: do not fail on it."""
        self.errors.allow(substring)

    def check(self) -> None:
        """Fail now if the bot died or logged an unexpected error (teardown does this too)."""
        found = problems(self._running, self.errors, death=self._running.running.death())
        if found:
            pytest.fail("\n".join(found), pytrace=False)


def problems(running: RunningPaperBot, errors: ErrorCapture, *, death: str | None = None) -> list[str]:
    """What makes an end-to-end run fail: a dead bot, unexpected ERROR lines, unimplemented routes."""
    found: list[str] = []
    if death is not None:
        found.append(death)
    found.extend(running.running.problems)
    if unexpected := errors.unexpected():
        found.append("the bot logged errors:\n" + errors.describe(unexpected))
    if unhandled := running.server.unhandled_requests:
        routes = sorted({r.key for r in unhandled})
        found.append(
            "the bot called REST routes the sandbox does not implement (add them to bot/sandbox/emulator/rest_*.py):\n  "
            + "\n  ".join(routes)
        )
    return found


@contextlib.asynccontextmanager
async def run_paperbot(
    sandbox: SandboxServer,
    store: StoreLocation | Path,
    *,
    load_shipped_corpus: bool = True,
    clock: Callable[[], datetime] | None = None,
    **settings: Any,
) -> AsyncIterator[E2E]:
    """The real paperbot on ``store`` against ``sandbox``, ready (``clock``: the time its services
    read); the end-to-end checks when it stops."""
    config = sandbox_settings(sandbox, store, **settings)
    with capture_errors() as errors:
        async with running_paperbot(
            sandbox, config, load_shipped_corpus=load_shipped_corpus, clock=clock
        ) as running:
            yield E2E(running, errors)
            death = running.running.death()  # before closing it: a closed client's task ends
        found = problems(running, errors, death=death)
    if found:
        pytest.fail("end-to-end check failed:\n" + "\n".join(found), pytrace=False)
