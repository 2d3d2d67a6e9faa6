"""`/paper help`: every /paper command as the bot has it (so a new command is listed the day it ships),
and what the buttons and reactions on a paper do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import discord
from discord import app_commands

from bot.ui.embeds import DESCRIPTION_LIMIT, PAPER_COLOUR
from bot.ui.format import trim
from storage.models import REACTIONS

ON_A_PAPER = (
    f"**On a paper the bot posts:** press its {' '.join(REACTIONS)} buttons, or react with them in a "
    "channel (or press the numbered buttons of a list), to like, dislike or save it · **📄 Full abstract** "
    "shows the rest of a digest's paper · **🔎 More like this** lists similar papers, each with its own "
    "rating buttons (both only to you). `/paper interests add paper:` starts your picks from papers you like."
)


def command_lines(group: app_commands.Group) -> Iterator[str]:
    """ "`/paper search query: [limit] …` — its description", for every command under ``group``."""
    for command in group.walk_commands():
        if isinstance(command, app_commands.Command):
            yield f"`/{command.qualified_name}{_usage(command)}` — {command.description}"


def _usage(command: app_commands.Command[Any, ..., Any]) -> str:
    options = [f"{p.name}:" if p.required else f"[{p.name}]" for p in command.parameters]
    return (" " + " ".join(options)) if options else ""


def help_embed(group: app_commands.Group) -> discord.Embed:
    lines = list(command_lines(group))
    description = trim("\n".join([*lines, "", ON_A_PAPER]), DESCRIPTION_LIMIT)
    embed = discord.Embed(title="paperbot: find, follow and rate papers", description=description)
    embed.colour = PAPER_COLOUR
    embed.set_footer(
        text="Answers about you (recommendations, interests, saved papers) are shown only to you."
    )
    return embed
