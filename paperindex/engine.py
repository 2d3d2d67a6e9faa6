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
import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from paperindex import snapshot, tokenizer
from paperindex.bulk_terms import document_postings, title_words
from paperindex.documents import Document
from paperindex.errors import QueryError, UnknownPaperError
from paperindex.index import BM25Index, Query
from paperindex.merges import MergeJob, due_pair, replace_pair, run_merges
from paperindex.snapshot import SnapshotError, check_offsets, check_range, expect
from paperindex.tokenizer import (
    WORD_RE,
    display_terms,
    iter_terms,
    normalize,
    phrase_spans,
    phrase_terms,
    surface_form,
    tokenize,
)

log = logging.getLogger(__name__)

TITLE_WEIGHT: Final = 3
PHRASE_WEIGHT: Final = 0.3
PHRASE_MAX_TERMS: Final = 5  # longer queries (sentences, claims) ask for no phrases
#: Bump whenever :func:`document_terms` changes (a snapshot of other documents is rebuilt).
DOCUMENT_VERSION: Final = 2
MAX_QUERY_CHARS: Final = 300
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


def query_weights(query: str) -> dict[str, float]:
    """The weighted terms a search asks for: each term as often as the query holds it, and, for a
    query of at most :data:`PHRASE_MAX_TERMS` distinct terms, each phrase term :data:`PHRASE_WEIGHT`."""
    weights: dict[str, float] = {}
    for term in tokenize(query):  # with repeats: a repeated word counts again, as in rank-bm25
        weights[term] = weights.get(term, 0.0) + 1.0
    if len(weights) <= PHRASE_MAX_TERMS:
        for phrase in phrase_terms(query):
            weights[phrase] = weights.get(phrase, 0.0) + PHRASE_WEIGHT
    return weights


def parse_query(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(distinct index terms, words as typed) of a query, or QueryError saying what is wrong."""
    text = query.strip()
    if not text:
        raise QueryError("The search query is empty: type a few words to look for.")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            f"The search query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}. "
            "Try a few key words instead."
        )
    pairs = display_terms(text)
    if not pairs:
        if not WORD_RE.search(normalize(text)):
            raise QueryError(
                "The search query has no words in it (only symbols or emoji): type a few words to look for."
            )
        raise QueryError(
            "The search query only has very common words (like “the” or “of”) or single letters, "
            "which every paper contains: add a more specific word."
        )
    words = tuple(word for word, _ in pairs)
    terms = tuple(term for _, term in pairs)
    return terms, words


_DEFAULTS: Final = tuple(Document._field_defaults.values())  # authors, venue, year, external_ids
_Fields = tuple[int, str, str, tuple[str, ...], str | None, int | None, tuple[str, ...]]


def _row_fields(row: Document | Sequence[Any]) -> _Fields:
    """A row's fields, read in Document's field order (any tuple of 3 to 7 of them)."""
    fields = tuple(row)
    paper_id, title, abstract = fields[:3]
    authors, venue, year, external_ids = fields[3:] + _DEFAULTS[len(fields) - 3 :]
    return (int(paper_id), title or "", abstract or "", tuple(authors), venue, year, tuple(external_ids))


@dataclass(slots=True)
class _TitleSegment:
    """Title words of slots [start, stop): sorted distinct words → slots (CSR)."""

    start: int
    stop: int
    words: list[str]
    indptr: npt.NDArray[np.int64]
    slots: npt.NDArray[np.int32]


def _title_count(segment: _TitleSegment) -> int:
    return segment.stop - segment.start


def _build_title_segment(titles: Sequence[str], start: int, stop: int) -> _TitleSegment:
    names, ptr, flat = title_words(titles[start:stop])
    words = sorted(names)
    rank = np.empty(len(words), dtype=np.int64)
    word_id = {w: n for n, w in enumerate(names)}
    rank[np.fromiter(map(word_id.__getitem__, words), dtype=np.int64, count=len(words))] = np.arange(
        len(words)
    )
    keys = rank[flat]
    slots_of = np.repeat(np.arange(start, stop, dtype=np.int32), np.diff(ptr))
    order = np.argsort(keys, kind="stable")
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=len(words)), out=indptr[1:])
    return _TitleSegment(start, stop, words, indptr, slots_of[order])


@dataclass(slots=True)
class _Meta:
    """Per-slot metadata, aligned with the index's slots."""

    titles: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)  # folded names joined by "\n"
    # the venues and years are the engine's arrays only (``_venues``, ``_years``): a list of Python
    # ints beside them was a copy of every paper's


