"""A single paper's message and its buttons: "Full abstract" on a paper shown by its gist, and
"More like this" on every one.

Each button's ``custom_id`` carries the paper's id, so it keeps working on a message of any age and
after a restart; what a press does is answered in `bot.exts.search` (only to whoever pressed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import discord

from bot.services.papers.gist import gist
from bot.ui.embeds import GIST_LIMIT, digest_embed
from bot.ui.views import Answered, secondary_button
from storage.models import Paper


class FullAbstractButton(
    Answered, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"pb:abstract:(?P<paper>\d+)"
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


class MoreLikeThisButton(
    Answered, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"pb:more:(?P<paper>\d+)"
):
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
