"""What `/paper search`, `/paper show` and `/paper similar` ask for: listings, their pages, paper references.

A listing is a search (query and filters) or the papers like one paper, with its page size. It is run
and checked before the answer, and stored behind it (`WriteBehind.listing`, keyed by the
interaction's id), so its paging buttons work for as long as searches are kept. A page is the
papers of one stretch of it, each with its snippet and the words it matched; the Discord layer only
renders what it gets (`bot.ui.listing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol

import numpy as np

from bot.errors import NotFoundError, QueryError
from bot.services.papers.latex_text import readable
from bot.services.papers.links import paper_links
from bot.services.search import snippets
from bot.services.search.distinctive import distinctive, generic_terms
from bot.services.search.query_repair import QueryRepair, SearchAnswer
from bot.services.write_behind import WriteBehind
from paperindex.engine import SearchEngine, SearchHit, SearchResults
from paperindex.errors import QueryError as UnsearchableQuery
from paperindex.query import ParsedQuery
from storage.models import Paper
from storage.repositories.papers import PaperRepository
from storage.repositories.searches import SearchRepository, StoredSearch

#: The longest a paper reference is quoted back in "I don't know a paper matching …".
_SHOWN_REFERENCE = 80
#: A person's model may reorder this many best matches of a search (``PersonalOrder``).
PERSONAL_WINDOW = 20


class PersonalOrder(Protocol):
    """``bot.services.recommend.recommender.Recommender.personal_order``: results reordered by a person's model."""

    async def __call__(
        self, user_id: int, paper_ids: Sequence[int], scores: Sequence[float]
    ) -> list[int] | None: ...


class MutedCount(Protocol):
    """``bot.services.people.mutes.MuteService.count_muted``: how many of these papers the person muted."""

    async def __call__(self, user_id: int, paper_ids: Sequence[int]) -> int: ...


@dataclass(frozen=True, slots=True)
class ListedHit:
    """One paper of a page: its snippet (markdown, the query's terms in bold) and the words it matched."""

    paper: Paper
    snippet: str
    matched: tuple[str, ...]


#: how deep a listing of the papers like one paper goes: past the first few dozen, papers share a word
#: or two with it and nothing more
SIMILAR_LISTED: Final = 50


@dataclass(frozen=True, slots=True)
class ListingPage:
    """One page (0-based) of a listing, with how many papers the whole listing has."""

    listing: StoredSearch
    page: int
    total: int
    hits: tuple[ListedHit, ...]
    #: for papers like one paper: that paper's title (None when it is no longer stored)
    source_title: str | None = None
    #: the close matches were ordered by the model (the reactions) of the person who searched
    personal: bool = False
    #: the page is shown for the person who searched (their own command or button press)
    for_searcher: bool = True
    #: a search of several words without filters: how many papers hold every one of them (``total``
    #: counts those holding any one)
    holding_all: int | None = None
    #: the query's words that count (as typed; "the" and single letters aside), one per index term
    words: tuple[str, ...] = ()
    #: the query searched when a word of it was corrected; other forms of its words searched too;
    #: the author's name when the query is one (their papers, newest first)
    searched_as: str | None = None
    forms: tuple[str, ...] = ()
    author_name: str | None = None
    #: how many of the page's papers its searcher muted (still listed: a search finds them)
    muted: int = 0

    @property
    def offset(self) -> int:
        """How many papers come before this page (its first paper is number ``offset + 1``)."""
        return self.page * self.listing.page_size

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.listing.page_size))


