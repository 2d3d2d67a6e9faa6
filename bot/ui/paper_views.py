"""The buttons under a single-paper message: "Full abstract" on a paper shown by its gist.

Each button's ``custom_id`` carries the paper's id, so it keeps working on a message of any age and
after a restart; the answer is ephemeral (only the person who pressed sees it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord

from bot.errors import NotFoundError
from bot.services.gist import gist
from bot.ui.embeds import GIST_LIMIT, abstract_embed, digest_embed
from bot.ui.views import report_item_error
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
            discord.ui.Button(
                style=discord.ButtonStyle.secondary,
                emoji="📄",
                label="Full abstract",
                custom_id=f"pb:abstract:{paper_id}",
            )
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
            await report_item_error(interaction, error, f"full abstract button {self.paper_id}")


@dataclass(frozen=True, slots=True)
class PaperMessage:
    """A single-paper message: its embed and its buttons."""

    embed: discord.Embed
    view: discord.ui.View


def digest_message(paper: Paper, reason: str) -> PaperMessage:
    """A paper of a digest or feed, to skim: its gist, and "Full abstract" when that is not all of it."""
    summary = gist(paper.abstract)
    view = discord.ui.View(timeout=None)
    if not summary.whole or len(summary.text) > GIST_LIMIT:
        view.add_item(FullAbstractButton(paper.id))
    return PaperMessage(digest_embed(paper, reason, summary.text), view)
