"""/paper search, /paper show and /paper similar."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import NotFoundError, QueryError
from bot.exts._groups import paper as paper_group
from bot.ui.embeds import REACTIONS, paper_embed
from bot.ui.listing import render_listing
from bot.ui.views import DYNAMIC_ITEMS
from storage.models import Paper
from storage.repositories.searches import StoredSearch

if TYPE_CHECKING:
    from bot.app import PaperBot
    from bot.runtime import Services

log = logging.getLogger(__name__)

Limit = app_commands.Range[int, 1, 10]
Year = app_commands.Range[int, 1900, 2100]


async def paper_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """Titles (or ids) matching what the user typed so far; at most 25, as Discord allows."""
    matches = interaction.client.services.search.autocomplete(current, limit=25)
    return [
        app_commands.Choice(name=_choice_name(paper_id, title), value=str(paper_id))
        for paper_id, title in matches
    ]


def _choice_name(paper_id: int, title: str) -> str:
    name = f"{title} (#{paper_id})"
    return name if len(name) <= 100 else f"{title[: 100 - len(f'… (#{paper_id})')]}… (#{paper_id})"


async def resolve_paper(services: Services, text: str) -> Paper:
    """The paper an option names: an autocomplete choice (id), an arXiv/OpenReview id, a DOI or a title."""
    text = text.strip()
    if not text:
        raise NotFoundError("Name a paper: start typing its title and pick one from the list.")
    paper: Paper | None = None
    if text.isdigit():
        paper = await services.papers.get(int(text))
    if paper is None:
        paper = await services.papers.find_by_external(text)
    if paper is None:
        matches = services.search.autocomplete(text, limit=2)
        if len(matches) == 1 or (matches and matches[0][1].casefold() == text.casefold()):
            paper = await services.papers.get(matches[0][0])
    if paper is None:
        shown = text if len(text) <= 80 else text[:79] + "…"
        raise NotFoundError(
            f"I don't know a paper matching “{shown}”. Start typing a title and pick one from the list, "
            "or give an arXiv id, OpenReview id or DOI."
        )
    return paper


async def post_paper(interaction: discord.Interaction[PaperBot], paper: Paper) -> None:
    """Answer with one paper and add 👍 👎 🔖, recording the message so reactions map to the paper."""
    await interaction.response.send_message(embed=paper_embed(paper))
    message = await interaction.original_response()
    await interaction.client.services.writes.posted_message(
        message_id=message.id,
        channel_id=message.channel.id,
        guild_id=interaction.guild_id,
        paper_id=paper.id,
        recipient_id=None if interaction.guild_id else interaction.user.id,
        kind="paper",
    )
    for emoji in REACTIONS:
        await message.add_reaction(emoji)


@paper_group.command(name="search", description="Search papers by topic, method or title words")
@app_commands.describe(
    query="What to look for, e.g. kv cache quantization",
    limit="Results per page (1-10, default 5)",
    author="Only papers with an author whose name contains this",
    venue="Only papers from a venue containing this, e.g. ICML",
    year="Only papers from this year",
)
async def search_command(
    interaction: discord.Interaction[PaperBot],
    query: app_commands.Range[str, 1, 300],
    limit: Limit = 5,
    author: app_commands.Range[str, 1, 100] | None = None,
    venue: app_commands.Range[str, 1, 100] | None = None,
    year: Year | None = None,
) -> None:
    services = interaction.client.services
    services.search.validate_query(query)
    # The listing's id is the interaction's, so the answer needs nothing from the store's writer.
    stored = StoredSearch(interaction.id, "search", query, None, author, venue, year, limit)
    listing = await render_listing(services, stored, 0)
    if listing.total == 0:
        raise QueryError(_no_match_message(query, author, venue, year))
    await services.writes.listing(stored, user_id=interaction.user.id)
    await interaction.response.send_message(embed=listing.embed, view=listing.view)


def _no_match_message(query: str, author: str | None, venue: str | None, year: int | None) -> str:
    filters = [
        f"author “{author}”" if author else "",
        f"venue “{venue}”" if venue else "",
        f"year {year}" if year else "",
    ]
    active = [part for part in filters if part]
    if active:
        return (
            f"No papers match “{query}” with {', '.join(active)}. Try without a filter or with other words."
        )
    return f"No papers match “{query}”. Try other or fewer words."


@paper_group.command(name="show", description="Show one paper with its abstract and links")
@app_commands.describe(paper="Start typing a title, or give an arXiv/OpenReview id")
@app_commands.autocomplete(paper=paper_autocomplete)
async def show_command(
    interaction: discord.Interaction[PaperBot], paper: app_commands.Range[str, 1, 200]
) -> None:
    found = await resolve_paper(interaction.client.services, paper)
    await post_paper(interaction, found)


@paper_group.command(name="similar", description="Papers most like one paper (the paper itself left out)")
@app_commands.describe(
    paper="Start typing a title, or give an arXiv/OpenReview id", limit="Results per page (1-10)"
)
@app_commands.autocomplete(paper=paper_autocomplete)
async def similar_command(
    interaction: discord.Interaction[PaperBot], paper: app_commands.Range[str, 1, 200], limit: Limit = 5
) -> None:
    services = interaction.client.services
    found = await resolve_paper(services, paper)
    stored = StoredSearch(interaction.id, "similar", "", found.id, None, None, None, limit)
    listing = await render_listing(services, stored, 0)
    if listing.total == 0:
        raise QueryError(f"I found no papers like “{found.title}”: its words appear in no other paper.")
    await services.writes.listing(stored, user_id=interaction.user.id)
    await interaction.response.send_message(embed=listing.embed, view=listing.view)


async def setup(bot: commands.Bot) -> None:
    bot.add_dynamic_items(*DYNAMIC_ITEMS)
