"""Pure functions from papers and results to Discord embeds, always within Discord's limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import discord

from bot.services.feedback import SIGNAL_EMOJI
from bot.services.snippets import escape_markdown
from bot.ui.format import display_title, links, paper_link, short_authors, trim, venue_line
from storage.models import Paper

# Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits)
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_VALUE_LIMIT = 1024
FOOTER_LIMIT = 2048
EMBED_TOTAL_LIMIT = 6000
CONTENT_LIMIT = 2000

PAPER_COLOUR = discord.Colour(0x3B82F6)
#: the reactions the bot adds to a paper it posts: the three signals, in their order
REACTIONS = tuple(SIGNAL_EMOJI.values())


def paper_embed(
    paper: Paper, *, reason: str | None = None, abstract_limit: int = 1500, footer: str | None = None
) -> discord.Embed:
    """One paper: title (linked), authors, venue/status, abstract, links; the reason on a digest item."""
    description = (
        escape_markdown(trim(paper.abstract, abstract_limit)) if paper.abstract else "*No abstract.*"
    )
    if reason:
        description = f"*{escape_markdown(trim(reason, 300))}*\n\n{description}"
    embed = discord.Embed(
        title=trim(display_title(paper), TITLE_LIMIT),
        url=paper_link(paper),
        description=trim(description, DESCRIPTION_LIMIT),
        colour=PAPER_COLOUR,
    )
    embed.add_field(name="Authors", value=trim(short_authors(paper.authors, limit=8), FIELD_VALUE_LIMIT))
    embed.add_field(name="Venue", value=trim(venue_line(paper), FIELD_VALUE_LIMIT))
    link_text = " · ".join(f"[{name}]({url})" for name, url in links(paper))
    if link_text:
        embed.add_field(name="Links", value=trim(link_text, FIELD_VALUE_LIMIT), inline=False)
    embed.set_footer(text=trim(footer or f"paper #{paper.id} · react 👍 👎 🔖 to rate or save", FOOTER_LIMIT))
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
) -> discord.Embed:
    """A numbered list of papers in one embed; entries are shortened until it fits Discord's limits."""
    for snippet_limit in (360, 240, 160, 90, 0):
        blocks = [
            _entry_block(number, entry, snippet_limit) for number, entry in enumerate(entries, first_number)
        ]
        description = "\n\n".join(blocks)
        if (
            len(description) <= DESCRIPTION_LIMIT
            and len(description) + len(heading) + len(footer) < EMBED_TOTAL_LIMIT
        ):
            break
    embed = discord.Embed(title=trim(heading, TITLE_LIMIT), description=trim(description, DESCRIPTION_LIMIT))
    embed.colour = PAPER_COLOUR
    embed.set_footer(text=trim(footer, FOOTER_LIMIT))
    return embed


def _entry_block(number: int, entry: ListedPaper, snippet_limit: int) -> str:
    paper = entry.paper
    title = escape_markdown(trim(display_title(paper), 200))
    link = paper_link(paper)
    head = f"**{number}. [{title}]({link})**" if link else f"**{number}. {title}**"
    lines = [head, f"{escape_markdown(short_authors(paper.authors))} · {escape_markdown(venue_line(paper))}"]
    if snippet_limit and entry.snippet:
        lines.append(f"> {trim(entry.snippet, snippet_limit)}")
    if entry.reason:
        lines.append(f"*{escape_markdown(trim(entry.reason, 200))}*")
    elif entry.matched:
        lines.append(f"matched: {escape_markdown(', '.join(entry.matched))}")
    return "\n".join(lines)
