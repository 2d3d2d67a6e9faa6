"""End-to-end fixtures: the real paperbot running against the sandbox (`sandbox` is in tests/conftest.py).

- `e2e`: the real paperbot started in-process on a fresh temporary database (the shipped corpus
  loaded), ready, with commands synced to the sandbox guild (`paperbot_e2e.E2E`). At teardown the
  test FAILS if the bot's task died, if anything logged at ERROR (or an exception went unhandled in
  a task), or if the bot called a REST route the sandbox does not implement.
  `e2e.allow_error("text")` accepts an expected error line.
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
from paperbot_e2e import E2E, run_paperbot

from bot.sandbox import SandboxServer

if TYPE_CHECKING:
    from bot.app import PaperBot


@pytest.fixture
def start_paperbot(
    sandbox: SandboxServer, tmp_path: Path
) -> Callable[..., contextlib.AbstractAsyncContextManager[E2E]]:
    def start(
        *, load_shipped_corpus: bool = True, db_path: Path | None = None, **settings: Any
    ) -> contextlib.AbstractAsyncContextManager[E2E]:
        return run_paperbot(
            sandbox, db_path or tmp_path / "paperbot.db", load_shipped_corpus=load_shipped_corpus, **settings
        )

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
