"""/paper help."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.exts._groups import Subcommands
from bot.ui.help import help_embed

if TYPE_CHECKING:
    from bot.app import PaperBot

paper = Subcommands("paper")


@paper.command(name="help", description="Every /paper command, and what the buttons and reactions do")
async def help_command(interaction: discord.Interaction[PaperBot]) -> None:
    tree = interaction.client.tree
    message_commands = [command.name for command in tree.get_commands(type=discord.AppCommandType.message)]
    embed = help_embed(interaction.client.command_groups.paper, message_commands)
    await interaction.response.send_message(embed=embed, ephemeral=True)


async def setup(bot: commands.Bot) -> None:
    paper.add_to(bot)
