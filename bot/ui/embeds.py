"""Pure functions from papers and results to Discord embeds, always within Discord's limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import discord

from bot.services.search.snippets import escape_markdown
from bot.ui.format import (
    byline,
    display_abstract,
    display_title,
    links,
    paper_link,
    short_authors,
    trim,
    trim_markdown,
    venue_line,
)
from storage.models import REACTIONS, Paper

# Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits)
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_VALUE_LIMIT = 1024
FOOTER_LIMIT = 2048
EMBED_TOTAL_LIMIT = 6000
CONTENT_LIMIT = 2000
BUTTON_LABEL_LIMIT = 80
CUSTOM_ID_LIMIT = 100  # a button's or menu's custom id

PAPER_COLOUR = discord.Colour(0x3B82F6)
#: the reactions the bot adds to a paper it posts: the three signals, in their order


#: the most of an abstract a digest message shows: its gist, one or two sentences
GIST_LIMIT = 320


def paper_embed(paper: Paper) -> discord.Embed:
    """One paper in full (`/paper show`): title (linked), the whole abstract, authors, venue, links."""
    embed = _titled(paper, escape_markdown(display_abstract(paper)) or "*No abstract.*")
    if paper.authors:
        embed.add_field(name="Authors", value=trim(short_authors(paper.authors, limit=8), FIELD_VALUE_LIMIT))
    if venue := venue_line(paper):
        embed.add_field(name="Venue", value=trim(venue, FIELD_VALUE_LIMIT))
    if link_text := _links_line(paper):
        embed.add_field(name="Links", value=trim(link_text, FIELD_VALUE_LIMIT), inline=False)
    embed.set_footer(text=_rating_footer(paper))
    return _fit(embed)


def digest_embed(paper: Paper, reason: str, summary: str) -> discord.Embed:
    """One paper to skim (a digest or feed message): title (linked), authors · venue · year, why it
    was picked, ``summary`` (its gist: one or two sentences of the abstract) and links."""
    lines = []
    if about := byline(paper):
        lines.append(escape_markdown(about))
    if reason:
        lines.append(f"*{escape_markdown(trim(reason, 300))}*")
    lines.append(f"\n> {escape_markdown(trim(summary, GIST_LIMIT))}" if summary else "\n*No abstract.*")
    if link_text := _links_line(paper):
        lines.append(f"\n{link_text}")
    embed = _titled(paper, "\n".join(lines))
    embed.set_footer(text=_rating_footer(paper))
    return _fit(embed)


def abstract_embed(paper: Paper) -> discord.Embed:
    """A paper's title and whole abstract (the "Full abstract" button's answer)."""
    return _fit(_titled(paper, escape_markdown(display_abstract(paper)) or "*No abstract.*"))


def _titled(paper: Paper, description: str) -> discord.Embed:
    return discord.Embed(
        title=trim(display_title(paper), TITLE_LIMIT),
        url=paper_link(paper),
        description=trim_markdown(description, DESCRIPTION_LIMIT),
        colour=PAPER_COLOUR,
    )


def _links_line(paper: Paper) -> str:
    return " · ".join(f"[{name}]({url})" for name, url in links(paper))


def _rating_footer(paper: Paper) -> str:
    return f"paper #{paper.id} · react {' '.join(REACTIONS)} to rate or save"


def _fit(embed: discord.Embed) -> discord.Embed:
    """Shorten the description until the whole embed is within Discord's 6000 characters."""
    excess = len(embed) - EMBED_TOTAL_LIMIT
    if excess > 0 and embed.description:
        embed.description = trim_markdown(embed.description, len(embed.description) - excess)
    return embed


@dataclass(frozen=True, slots=True)
class ListedPaper:
    """One entry of a result list: the paper, its snippet (markdown, bold terms) and what matched."""

    paper: Paper
    snippet: str
    matched: Sequence[str]
    reason: str | None = None


def results_embed(
    heading: str,
    entries: Sequence[ListedPaper],
    *,
    first_number: int,
    footer: str,
    note: str = "",
) -> discord.Embed:
    """A numbered list of papers in one embed, after ``note`` (markdown, a line or two); entries are
    shortened until it fits Discord's limits."""
    for snippet_limit in (360, 240, 160, 90, 0):
        blocks = [
            _entry_block(number, entry, snippet_limit) for number, entry in enumerate(entries, first_number)
        ]
        description = "\n\n".join([trim(note, 600), *blocks] if note else blocks)
        if (
            len(description) <= DESCRIPTION_LIMIT
            and len(description) + len(heading) + len(footer) < EMBED_TOTAL_LIMIT
        ):
            break
    embed = discord.Embed(
        title=trim(heading, TITLE_LIMIT), description=trim_markdown(description, DESCRIPTION_LIMIT)
    )
    embed.colour = PAPER_COLOUR
    embed.set_footer(text=trim(footer, FOOTER_LIMIT))
    return embed


def _entry_block(number: int, entry: ListedPaper, snippet_limit: int) -> str:
    paper = entry.paper
    title = escape_markdown(trim(display_title(paper), 200))
    link = paper_link(paper)
    head = f"**{number}. [{title}]({link})**" if link else f"**{number}. {title}**"
    lines = [head]
    if about := byline(paper):
        lines.append(escape_markdown(about))
    if snippet_limit and entry.snippet:
        lines.append(f"> {trim_markdown(entry.snippet, snippet_limit)}")
    if entry.reason:
        lines.append(f"*{escape_markdown(trim(entry.reason, 200))}*")
    elif entry.matched:
        lines.append(f"matched: {escape_markdown(', '.join(entry.matched))}")
    return "\n".join(lines)
