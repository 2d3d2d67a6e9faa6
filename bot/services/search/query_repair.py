"""What a typed search is answered with: an author's papers, or the query repaired and searched.

A query that is an author's full name, as the stored papers write it (case, accents and spacing
ignored: :class:`~bot.services.people.authors.AuthorDirectory`), lists that author's papers, newest
first. Any other query is searched repaired (:class:`paperindex.forgiving.ForgivingSearch`): its
unknown words corrected, the other forms of its compounds asked for too. A query in double quotes is
searched exactly as typed, the way to overrule either.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final

from bot.services.people.authors import AuthorDirectory
from paperindex.engine import SearchEngine, SearchResults, fold
from paperindex.forgiving import ForgivingSearch, unquoted
from paperindex.query import ParsedQuery

log = logging.getLogger(__name__)

#: How long a search waits for the names and words of papers indexed since the last one.
CATCH_UP_WAIT: Final = 0.25
#: Seconds without a search after which the names and words a search did not need are read.
QUIET: Final = 1.0


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """One page of a search, and what the query was taken as."""

    results: SearchResults
    #: the query searched when a word of it was corrected ("transformer attention mechanism")
    searched_as: str | None = None
    #: other forms of its words also searched ("over-smoothing" for "oversmoothing")
    forms: tuple[str, ...] = ()
    #: the author's name as a paper writes it, when the query is an author's name
    author: str | None = None


class QueryRepair:
    """Answers a typed query: by author when it names one, else repaired (see the module)."""

    def __init__(
        self, authors: AuthorDirectory | None = None, *, wait: float = CATCH_UP_WAIT, quiet: float = QUIET
    ) -> None:
        self.authors = authors
        self.forgiving = ForgivingSearch()
        self.wait = wait
        self.quiet = quiet
        self._catching_up: asyncio.Future[list[None]] | None = None
        self._quiet_call: asyncio.TimerHandle | None = None

    async def refresh(self, engine: SearchEngine, query: str | ParsedQuery | None = None) -> None:
        """Take in the author names and the words of papers indexed since the last look (in a worker
        thread when there are many: the event loop never waits for them); before :meth:`answer`.

        A search waits for that at most ``wait`` seconds (long enough for the words of a few thousand
        new papers), and only when its answer may depend on it: a word of ``query`` to correct, or an
        author named as the query reads; :meth:`search` starts the look once searches pause. A start's
        first look at 100,000 papers' words and names takes a second or two of CPU, which a first
        search of known words waited for or shared the CPU with (1.5 s to its answer, 0.5 s now). At a
        million papers it takes longer than Discord gives an answer (3 s), so it goes on in the
        background and the search is answered meanwhile with the names and words read so far."""
        if query is not None and not self._read_first(engine, query):
            return
        catching_up = self._catch_up(engine)
        if catching_up is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(catching_up), self.wait)
        except TimeoutError:
            log.info("a search answered before the author names and words of new papers were all read")

    async def catch_up(self, engine: SearchEngine) -> None:
        """Read every name and word not read yet, however long that takes: for a caller with no answer
        time to keep (the command line, whose misspelt query would otherwise go uncorrected while a
        large store's first look outlasts ``wait``)."""
        catching_up = self._catch_up(engine)
        if catching_up is not None:
            await asyncio.shield(catching_up)

    def _catch_up(self, engine: SearchEngine) -> asyncio.Future[list[None]] | None:
        """The look at the names and words not read yet, started unless it runs; None: all read."""
        if self._catching_up is None or self._catching_up.done():
            corrector = self.forgiving.corrector(engine)
            work = [self.authors.refresh()] if self.authors is not None and self.authors.behind() else []
            if corrector.behind():
                work.append(asyncio.to_thread(corrector.refresh))
            if not work:
                return None
            self._catching_up = asyncio.gather(*work)
            self._catching_up.add_done_callback(_said)
        return self._catching_up

    def _read_first(self, engine: SearchEngine, query: str | ParsedQuery) -> bool:
        """Whether the answer to ``query`` may depend on names and words not read yet."""
        text = query.text if isinstance(query, ParsedQuery) else query
        words_behind = self.forgiving.corrector(engine).behind()
        names_behind = self.authors is not None and self.authors.behind()
        return (words_behind and self.forgiving.corrects(engine, query)) or (
            names_behind and self._may_be_name(text) and engine.names_author(text)
        )

    def _may_be_name(self, query: str) -> bool:
        return self.authors is not None and len(fold(query).split()) >= 2 and unquoted(query) is None

    async def author_name(self, query: str) -> str | None:
        """The name as a paper writes it when ``query`` is an author's full name, else None."""
        key = fold(query)
        if self.authors is None or not self._may_be_name(query):
            return None
        if not self.authors.paper_ids(key):
            return None
        return (await self.authors.names([key]))[key]

    async def search(
        self,
        engine: SearchEngine,
        query: str | ParsedQuery,
        *,
        limit: int,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        matched: bool = True,
    ) -> SearchAnswer:
        """The page of ``query`` from ``offset`` under the filters, the author names brought up to date."""
        await self.refresh(engine, query)
        try:
            return await self.answer(
                engine,
                query,
                limit=limit,
                offset=offset,
                author=author,
                venue=venue,
                year=year,
                matched=matched,
            )
        finally:
            self._catch_up_when_quiet(engine)

    def _catch_up_when_quiet(self, engine: SearchEngine) -> None:
        """Start the look this answer did not need once no search came for ``quiet`` seconds: a
        search answered meanwhile (its snippets, its papers read, its message sent) does not share
        the CPU with it. A query that needs it starts it at once."""
        if self._quiet_call is not None:
            self._quiet_call.cancel()
        self._quiet_call = asyncio.get_running_loop().call_later(self.quiet, self._catch_up, engine)

    async def answer(
        self,
        engine: SearchEngine,
        query: str | ParsedQuery,
        *,
        limit: int,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        matched: bool = True,
    ) -> SearchAnswer:
        """:meth:`search` with the author names as they are (the command line refreshes them once)."""
        text = query.text if isinstance(query, ParsedQuery) else query
        name = await self.author_name(text)
        if name is not None and self.authors is not None:
            ids = self.authors.paper_ids(fold(text))
            listed = engine.newest(ids, limit=limit, offset=offset, author=author, venue=venue, year=year)
            if listed.total:
                return SearchAnswer(listed, author=name)
        results, repair = self.forgiving.search(
            engine, query, limit=limit, offset=offset, author=author, venue=venue, year=year, matched=matched
        )
        return SearchAnswer(
            results,
            searched_as=repair.text if repair.corrected else None,
            forms=tuple(dict.fromkeys(form.compound for form in repair.forms)),
        )


def _said(done: asyncio.Future[list[None]]) -> None:
    """A catch-up that failed is logged (the next search tries again), whoever waited for it."""
    error = None if done.cancelled() else done.exception()
    if error is not None and not isinstance(error, asyncio.CancelledError):
        log.warning("could not read the names and words of new papers: %r", error)
