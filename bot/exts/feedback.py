"""👍 👎 🔖 on papers: reactions on single-paper messages the bot posted, of any age (raw reaction
events), and presses of the rating buttons (`bot.ui.views.RateButton`). Both enter one service,
`bot.services.people.ratings`, with plain ids and a signal.

Exits fast: an emoji that is not a rating, the bot's own reactions, other bots and other people's
messages are dropped before any database work. Discord names the message's author on an addition
only, so a removal is kept only for a message the bot knows it posted (its note is stored or waits in
the outbox): removing a 👍 from anyone's message in any server writes nothing. The rest goes to the
outbox (`services.writes`) and is stored behind, so a busy store delays a reaction but never loses
it; only messages in `posted_messages` count. Nothing is posted in the channel. A rating button is the
same rating by another way in: it answers the presser privately (given, or taken back when pressed
again).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands

from bot.exts._items import answer
from bot.services.people.ratings import OnMessage
from bot.ui.views import RateButton, report_item_error
from storage.models import signal_for_emoji

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)


class Feedback(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    def _ignored(self, payload: discord.RawReactionActionEvent) -> bool:
        me = self.bot.user.id if self.bot.user is not None else None
        if payload.user_id == me:
            return True  # the bot adding its own three reactions
        if payload.message_author_id is not None and payload.message_author_id != me:
            return True  # someone else's message (Discord names the author on additions)
        if payload.member is not None and payload.member.bot:
            return True
        user = self.bot.get_user(payload.user_id)
        return user is not None and user.bot

    async def _apply(self, payload: discord.RawReactionActionEvent, *, added: bool) -> None:
        signal = signal_for_emoji(payload.emoji.name or "") if payload.emoji.id is None else None
        if signal is None or self._ignored(payload):
            return
        # Discord names the author on additions only: a removal is kept if the bot knows the message
        message = OnMessage(payload.message_id, ours=payload.message_author_id is not None if added else None)
        try:
            # Kept in the outbox at once and stored behind: a busy store delays it, never drops it.
            await self.bot.services.ratings.on_message(
                payload.user_id, signal, message, added=added, guild_id=payload.guild_id
            )
        except Exception:
            log.exception(
                "reaction on message %s by user %s (guild=%s) could not be kept",
                payload.message_id,
                payload.user_id,
                payload.guild_id,
            )

    @commands.Cog.listener()
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self._apply(payload, added=True)

    @commands.Cog.listener()
    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        await self._apply(payload, added=False)


async def press_rating(interaction: discord.Interaction[Any], button: RateButton) -> None:
    """A rating button: given, or taken back when the presser had given it; answered privately."""
    bot: PaperBot = interaction.client
    try:
        press = await bot.services.ratings.on_paper(
            interaction.user.id, button.signal, button.paper_id, guild_id=interaction.guild_id
        )
        await interaction.response.send_message(press.note, ephemeral=True)
    except Exception as error:
        await report_item_error(
            interaction, error, "rating button", detail=f"{button.signal} on paper {button.paper_id}"
        )


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(Feedback(bot))
    answer(bot, RateButton, press_rating)
