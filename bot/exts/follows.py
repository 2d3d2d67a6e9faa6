"""/paper follow, /paper following, /paper unfollow: authors whose new papers come first in your digest.

Every answer is personal, so every answer is ephemeral.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.exts._autocomplete import author_autocomplete, followed_autocomplete
from bot.exts._groups import Subcommands
from bot.exts._items import answer
from bot.services.search.snippets import escape_markdown
from bot.ui.follow_views import AuthorGroupsMenu, follow_answer, following_embed
from bot.ui.views import report_item_error

if TYPE_CHECKING:
    from bot.app import PaperBot

paper = Subcommands("paper")

AuthorOption = app_commands.Range[str, 1, 100]


@paper.command(name="follow", description="Follow an author: their new papers come first in your digest")
@app_commands.describe(author="Start typing an author's name and pick one from the list")
@app_commands.autocomplete(author=author_autocomplete)
async def follow_command(interaction: discord.Interaction[PaperBot], author: AuthorOption) -> None:
    outcome = await interaction.client.services.follows.follow(interaction.user.id, author)
    await interaction.response.send_message(**follow_answer(outcome), ephemeral=True)


@paper.command(name="following", description="The authors you follow")
async def following_command(interaction: discord.Interaction[PaperBot]) -> None:
    follows = interaction.client.services.follows
    embed = following_embed(await follows.following(interaction.user.id), follows.limit)
    await interaction.response.send_message(embed=embed, ephemeral=True)


@paper.command(name="unfollow", description="Stop following an author")
@app_commands.describe(author="One of the authors you follow")
@app_commands.autocomplete(author=followed_autocomplete)
async def unfollow_command(interaction: discord.Interaction[PaperBot], author: AuthorOption) -> None:
    removed = await interaction.client.services.follows.unfollow(interaction.user.id, author)
    what = f" ({escape_markdown(removed.detail)})" if removed.detail else ""
    await interaction.response.send_message(
        f"Stopped following **{escape_markdown(removed.name)}**{what}: their new papers come to your digest "
        "only when your interests pick them.",
        ephemeral=True,
    )


async def follow_picked(interaction: discord.Interaction[Any], menu: AuthorGroupsMenu) -> None:
    """The menu under a name people may share: follow only the groups picked."""
    bot: PaperBot = interaction.client
    try:
        picked = [int(value) for value in menu.item.values if value.isdigit()]
        outcome = await bot.services.follows.follow_groups(interaction.user.id, menu.key, picked)
        await interaction.response.send_message(follow_answer(outcome)["content"], ephemeral=True)
    except Exception as error:
        await report_item_error(interaction, error, "author groups menu")


async def setup(bot: PaperBot) -> None:
    paper.add_to(bot)
    answer(bot, AuthorGroupsMenu, follow_picked)
