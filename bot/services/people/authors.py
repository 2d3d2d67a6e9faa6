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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from paperindex.engine import SearchEngine, fold
from paperindex.packed import PackedStrings, encode, sorted_bisect
from storage.repositories.papers import Credits, PaperRepository

#: new slots of the index read in the event loop; more are read in a worker thread
_INLINE_SLOTS = 2000
_TAKE_IN_STEP = 50_000  # papers whose names are read holding the index's lock, at a first look
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
class _Packed:
    """Names taken in at once, as arrays: every folded name (sorted, packed UTF-8) → its papers, and every
    word of them (sorted) → the names having it. At 100k papers the dicts of lists this replaced held
    29 MB of Python objects; these arrays hold 9 MB."""

    names: PackedStrings
    name_ptr: npt.NDArray[np.int64]  # papers of name n: papers[name_ptr[n]:name_ptr[n + 1]]
    papers: npt.NDArray[np.int64]  # in the order they were indexed
    words: PackedStrings
    word_ptr: npt.NDArray[np.int64]  # names having word w: word_names[word_ptr[w]:word_ptr[w + 1]]
    word_names: npt.NDArray[np.int32]
    seen: npt.NDArray[np.int64]  # papers whose names are in, sorted

    @classmethod
    def empty(cls) -> _Packed:
        none = np.zeros(1, dtype=np.int64)
        return cls(PackedStrings(), none, none[:0], PackedStrings(), none, np.zeros(0, np.int32), none[:0])

    @classmethod
    def of(cls, names: _Names) -> _Packed:
        """The arrays of what ``names`` holds (its dicts are then dropped by the caller)."""
        keys = sorted(names.papers)
        number = {key: n for n, key in enumerate(keys)}
        sizes = np.fromiter((len(names.papers[k]) for k in keys), dtype=np.int64, count=len(keys))
        papers = np.fromiter(
            (p for k in keys for p in names.papers[k]), dtype=np.int64, count=int(sizes.sum())
        )
        words = sorted(names.words)
        counts = np.fromiter((len(names.words[w]) for w in words), dtype=np.int64, count=len(words))
        word_names = np.fromiter(
            (number[k] for w in words for k in names.words[w]), dtype=np.int32, count=int(counts.sum())
        )
        seen = np.fromiter(names.seen, dtype=np.int64, count=len(names.seen))
        seen.sort()
        return cls(
            PackedStrings(keys),
            _offsets(sizes),
            papers,
            PackedStrings(words),
            _offsets(counts),
            word_names,
            seen,
        )

    def find(self, key: str) -> int:
        """The number of the folded name ``key``, −1 if it is not here."""
        raw = encode(key)
        at = sorted_bisect(self.names, raw)
        return at if at < len(self.names) and self.names.raw(at) == raw else -1

    def papers_of(self, name: int) -> list[int]:
        found: list[int] = self.papers[self.name_ptr[name] : self.name_ptr[name + 1]].tolist()
        return found

    def having(self, word: str) -> npt.NDArray[np.int32]:
        """The names having a word starting with ``word`` (sorted words: one run of them)."""
        lo = sorted_bisect(self.words, encode(word))
        hi = sorted_bisect(self.words, encode(word + "\U0010ffff"), lo)
        return np.unique(self.word_names[self.word_ptr[lo] : self.word_ptr[hi]])

    def starting(self, text: str) -> tuple[int, int]:
        """The run of names starting with ``text``."""
        lo = sorted_bisect(self.names, encode(text))
        return lo, sorted_bisect(self.names, encode(text + "\U0010ffff"), lo)

    def has_seen(self, paper_id: int) -> bool:
        at = int(np.searchsorted(self.seen, paper_id))
        return at < len(self.seen) and int(self.seen[at]) == paper_id


