"""End-to-end fixtures: the real paperbot running against the sandbox (`sandbox` is in tests/conftest.py).

- `e2e`: the real paperbot started in-process on a fresh temporary database (the shipped corpus
  loaded), ready, with commands synced to the sandbox guild (`paperbot_e2e.E2E`). At teardown the
  test FAILS if the bot's task died, if anything logged at ERROR (or an exception went unhandled in
  a task), or if the bot called a REST route the sandbox does not implement.
  `e2e.allow_error("text")` accepts an expected error line.
- `bot`: the PaperBot instance of `e2e`.
- `start_paperbot`: for tests that need other settings or a prepared database first:
  ``async with start_paperbot(store=..., load_shipped_corpus=False) as e2e: ...``; in a test that
  takes a `clock` fixture (a `builders.Clock`), every bot it starts reads that clock.
- `e2e_store`: where the bot's store is — a SQLite file, or for tests marked
  ``@pytest.mark.both_engines`` once on SQLite and once on a fresh PostgreSQL store.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from paperbot_e2e import E2E, run_paperbot
from postgres_stores import ENGINES

from bot.sandbox import SandboxServer
from storage.store import StoreLocation

if TYPE_CHECKING:
    from bot.app import PaperBot


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked `both_engines` run on SQLite and on PostgreSQL; the others on SQLite."""
    if "e2e_store" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_engines"):
        metafunc.parametrize("e2e_store", ENGINES, indirect=True)


@pytest.fixture
def e2e_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreLocation:
    """The store the bot of an end-to-end test starts on: a SQLite file, or (for tests marked
    `both_engines`, once each) a fresh PostgreSQL store."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return StoreLocation(path=tmp_path / "paperbot.db")
    location: StoreLocation = request.getfixturevalue("postgres_store")
    return location


@pytest.fixture
def start_paperbot(
    request: pytest.FixtureRequest, sandbox: SandboxServer, e2e_store: StoreLocation, tmp_path: Path
) -> Callable[..., contextlib.AbstractAsyncContextManager[E2E]]:
    # a test that takes a `clock` fixture (a `builders.Clock`) runs every bot it starts on that clock
    clock = request.getfixturevalue("clock") if "clock" in request.fixturenames else None

    def start(
        *, load_shipped_corpus: bool = True, store: StoreLocation | Path | None = None, **settings: Any
    ) -> contextlib.AbstractAsyncContextManager[E2E]:
        settings.setdefault("state_dir", tmp_path)  # the process's own files, with a PostgreSQL store
        return run_paperbot(
            sandbox, store or e2e_store, load_shipped_corpus=load_shipped_corpus, clock=clock, **settings
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
