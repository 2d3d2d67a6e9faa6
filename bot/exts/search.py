"""/paper search, /paper show and /paper similar, and the buttons under their answers: ◀ ▶ of a listing,
"Full abstract" and "More like this" under a paper (the rating buttons are `bot.exts.feedback`'s)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

import discord
from discord import app_commands

from bot.digest_sender import add_ratings
from bot.errors import NotFoundError
from bot.exts._autocomplete import paper_autocomplete
from bot.exts._groups import Subcommands
from bot.exts._items import answer
from bot.services.papers.links import named_papers
from bot.ui.embeds import abstract_embed, paper_embed
from bot.ui.listing import PageButton, render_listing
from bot.ui.paper_views import MORE_LIKE_THIS, FullAbstractButton, MoreLikeThisButton, paper_view
from bot.ui.views import paper_buttons, report_item_error
from storage.models import Paper

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

paper = Subcommands("paper")

Limit = app_commands.Range[int, 1, 10]
#: A search not answered by then is deferred (Discord waits 3 s for the first answer).
DEFER_SEARCH_AFTER: Final = 2.0
Year = app_commands.Range[int, 1900, 2100]


async def post_paper(interaction: discord.Interaction[PaperBot], paper: Paper) -> None:
    """Answer with one paper and its own 👍 👎 🔖, recording the message so a rating maps to the paper.

    In a DM they are buttons on the answer itself; in a server channel, reactions everyone there sees,
    added one per reaction bucket of the channel. Where the bot may not add reactions they are buttons
    too, and an admin hears once which permission is missing.
    """
    in_guild = interaction.guild_id is not None
    reactions = in_guild and interaction.app_permissions.add_reactions
    view = paper_view(paper) if reactions else paper_buttons(paper.id, paper_view(paper))
    message: discord.Message | None
    if interaction.response.is_done():  # deferred while the paper was fetched
        message = await interaction.followup.send(embed=paper_embed(paper), view=view, wait=True)
    else:
        answer = await interaction.response.send_message(embed=paper_embed(paper), view=view)
        message = answer.resource if isinstance(answer.resource, discord.InteractionMessage) else None
    view.stop()  # dynamic items: answered without keeping the view in memory
    if message is None:
        message = await interaction.original_response()
    await interaction.client.services.writes.posted_message(
        message_id=message.id,
        channel_id=message.channel.id,
        guild_id=interaction.guild_id,
        paper_id=paper.id,
        recipient_id=None if in_guild else interaction.user.id,
        kind="paper",
    )
    if reactions:
        await add_ratings(interaction.client, message, interaction.client.sending, paced=False)
    elif in_guild and interaction.is_guild_integration():  # a server without the bot has nobody to tell
        await tell_reactions_missing(interaction, message.channel.id)


async def tell_reactions_missing(interaction: discord.Interaction[PaperBot], channel_id: int) -> None:
    """The first time only: tell the person, if they can manage the server, that the bot may not add
    reactions here; otherwise keep it for the server's owner's next command."""
    notices = interaction.client.services.permission_notices
    if interaction.permissions.manage_guild:
        notice = await notices.reactions_missing(channel_id)
        if notice is not None:
            await interaction.followup.send(f"⚠️ {notice}", ephemeral=True)
    elif interaction.guild is not None and interaction.guild.owner_id is not None:
        await notices.reactions_missing(channel_id, leave_for=interaction.guild.owner_id)


@paper.command(name="search", description="Search papers by topic, method, title words or author")
@app_commands.describe(
    query='What to look for, e.g. kv cache quantization, or a name; in "quotes": exactly as typed',
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
    interaction.client.services.limits.take("search", interaction.user.id)
    # The listing's id is the interaction's, so the answer needs nothing from the store's writer.
    searching = asyncio.ensure_future(
        interaction.client.services.search_service.search(
            interaction.id,
            user_id=interaction.user.id,
            query=query,
            author=author,
            venue=venue,
            year=year,
            page_size=limit,
        )
    )
    # Discord drops an answer that takes over 3 s: a search still running then (a start's first
    # look at a million papers, a busy machine) is deferred, and its listing follows.
    done, _ = await asyncio.wait({searching}, timeout=DEFER_SEARCH_AFTER)
    if not done:
        await interaction.response.defer(thinking=True)
    listing = render_listing(await searching)
    if interaction.response.is_done():
        await interaction.followup.send(embed=listing.embed, view=listing.view)
    else:
        await interaction.response.send_message(embed=listing.embed, view=listing.view)


@paper.command(name="show", description="Show one paper with its abstract and links")
@app_commands.describe(paper="Start typing a title, or give an arXiv/OpenReview id")
@app_commands.autocomplete(paper=paper_autocomplete)
async def show_command(
    interaction: discord.Interaction[PaperBot], paper: app_commands.Range[str, 1, 200]
) -> None:
    services = interaction.client.services
    try:
        found = await services.search_service.resolve_paper(paper)
    except NotFoundError:
        if not named_papers(paper):
            raise
        # a link or an arXiv id to a paper not here yet: fetched from arXiv, which may take longer
        # than Discord's 3 s
        await interaction.response.defer(thinking=True)
        try:
            found = await services.linked.find(paper)
        except NotFoundError as error:  # said to the person alone, not in the channel
            await interaction.delete_original_response()
            await interaction.followup.send(str(error), ephemeral=True)
            return
    await post_paper(interaction, found)


@paper.command(name="similar", description="Papers most like one paper (the paper itself left out)")
@app_commands.describe(
    paper="Start typing a title, or give an arXiv/OpenReview id", limit="Results per page (1-10)"
)
@app_commands.autocomplete(paper=paper_autocomplete)
async def similar_command(
    interaction: discord.Interaction[PaperBot], paper: app_commands.Range[str, 1, 200], limit: Limit = 5
) -> None:
    interaction.client.services.limits.take("search", interaction.user.id)
    first = await interaction.client.services.search_service.similar(
        interaction.id, user_id=interaction.user.id, paper=paper, page_size=limit
    )
    listing = render_listing(first)
    await interaction.response.send_message(embed=listing.embed, view=listing.view)


async def turn_page(interaction: discord.Interaction[Any], button: PageButton) -> None:
    """◀ ▶ under a listing: the page it moves to, in place."""
    bot: PaperBot = interaction.client
    try:
        bot.services.limits.take("search", interaction.user.id)
        page = await bot.services.search_service.page(
            button.search_id, button.page, user_id=interaction.user.id
        )
        listing = render_listing(page)
        await interaction.response.edit_message(embed=listing.embed, view=listing.view)
    except Exception as error:
        await report_item_error(interaction, error, f"page button {button.search_id}:{button.page}")


async def show_abstract(interaction: discord.Interaction[Any], button: FullAbstractButton) -> None:
    """ "Full abstract": the paper's whole abstract, to whoever pressed it."""
    bot: PaperBot = interaction.client
    try:
        found = await bot.services.papers.get(button.paper_id)
        if found is None:
            raise NotFoundError("That paper is no longer in the library.")
        await interaction.response.send_message(embed=abstract_embed(found), ephemeral=True)
    except Exception as error:
        await report_item_error(interaction, error, "full abstract button", detail=f"paper {button.paper_id}")


async def more_like_this(interaction: discord.Interaction[Any], button: MoreLikeThisButton) -> None:
    """ "More like this": the papers most like this one, to whoever pressed it, with their buttons."""
    bot: PaperBot = interaction.client
    try:
        first = await bot.services.search_service.similar(
            interaction.id, user_id=interaction.user.id, paper=str(button.paper_id), page_size=MORE_LIKE_THIS
        )
        listing = render_listing(first)
        await interaction.response.send_message(embed=listing.embed, view=listing.view, ephemeral=True)
    except Exception as error:
        await report_item_error(
            interaction, error, "more like this button", detail=f"paper {button.paper_id}"
        )


async def setup(bot: PaperBot) -> None:
    paper.add_to(bot)
    answer(bot, PageButton, turn_page)
    answer(bot, FullAbstractButton, show_abstract)
    answer(bot, MoreLikeThisButton, more_like_this)
