"""Paper search: the BM25 index plus the light metadata filters, autocomplete and snippets need.

Documents are title + abstract, with the title's terms counted :data:`TITLE_WEIGHT` times, plus the
title's phrase terms (adjacent word pairs, :func:`paperindex.tokenizer.phrase_terms`) once.  A
query of at most :data:`PHRASE_MAX_TERMS` terms also asks for its own phrase terms, each with weight
:data:`PHRASE_WEIGHT`, so a paper whose title says "graph neural networks" ranks above one that
mentions graphs and neural networks apart.  Scores are rank-bm25's ``BM25Okapi`` scores on those
token lists, exactly: Σ weight · the score rank-bm25 gives each query token (see
:mod:`paperindex.index`).  These settings were chosen on the tune split of
``bench/keyword_eval.py`` (keyword queries) with BEIR SciFact's training split
(``bench/scifact_eval.py``) kept at or above 0.70; bench/README.md gives the figures.

The engine is safe to call from several threads: every public method holds the index's lock (so
does every method of the index, for callers that use it directly).

Building tokenises every paper in bulk (:mod:`paperindex.bulk_terms`: about 5 s of CPU for 100k
papers, 45 s for 1M, ``bench/build_bench.py``); the bot keeps a
snapshot beside the database (:meth:`SearchEngine.save`, :meth:`SearchEngine.load`, used by
``bot.runtime``) so a restart over an unchanged store loads in well under a second instead. The
snapshot holds numpy arrays and JSON only, checked before use (:mod:`paperindex.snapshot`): a file
beside someone else's database can never run code.
"""

from __future__ import annotations

import bisect
import gc
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from paperindex import snapshot, tokenizer
from paperindex.bulk_terms import document_postings
from paperindex.documents import Document
from paperindex.errors import UnknownPaperError
from paperindex.index import BM25Index, Query
from paperindex.packed import PackedStrings, check_sorted, encode, sorted_bisect
from paperindex.query import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from paperindex.query import PHRASE_MAX_TERMS as PHRASE_MAX_TERMS
from paperindex.query import PHRASE_WEIGHT as PHRASE_WEIGHT
from paperindex.query import ParsedQuery
from paperindex.query import parse_query as parse_query
from paperindex.query import query_weights as query_weights
from paperindex.snapshot import SnapshotError, check_range, expect
from paperindex.titles import TitleWords
from paperindex.tokenizer import WORD_RE, display_terms, iter_terms, normalize, phrase_terms, tokenize
from paperindex.vocabulary import Vocabulary

log = logging.getLogger(__name__)

TITLE_WEIGHT: Final = 3
#: Bump whenever :func:`document_terms` changes (a snapshot of other documents is rebuilt).
DOCUMENT_VERSION: Final = 2
_SIMILAR_TERMS: Final = 10  # terms of the source paper listed (and bolded) for /paper similar
_FILTER_CACHE: Final = 64
_AUTOCOMPLETE_PRESELECT: Final = 200
_ID_PREFIX: Final = 4  # typed characters (one a digit) from which ids starting with them are offered
SNAPSHOT_FORMAT: Final = snapshot.FORMAT
_ARXIV_VERSION_RE: Final = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[a-z]{2})?/\d{7})v\d+$")


@dataclass(frozen=True, slots=True)
class SearchHit:
    paper_id: int
    score: float
    # Query words found in the paper: as the user wrote them (search), else readable forms of
    # the index terms (similar, weighted).
    matched_terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SearchResults:
    hits: list[SearchHit]
    total: int  # papers matching the query and filters (for paging)
    terms: tuple[str, ...]  # index terms of the query (give them to snippet())
    words: tuple[str, ...] = ()  # the same terms as words to show, aligned with ``terms``
    offset: int = 0
    filtered: int | None = None  # papers passing the filters, None without filters
    phrases: tuple[tuple[str, str], ...] = ()  # adjacent term pairs of the query (give them to snippet())


def fold(text: str) -> str:
    """Case-, accent- and width-insensitive form for filters: "Ángel  Díaz" → "angel diaz"."""
    if text.isascii():
        return " ".join(text.casefold().split())
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.casefold().split())


