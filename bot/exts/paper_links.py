"""The "Save paper" and "Like paper" message commands: Apps → on any message with a paper link.

People post arXiv, OpenReview, DOI and ACL Anthology links all day; these save or like the linked paper
for the person who used the command (fetching an arXiv paper the store lacks) and answer only them.
No message-content intent is needed: Discord sends the message with the command.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.ui.format import display_title
from storage.models import SIGNAL_EMOJI, Signal

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

SAVE_PAPER = "Save paper"
LIKE_PAPER = "Like paper"


def message_text(message: discord.Message) -> str:
    """What a paper link may hide in: the content, and each embed's link, title and description."""
    parts = [message.content or ""]
    for embed in message.embeds:
        parts.extend(str(part) for part in (embed.url, embed.title, embed.description) if part)
    return "\n".join(parts)


async def rate_linked(
    interaction: discord.Interaction[PaperBot], message: discord.Message, signal: Signal
) -> None:
    services = interaction.client.services
    # a paper the store lacks is fetched from arXiv first: that can take longer than Discord's 3 s
    await interaction.response.defer(ephemeral=True, thinking=True)
    paper = await services.linked.find(message_text(message))
    # a message command sets, it never takes back what the person gave
    press = await services.ratings.on_paper(
        interaction.user.id, signal, paper.id, guild_id=interaction.guild_id, takes_back=False
    )
    note = (
        f"You already gave {SIGNAL_EMOJI[signal]} to “{display_title(paper)}”."
        if press.added is False
        else press.note
    )
    await interaction.followup.send(note, ephemeral=True)


@app_commands.context_menu(name=SAVE_PAPER)
@app_commands.allowed_installs(guilds=True, users=True)
@app_commands.allowed_contexts(guilds=True, dms=True, private_channels=True)
async def save_paper(interaction: discord.Interaction[PaperBot], message: discord.Message) -> None:
    await rate_linked(interaction, message, "save")


@app_commands.context_menu(name=LIKE_PAPER)
@app_commands.allowed_installs(guilds=True, users=True)
@app_commands.allowed_contexts(guilds=True, dms=True, private_channels=True)
async def like_paper(interaction: discord.Interaction[PaperBot], message: discord.Message) -> None:
    await rate_linked(interaction, message, "like")


async def setup(bot: PaperBot) -> None:
    bot.tree.add_command(save_paper)
    bot.tree.add_command(like_paper)
