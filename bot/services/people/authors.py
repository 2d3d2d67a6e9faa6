"""The author names on the indexed papers: for autocomplete, for the papers under one name, and for
telling apart the people who may share a name.

A name is matched folded (:func:`paperindex.engine.fold`: case, accents and spacing ignored), so
"Ángel Díaz" and "angel diaz" are one name. The directory follows the search index (which holds every
paper's names folded) and shows each name as a paper writes it.

Papers carry names, not people: two people may share a name, and one person's papers may look like
two people's. What the store can tell is which papers under a name are linked by a shared co-author
(directly or through others), so the papers under a name fall into **groups**, each with the
co-authors, venues and years that tell it apart. One group is one person as far as the papers show;
several groups may still be one person who changed collaborators, so the groups are shown for the
person to pick from, never decided for them. How often each happens is measured against OpenReview's
author ids by ``bench/author_groups.py`` (see bench/README.md).
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from paperindex.engine import SearchEngine, fold
from storage.repositories.papers import Credits, PaperRepository

#: new slots of the index read in the event loop; more are read in a worker thread
_INLINE_SLOTS = 2000
#: names whose groups are kept computed (each costs one read of its papers' authors)
_GROUP_CACHE = 256
#: co-authors and venues shown to tell a group apart
SHOWN_COAUTHORS = 3
SHOWN_VENUES = 2

_VENUE_YEAR = re.compile(r"\s*['’]?\b(?:19|20)\d{2}\b")


@dataclass(frozen=True, slots=True)
class NameMatch:
    """A stored name matching what someone typed: its folded key, as a paper writes it, its papers."""

    key: str
    name: str
    papers: int


@dataclass(frozen=True, slots=True)
class AuthorGroup:
    """Papers under one name linked by shared co-authors (one person, as far as the papers show)."""

    #: the group's first paper (lowest id): it names the group
    paper_id: int
    paper_ids: frozenset[int]
    coauthors: tuple[str, ...]  # the most frequent first
    venues: tuple[str, ...]  # without their years, the most frequent first
    years: tuple[int, int] | None  # first and last

    @property
    def papers(self) -> int:
        return len(self.paper_ids)

    def describe(self) -> str:
        """ "with Alan Turing, Grace Hopper · ICML, NeurIPS · 2023–2024 · 2 papers": what tells it apart."""
        parts = []
        if self.coauthors:
            parts.append("with " + ", ".join(self.coauthors[:SHOWN_COAUTHORS]))
        else:
            parts.append("no co-authors")
        if self.venues:
            parts.append(", ".join(self.venues[:SHOWN_VENUES]))
        if self.years is not None:
            first, last = self.years
            parts.append(str(first) if first == last else f"{first}–{last}")
        parts.append(f"{self.papers} paper{'s' if self.papers != 1 else ''}")
        return " · ".join(parts)


def group_papers(key: str, credits: Iterable[Credits]) -> list[AuthorGroup]:
    """The papers under the folded name ``key`` in groups linked by shared co-authors, the largest
    first (then the most recent). A paper without co-authors says nothing either way: it joins the
    largest group (a group of its own only when no paper has co-authors)."""
    papers = sorted(credits, key=lambda c: c.paper_id)
    others = [{fold(a) for a in paper.authors} - {key, ""} for paper in papers]
    parent = list(range(len(papers)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for i, names in enumerate(others):
        for other in names:
            j = first_with.setdefault(other, i)
            if j != i:
                parent[root(i)] = root(j)
    members: dict[int, list[Credits]] = {}
    alone: list[Credits] = []
    for i, paper in enumerate(papers):
        if others[i]:
            members.setdefault(root(i), []).append(paper)
        else:
            alone.append(paper)
    found = list(members.values())
    if alone:
        largest = max(found, key=lambda group: (len(group), -group[0].paper_id), default=None)
        if largest is None:
            found.append(alone)
        else:
            largest.extend(alone)
            largest.sort(key=lambda c: c.paper_id)
    groups = [_group(key, group) for group in found]
    groups.sort(key=lambda g: (-g.papers, -(g.years[1] if g.years else 0), g.paper_id))
    return groups


def _group(key: str, papers: Sequence[Credits]) -> AuthorGroup:
    coauthors: Counter[str] = Counter()
    shown: dict[str, str] = {}
    venues: Counter[str] = Counter()
    for paper in papers:
        for name in paper.authors:
            folded = fold(name)
            if folded and folded != key:
                coauthors[folded] += 1
                shown.setdefault(folded, " ".join(name.split()))
        if paper.venue:
            venue = _VENUE_YEAR.sub("", paper.venue).strip(" ,-") or paper.venue
            venues[venue] += 1
    years = [p.year for p in papers if p.year]
    return AuthorGroup(
        paper_id=papers[0].paper_id,
        paper_ids=frozenset(p.paper_id for p in papers),
        coauthors=tuple(shown[k] for k, _ in sorted(coauthors.items(), key=lambda kv: (-kv[1], kv[0]))),
        venues=tuple(v for v, _ in sorted(venues.items(), key=lambda kv: (-kv[1], kv[0]))),
        years=(min(years), max(years)) if years else None,
    )


@dataclass(slots=True)
class _Names:
    """What the directory holds: every folded name → its papers, and a word → the names having it."""

    slots: int = 0  # index slots read so far
    seen: set[int] = field(default_factory=set)  # papers whose names are in
    papers: dict[str, list[int]] = field(default_factory=dict)
    words: dict[str, list[str]] = field(default_factory=dict)
    sorted_words: list[str] | None = None  # made when first asked
    most: list[tuple[str, int]] | None = None  # the names with the most papers, made when first asked

    def copy(self) -> _Names:
        return _Names(
            self.slots,
            set(self.seen),
            {key: list(ids) for key, ids in self.papers.items()},
            {word: list(keys) for word, keys in self.words.items()},
        )

    def take_in(self, n: int, rows: Iterable[tuple[int, str]]) -> None:
        for paper_id, names in rows:
            if not names or paper_id in self.seen:  # a paper's names, once set, stay as they are
                continue
            self.seen.add(paper_id)
            for key in dict.fromkeys(names.split("\n")):
                if not key:
                    continue
                papers = self.papers.get(key)
                if papers is not None:
                    papers.append(paper_id)
                    continue
                self.papers[key] = [paper_id]
                for word in dict.fromkeys(key.split()):
                    self.words.setdefault(word, []).append(key)
        self.slots = n
        self.sorted_words = self.most = None


class AuthorDirectory:
    """Every folded author name of the indexed papers → those papers.

    Called from the event loop. Taking in many papers (the first look at a large library) builds a
    new copy in a worker thread and swaps it in whole, so autocomplete never waits for it.
    """

    def __init__(self, engine: SearchEngine, papers: PaperRepository) -> None:
        self._engine = engine
        self._papers = papers
        self._catching_up = asyncio.Lock()
        self._names = _Names()
        self._shown: dict[str, str] = {}  # folded name → as a paper writes it (filled when asked)
        self._groups: OrderedDict[str, tuple[int, list[AuthorGroup]]] = OrderedDict()

    async def refresh(self) -> None:
        """Take in the papers the index gained since the last look (in a thread when there are many)."""
        if self._engine.index.n_slots == self._names.slots:
            return
        async with self._catching_up:
            current = self._names
            if self._engine.index.n_slots - current.slots > _INLINE_SLOTS:
                self._names = await asyncio.to_thread(self._taken_in, current)
            else:
                current.take_in(*self._engine.authors_from(current.slots))

    def _taken_in(self, current: _Names) -> _Names:
        n, rows = self._engine.authors_from(current.slots)
        names = current.copy() if current.slots else _Names()
        names.take_in(n, rows)
        return names

    def paper_ids(self, key: str) -> list[int]:
        """The indexed papers under the folded name ``key``, in the order they were indexed."""
        return [paper_id for paper_id in self._names.papers.get(key, ()) if paper_id in self._engine]

    def matches(self, text: str, limit: int = 25) -> list[tuple[str, int]]:
        """(folded name, papers) of the names having a word starting with each typed word: names that
        start with the text first, then those with more papers."""
        names = self._names
        folded = fold(text)
        typed = folded.split()
        if not typed:
            if names.most is None or len(names.most) < limit:
                top = heapq.nsmallest(
                    max(limit, 25), names.papers.items(), key=lambda kv: (-len(kv[1]), kv[0])
                )
                names.most = [(key, len(papers)) for key, papers in top]
            return names.most[:limit]
        if names.sorted_words is None:
            names.sorted_words = sorted(names.words)
        words = names.sorted_words
        candidates: set[str] | None = None
        for word in sorted(set(typed), key=len, reverse=True):  # the longest narrows most
            lo = bisect.bisect_left(words, word)
            hi = bisect.bisect_left(words, word + "\U0010ffff", lo)
            having = {key for w in words[lo:hi] for key in names.words[w]}
            candidates = having if candidates is None else candidates & having
            if not candidates:
                return []
        assert candidates is not None
        ranked = heapq.nsmallest(
            limit, candidates, key=lambda k: (not k.startswith(folded), -len(names.papers[k]), k)
        )
        return [(key, len(names.papers[key])) for key in ranked]

    async def names(self, keys: Sequence[str]) -> dict[str, str]:
        """Each folded name as one of its papers writes it."""
        missing = {key: self.paper_ids(key) for key in keys if key not in self._shown}
        wanted = {key: ids[-1] for key, ids in missing.items() if ids}
        if wanted:
            credits = await self._papers.credits(wanted.values())
            for key, paper_id in wanted.items():
                found = credits.get(paper_id)
                written = [a for a in (found.authors if found else ()) if fold(a) == key]
                self._shown[key] = " ".join(written[0].split()) if written else key
        return {key: self._shown.get(key, key) for key in keys}

    async def groups(self, key: str) -> list[AuthorGroup]:
        """The papers under the folded name ``key`` in groups linked by shared co-authors."""
        ids = self.paper_ids(key)
        cached = self._groups.get(key)
        if cached is not None and cached[0] == len(ids):
            self._groups.move_to_end(key)
            return cached[1]
        groups = group_papers(key, (await self._papers.credits(ids)).values()) if ids else []
        self._groups[key] = (len(ids), groups)
        if len(self._groups) > _GROUP_CACHE:
            self._groups.popitem(last=False)
        return groups