class SearchEngine:
    """BM25 search over papers, with filters, similar papers, weighted queries, autocomplete."""

    def __init__(self) -> None:
        self.index = BM25Index()
        self._lock = self.index.lock  # one lock: no ordering between two to get wrong
        self._meta = _Meta()
        self._venue_names: list[str] = []
        self._venue_folded: list[str] = []
        self._venue_code: dict[str, int] = {}
        self._years = np.zeros(0, dtype=np.int32)
        self._venues = np.zeros(0, dtype=np.int32)
        self._title_len = np.zeros(0, dtype=np.int32)
        self._title_segments: list[_TitleSegment] = []
        self._merging_titles = threading.Lock()  # one title merge at a time; searches never take it
        self._external: dict[str, int] = {}
        self._external_sorted: list[str] | None = None  # the keys of _external, sorted when asked
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
            segments = list(self._title_segments)
            meta = {
                "format": SNAPSHOT_FORMAT,
                "tokenizer": tokenizer.TOKENIZER_VERSION,
                "documents": DOCUMENT_VERSION,
                "fingerprint": fingerprint,
                "index": index_meta,
                "title_segments": [[seg.start, seg.stop] for seg in segments],
            }
            strings["engine.titles"] = list(self._meta.titles)
            strings["engine.authors"] = list(self._meta.authors)
            strings["engine.venue_names"] = list(self._venue_names)
            strings["engine.external"] = list(self._external)
            arrays["engine.external_papers"] = np.fromiter(self._external.values(), dtype=np.int64)
            arrays["engine.venues"] = self._venues
            arrays["engine.years"] = self._years
            for n, seg in enumerate(segments):
                strings[f"engine.title{n}.words"] = seg.words
                arrays[f"engine.title{n}.indptr"] = seg.indptr
                arrays[f"engine.title{n}.slots"] = seg.slots
        # The tokenizer's surface forms (which word to show for a term), as (term, word, count) rows.
        forms = [
            (term, word, n) for term, words in tokenizer.surface_counts().items() for word, n in words.items()
        ]
        strings["surface.terms"] = [term for term, _, _ in forms]
        strings["surface.words"] = [word for _, word, _ in forms]
        arrays["surface.counts"] = np.fromiter((n for _, _, n in forms), dtype=np.int64, count=len(forms))
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
                engine, surface = cls._from_snapshot(meta, saved)
        except FileNotFoundError:
            return None
        except SnapshotError as error:
            log.warning("ignoring search snapshot %s (%s): rebuilding it", path, error)
            return None
        except Exception:  # a file nobody foresaw: a cache is rebuilt, never trusted or fatal
            log.warning("ignoring search snapshot %s (unreadable): rebuilding it", path, exc_info=True)
            return None
        tokenizer.merge_surface_counts(surface)
        return engine

    @classmethod
    def _from_snapshot(
        cls, meta: dict[str, Any], saved: snapshot.Snapshot
    ) -> tuple[SearchEngine, list[tuple[str, str, int]]]:
        index = BM25Index.from_snapshot(meta.get("index"), saved)
        n = index.n_slots
        titles = saved.strings("engine.titles", length=n)
        authors = saved.strings("engine.authors", length=n)
        venue_names = saved.strings("engine.venue_names")
        venue_code = {name: code for code, name in enumerate(venue_names)}
        expect(len(venue_code) == len(venue_names), "engine.venue_names: a venue twice")
        venues = saved.array("engine.venues", (np.int32,), length=n)
        check_range("engine.venues", venues, -1, len(venue_names))
        years = saved.array("engine.years", (np.int32,), length=n)
        segments = cls._title_segments_from(meta.get("title_segments"), saved, n)
        external_keys = saved.strings("engine.external")
        external_papers = saved.array("engine.external_papers", (np.int64,), length=len(external_keys))
        external = dict(zip(external_keys, external_papers.tolist(), strict=True))
        surface_terms = saved.strings("surface.terms")
        surface_words = saved.strings("surface.words", length=len(surface_terms))
        counts = saved.array("surface.counts", (np.int64,), length=len(surface_terms))
        check_range("surface.counts", counts, 1, 1 << 62)
        surface = list(zip(surface_terms, surface_words, counts.tolist(), strict=True))
        engine = cls()
        engine.index = index
        engine._lock = index.lock
        engine._meta = _Meta(titles, authors)
        engine._venue_names = venue_names
        engine._venue_folded = [fold(name) for name in venue_names]
        engine._venue_code = venue_code
        engine._years = years
        engine._venues = venues
        engine._title_len = np.fromiter(map(len, titles), dtype=np.int32, count=n)
        engine._title_segments = segments
        engine._external = external
        return engine, surface

    @staticmethod
    def _title_segments_from(layout: Any, saved: snapshot.Snapshot, n_slots: int) -> list[_TitleSegment]:
        expect(isinstance(layout, list), "no title segments")
        segments: list[_TitleSegment] = []
        start = 0
        for n, entry in enumerate(layout):
            expect(
                isinstance(entry, list) and len(entry) == 2 and all(type(v) is int for v in entry),
                f"title segment {n} badly described",
            )
            lo, hi = entry
            expect(lo == start and lo <= hi <= n_slots, f"title segment {n} out of place")
            words = saved.strings(f"engine.title{n}.words")
            expect(all(a < b for a, b in pairwise(words)), f"engine.title{n}.words: not sorted")
            indptr = saved.array(f"engine.title{n}.indptr", (np.int64,), length=len(words) + 1)
            slots = saved.array(f"engine.title{n}.slots", (np.int32,))
            check_offsets(f"engine.title{n}.indptr", indptr, len(slots))
            check_range(f"engine.title{n}.slots", slots, lo, hi)
            segments.append(_TitleSegment(lo, hi, words, indptr, slots))
            start = hi
        expect(start == n_slots, "the title segments do not cover every slot")
        return segments

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
                    self._external[_external_key(ext)] = pid
                    self._external_sorted = None
            self._years = np.concatenate([self._years, np.array(years, dtype=np.int32)])
            self._venues = np.concatenate([self._venues, np.array(venue_codes, dtype=np.int32)])
            lengths = np.fromiter(map(len, meta.titles[first_slot:]), dtype=np.int32)
            self._title_len = np.concatenate([self._title_len, lengths])
            self._filter_cache.clear()
            self._title_segments.append(
                _build_title_segment(self._meta.titles, first_slot, self.index.n_slots)
            )
        # Merges run without the lock, so searches go on meanwhile (paperindex.merges).
        self.index.merge_segments()
        run_merges(self._lock, self._merging_titles, self._due_title_merge, self._install_titles)

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

    def _due_title_merge(self) -> MergeJob[_TitleSegment] | None:
        pair = due_pair(self._title_segments, _title_count, 6)
        if pair is None:
            return None
        titles, start, stop = self._meta.titles, pair[0].start, pair[1].stop
        # Titles are only ever appended: the slots start..stop are there for good.
        return MergeJob(*pair, lambda: _build_title_segment(titles, start, stop))

    def _install_titles(self, job: MergeJob[_TitleSegment], merged: _TitleSegment) -> None:
        replace_pair(self._title_segments, job, merged)

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
        return np.fromiter((needle in n for n in names), dtype=bool, count=len(names))

    def _venue_mask(self, needle: str) -> npt.NDArray[np.bool_]:
        codes = [c for c, name in enumerate(self._venue_folded) if needle in name]
        return np.isin(self._venues, np.array(codes, dtype=np.int32))

    # --------------------------------------------------------------------------- queries
    def validate_query(self, query: str) -> tuple[str, ...]:
        """The index terms of ``query``, or QueryError with a message for the user."""
        return parse_query(query)[0]

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        offset: int = 0,
        author: str | None = None,
        venue: str | None = None,
        year: int | None = None,
        exclude: Collection[int] = (),
        matched: bool = True,
    ) -> SearchResults:
        """Papers matching ``query`` (best first), ``limit`` from ``offset``, and how many match.

        Filters: ``author`` is a case- and accent-insensitive substring of one author's name,
        ``venue`` a substring of the venue, ``year`` exact.  Filters that match no paper give
        empty results (``filtered`` = 0).  Each hit names the query's words it holds (left empty with
        ``matched=False``, for a caller that shows no snippet).
        """
        _check_page(limit, offset)
        terms, words = parse_query(query)
        word_of = dict(zip(terms, words, strict=True))
        weights = query_weights(query)
        pairs = tuple(dict.fromkeys((a, b) for a, b, _, _ in phrase_spans(query) if a != b))
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
        return SearchResults(hits, total, terms, words, offset, filtered, pairs)

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
            shown = {t: in_title.get(t) or surface_form(t) for t in top}
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
                SearchHit(pid, score, _surface(found))
                for (pid, score), found in zip(
                    ranked, self.index.matched_terms_many([p for p, _ in ranked], positive), strict=True
                )
            ]

    def title(self, paper_id: int) -> str:
        with self._lock:
            return self._meta.titles[self.index.slot_of(paper_id)]

    def authors_from(self, slot: int) -> tuple[int, list[tuple[int, str]]]:
        """How many slots the index has now, and for each slot from ``slot`` on its paper's id and its
        authors' names folded (:func:`fold`), one per line: what ``bot.services.people.authors`` follows."""
        with self._lock:
            n = self.index.n_slots
            ids = self.index.slot_ids[slot:n].tolist()
            return n, list(zip(ids, self._meta.authors[slot:n], strict=True))

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
        if self._external_sorted is None:
            self._external_sorted = sorted(self._external)
        keys = self._external_sorted
        lo = bisect.bisect_left(keys, key)
        hi = bisect.bisect_left(keys, key + "\U0010ffff", lo, min(len(keys), lo + limit))
        return [self._external[k] for k in keys[lo:hi]]

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
            for seg in self._title_segments:
                lo = bisect.bisect_left(seg.words, word)
                hi = bisect.bisect_left(seg.words, word + "\U0010ffff", lo)
                prefix[seg.slots[seg.indptr[lo] : seg.indptr[hi]]] = True
                if lo < len(seg.words) and seg.words[lo] == word:
                    exact[seg.slots[seg.indptr[lo] : seg.indptr[lo + 1]]] += 1
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


def _display_form(word: str) -> str:
    """ "Federated" (sentence case) → "federated"; acronyms and mixed case ("KV", "LoRA") stay."""
    return word.lower() if word[:1].isupper() and word[1:].islower() else word


def _surface(terms: Iterable[str]) -> tuple[str, ...]:
    return tuple(surface_form(t) for t in terms)


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