class _FoldedNames(dict[str, str]):
    """name → :func:`fold` of it, folded on first use."""

    def __missing__(self, name: str) -> str:
        folded = self[name] = fold(name)
        return folded


def document_terms(title: str, abstract: str) -> Counter[str]:
    """Term frequencies of a paper: the title's terms :data:`TITLE_WEIGHT` times, the abstract's, and
    the title's phrase terms once.

    The same counts (and first-seen order) as the token list :func:`document_tokens`, the
    document rank-bm25 is given in the benchmarks.
    """
    title_terms = tokenize(title) if title else []
    return Counter(
        chain(
            *([title_terms] * TITLE_WEIGHT), iter_terms(abstract or ""), phrase_terms(title) if title else ()
        )
    )


def document_tokens(title: str, abstract: str) -> list[str]:
    """The token list of a paper as rank-bm25 would be given it (what :func:`document_terms` counts)."""
    return tokenize(title) * TITLE_WEIGHT + tokenize(abstract) + phrase_terms(title)


_DEFAULTS: Final = tuple(Document._field_defaults.values())  # authors, venue, year, external_ids
_Fields = tuple[int, str, str, tuple[str, ...], str | None, int | None, tuple[str, ...]]


def _row_fields(row: Document | Sequence[Any]) -> _Fields:
    """A row's fields, read in Document's field order (any tuple of 3 to 7 of them)."""
    fields = tuple(row)
    paper_id, title, abstract = fields[:3]
    authors, venue, year, external_ids = fields[3:] + _DEFAULTS[len(fields) - 3 :]
    return (int(paper_id), title or "", abstract or "", tuple(authors), venue, year, tuple(external_ids))


@dataclass(slots=True)
class _Meta:
    """Per-slot metadata, aligned with the index's slots: packed UTF-8 (a later start's mapped from the
    snapshot), each decoded when asked."""

    titles: PackedStrings = field(default_factory=PackedStrings)
    authors: PackedStrings = field(default_factory=PackedStrings)  # folded names joined by "\n"
    # the venues and years are the engine's arrays only (``_venues``, ``_years``): a list of Python
    # ints beside them was a copy of every paper's


