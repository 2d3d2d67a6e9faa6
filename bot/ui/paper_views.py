"""A single paper's message and its buttons: "Full abstract" on a paper shown by its gist, and
"More like this" on every one; and the autocomplete that picks a paper by title or id.

Each button's ``custom_id`` carries the paper's id, so it keeps working on a message of any age and
after a restart; the answer is ephemeral (only the person who pressed sees it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.errors import NotFoundError
from bot.services.papers.gist import gist
from bot.ui.embeds import GIST_LIMIT, abstract_embed, digest_embed
from bot.ui.listing import render_listing
from bot.ui.views import report_item_error, secondary_button
from storage.models import Paper

if TYPE_CHECKING:
    from bot.app import PaperBot


class FullAbstractButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"pb:abstract:(?P<paper>\d+)"
):
    """Shows the paper's whole abstract to whoever pressed it."""

    def __init__(self, paper_id: int) -> None:
        self.paper_id = paper_id
        super().__init__(
            secondary_button(label="Full abstract", emoji="📄", custom_id=f"pb:abstract:{paper_id}")
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> FullAbstractButton:
        return cls(int(match["paper"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        bot: PaperBot = interaction.client
        try:
            paper = await bot.services.papers.get(self.paper_id)
            if paper is None:
                raise NotFoundError("That paper is no longer in the library.")
            await interaction.response.send_message(embed=abstract_embed(paper), ephemeral=True)
        except Exception as error:
            await report_item_error(
                interaction, error, "full abstract button", detail=f"paper {self.paper_id}"
            )


class MoreLikeThisButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"pb:more:(?P<paper>\d+)"):
    """The papers most like this one, only to whoever pressed it, each with its 👍 👎 🔖 buttons."""

    def __init__(self, paper_id: int) -> None:
        self.paper_id = paper_id
        super().__init__(
            secondary_button(label="More like this", emoji="🔎", custom_id=f"pb:more:{paper_id}")
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> MoreLikeThisButton:
        return cls(int(match["paper"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        bot: PaperBot = interaction.client
        try:
            first = await bot.services.search_service.similar(
                interaction.id,
                user_id=interaction.user.id,
                paper=str(self.paper_id),
                page_size=MORE_LIKE_THIS,
            )
            listing = render_listing(first)
            await interaction.response.send_message(embed=listing.embed, view=listing.view, ephemeral=True)
        except Exception as error:
            await report_item_error(
                interaction, error, "more like this button", detail=f"paper {self.paper_id}"
            )


#: papers a "More like this" answer lists per page
MORE_LIKE_THIS = 5


@dataclass(frozen=True, slots=True)
class PaperMessage:
    """A single-paper message: its embed and its buttons."""

    embed: discord.Embed
    view: discord.ui.View


def digest_message(paper: Paper, reason: str) -> PaperMessage:
    """A paper of a digest or feed, to skim: its gist, and "Full abstract" when that is not all of it."""
    summary = gist(paper.abstract)
    full = not summary.whole or len(summary.text) > GIST_LIMIT
    return PaperMessage(digest_embed(paper, reason, summary.text), paper_view(paper, full_abstract=full))


def paper_view(paper: Paper, *, full_abstract: bool = False) -> discord.ui.View:
    """A single paper's buttons: "Full abstract" (where the message shows less), "More like this"."""
    view = discord.ui.View(timeout=None)
    if full_abstract:
        view.add_item(FullAbstractButton(paper.id))
    view.add_item(MoreLikeThisButton(paper.id))
    return view


async def paper_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """Titles (or ids) matching what the user typed so far; at most 25, as Discord allows."""
    matches = interaction.client.services.search_service.autocomplete(current, limit=25)
    return [
        app_commands.Choice(name=_choice_name(paper_id, title), value=str(paper_id))
        for paper_id, title in matches
    ]


def _choice_name(paper_id: int, title: str) -> str:
    name = f"{title} (#{paper_id})"
    return name if len(name) <= 100 else f"{title[: 100 - len(f'… (#{paper_id})')]}… (#{paper_id})"
