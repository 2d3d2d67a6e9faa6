"""`/paper help`: every /paper command as the bot has it (so a new command is listed the day it ships),
and what the buttons and reactions on a paper do."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


def on_a_link(message_commands: Sequence[str]) -> str:
    """What the message commands (Apps → "Save paper") do, named as Discord shows them."""
    names = " or ".join(f"**{name}**" for name in message_commands)
    return (
        "**On anyone's message with a paper link** (arXiv, OpenReview, DOI, ACL Anthology): right-click it "
        f"(long-press on a phone) → Apps → {names}, for you alone; an arXiv paper not here yet is fetched."
    )


def help_embed(group: app_commands.Group, message_commands: Sequence[str] = ()) -> discord.Embed:
    lines = [*command_lines(group), "", ON_A_PAPER]
    if message_commands:
        lines.append(on_a_link(message_commands))
    description = trim("\n".join(lines), DESCRIPTION_LIMIT)
    embed = discord.Embed(title="paperbot: find, follow and rate papers", description=description)
    embed.colour = PAPER_COLOUR
    embed.set_footer(
        text="Answers about you (recommendations, interests, saved papers) are shown only to you."
    )
    return embed