class SearchEngine:
    """BM25 search over papers, with filters, similar papers, weighted queries, autocomplete."""

    def __init__(self) -> None:
        self.index = BM25Index()
        self.vocabulary = Vocabulary()  # the word shown for each term (the papers' most common one)
        self._lock = self.index.lock  # one lock: no ordering between two to get wrong
        self._meta = _Meta()
        self._venue_names: list[str] = []
        self._venue_folded: list[str] = []
        self._venue_code: dict[str, int] = {}
        self._years = np.zeros(0, dtype=np.int32)
        self._venues = np.zeros(0, dtype=np.int32)
        self._title_len = np.zeros(0, dtype=np.int32)
        self._title_words = TitleWords()
        self._external = ExternalIds()
        self._filter_cache: dict[tuple[str, str], npt.NDArray[np.bool_]] = {}

    @classmethod
    def build(cls, rows: Iterable[Document | Sequence[Any]]) -> SearchEngine:
        """An engine holding ``rows`` (fine to run in a worker thread; plain tuples in Document's order)."""
        engine = cls()
        engine.add(rows)
        return engine

    # --------------------------------------------------------------------------- snapshots
    def save(self, path: Path, fingerprint: str) -> None:
        """Write the engine to ``path`` atomically, as numpy arrays and JSON (:mod:`paperindex.snapshot`).

        The state is gathered holding the lock (references and small copies); the file is written after,
        so searches need not wait for the disk.
        """
        with self._lock:
            index_meta, arrays, strings = self.index.snapshot_state()
            meta = {
                "format": SNAPSHOT_FORMAT,
                "tokenizer": tokenizer.TOKENIZER_VERSION,
                "documents": DOCUMENT_VERSION,
                "fingerprint": fingerprint,
                "index": index_meta,
                "title_segments": self._title_words.save(arrays, strings),
            }
            strings["engine.titles"] = self._meta.titles
            strings["engine.authors"] = self._meta.authors
            strings["engine.venue_names"] = list(self._venue_names)
            strings["engine.external"], arrays["engine.external_papers"] = self._external.sorted_items()
            arrays["engine.venues"] = self._venues
            arrays["engine.years"] = self._years
        self.vocabulary.save(arrays, strings)
        snapshot.write(path, meta, arrays, strings)

    @classmethod
    def load(cls, path: Path, fingerprint: str) -> SearchEngine | None:
        """The engine saved at ``path`` for ``fingerprint``; None (with a log line) if absent, stale,
        written by another version, corrupt or foreign. Nothing in the file is used before it is checked."""
        try:
            with snapshot.Snapshot(path) as saved:
                meta = saved.meta
                expect(isinstance(meta, dict), "no metadata")
                if meta.get("format") != SNAPSHOT_FORMAT:
                    log.warning(
                        "search snapshot %s has format %r, not %d: rebuilding it",
                        path,
                        meta.get("format"),
                        SNAPSHOT_FORMAT,
                    )
                    return None
                if (
                    meta.get("tokenizer") != tokenizer.TOKENIZER_VERSION
                    or meta.get("documents") != DOCUMENT_VERSION
                    or meta.get("fingerprint") != fingerprint
                ):
                    log.info("search snapshot %s is stale: rebuilding", path)
                    return None
                engine = cls._from_snapshot(meta, saved)
        except FileNotFoundError:
            return None
        except SnapshotError as error:
            log.warning("ignoring search snapshot %s (%s): rebuilding it", path, error)
            return None
        except Exception:  # a file nobody foresaw: a cache is rebuilt, never trusted or fatal
            log.warning("ignoring search snapshot %s (unreadable): rebuilding it", path, exc_info=True)
            return None
        return engine

    @classmethod
    def _from_snapshot(cls, meta: dict[str, Any], saved: snapshot.Snapshot) -> SearchEngine:
        index = BM25Index.from_snapshot(meta.get("index"), saved)
        n = index.n_slots
        titles = saved.packed("engine.titles", length=n)
        authors = saved.packed("engine.authors", length=n)
        venue_names = saved.strings("engine.venue_names")
        venue_code = {name: code for code, name in enumerate(venue_names)}
        expect(len(venue_code) == len(venue_names), "engine.venue_names: a venue twice")
        venues = saved.array("engine.venues", (np.int32,), length=n)
        check_range("engine.venues", venues, -1, len(venue_names))
        years = saved.array("engine.years", (np.int32,), length=n)
        title_words = TitleWords.from_snapshot(meta.get("title_segments"), saved, n)
        external_keys = saved.packed("engine.external")
        expect(check_sorted(external_keys), "engine.external: not sorted")
        external_papers = saved.array("engine.external_papers", (np.int64,), length=len(external_keys))
        external = ExternalIds(external_keys, external_papers)
        engine = cls()
        engine.vocabulary = Vocabulary.from_snapshot(saved)
        engine.index = index
        engine._lock = index.lock
        engine._meta = _Meta(titles, authors)
        engine._venue_names = venue_names
        engine._venue_folded = [fold(name) for name in venue_names]
        engine._venue_code = venue_code
        engine._years = years
        engine._venues = venues
        engine._title_len = titles.char_lengths()
        engine._title_words = title_words
        engine._external = external
        return engine

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.index

    # --------------------------------------------------------------------------- adding
    def add(self, rows: Iterable[Document | Sequence[Any]]) -> None:
        """Index papers; a paper id already indexed is replaced by its new text and metadata."""
        latest: dict[int, tuple[Any, ...]] = {}
        for row in rows:
            fields = _row_fields(row)
            latest.pop(fields[0], None)  # keep the last version, in its position
            latest[fields[0]] = fields
        if not latest:
            return
        ids = list(latest)
        # Many short-lived objects (the pieces of text first seen, the rows' fields): the cyclic GC
        # would rescan the heap many times over and can find no cycles here.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            papers = list(latest.values())
            postings = document_postings(
                [f[1] for f in papers], [f[2] for f in papers], title_weight=TITLE_WEIGHT
            )
        finally:
            if gc_was_enabled:
                gc.enable()
        self.vocabulary.learn_words(postings.words, postings.word_counts)
        with self._lock:
            first_slot = self.index.n_slots
            self.index.add_postings(
                ids, postings.n_unique, postings.term_ids, postings.tf, postings.terms, merge=False
            )
            meta = self._meta
            folded = _FoldedNames().__getitem__  # a name is on many papers: fold it once
            venue_codes: list[int] = []
            years: list[int] = []
            for pid, title, _, authors, venue, year, external in latest.values():
                meta.titles.append(title)
                meta.authors.append("\n".join(map(folded, authors)))
                venue_codes.append(self._venue(venue))
                years.append(int(year) if year else 0)  # 0 = unknown
                for ext in external:
                    self._external.put(_external_key(ext), pid)
            self._years = np.concatenate([self._years, np.array(years, dtype=np.int32)])
            self._venues = np.concatenate([self._venues, np.array(venue_codes, dtype=np.int32)])
            lengths = np.fromiter(map(len, meta.titles[first_slot:]), dtype=np.int32)
            self._title_len = np.concatenate([self._title_len, lengths])
            self._filter_cache.clear()
            self._title_words.append(self._meta.titles, first_slot, self.index.n_slots)
        # Merges run without the lock, so searches go on meanwhile (paperindex.merges).
        self.index.merge_segments()
        self._title_words.merge(self._lock, self._meta.titles)

    def remove(self, paper_ids: Iterable[int]) -> None:
        """Take papers out of the index (unknown ids are ignored)."""
        with self._lock:
            self.index.remove(paper_ids)
            self._filter_cache.clear()

    def _venue(self, venue: str | None) -> int:
        if not venue:
            return -1
        code = self._venue_code.get(venue)
        if code is None:
            code = self._venue_code[venue] = len(self._venue_names)
            self._venue_names.append(venue)
            self._venue_folded.append(fold(venue))
        return code

    # --------------------------------------------------------------------------- filters
    def _filter_mask(
        self, author: str | None, venue: str | None, year: int | None
    ) -> npt.NDArray[np.bool_] | None:
        mask: npt.NDArray[np.bool_] | None = None
        if author and author.strip():
            mask = self._cached("author", fold(author), self._author_mask)
        if venue and venue.strip():
            venue_mask = self._cached("venue", fold(venue), self._venue_mask)
            mask = venue_mask if mask is None else mask & venue_mask
        if year is not None:
            year_mask = self._years == int(year)
            mask = year_mask if mask is None else mask & year_mask
        return mask

    def _cached(self, kind: str, needle: str, compute: Any) -> npt.NDArray[np.bool_]:
        key = (kind, needle)
        mask = self._filter_cache.get(key)
        if mask is None:
            if len(self._filter_cache) >= _FILTER_CACHE:
                self._filter_cache.pop(next(iter(self._filter_cache)))
            mask = self._filter_cache[key] = compute(needle)
        return mask

    def _author_mask(self, needle: str) -> npt.NDArray[np.bool_]:
        names = self._meta.authors
        mask = np.zeros(len(names), dtype=bool)
        mask[names.containing(needle)] = True
        return mask

    def _venue_mask(self, needle: str) -> npt.NDArray[np.bool_]:
        codes = [c for c, name in enumerate(self._venue_folded) if needle in name]
        return np.isin(self._venues, np.array(codes, dtype=np.int32))

    # --------------------------------------------------------------------------- queries
    def validate_query(self, query: str) -> tuple[str, ...]:
        """The index terms of ``query``, or QueryError with a message for the user."""
        return ParsedQuery.parse(query).terms

    def search(
        self,
        query: str | ParsedQuery,
        *,
        limit: int = 5,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        exclude: Collection[int] = (),
        matched: bool = True,
        forms: Iterable[tuple[str, str, float]] = (),
    ) -> SearchResults:
        """Papers matching ``query`` (best first), ``limit`` from ``offset``, and how many match.

        Filters: ``author`` is a case- and accent-insensitive substring of one author's name,
        ``venue`` a substring of the venue, ``year`` exact.  Filters that match no paper give
        empty results (``filtered`` = 0).  Each hit names the query's words it holds (left empty with
        ``matched=False``, for a caller that shows no snippet).  ``forms``: (word, term, weight) asked
        for besides the query's own terms (other forms of its words, :mod:`paperindex.word_forms`).
        ``query`` is read here unless it was already (:meth:`ParsedQuery.parse`, once per request).
        """
        _check_page(limit, offset)
        parsed = query if isinstance(query, ParsedQuery) else ParsedQuery.parse(query)
        word_of = dict(zip(parsed.terms, parsed.words, strict=True))
        weights = dict(parsed.weights)
        for word, term, weight in forms:
            weights[term] = weights.get(term, 0.0) + weight
            if tokenizer.PHRASE_JOIN not in term:
                word_of.setdefault(term, word)
        with self._lock:
            hits, total, filtered = self._ranked_page(
                weights,
                word_of,
                limit=limit,
                offset=offset,
                author=author,
                venue=venue,
                year=year,
                exclude=exclude,
                matched=matched,
            )
        terms, words = tuple(word_of), tuple(word_of.values())
        return SearchResults(hits, total, terms, words, offset, filtered, parsed.phrases)

    def newest(
        self,
        paper_ids: Iterable[int],
        *,
        limit: int = 5,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
    ) -> SearchResults:
        """Those of ``paper_ids`` in the index under the filters, newest year first (then the latest
        added), ``limit`` from ``offset``: a listing with no query to rank by (an author's papers)."""
        _check_page(limit, offset)
        with self._lock:
            index = self.index
            slots = np.array([index.slot_of(p) for p in set(paper_ids) if p in index], dtype=np.int64)
            mask = self._filter_mask(author, venue, year)
            filtered = None if mask is None else int(np.count_nonzero(mask & index.alive))
            if mask is not None:
                slots = slots[mask[slots]]
            order = np.lexsort((-slots, -self._years[slots]))[offset : offset + limit]
            hits = [SearchHit(int(index.slot_ids[s]), 0.0, ()) for s in slots[order].tolist()]
        return SearchResults(hits, len(slots), (), (), offset, filtered)

    def similar(
        self,
        paper_id: int,
        *,
        limit: int = 5,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        exclude: Collection[int] = (),
    ) -> SearchResults:
        """Papers ranked against ``paper_id``'s own title and abstract, the paper itself left out.

        The query is the paper's own token list (title weighted as in the index), so a term the
        paper repeats counts that many times, as a rank-bm25 query with those tokens would.
        """
        _check_page(limit, offset)
        with self._lock:
            if paper_id not in self.index:
                raise UnknownPaperError(f"There is no paper #{paper_id} in the search index.")
            query = self.index.doc_terms(paper_id)
            weights = {t: tf * self.index.idf(t) for t, tf in query.items()}
            top = sorted(weights, key=lambda t: (-weights[t], t))[:_SIMILAR_TERMS]
            # Words as the source paper's title writes them, else the corpus's commonest form.
            in_title = {
                term: _display_form(word)
                for word, term in display_terms(self._meta.titles[self.index.slot_of(paper_id)])
            }
            shown = {t: in_title.get(t) or self.vocabulary.form(t) for t in top}
            hits, total, filtered = self._ranked_page(
                query,
                shown,
                limit=limit,
                offset=offset,
                author=author,
                venue=venue,
                year=year,
                exclude={*exclude, paper_id},
            )
        return SearchResults(hits, total, tuple(top), tuple(shown[t] for t in top), offset, filtered)

    def _ranked_page(
        self,
        query: Query,
        shown: Mapping[str, str],
        *,
        limit: int,
        offset: int,
        author: str | None,
        venue: str | None,
        year: int | None,
        exclude: Collection[int],
        matched: bool = True,
    ) -> tuple[list[SearchHit], int, int | None]:
        """One page of ``query`` under the filters: the hits (each naming the terms of ``shown`` it
        holds, as ``shown`` writes them, unless not ``matched``), how many match, and how many papers
        the filters leave (None without filters). The caller holds the lock."""
        mask = self._filter_mask(author, venue, year)
        filtered = None if mask is None else int(np.count_nonzero(mask & self.index.alive))
        ranked, total = self.index.rank(query, limit, offset=offset, allowed=mask, exclude=exclude)
        if not matched:
            return [SearchHit(pid, score, ()) for pid, score in ranked], total, filtered
        found = self.index.matched_terms_many([pid for pid, _ in ranked], shown)
        hits = [
            SearchHit(pid, score, tuple(shown[t] for t in matched))
            for (pid, score), matched in zip(ranked, found, strict=True)
        ]
        return hits, total, filtered

    def weighted(
        self,
        query: Mapping[str, float],
        *,
        limit: int,
        offset: int = 0,
        exclude: Collection[int] = (),
        allowed: Collection[int] | npt.NDArray[np.bool_] | None = None,
        matched: bool = True,
    ) -> list[SearchHit]:
        """Best papers for a weighted query (term → weight; Σ weight · BM25 of the term).

        Only papers holding at least one positively weighted term are returned; their
        ``matched_terms`` are those terms as readable words, strongest weight first (left empty
        with ``matched=False``, for a caller that works them out itself).
        """
        _check_page(limit, offset)
        positive = sorted((t for t, w in query.items() if w > 0), key=lambda t: -query[t])
        with self._lock:
            ranked, _ = self.index.rank(query, limit, offset=offset, allowed=allowed, exclude=exclude)
            if not matched:
                return [SearchHit(pid, score, ()) for pid, score in ranked]
            return [
                SearchHit(pid, score, tuple(map(self.vocabulary.form, found)))
                for (pid, score), found in zip(
                    ranked, self.index.matched_terms_many([p for p, _ in ranked], positive), strict=True
                )
            ]

    def title(self, paper_id: int) -> str:
        with self._lock:
            return self._meta.titles[self.index.slot_of(paper_id)]

    def authors_from(self, slot: int, limit: int | None = None) -> tuple[int, list[tuple[int, str]]]:
        """The slot after the last one read, and for each slot from ``slot`` on (``limit`` of them at
        most: the lock is held while they are read) its paper's id and its authors' names folded
        (:func:`fold`), one per line: what ``bot.services.people.authors`` follows."""
        with self._lock:
            n = self.index.n_slots if limit is None else min(self.index.n_slots, slot + limit)
            ids = self.index.slot_ids[slot:n].tolist()
            return n, list(zip(ids, self._meta.authors[slot:n], strict=True))

    def names_author(self, name: str) -> bool:
        """Whether an indexed paper has an author named ``name`` (folded, :func:`fold`): a look through
        the packed names, no directory needed (2 ms at 100k papers)."""
        key = fold(name)
        if not key:
            return False
        with self._lock:
            names = self._meta.authors
            return any(key in names[n].split("\n") for n in names.containing(key).tolist())

    # --------------------------------------------------------------------------- autocomplete
    def autocomplete(self, text: str, limit: int = 25) -> list[tuple[int, str]]:
        """Up to ``limit`` (paper id, title) for what a user has typed so far.

        An id ("123", "#123") or an external id (arXiv with or without version, OpenReview id,
        DOI) comes first, then the ids starting with the text (from four characters, one a digit:
        an arXiv id being typed); then titles having a word starting with each typed word, ranked by
        whole-word matches, then titles starting with the text, then shorter titles, then newer.
        Empty text lists the most recently added papers.
        """
        if limit <= 0:
            return []
        with self._lock:
            return self._autocomplete(text.strip(), limit)

    def _external_starting(self, key: str, limit: int) -> list[int]:
        """Papers whose arXiv / OpenReview id or DOI starts with ``key`` (at most ``limit``)."""
        return self._external.starting(key, limit)

    def _autocomplete(self, text: str, limit: int) -> list[tuple[int, str]]:
        index, titles = self.index, self._meta.titles
        alive = index.alive
        out: list[tuple[int, str]] = []
        seen: set[int] = set()

        def put(pid: int) -> None:
            if pid not in seen and pid in index:
                seen.add(pid)
                out.append((pid, titles[index.slot_of(pid)]))

        if not text:
            for slot in np.flatnonzero(alive)[::-1][:limit].tolist():
                put(int(index.slot_ids[slot]))
            return out
        bare = text.removeprefix("#").strip()
        if bare.isdigit() and len(bare) < 19:
            put(int(bare))
        key = _external_key(text)
        ext = self._external.get(key)
        if ext is not None:
            put(ext)
        if len(key) >= _ID_PREFIX and " " not in key and any(c.isdigit() for c in key):
            for pid in self._external_starting(key, limit):  # an id being typed: "2401.012"
                put(pid)
        words = WORD_RE.findall(normalize(text))[:12]
        if not words or len(out) >= limit:
            return out[:limit]
        n = index.n_slots
        candidates = alive.copy()
        exact = np.zeros(n, dtype=np.int16)
        for word in words:
            prefix = np.zeros(n, dtype=bool)
            self._title_words.mark(word, prefix, exact)
            candidates &= prefix
        cand = np.flatnonzero(candidates)
        if not len(cand):
            return out[:limit]
        order = np.lexsort((-cand, self._title_len[cand], -exact[cand]))
        pre = cand[order[:_AUTOCOMPLETE_PRESELECT]].tolist()
        folded = " ".join(words)
        pre.sort(
            key=lambda s: (
                -int(exact[s]),
                not " ".join(WORD_RE.findall(normalize(titles[s]))).startswith(folded),
                int(self._title_len[s]),
                -s,
            )
        )
        for slot in pre:
            if len(out) >= limit:
                break
            put(int(index.slot_ids[slot]))
        return out[:limit]


