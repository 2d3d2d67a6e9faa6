"""Extensions are self-contained: each one's setup(bot) adds its own commands and listeners to that bot.

Fast: the bots never connect; only their command trees are compared.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
from builders import bare_bot
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot, command_definitions_hash
from bot.exts import discover_extensions
from bot.exts._groups import Subcommands


@pytest.fixture
async def make_bot() -> AsyncIterator[Any]:
    made: list[PaperBot] = []

    def make() -> PaperBot:
        made.append(bare_bot())
        return made[-1]

    yield make
    for bot in made:
        await bot.close()


def _names(bot: PaperBot) -> list[str]:
    """Every slash command the bot would sync, by its full name."""
    names: list[str] = []
    for command in bot.tree.walk_commands():
        if isinstance(command, app_commands.Command):
            names.append(command.qualified_name)
    return sorted(names)


async def test_two_bots_in_one_process_each_get_every_command_once(make_bot: Any) -> None:
    first, second = make_bot(), make_bot()
    await first.load_commands()
    before = command_definitions_hash(first.tree)
    await second.load_commands()
    assert _names(first) == _names(second)
    assert len(_names(first)) == len(set(_names(first)))
    assert "paper search" in _names(first)
    assert "paper interests show" in _names(first)
    assert "paperadmin feed set" in _names(first)
    assert command_definitions_hash(first.tree) == before, "the second bot changed nothing of the first"
    assert command_definitions_hash(second.tree) == before
    assert first.command_groups.paper is not second.command_groups.paper
    search = first.command_groups.paper.get_command("search")
    assert search is not second.command_groups.paper.get_command("search")


async def test_reloading_an_extension_replaces_its_commands_and_keeps_the_definitions(make_bot: Any) -> None:
    bot = make_bot()
    await bot.load_commands()
    before, names = command_definitions_hash(bot.tree), _names(bot)
    old = bot.command_groups.paper.get_command("search")
    for extension in discover_extensions():
        await bot.reload_extension(extension)
    assert command_definitions_hash(bot.tree) == before
    assert _names(bot) == names
    new = bot.command_groups.paper.get_command("search")
    assert new is not None
    assert new is not old, "the reloaded module's command, not the stale one"
    assert len(bot.cogs) == len({type(cog).__name__ for cog in bot.cogs.values()}), "each listener cog once"


async def test_an_extension_adds_only_its_own_commands(make_bot: Any) -> None:
    bot = make_bot()
    await bot.load_extension("bot.exts.search")
    assert [command.name for command in bot.command_groups.paper.commands] == [
        "interests",
        "club",
        "search",
        "show",
        "similar",
    ]
    assert bot.command_groups.interests.commands == []
    assert bot.command_groups.club.commands == []
    assert bot.command_groups.paperadmin.commands == [bot.command_groups.feed, bot.command_groups.club_admin]


async def test_two_extensions_cannot_take_the_same_command_name(make_bot: Any) -> None:
    bot = make_bot()
    await bot.load_extension("bot.exts.search")
    clash = Subcommands("paper")

    @clash.command(name="search", description="Another search")
    async def other_search(interaction: discord.Interaction) -> None:  # pragma: no cover - never run
        del interaction

    with pytest.raises(app_commands.CommandAlreadyRegistered):
        clash.add_to(bot)


async def test_commands_join_only_a_paperbots_groups() -> None:
    plain = commands.Bot(command_prefix="!", intents=discord.Intents.none())
    try:
        with pytest.raises(TypeError, match="PaperBot"):
            Subcommands("paper").add_to(plain)
    finally:
        await plain.close()
