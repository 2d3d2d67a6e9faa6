"""PaperBot: the discord.py client, wired to the services built in `bot.runtime`."""

from __future__ import annotations

import logging
from typing import Any

import discord
import yarl
from discord.ext import commands

from bot.exts import discover_extensions
from bot.exts._groups import TOP_LEVEL
from bot.runtime import Services
from bot.settings import Settings
from bot.tree import PaperTree

log = logging.getLogger(__name__)


def point_discord_at(settings: Settings) -> None:
    """Send REST and gateway traffic where the settings say (a rate-limit proxy or a local server).

    discord.py reads both from class attributes, so they are set here, when the bot starts, never at
    import time.
    """
    discord.http.Route.BASE = settings.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.gateway_url)


class PaperBot(commands.Bot):
    def __init__(self, *, settings: Settings, services: Services, **options: Any) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_reactions = True
        intents.dm_reactions = True
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            tree_cls=PaperTree,
            help_command=None,
            allowed_mentions=discord.AllowedMentions.none(),
            **options,
        )
        self.settings = settings
        self.services = services

    async def login(self, token: str) -> None:
        point_discord_at(self.settings)
        await super().login(token)

    async def setup_hook(self) -> None:
        for extension in discover_extensions():
            await self.load_extension(extension)
        for group in TOP_LEVEL:
            self.tree.add_command(group)
        await self.sync_commands()

    async def sync_commands(self) -> None:
        if self.settings.dev_guild_id:
            guild = discord.Object(self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to dev guild %s", len(synced), self.settings.dev_guild_id)

    async def on_ready(self) -> None:
        log.info("ready as %s (%s) in %d guilds", self.user, getattr(self.user, "id", "?"), len(self.guilds))

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("unhandled error in event %s", event_method)