class ExternalIds:
    """External id (arXiv, OpenReview, DOI, as :func:`_external_key` writes it) → paper id.

    Those of a snapshot stay packed and sorted (:class:`paperindex.packed.PackedStrings`, found by
    binary search); those added since are a dict, and win over the packed ones."""

    def __init__(
        self, keys: PackedStrings | None = None, papers: npt.NDArray[np.int64] | None = None
    ) -> None:
        self._keys = keys if keys is not None else PackedStrings()
        self._papers = papers if papers is not None else np.zeros(0, dtype=np.int64)
        self._added: dict[str, int] = {}
        self._added_sorted: list[str] | None = None  # the keys of _added, sorted when asked

    def put(self, key: str, paper_id: int) -> None:
        self._added[key] = paper_id
        self._added_sorted = None

    def get(self, key: str) -> int | None:
        found = self._added.get(key)
        if found is not None:
            return found
        raw = encode(key)
        at = sorted_bisect(self._keys, raw)
        if at < len(self._keys) and self._keys.raw(at) == raw:
            return int(self._papers[at])
        return None

    def starting(self, key: str, limit: int) -> list[int]:
        """Papers of the keys starting with ``key``, in the keys' order (at most ``limit``)."""
        raw = encode(key)
        lo = sorted_bisect(self._keys, raw)
        hi = sorted_bisect(self._keys, encode(key + "\U0010ffff"), lo, min(len(self._keys), lo + limit))
        found = {self._keys[n]: int(self._papers[n]) for n in range(lo, hi)}
        if self._added_sorted is None:
            self._added_sorted = sorted(self._added)
        added = self._added_sorted
        a = bisect.bisect_left(added, key)
        b = bisect.bisect_left(added, key + "\U0010ffff", a, min(len(added), a + limit))
        found.update((k, self._added[k]) for k in added[a:b])
        return [found[k] for k in sorted(found)[:limit]]

    def sorted_items(self) -> tuple[Sequence[str], npt.NDArray[np.int64]]:
        """Every key, sorted, and its paper: what a snapshot saves."""
        if not self._added:
            return self._keys, self._papers
        merged = dict(zip(self._keys, self._papers.tolist(), strict=True))
        merged.update(self._added)
        keys = sorted(merged)
        return keys, np.fromiter((merged[k] for k in keys), dtype=np.int64, count=len(keys))


def _display_form(word: str) -> str:
    """ "Federated" (sentence case) → "federated"; acronyms and mixed case ("KV", "LoRA") stay."""
    return word.lower() if word[:1].isupper() and word[1:].islower() else word


def _external_key(external_id: str) -> str:
    key = external_id.strip().casefold()
    for prefix in ("arxiv:", "https://arxiv.org/abs/", "http://arxiv.org/abs/", "doi:"):
        key = key.removeprefix(prefix)
    match = _ARXIV_VERSION_RE.match(key)
    return match.group(1) if match else key


def _check_page(limit: int, offset: int) -> None:
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if offset < 0:
        raise ValueError(f"offset must not be negative, not {offset}")
