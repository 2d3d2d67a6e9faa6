"""What ranking reads of every indexed paper besides its words: its date (newer papers are nudged up),
its title (two picks with the same title are one paper twice), short titles for reasons, and each
term's idf; kept in memory, by paper id, and followed as papers are indexed."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import date
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.services.papers.latex_text import readable
from bot.services.papers.shorten import one_line
from bot.services.recommend.profile import RankingParams
from bot.services.search.distinctive import generic_terms
from storage.models import Paper
from storage.repositories.papers import PaperRepository

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

REASON_TITLE_CHARS: Final = 60
FACTS_PAGE: Final = 1000  # papers' dates and titles read at a time
_TITLE_WORD = re.compile(r"\w+")


class FactsIndex(Protocol):
    """What is read of the search index (``paperindex.index.BM25Index``)."""

    @property
    def slot_ids(self) -> IntArray: ...

    @property
    def n_slots(self) -> int: ...

    def __len__(self) -> int: ...

    def idf(self, term: str) -> float: ...

    def df(self, term: str) -> int: ...


class TitleSource(Protocol):
    def title(self, paper_id: int) -> str: ...


def word_cut(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word's end (ending in "…")."""
    return one_line(text, limit)


def short_title(title: str) -> str:
    """A title for a reason's "like: …", its LaTeX as text."""
    return word_cut(readable(title), REASON_TITLE_CHARS)


def _title_key(title: str) -> str:
    return " ".join(_TITLE_WORD.findall(title.casefold()))


def _date(published: str | None, year: int | None) -> date | None:
    if published:
        try:
            return date.fromisoformat(published[:10])
        except ValueError:
            pass
    if year:
        try:
            return date(int(year), 7, 1)
        except ValueError:
            return None
    return None


def paper_date(paper: Paper) -> date | None:
    """When the paper came out: its `published` date, else the middle of its year."""
    return _date(paper.published, paper.year)


def _ordinal(published: str | None, year: int | None) -> int:
    """date.toordinal() of :func:`paper_date`, 0 when unknown."""
    day = _date(published, year)
    return 0 if day is None else day.toordinal()


def _title_hash(title: str) -> int:
    """A number standing for the title's words (same words, same number; 0 for no words)."""
    key = _title_key(title)
    return (hash(key) or 1) if key else 0


def recency_factor(published: date | None, today: date, params: RankingParams) -> float:
    """1.0 for a paper out today, falling smoothly to `recency_floor` for very old papers.

    A paper with no known date is treated as one half-life old.
    """
    age = params.recency_half_life_days if published is None else max(0, (today - published).days)
    floor = params.recency_floor
    return float(floor + (1.0 - floor) * 0.5 ** (age / params.recency_half_life_days))


def values_of(values: IntArray, paper_ids: IntArray) -> IntArray:
    """values[paper_ids], 0 for ids past the end (papers indexed after the last sync)."""
    inside = paper_ids < len(values)
    if not len(values):
        return np.zeros(len(paper_ids), dtype=np.int64)
    return np.where(inside, values[np.where(inside, paper_ids, 0)], 0)


class PaperFacts:
    """Every indexed paper's date and title key (arrays by paper id), idf values, short titles."""

    def __init__(
        self, index: FactsIndex, papers: PaperRepository, titles: TitleSource, params: RankingParams
    ):
        self.index = index
        self.papers = papers
        self.titles = titles
        self.params = params
        self._day = np.zeros(0, dtype=np.int64)  # by paper id: date ordinal, 0 = unknown
        self._title_hash = np.zeros(0, dtype=np.int64)  # by paper id: hash of the title key, 0 = none
        self._synced_slots = 0
        self._idfs: dict[str, float] = {}
        self._generation: tuple[int, int] = (-1, -1)

    def idf(self, term: str) -> float:
        """The term's idf, cached until papers are added, changed or removed (a changed paper is
        indexed again in a new slot and a removed one lowers the live count, so (slots, live papers)
        moves whenever the index does)."""
        generation = (self.index.n_slots, len(self.index))
        if generation != self._generation:
            self._generation = generation
            self._idfs.clear()
        idf = self._idfs.get(term)
        if idf is None:
            idf = self._idfs[term] = self.index.idf(term)
        return idf

    def generic(self, terms: Collection[str]) -> frozenset[str]:
        """The terms of ``terms`` most papers hold ("learning"): no reason names them."""
        return generic_terms(terms, self.index)

    def title_hashes(self, paper_ids: IntArray) -> IntArray:
        return values_of(self._title_hash, paper_ids)

    def recency(self, paper_ids: IntArray, today: int) -> FloatArray:
        """recency_factor of each paper (vectorised); an unknown date counts as one half-life old."""
        params = self.params
        days = values_of(self._day, paper_ids)
        age = np.where(days > 0, np.maximum(0, today - days), params.recency_half_life_days)
        floor = params.recency_floor
        factor = floor + (1.0 - floor) * 0.5 ** (age / params.recency_half_life_days)
        return np.asarray(factor, dtype=np.float64)

    async def sync(self) -> None:
        """Keep every indexed paper's date and title key in memory.

        The first call reads every indexed paper's (published, year, title), :data:`FACTS_PAGE` papers at
        a time (about 0.3 s at 100k; read at once, the rows of every paper were a 30 MB peak at 100k,
        which the store's reading thread then held until its next read); later calls read only papers
        indexed since (new ones, and changed ones: they get a new slot).
        """
        slots = self.index.n_slots
        done = self._synced_slots
        if slots == done:
            return
        new_ids = self.index.slot_ids[done:slots]
        for lo in range(0, len(new_ids), FACTS_PAGE):
            self._take_in(await self.papers.dates_and_titles(new_ids[lo : lo + FACTS_PAGE].tolist()))
        self._synced_slots = max(self._synced_slots, slots)

    def _take_in(self, rows: list[tuple[int, str | None, int | None, str]]) -> None:
        if not rows:
            return
        top = max(r[0] for r in rows) + 1
        if top > len(self._day):
            grow = max(top, len(self._day) + len(self._day) // 4)
            self._day = np.concatenate([self._day, np.zeros(grow - len(self._day), dtype=np.int64)])
            self._title_hash = np.concatenate(
                [self._title_hash, np.zeros(grow - len(self._title_hash), dtype=np.int64)]
            )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._day[ids] = [_ordinal(published, year) for _, published, year, _ in rows]
        self._title_hash[ids] = [_title_hash(title) for *_, title in rows]

    async def short_titles(self, paper_ids: Sequence[int]) -> dict[int, str]:
        """Short titles (for reasons and labels): from the search engine, else the store."""
        found: dict[int, str] = {}
        missing: list[int] = []
        for paper_id in dict.fromkeys(paper_ids):
            try:
                found[paper_id] = short_title(self.titles.title(paper_id))
            except KeyError:  # not indexed (any more)
                missing.append(paper_id)
        if missing:
            for paper_id, _, _, title in await self.papers.dates_and_titles(missing):
                found[paper_id] = short_title(title)
        return found
