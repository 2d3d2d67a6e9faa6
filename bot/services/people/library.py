"""A person's own library as a start: `/paper interests add file:` with a BibTeX, RIS or CSL-JSON export
(Zotero's, Mendeley's, paperbot's own `/paper saved`) or a plain list of arXiv ids, DOIs and links.

Each entry the store has counts as the person's 👍 (a liked paper teaches every ranking that learns, and
one far from the person's other interests starts an interest of its own); an entry with an arXiv id the
store lacks is fetched first (politely, a bounded number per file); an entry still not here that has a
title is learned from its own title and abstract, for that person alone. A file that cannot be read as any of
these formats, or is over the limits, stores nothing; inside a readable file, the entries not understood
are reported with their line, and those not found are counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import rispy
from bibtexparser.entrypoint import parse_string as parse_bibtex

from bot.errors import UserFacingError
from bot.services.papers.arxiv_lookup import ArxivLookup, ArxivUnavailable
from bot.services.papers.links import paper_links
from bot.services.people.ratings import Ratings
from storage.models import Paper
from storage.repositories import paper_keys
from storage.repositories.library_texts import LibraryText, LibraryTextRepository
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

MAX_LIBRARY_BYTES = 2 * 1024 * 1024  # a Zotero export of a few thousand papers with abstracts
MAX_ENTRIES = 1000
MAX_FETCHES = 20  # arXiv papers fetched for one file (3 s apart: a minute at most)
SHOWN_NOT_UNDERSTOOD = 5
MAX_ABSTRACT_CHARS = 5000  # of an entry the store lacks, kept as its text

FORMATS = "BibTeX (.bib), RIS (.ris), CSL-JSON (.json) or a list of arXiv ids, DOIs and links (.txt)"


class LibraryRejected(UserFacingError):
    """The file as a whole cannot be used; str() says why. Nothing was stored."""


@dataclass(frozen=True, slots=True)
class LibraryEntry:
    """One paper a library names, as far as the file says."""

    line: int  # 1-based, where the entry starts
    title: str = ""
    arxiv_id: str | None = None
    doi: str | None = None
    openreview_id: str | None = None
    abstract: str | None = None

    @property
    def ids(self) -> list[str]:
        """What the store's look-up by external id takes, most specific first."""
        found = [self.arxiv_id, f"doi:{self.doi}" if self.doi else None, self.openreview_id]
        return [i for i in found if i]


@dataclass(frozen=True, slots=True)
class ParsedLibrary:
    format: str
    entries: tuple[LibraryEntry, ...]
    not_understood: tuple[tuple[int, str], ...]  # (line, the start of what was there)


@dataclass
class LibraryMatch:
    """What a library's entries turned into."""

    format: str
    entries: int
    papers: list[Paper] = field(default_factory=list)  # found or fetched, each once, in file order
    fetched: int = 0
    missing: list[LibraryEntry] = field(default_factory=list)
    not_understood: tuple[tuple[int, str], ...] = ()
    unfetched: int = 0  # arXiv entries past MAX_FETCHES or while arXiv was unreachable


