"""👍 👎 🔖 reactions on single-paper messages the bot posted, of any age (raw reaction events).

Exits fast: an emoji that is not a rating, the bot's own reactions and other bots are dropped before
any database work; then only messages in `posted_messages` count. Nothing is posted in the channel.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.services.feedback import signal_for_emoji

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)


class Feedback(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    def _ignored(self, payload: discord.RawReactionActionEvent) -> bool:
        if payload.emoji.id is not None or signal_for_emoji(payload.emoji.name or "") is None:
            return True  # a custom emoji or not one of 👍 👎 🔖
        if self.bot.user is not None and payload.user_id == self.bot.user.id:
            return True  # the bot adding its own three reactions
        if payload.member is not None and payload.member.bot:
            return True
        user = self.bot.get_user(payload.user_id)
        return user is not None and user.bot

    async def _apply(self, payload: discord.RawReactionActionEvent, *, added: bool) -> None:
        if self._ignored(payload):
            return
        try:
            change = await self.bot.services.feedback.react(
                user_id=payload.user_id,
                message_id=payload.message_id,
                emoji=payload.emoji.name or "",
                guild_id=payload.guild_id,
                added=added,
            )
        except Exception:
            log.exception(
                "reaction %s on message %s by user %s (guild=%s) could not be stored",
                payload.emoji.name,
                payload.message_id,
                payload.user_id,
                payload.guild_id,
            )
            return
        if change is not None and change.paused:
            log.debug("user %s reacted while learning is paused", payload.user_id)

    @commands.Cog.listener()
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self._apply(payload, added=True)

    @commands.Cog.listener()
    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        await self._apply(payload, added=False)


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(Feedback(bot))