def _offsets(sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


@dataclass(slots=True)
class _Names:
    """Names taken in one by one since the arrays were made: each folded name → its papers (more of a
    packed name's, or a new name's), and each word of a new name → the new names having it."""

    slots: int = 0  # index slots read so far
    packed: _Packed = field(default_factory=_Packed.empty)
    seen: set[int] = field(default_factory=set)  # papers whose names are in (besides packed.seen)
    papers: dict[str, list[int]] = field(default_factory=dict)
    words: dict[str, list[str]] = field(default_factory=dict)
    more: dict[int, int] = field(default_factory=dict)  # packed name → papers taken in since
    sorted_words: list[str] | None = None  # made when first asked
    most: list[tuple[str, int]] | None = None  # the names with the most papers, made when first asked
    _counts: npt.NDArray[np.int64] | None = None  # papers of each packed name, made when first asked

    def take_in(self, n: int, rows: Iterable[tuple[int, str]]) -> None:
        packed = self.packed
        any_packed = len(packed.names) > 0  # none while the arrays are first gathered: no lookups
        for paper_id, names in rows:
            # a paper's names, once set, stay as they are
            if not names or paper_id in self.seen or (any_packed and packed.has_seen(paper_id)):
                continue
            self.seen.add(paper_id)
            for key in dict.fromkeys(names.split("\n")):
                if not key:
                    continue
                name = packed.find(key) if any_packed else -1
                if name >= 0:
                    self.more[name] = self.more.get(name, 0) + 1
                papers = self.papers.get(key)
                if papers is not None:
                    papers.append(paper_id)
                    continue
                self.papers[key] = [paper_id]
                if name < 0:  # a new name: its words
                    for word in dict.fromkeys(key.split()):
                        self.words.setdefault(word, []).append(key)
        self.slots = n
        self.sorted_words = self.most = self._counts = None

    def counts(self) -> npt.NDArray[np.int64]:
        """Papers of each packed name (with those taken in since)."""
        if self._counts is None:
            counts = np.diff(self.packed.name_ptr)
            if self.more:
                counts[np.fromiter(self.more, dtype=np.int64)] += np.fromiter(self.more.values(), np.int64)
            self._counts = counts
        return self._counts

    def new_names(self) -> Iterator[tuple[str, int]]:
        """The names taken in since that the arrays lack, and their papers."""
        for key, papers in self.papers.items():
            if self.packed.find(key) < 0:
                yield key, len(papers)

    def paper_ids(self, key: str) -> list[int]:
        name = self.packed.find(key)
        found = self.packed.papers_of(name) if name >= 0 else []
        return found + self.papers.get(key, [])


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

    def behind(self) -> bool:
        """Whether the index gained papers since the last look (:meth:`refresh` reads their names)."""
        return self._engine.index.n_slots != self._names.slots

    async def refresh(self) -> None:
        """Take in the papers the index gained since the last look (in a thread when there are many)."""
        if not self.behind():
            return
        async with self._catching_up:
            current = self._names
            if self._engine.index.n_slots - current.slots > _INLINE_SLOTS:
                self._names = await asyncio.to_thread(self._taken_in, current)
            else:
                current.take_in(*self._engine.authors_from(current.slots))

    def _taken_in(self, current: _Names) -> _Names:
        """Every paper's names again, made into arrays (the dicts they are gathered in are dropped)."""
        gathered, n = _Names(), 0
        while True:  # a stretch at a time: a search waits for the index's lock only that long
            n, rows = self._engine.authors_from(n, limit=_TAKE_IN_STEP)
            if not rows:
                break
            gathered.take_in(n, rows)
        del rows
        return _Names(n, _Packed.of(gathered))

    def paper_ids(self, key: str) -> list[int]:
        """The indexed papers under the folded name ``key``, in the order they were indexed."""
        return [paper_id for paper_id in self._names.paper_ids(key) if paper_id in self._engine]

    def matches(self, text: str, limit: int = 25) -> list[tuple[str, int]]:
        """(folded name, papers) of the names having a word starting with each typed word: names that
        start with the text first, then those with more papers."""
        names = self._names
        packed = names.packed
        counts = names.counts()
        folded = fold(text)
        typed = folded.split()
        if not typed:
            if names.most is None or len(names.most) < limit:
                wanted = max(limit, 25)
                # Packed names are sorted: ordering them by number orders them by name.
                best = np.lexsort((np.arange(len(counts)), -counts))[:wanted].tolist()
                ranked = [(packed.names[n], int(counts[n])) for n in best] + list(names.new_names())
                names.most = heapq.nsmallest(wanted, ranked, key=lambda kv: (-kv[1], kv[0]))
            return names.most[:limit]
        if names.sorted_words is None:
            names.sorted_words = sorted(names.words)
        words = names.sorted_words
        found: npt.NDArray[np.int32] | None = None  # packed names
        added: set[str] = set()  # names taken in since that the arrays lack
        for n, word in enumerate(sorted(set(typed), key=len, reverse=True)):  # the longest narrows most
            having = packed.having(word)
            found = having if found is None else np.intersect1d(found, having, assume_unique=True)
            lo = bisect.bisect_left(words, word)
            hi = bisect.bisect_left(words, word + "\U0010ffff", lo)
            more = {key for w in words[lo:hi] for key in names.words[w]}
            added = more if n == 0 else added & more
            if not len(found) and not added:
                return []
        if found is None:
            return []
        lo, hi = packed.starting(folded)
        later = (found < lo) | (found >= hi)
        best = found[np.lexsort((found, -counts[found], later))[:limit]].tolist()
        candidates = [(packed.names[n], int(counts[n])) for n in best]
        candidates += [(key, len(names.papers[key])) for key in added]
        ranked = heapq.nsmallest(
            limit, candidates, key=lambda kv: (not kv[0].startswith(folded), -kv[1], kv[0])
        )
        return ranked

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
