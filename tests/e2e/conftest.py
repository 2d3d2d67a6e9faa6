"""End-to-end fixtures: the sandbox Discord server, and the real paperbot running against it.

- `sandbox`: a running SandboxServer (see tests/README.md, "The sandbox").
- `e2e`: the real paperbot started in-process on a fresh temporary database (the shipped corpus
  loaded), ready, with commands synced to the sandbox guild. At teardown the test FAILS if the
  bot's task died, if anything logged at ERROR (or an exception went unhandled in a task), or if
  the bot called a REST route the sandbox does not implement. `e2e.allow_error("text")` accepts
  an expected error line.
- `bot`: the PaperBot instance of `e2e`.
- `start_paperbot`: for tests that need other settings or a prepared database first:
  ``async with start_paperbot(db_path=..., load_shipped_corpus=False) as e2e: ...``
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
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
        problems = _problems(self._running, self.errors, death=self._running.running.death())
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def _problems(running: RunningPaperBot, errors: ErrorCapture, *, death: str | None = None) -> list[str]:
    problems: list[str] = []
    if death is not None:
        problems.append(death)
    problems.extend(running.running.problems)
    if unexpected := errors.unexpected():
        problems.append("the bot logged errors:\n" + errors.describe(unexpected))
    if unhandled := running.server.unhandled_requests:
        routes = sorted({r.key for r in unhandled})
        problems.append(
            "the bot called REST routes the sandbox does not implement (add them to bot/sandbox/rest.py):\n  "
            + "\n  ".join(routes)
        )
    return problems


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    async with SandboxServer() as server:
        yield server


@pytest.fixture
def start_paperbot(
    sandbox: SandboxServer, tmp_path: Path
) -> Callable[..., contextlib.AbstractAsyncContextManager[E2E]]:
    @contextlib.asynccontextmanager
    async def start(
        *, load_shipped_corpus: bool = True, db_path: Path | None = None, **settings: Any
    ) -> AsyncIterator[E2E]:
        config = sandbox_settings(sandbox, db_path or tmp_path / "paperbot.db", **settings)
        with capture_errors() as errors:
            async with running_paperbot(sandbox, config, load_shipped_corpus=load_shipped_corpus) as running:
                yield E2E(running, errors)
                death = running.running.death()  # before closing it: a closed client's task ends
            problems = _problems(running, errors, death=death)
        if problems:
            pytest.fail("end-to-end check failed:\n" + "\n".join(problems), pytrace=False)

    return start


@pytest.fixture
async def e2e(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:
        yield running


@pytest.fixture
def bot(e2e: E2E) -> PaperBot:
    return e2e.bot
