"""Command-sync discipline: dev guild on every start; global only when the definitions changed."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import discord
import pytest
from builders import bare_bot
from discord import app_commands

from bot.app import PaperBot, command_definitions_hash
from bot.settings import Settings
from storage.db import Database
from storage.repositories.state import StateRepository

APP_ID = 4242


class RecordingSync:
    """Stands in for CommandTree.sync: records each call (guild or global)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[int | None] = []
        self.fail = fail

    async def __call__(self, *, guild: discord.abc.Snowflake | None = None) -> list[Any]:
        self.calls.append(None if guild is None else guild.id)
        if self.fail:
            response = SimpleNamespace(status=500, reason="Server Error")
            raise discord.HTTPException(response, "boom")  # type: ignore[arg-type]
        return []


def make_bot(db: Database, *, description: str = "Find papers", dev_guild: int | None = None) -> PaperBot:
    bot = bare_bot(Settings(dev_guild_id=dev_guild), SimpleNamespace(db=db))
    group = app_commands.Group(name="paper", description=description)

    @group.command(name="search", description="Search the corpus")
    async def search(interaction: discord.Interaction, query: str) -> None:  # pragma: no cover
        del interaction, query

    bot.tree.add_command(group)
    bot._connection.application_id = APP_ID
    return bot


@pytest.fixture
async def bots() -> AsyncIterator[list[PaperBot]]:
    made: list[PaperBot] = []
    yield made
    for bot in made:
        await bot.close()


async def start(db: Database, bots: list[PaperBot], sync: RecordingSync, **options: Any) -> PaperBot:
    bot = make_bot(db, **options)
    bots.append(bot)
    bot.tree.sync = sync  # type: ignore[method-assign]
    await bot.sync_commands()
    return bot


async def test_global_sync_happens_once_then_not_on_later_starts(db: Database, bots: list[PaperBot]) -> None:
    sync = RecordingSync()
    await start(db, bots, sync)
    await start(db, bots, sync)
    await start(db, bots, sync)
    assert sync.calls == [None]


async def test_changed_definitions_are_synced_again(db: Database, bots: list[PaperBot]) -> None:
    sync = RecordingSync()
    await start(db, bots, sync)
    await start(db, bots, sync, description="Find and follow papers")
    await start(db, bots, sync, description="Find and follow papers")
    assert sync.calls == [None, None]


async def test_the_hash_is_stored_in_app_state_per_application(db: Database, bots: list[PaperBot]) -> None:
    bot = await start(db, bots, RecordingSync())
    stored = await StateRepository(db).get(f"commands:global_hash:{APP_ID}")
    assert stored == command_definitions_hash(bot.tree)
    assert len(stored) == 64


async def test_a_failed_global_sync_is_logged_and_retried_next_start(
    db: Database, bots: list[PaperBot], caplog: pytest.LogCaptureFixture
) -> None:
    failing = RecordingSync(fail=True)
    with caplog.at_level(logging.ERROR, logger="bot.app"):
        await start(db, bots, failing)
    assert "global command sync failed" in caplog.text
    working = RecordingSync()
    await start(db, bots, working)
    assert working.calls == [None]


async def test_dev_guild_syncs_to_that_guild_on_every_start_and_never_globally(
    db: Database, bots: list[PaperBot]
) -> None:
    sync = RecordingSync()
    await start(db, bots, sync, dev_guild=777)
    await start(db, bots, sync, dev_guild=777)
    assert sync.calls == [777, 777]
    assert await StateRepository(db).get(f"commands:global_hash:{APP_ID}") is None


def test_hash_depends_on_definitions_not_on_object_identity() -> None:
    trees = []
    for description in ("Find papers", "Find papers", "Other"):
        bot = bare_bot()
        bot.tree.add_command(app_commands.Group(name="paper", description=description))
        trees.append(bot.tree)
    first, same, other = (command_definitions_hash(tree) for tree in trees)
    assert first == same
    assert first != other
