"""The autocompletes of the commands' options: what a person typed so far, answered from the services."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.services.digests.timing import timezone_choices
from bot.services.papers.latex_text import readable
from bot.services.papers.shorten import cut
from bot.ui.follow_views import CHOICE_LIMIT, MENU_OPTIONS, followed_label, suggestion_label

if TYPE_CHECKING:
    from bot.app import PaperBot


async def paper_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """Titles (or ids) matching what the user typed so far; at most 25, as Discord allows."""
    matches = interaction.client.services.search_service.autocomplete(current, limit=25)
    return [
        app_commands.Choice(name=_choice_name(paper_id, readable(title)), value=str(paper_id))
        for paper_id, title in matches
    ]


def _choice_name(paper_id: int, title: str) -> str:
    name = f"{title} (#{paper_id})"
    return name if len(name) <= 100 else f"{cut(title, 100 - len(f' (#{paper_id})'))} (#{paper_id})"


async def author_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """Stored author names matching what was typed; a name's groups where it may be shared."""
    suggestions = await interaction.client.services.follows.suggest(current, limit=MENU_OPTIONS)
    return [app_commands.Choice(name=suggestion_label(s), value=s.value) for s in suggestions]


async def followed_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """The authors the person follows, matching what was typed."""
    follows = await interaction.client.services.follows.suggest_followed(
        interaction.user.id, current, limit=MENU_OPTIONS
    )
    return [
        app_commands.Choice(name=followed_label(f), value=f.value)
        for f in follows
        if len(f.value) <= CHOICE_LIMIT
    ]


async def timezone_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """IANA zones matching what was typed (popular ones when empty); at most 25."""
    return [app_commands.Choice(name=name, value=name) for name in timezone_choices(current)]
