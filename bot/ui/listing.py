"""A page of search or similar-papers results: one embed plus rating and paging buttons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import discord

from bot.errors import NotFoundError
from bot.ui.embeds import ListedPaper, results_embed
from bot.ui.format import trim
from bot.ui.views import PageButton, add_rating_buttons
from storage.repositories.searches import SearchRepository, StoredSearch

if TYPE_CHECKING:
    from bot.runtime import Services


@dataclass(frozen=True, slots=True)
class Listing:
    embed: discord.Embed
    view: discord.ui.View
    total: int


async def render_stored_listing(services: Services, search_id: int, page: int) -> Listing:
    stored = services.writes.pending_listing(search_id) or await SearchRepository(services.db).get(search_id)
    if stored is None:
        raise NotFoundError("This result list has expired; run the search again.")
    return await render_listing(services, stored, page)


async def render_listing(services: Services, stored: StoredSearch, page: int) -> Listing:
    """Run the stored search for `page` (0-based) and render it."""
    offset = page * stored.page_size
    if stored.kind == "similar":
        assert stored.paper_id is not None
        results = services.search.similar(stored.paper_id, limit=stored.page_size, offset=offset)
        source = await services.papers.get(stored.paper_id)
        heading = f"Papers like “{trim(source.title, 150) if source else stored.paper_id}”"
    else:
        results = services.search.search(
            stored.query,
            limit=stored.page_size,
            offset=offset,
            author=stored.author,
            venue=stored.venue,
            year=stored.year,
        )
        heading = f"Results for “{trim(stored.query, 150)}”"
    papers = await services.papers.get_many([hit.paper_id for hit in results.hits])
    entries = [
        ListedPaper(
            paper=papers[hit.paper_id],
            snippet=services.search.snippet(papers[hit.paper_id].abstract, results.terms),
            matched=hit.matched_terms,
        )
        for hit in results.hits
        if hit.paper_id in papers
    ]
    pages = max(1, -(-results.total // stored.page_size))
    filters = _describe_filters(stored)
    footer = f"page {page + 1} of {pages} · {results.total} matches{filters} · buttons: rate or save a paper"
    embed = results_embed(heading, entries, first_number=offset + 1, footer=footer)
    view = discord.ui.View(timeout=None)
    add_rating_buttons(view, [entry.paper.id for entry in entries], first_number=offset + 1)
    if pages > 1:
        view.add_item(
            PageButton(stored.id, max(page - 1, 0), label="◀ Previous", tag="p", disabled=page == 0)
        )
        view.add_item(
            PageButton(
                stored.id, min(page + 1, pages - 1), label="Next ▶", tag="n", disabled=page + 1 >= pages
            )
        )
    return Listing(embed=embed, view=view, total=results.total)


def _describe_filters(stored: StoredSearch) -> str:
    parts = []
    if stored.author:
        parts.append(f"author: {stored.author}")
    if stored.venue:
        parts.append(f"venue: {stored.venue}")
    if stored.year:
        parts.append(f"year: {stored.year}")
    return f" · {', '.join(parts)}" if parts else ""