def parse_library(data: bytes, filename: str) -> ParsedLibrary:
    """The entries of a library file (LibraryRejected when it is none of :data:`FORMATS`)."""
    if len(data) > MAX_LIBRARY_BYTES:
        raise LibraryRejected(
            f"That file is {len(data) / 1024 / 1024:.1f} MB; a library may be at most "
            f"{MAX_LIBRARY_BYTES // 1024 // 1024} MB. Nothing was added."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LibraryRejected(
            f"That file is not text (UTF-8). I read {FORMATS}. Nothing was added."
        ) from None
    name = filename.lower()
    stripped = text.lstrip()
    if name.endswith(".json") or stripped.startswith(("[", "{")):
        parsed = _csl_json(text)
    elif name.endswith(".bib") or stripped.startswith("@"):
        parsed = _bibtex(text)
    elif name.endswith(".ris") or re.match(r"TY  - ", stripped):
        parsed = _ris(text)
    else:
        parsed = _plain_list(text)
    if not parsed.entries:
        shown = "; ".join(
            f"line {line}: {what}" for line, what in parsed.not_understood[:SHOWN_NOT_UNDERSTOOD]
        )
        raise LibraryRejected(
            f"I found no paper in that file (read as {parsed.format}"
            + (f"; not understood: {shown}" if shown else "")
            + f"). I read {FORMATS}. Nothing was added."
        )
    if len(parsed.entries) > MAX_ENTRIES:
        raise LibraryRejected(
            f"That library has {len(parsed.entries):,} papers; at most {MAX_ENTRIES:,} at a time "
            "(split the file, or export a collection). Nothing was added."
        )
    return parsed


def _entry(line: int, title: object, ids: Iterable[object], abstract: object = None) -> LibraryEntry | None:
    arxiv = doi = openreview = None
    for value in ids:
        text = str(value or "").strip()
        if not text:
            continue
        arxiv = arxiv or paper_keys.arxiv_id(text) or paper_keys.find_arxiv_id(text)
        doi = doi or (paper_keys.doi(text) if "10." in text else None)
        openreview = openreview or (paper_keys.openreview_id(text) if "openreview" in text else None)
    clean_title = " ".join(re.sub(r"[{}]", "", str(title or "")).split())
    if not (arxiv or doi or openreview or clean_title):
        return None
    text = " ".join(re.sub(r"[{}]", "", str(abstract)).split()) if isinstance(abstract, str) else ""
    return LibraryEntry(line, clean_title, arxiv, doi, openreview, text[:MAX_ABSTRACT_CHARS] or None)


def _bibtex(text: str) -> ParsedLibrary:
    library = parse_bibtex(text)
    entries, bad = [], []
    for item in library.entries:
        fields = {k.lower(): str(f.value) for k, f in item.fields_dict.items()}
        arxiv_hint = fields.get("eprint") if "arxiv" in fields.get("archiveprefix", "arxiv").lower() else None
        line = (item.start_line or 0) + 1
        entry = _entry(
            line,
            fields.get("title"),
            [arxiv_hint, fields.get("doi"), fields.get("url"), fields.get("journal"), fields.get("note")],
            fields.get("abstract"),
        )
        if entry is None:
            bad.append((line, f"@{item.entry_type}{{{item.key}, …}} has no title or id"))
        else:
            entries.append(entry)
    for block in library.failed_blocks:
        bad.append(((block.start_line or 0) + 1, _shown(block.raw or "")))
    return ParsedLibrary("BibTeX", tuple(entries), tuple(sorted(bad)))


def _ris(text: str) -> ParsedLibrary:
    entries, bad = [], []
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("TY  - ")]
    try:
        records = rispy.loads(text)
    except (ValueError, KeyError, IndexError) as error:
        raise LibraryRejected(f"That RIS file could not be read ({error}). Nothing was added.") from None
    for index, record in enumerate(records):
        line = starts[index] if index < len(starts) else 0
        urls = record.get("urls") or []
        entry = _entry(
            line,
            record.get("title") or record.get("primary_title"),
            [record.get("doi"), *urls, record.get("notes_abstract")],
            record.get("abstract") or record.get("notes_abstract"),
        )
        if entry is None:
            bad.append((line, "a record with no title or id"))
        else:
            entries.append(entry)
    return ParsedLibrary("RIS", tuple(entries), tuple(bad))


def _csl_json(text: str) -> ParsedLibrary:
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise LibraryRejected(f"That JSON file could not be read ({error}). Nothing was added.") from None
    items = data if isinstance(data, list) else data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LibraryRejected("That JSON file is not a CSL-JSON list of papers. Nothing was added.")
    entries, bad = [], []
    for index, item in enumerate(items, 1):
        entry = None
        if isinstance(item, dict):
            entry = _entry(
                index,
                item.get("title"),
                [item.get("DOI"), item.get("URL"), item.get("arxiv"), item.get("number"), item.get("note")],
                item.get("abstract"),
            )
        if entry is None:
            bad.append((index, f"item {index}: no title or id"))
        else:
            entries.append(entry)
    return ParsedLibrary("CSL-JSON", tuple(entries), tuple(bad))


_BARE_ARXIV = re.compile(
    r"^\s*(?:arxiv\s*:\s*)?(\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[A-Z]{2})?/\d{7})\s*$", re.I
)


def _plain_list(text: str) -> ParsedLibrary:
    entries, bad = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        bare = _BARE_ARXIV.match(line)
        links = paper_links(line)
        if bare:
            entries.append(LibraryEntry(number, arxiv_id=paper_keys.arxiv_id(bare.group(1))))
        elif links:
            link = links[0]
            entries.append(
                LibraryEntry(
                    number,
                    arxiv_id=link.id if link.kind == "arxiv" else None,
                    doi=link.id if link.kind == "doi" else None,
                    openreview_id=link.id if link.kind == "openreview" else None,
                )
            )
        else:
            bad.append((number, _shown(line)))
    return ParsedLibrary("a list of ids and links", tuple(entries), tuple(bad))


