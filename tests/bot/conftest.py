"""Fixtures for the tests of the command line (`paperbot …`) under tests/bot."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the CLI in a clean folder (no stray .env, no PAPERBOT_/DISCORD_ variables of the shell) and
    restore logging after it reconfigures it."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("PAPERBOT_", "DISCORD_")):
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