class SearchService:
    def __init__(
        self,
        engine: SearchEngine,
        papers: PaperRepository,
        searches: SearchRepository,
        writes: WriteBehind,
        personal_order: PersonalOrder | None = None,
        repair: QueryRepair | None = None,
        muted: MutedCount | None = None,
    ) -> None:
        self.engine = engine
        self.papers = papers
        self.searches = searches
        self.writes = writes
        self.personal_order = personal_order
        self.repair = repair or QueryRepair()
        self.muted = muted

    def autocomplete(self, text: str, *, limit: int = 25) -> list[tuple[int, str]]:
        """(paper id, title) for what someone has typed so far (an id, an external id or title words)."""
        return self.engine.autocomplete(text, limit=limit)

    async def resolve_paper(self, text: str) -> Paper:
        """The paper an option names: an autocomplete choice (id), an arXiv/OpenReview id, a DOI or a title."""
        text = text.strip()
        if not text:
            raise NotFoundError("Name a paper: start typing its title and pick one from the list.")
        paper: Paper | None = None
        if text.isdigit():
            paper = await self.papers.get(int(text))
        if paper is None:
            paper = await self.papers.find_by_external(text)
        if paper is None:
            matches = self.engine.autocomplete(text, limit=2)
            if len(matches) == 1 or (matches and matches[0][1].casefold() == text.casefold()):
                paper = await self.papers.get(matches[0][0])
        if paper is None:
            shown = snippets.echo(text, _SHOWN_REFERENCE)
            raise NotFoundError(
                f"I don't know a paper matching “{shown}”. Start typing a title and pick one from the list, "
                "or give an arXiv id, OpenReview id or DOI."
            )
        return paper

    async def search(
        self,
        listing_id: int,
        *,
        user_id: int,
        query: str,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        page_size: int,
    ) -> ListingPage:
        """The first page of a search, stored as listing ``listing_id`` (QueryError when nothing matches).
        The query is read once (QueryError when it has no words to look for) and handed on as read."""
        try:
            parsed = ParsedQuery.parse(query)
        except UnsearchableQuery:
            if paper_links(query):  # a link pasted to find its paper
                raise QueryError(
                    "That is a link to a paper, and a link is not searched: `/paper show paper:` takes it "
                    "and shows the paper it points to."
                ) from None
            raise
        listing = StoredSearch(listing_id, "search", query, None, author, venue, year, page_size, user_id)
        first = await self._page(listing, 0, parsed)
        if first.total == 0:
            raise QueryError(_no_match_message(query, author, venue, year))
        await self.writes.listing(listing, user_id=user_id)
        return first

    async def similar(self, listing_id: int, *, user_id: int, paper: str, page_size: int) -> ListingPage:
        """The first page of the papers most like the one ``paper`` names, stored as listing ``listing_id``."""
        found = await self.resolve_paper(paper)
        listing = StoredSearch(listing_id, "similar", "", found.id, None, None, None, page_size, user_id)
        first = await self._page(listing, 0)
        if first.total == 0:
            raise QueryError(f"I found no papers like “{found.title}”: its words appear in no other paper.")
        await self.writes.listing(listing, user_id=user_id)
        return first

    async def page(self, listing_id: int, page: int, *, user_id: int) -> ListingPage:
        """Another page of a stored listing (NotFoundError once it expired) for ``user_id``, who pressed
        its button. A listing someone else ran may be on a message everyone sees: it keeps its own
        order (its searcher's), never the presser's."""
        listing = self.writes.pending_listing(listing_id) or await self.searches.get(listing_id)
        if listing is None:
            raise NotFoundError("This result list has expired; run the search again.")
        return replace(await self._page(listing, page), for_searcher=user_id == listing.user_id)

    async def _page(self, listing: StoredSearch, page: int, parsed: ParsedQuery | None = None) -> ListingPage:
        """One page of the listing, its close matches ordered by its searcher's model when they have one
        (a search's query read here unless the caller has ``parsed`` it already)."""
        user_id = listing.user_id
        offset = page * listing.page_size
        source_title: str | None = None
        personal = False
        answer: SearchAnswer | None = None
        if listing.kind == "similar":
            assert listing.paper_id is not None
            results = self.engine.similar(listing.paper_id, limit=listing.page_size, offset=offset)
            source = await self.papers.get(listing.paper_id)
            source_title = source.title if source else None
        else:
            personal = user_id is not None and self.personal_order is not None and offset < PERSONAL_WINDOW
            answer = await self.repair.search(
                self.engine,
                parsed or ParsedQuery.parse(listing.query),
                limit=max(PERSONAL_WINDOW, offset + listing.page_size) if personal else listing.page_size,
                offset=0 if personal else offset,
                author=listing.author,
                venue=listing.venue,
                year=listing.year,
            )
            results = answer.results
            if personal and user_id is not None:
                results, personal = await self._ordered_for(user_id, results, offset, listing.page_size)
        papers = await self.papers.get_many([hit.paper_id for hit in results.hits])
        generic = generic_terms(results.terms, self.engine.index)
        hits = tuple(
            _listed(results, hit, papers[hit.paper_id], generic)
            for hit in results.hits
            if hit.paper_id in papers
        )
        holding_all = None
        plain = answer is not None and not answer.forms and answer.author is None
        if plain and results.filtered is None and len(results.terms) > 1:
            holding_all = self._holding_all(results.terms)
        total = results.total
        if listing.kind == "similar":  # (every paper shares a word or two with it: the count said nothing)
            total = min(total, SIMILAR_LISTED)
        page_of = ListingPage(
            listing,
            page,
            total,
            hits,
            source_title,
            personal=personal,
            holding_all=holding_all,
            words=results.words if listing.kind == "search" else (),
        )
        if self.muted is not None and user_id is not None and listing.kind == "search" and hits:
            page_of = replace(page_of, muted=await self.muted(user_id, [hit.paper.id for hit in hits]))
        if answer is None:
            return page_of
        return replace(page_of, searched_as=answer.searched_as, forms=answer.forms, author_name=answer.author)

    def _holding_all(self, terms: Sequence[str]) -> int:
        """How many indexed papers hold every one of ``terms``."""
        return int(np.count_nonzero(self.engine.index.holding(terms)))

    async def _ordered_for(
        self, user_id: int, results: SearchResults, offset: int, size: int
    ) -> tuple[SearchResults, bool]:
        """The page's stretch of the first results as the person's model orders them, and whether it
        did (it does not while their learning is paused or they have no reactions)."""
        assert self.personal_order is not None
        window = results.hits[:PERSONAL_WINDOW]
        order = await self.personal_order(user_id, [h.paper_id for h in window], [h.score for h in window])
        hits = results.hits
        if order is not None:
            by_id = {h.paper_id: h for h in window}
            hits = [by_id[paper_id] for paper_id in order] + hits[PERSONAL_WINDOW:]
        return replace(results, hits=hits[offset : offset + size], offset=offset), order is not None


def _no_match_message(query: str, author: str | None, venue: str | None, year: int | None) -> str:
    filters = [
        f"author “{snippets.echo(author)}”" if author else "",
        f"venue “{snippets.echo(venue)}”" if venue else "",
        f"year {year}" if year else "",
    ]
    active = [part for part in filters if part]
    if active:
        return f"No papers match “{snippets.echo(query, 150)}” with {', '.join(active)}. Try without a filter or with other words."
    return f"No papers match “{snippets.echo(query, 150)}”. Try other or fewer words."


def _listed(results: SearchResults, hit: SearchHit, paper: Paper, generic: frozenset[str]) -> ListedHit:
    """A hit with its snippet and the query's words the paper holds, a phrase of them it holds in its
    title or abstract as one ("graph neural networks"), leaving out the words most papers hold
    (``generic``: "learning")."""
    snippet, found = snippets.snippet_and_phrases(
        readable(paper.abstract), readable(paper.title), results.terms, results.phrases
    )
    matched = hit.matched_terms
    if results.phrases and len(matched) >= 2:
        matched = snippets.group_phrases(results.terms, results.words, matched, found)
    term_of = dict(zip(results.words, results.terms, strict=True))
    return ListedHit(paper, snippet, distinctive(matched, term_of, generic))