def _shown(text: str, size: int = 40) -> str:
    line = " ".join(text.split())
    return line if len(line) <= size else line[: size - 1] + "…"


class LibraryMatcher:
    """Library entries → stored papers: by id, then by exact title; arXiv papers not here fetched."""

    def __init__(
        self,
        papers: PaperRepository,
        *,
        title_lookup: Callable[[str], Sequence[tuple[int, str]]],
        arxiv: ArxivLookup | None,
    ) -> None:
        self.papers = papers
        self.title_lookup = title_lookup
        self.arxiv = arxiv

    async def match(self, parsed: ParsedLibrary) -> LibraryMatch:
        result = LibraryMatch(parsed.format, len(parsed.entries), not_understood=parsed.not_understood)
        seen: set[int] = set()
        fetching = self.arxiv is not None
        for entry in parsed.entries:
            paper = await self._stored(entry)
            if paper is None and entry.arxiv_id and fetching:
                if result.fetched >= MAX_FETCHES:
                    result.unfetched += 1
                else:
                    try:
                        paper = await self.arxiv.fetch(entry.arxiv_id) if self.arxiv else None
                        result.fetched += 1
                    except ArxivUnavailable as error:
                        log.info("library import: arXiv %s not fetched (%s)", entry.arxiv_id, error)
                        if "could not be reached" in str(error):
                            fetching = False  # offline: do not wait on it for every entry
                        result.unfetched += 1
            if paper is None:
                result.missing.append(entry)
            elif paper.id not in seen:
                seen.add(paper.id)
                result.papers.append(paper)
        return result

    async def _stored(self, entry: LibraryEntry) -> Paper | None:
        for reference in entry.ids:
            paper = await self.papers.find_by_external(reference)
            if paper is not None:
                return paper
        if entry.title:
            wanted = paper_keys.normalise_text(entry.title)
            for paper_id, title in self.title_lookup(entry.title)[:5]:
                if paper_keys.normalise_text(title) == wanted:
                    return await self.papers.get(paper_id)
        return None


@dataclass(frozen=True, slots=True)
class LibraryImport:
    """What `/paper interests add file:` did, for its answer."""

    match: LibraryMatch
    liked: int  # papers that now count as the person's 👍
    already: int  # papers they had liked before
    paused: bool  # learning is paused: nothing was counted
    learned: tuple[LibraryEntry, ...] = ()  # not here, but with a title: learned from their own text
    learned_new: int = 0  # of those, how many were not kept from an earlier file

    @property
    def not_here(self) -> list[LibraryEntry]:
        """Entries neither found nor learned from (no title to learn from, or learning paused)."""
        learned = {entry.line for entry in self.learned}
        return [entry for entry in self.match.missing if entry.line not in learned]


class LibraryImporter:
    """Reads a library and matches it: each found paper becomes the person's 👍 (through the one entry
    point of ratings, behind the answer, as a rating button would), and each paper the store lacks that
    has a title is kept as its own text for that person alone (``library_texts``), which teaches their
    picks (:mod:`bot.services.recommend.library_words`) and is never a paper anyone can find."""

    def __init__(
        self,
        matcher: LibraryMatcher,
        ratings: Ratings,
        texts: LibraryTextRepository,
        *,
        on_fetched: Callable[[], Awaitable[object]],
    ) -> None:
        self.matcher = matcher
        self.ratings = ratings
        self.texts = texts
        self.on_fetched = on_fetched

    async def kept(self, user_id: int) -> int:
        """How many papers of the person's library are kept as their own text (`/paper interests show`)."""
        return len(await self.texts.texts(user_id))

    async def run(self, user_id: int, data: bytes, filename: str, *, guild_id: int | None) -> LibraryImport:
        parsed = await asyncio.to_thread(parse_library, data, filename)  # a large .bib takes a while
        match = await self.matcher.match(parsed)
        if match.fetched:
            await self.on_fetched()
        if await self.ratings.feedback.users.learning_paused(user_id):
            return LibraryImport(match, 0, 0, True)
        liked = already = 0
        for paper in match.papers:
            press = await self.ratings.on_seed(user_id, paper.id, guild_id=guild_id)
            if press.added:
                liked += 1
            else:
                already += 1
        learned = [entry for entry in match.missing if paper_keys.normalise_text(entry.title)]
        texts = {
            paper_keys.normalise_text(e.title): LibraryText(
                paper_keys.normalise_text(e.title), e.title, e.abstract
            )
            for e in learned
        }
        new = await self.texts.add_many(user_id, list(texts.values())) if texts else 0
        return LibraryImport(match, liked, already, False, tuple(learned), new)
