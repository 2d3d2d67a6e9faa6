"""A page of search or similar-papers results: one embed plus rating and paging buttons.

Renders what `bot.services.search.listings` returned; a press of the paging button is answered in
`bot.exts.search` (the page it moves to, edited in place).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import discord

from bot.services.search.listings import ListingPage
from bot.services.search.snippets import echo
from bot.ui.embeds import ListedPaper, results_embed
from bot.ui.format import counted, trim
from bot.ui.views import Answered, add_rating_buttons


@dataclass(frozen=True, slots=True)
class Listing:
    embed: discord.Embed
    view: discord.ui.View
    total: int


def render_listing(page: ListingPage) -> Listing:
    """The message for one page: numbered papers, 👍 👎 🔖 per paper, ◀ ▶ when there is more than one page."""
    listing = page.listing
    if listing.kind == "similar":
        heading = f"Papers like “{trim(page.source_title, 150) if page.source_title else listing.paper_id}”"
    elif page.author_name:
        heading = f"Papers by {page.author_name}"
    else:
        heading = f"Results for “{echo(page.searched_as or listing.query, 150)}”"
    entries = [ListedPaper(paper=hit.paper, snippet=hit.snippet, matched=hit.matched) for hit in page.hits]
    number, pages = page.page, page.pages
    footer = (
        f"page {number + 1} of {pages} · {_count(page)}{_describe_filters(page)} · "
        + (_personal_note(page) if page.personal else "")
        + (
            f"🔇 {page.muted} of these muted for you (never in your picks) · "
            if page.muted and page.for_searcher
            else ""
        )
        + "buttons: rate or save a paper"
    )
    embed = results_embed(
        heading, entries, first_number=page.offset + 1, footer=footer, note=_query_note(page)
    )
    view = discord.ui.View(timeout=None)
    add_rating_buttons(view, [entry.paper.id for entry in entries], first_number=page.offset + 1)
    if pages > 1:
        view.add_item(
            PageButton(listing.id, max(number - 1, 0), label="◀ Previous", tag="p", disabled=number == 0)
        )
        view.add_item(
            PageButton(
                listing.id, min(number + 1, pages - 1), label="Next ▶", tag="n", disabled=number + 1 >= pages
            )
        )
    return Listing(embed=embed, view=view, total=page.total)


def _count(page: ListingPage) -> str:
    """What the listing holds, said truly: a search of several words lists every paper holding one of
    them, most holding only some ("1,550 matches" for three words was mostly papers with one)."""
    total = counted(page.total, "paper", "papers")
    if page.listing.kind == "similar":
        return f"the {total} most like it"
    words = len(page.words)
    if page.holding_all is not None:
        every = "both words" if words == 2 else f"all {words} words"
        return f"{page.holding_all:,} with {every}, {page.total:,} with one or more"
    return total if words <= 1 else f"{total} with one of these words or more"


def _query_note(page: ListingPage) -> str:
    """What the query was taken as, when not word for word: an author's name, corrected words, the
    other forms of its compounds; and how to search it as typed."""
    typed = echo(page.listing.query, 150)
    lines = []
    if page.author_name:
        lines.append(
            f"Papers by **{echo(page.author_name, 100)}**, newest first. "
            f'To search the words instead, put them in quotes: "{typed}"'
        )
    elif page.searched_as:
        lines.append(
            f"Showing results for *{echo(page.searched_as, 150)}*: no paper has some words of "
            f'“{typed}”. To search exactly what you typed, put it in quotes: "{typed}"'
        )
    if page.forms:
        lines.append(f"Also searched: {echo(', '.join(page.forms), 150)}")
    return "\n".join(lines)


def _personal_note(page: ListingPage) -> str:
    if page.for_searcher:
        return "close matches ordered for you by your reactions · "
    return "close matches ordered by the reactions of whoever searched · "


def _describe_filters(page: ListingPage) -> str:
    listing = page.listing
    parts = []
    if listing.author:
        parts.append(f"author: {listing.author}")
    if listing.venue:
        parts.append(f"venue: {listing.venue}")
    if listing.year:
        parts.append(f"year: {listing.year}")
    return f" · {', '.join(parts)}" if parts else ""


class PageButton(
    Answered,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"pb:page:(?P<search>\d+):(?P<page>\d+)(?::(?P<tag>[a-z]))?",
):
    """Moves a stored search listing to another page by editing the message in place."""

    def __init__(self, search_id: int, page: int, *, label: str, tag: str, disabled: bool = False) -> None:
        self.search_id = search_id
        self.page = page
        # the tag keeps "previous" and "next" distinct when both point to the same page
        super().__init__(
            discord.ui.Button(
                style=discord.ButtonStyle.primary,
                label=label,
                custom_id=f"pb:page:{search_id}:{page}:{tag}",
                disabled=disabled,
                row=4,
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> PageButton:
        return cls(
            int(match["search"]),
            int(match["page"]),
            label=getattr(item, "label", None) or "",
            tag=match["tag"] or "n",
        )
