"""Papers: merge-on-ingest (never duplicate), look-ups by id or external id, rows for the search index.

Merge rules (`upsert_many`). A record is the same paper as a stored one when they share an arXiv id
(any version, old or new style), an OpenReview id, a DOI, or a content key (the normalised abstract,
or title + abstract when the abstract is too short to identify a paper; see `paper_keys`). Then the
record fills what the stored paper lacks and never overwrites real data:

- a real title replaces a derived one (`title_derived` goes to 0); a derived title never replaces
  anything;
- an empty abstract, empty authors, and missing venue, year, status, links, dates, external id,
  source and ids are filled; anything already set is kept (first writer wins on conflicts);
- more keys than the columns hold are kept in `paper_aliases`: another DOI (a preprint's journal
  version, or the preprint of an article), the content key of a newer version's abstract, and the
  normalised title + first author (`paper_keys.title_author_key`): a record matching one of them is
  that paper, so the same paper from two sources (a bioRxiv preprint and its journal article) is one.
  A generic title ("HyperNetworks", "Introduction": one word, or short) joins by title and first
  author only when the abstracts agree as well (`paper_keys.abstracts_agree`): two papers called
  "Introduction" by two Smiths stay two;
- a record of a newer version (`PaperRecord.version`: arXiv v2, a bioRxiv version) than the stored
  one, matched by its arXiv id or DOI, replaces the title, abstract and authors: an update, not a
  new paper (and so never a second digest item);
- a record whose keys point at two different stored papers (its arXiv id at one, its abstract at
  another) merges into the paper matched by the strongest key, in the order arXiv id, OpenReview id,
  DOI, content key, and leaves the other one as it is. The two are never joined: feedback, saved
  papers and digests refer to paper ids, and a silent join would move a user's history between
  papers. The conflicting key stays with the paper that already had it.

A record that changes nothing writes nothing (no `updated_at` churn), so ingesting a file twice is a
no-op. All look-ups are batched (one `IN (…)` query per key kind and chunk) and all writes go through
`executemany`, so a batch costs a handful of round trips to the engine, not one per row.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from storage.db import Connection, Database, Row, utcnow
from storage.models import IndexRow, Paper, PaperIdentity, PaperRecord
from storage.repositories import paper_keys

#: Papers read at a time for the search index.
INDEX_PAGE = 20_000

log = logging.getLogger(__name__)

# Key columns in merge priority order: the first one that matches picks the paper a record joins.
KEY_KINDS = ("arxiv_id", "openreview_id", "doi", "content_key")
#: kinds of key `paper_aliases` holds beside the columns (title_author only there)
ALIAS_KINDS = ("doi", "content_key", "title_author")
_ALL_KINDS = (*KEY_KINDS, "title_author")
# Fields a record may fill when the stored paper lacks them.
_FILLABLE = ("venue", "year", "status", "url", "pdf_url", "code_url", "published", "external_id", "source")
_CHUNK = 500  # bound parameters per IN (...) query
#: `app_state` key set once the papers stored before have their title + first-author keys (the keys of
#: generic titles and of first authors with a mark, "Smith *", came later: a new name runs it once more)
_BACKFILLED = "paper_aliases:title_author_backfilled_2"

_PAPER_COLUMNS = (
    "id, title, title_derived, abstract, authors, venue, year, status, url, pdf_url, code_url, "
    "arxiv_id, openreview_id, doi, external_id, source, published, added_at"
)
# What merging needs of a stored paper: everything but the abstract text (only whether it is empty).
_MERGE_COLUMNS = (
    "id, title, title_derived, abstract = '' AS no_abstract, authors, venue, year, status, url, pdf_url, "
    "code_url, arxiv_id, openreview_id, doi, content_key, external_id, source, published, version"
)


class UpsertCounts(NamedTuple):
    """Per record: it made a new paper, changed an existing one, or matched one and changed nothing."""

    added: int
    merged: int
    unchanged: int


@dataclass(slots=True)
class _Entity:
    """A paper during a merge: a stored row (id set) or one this batch will insert (id None)."""

    id: int | None
    title: str
    title_derived: bool
    abstract: str | None  # None for stored rows: the text is not loaded, only whether it is empty
    has_abstract: bool
    authors: str  # JSON list, as stored
    venue: str | None
    year: int | None
    status: str | None
    url: str | None
    pdf_url: str | None
    code_url: str | None
    arxiv_id: str | None
    openreview_id: str | None
    doi: str | None
    content_key: str | None
    external_id: str | None
    source: str | None
    published: str | None
    version: int | None = None
    #: a stored paper's abstract, loaded only when a record with a generic title would join it
    compared_abstract: str | None = None
    dirty: bool = False
    #: keys this batch gives the paper beyond its columns, for `paper_aliases`
    aliases: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Row) -> _Entity:
        return cls(
            id=row[0],
            title=row[1],
            title_derived=bool(row[2]),
            abstract=None,
            has_abstract=not row[3],
            authors=row[4],
            venue=row[5],
            year=row[6],
            status=row[7],
            url=row[8],
            pdf_url=row[9],
            code_url=row[10],
            arxiv_id=row[11],
            openreview_id=row[12],
            doi=row[13],
            content_key=row[14],
            external_id=row[15],
            source=row[16],
            published=row[17],
            version=row[18],
        )


class _Prepared(NamedTuple):
    record: PaperRecord
    keys: tuple[tuple[str, str], ...]  # (kind, value) in KEY_KINDS order
    authors_json: str
    generic_title: bool  # its title + first author joins a paper only when the abstracts agree


def record_keys(record: PaperRecord) -> tuple[tuple[str, str], ...]:
    """The merge keys of a record, strongest first: its arXiv and OpenReview ids, its DOI and its
    other DOIs, its content key, its title + first author."""
    title = "" if record.title_derived else record.title
    dois = [paper_keys.doi(record.doi) if record.doi else None]
    dois += [paper_keys.doi(other) for other in record.other_dois]
    values = (
        ("arxiv_id", paper_keys.arxiv_id(record.arxiv_id) if record.arxiv_id else None),
        ("openreview_id", record.openreview_id or None),
        *(("doi", value) for value in dict.fromkeys(dois)),
        ("content_key", paper_keys.content_key(title, record.abstract)),
        ("title_author", paper_keys.title_author_key(title, record.authors)),
    )
    return tuple((kind, value) for kind, value in values if value)


def _prepare(record: PaperRecord) -> _Prepared:
    authors = json.dumps(list(record.authors), ensure_ascii=False) if record.authors else "[]"
    generic = not record.title_derived and paper_keys.generic_title(record.title)
    return _Prepared(record, record_keys(record), authors, generic)


def _new_entity(prep: _Prepared) -> _Entity:
    rec = prep.record
    keys: dict[str, str] = {}
    aliases: list[tuple[str, str]] = []
    for kind, value in prep.keys:  # the first of each kind in its column, the others as aliases
        if kind in KEY_KINDS and kind not in keys:
            keys[kind] = value
        else:
            aliases.append((kind, value))
    return _Entity(
        id=None,
        title=rec.title,
        title_derived=rec.title_derived,
        abstract=rec.abstract,
        has_abstract=bool(rec.abstract),
        authors=prep.authors_json,
        venue=rec.venue,
        year=rec.year,
        status=rec.status,
        url=rec.url,
        pdf_url=rec.pdf_url,
        code_url=rec.code_url,
        arxiv_id=keys.get("arxiv_id"),
        openreview_id=keys.get("openreview_id"),
        doi=keys.get("doi"),
        content_key=keys.get("content_key"),
        external_id=rec.external_id,
        source=rec.source,
        published=rec.published,
        version=rec.version,
        aliases=aliases,
    )


def _newer_version(entity: _Entity, prep: _Prepared, matched: str) -> bool:
    """Whether the record is a newer version of the stored paper: its version above the stored one,
    matched by the versioned id (its arXiv id or DOI), not by its text. A paper stored without a
    version (from a file) keeps what it has: which version it was is not known."""
    version = prep.record.version
    if version is None or entity.version is None or matched not in ("arxiv_id", "doi"):
        return False
    return version > entity.version


def _ids_disagree(entity: _Entity, prep: _Prepared) -> bool:
    """Whether the record has an arXiv or OpenReview id other than the paper's: another paper."""
    return any(
        kind in ("arxiv_id", "openreview_id") and getattr(entity, kind) not in (None, value)
        for kind, value in prep.keys
    )


def _same_text(entity: _Entity, prep: _Prepared) -> bool:
    """Whether a record joining a paper by a generic title and first author says what it says."""
    abstract = entity.abstract if entity.abstract is not None else entity.compared_abstract
    return abstract is not None and paper_keys.abstracts_agree(abstract, prep.record.abstract)


def _joins_by_title(entity: _Entity, prep: _Prepared) -> bool:
    """Whether a record whose title and first author are the paper's is that paper: not when its
    arXiv or OpenReview id is another, nor, for a generic title, when the abstracts do not agree."""
    return not _ids_disagree(entity, prep) and (not prep.generic_title or _same_text(entity, prep))


def _update_version(entity: _Entity, prep: _Prepared) -> bool:
    """A newer version's title, abstract and authors replace the stored ones; True when any changed."""
    rec = prep.record
    before = (entity.title, entity.title_derived, entity.abstract, entity.authors, entity.version)
    if rec.title and not rec.title_derived:
        entity.title, entity.title_derived = rec.title, False
    if rec.abstract:
        entity.abstract, entity.has_abstract = rec.abstract, True
    if prep.authors_json != "[]":
        entity.authors = prep.authors_json
    entity.version = rec.version
    return before != (entity.title, entity.title_derived, entity.abstract, entity.authors, entity.version)


def _fill(entity: _Entity, prep: _Prepared, owners: dict[str, dict[str, _Entity]], matched: str = "") -> bool:
    """Fill what `entity` lacks from the record (or update it to a newer version); True when anything
    changed. Keys the columns cannot take become aliases (not a change of the paper)."""
    rec = prep.record
    changed = _newer_version(entity, prep, matched) and _update_version(entity, prep)
    if rec.version is not None and entity.version is None:
        entity.version = rec.version
        changed = True
    if rec.title and not rec.title_derived and (entity.title_derived or not entity.title):
        if entity.title != rec.title or entity.title_derived:
            entity.title = rec.title
            entity.title_derived = False
            changed = True
    elif rec.title and not entity.title:
        entity.title, entity.title_derived = rec.title, rec.title_derived
        changed = True
    if rec.abstract and not entity.has_abstract:
        entity.abstract, entity.has_abstract = rec.abstract, True
        changed = True
    if prep.authors_json != "[]" and entity.authors == "[]":
        entity.authors = prep.authors_json
        changed = True
    for name in _FILLABLE:
        value = getattr(rec, name)
        if value is not None and value != "" and getattr(entity, name) in (None, ""):
            setattr(entity, name, value)
            changed = True
    for kind, value in prep.keys:
        if value in owners[kind]:
            continue  # its own already, or another paper's: that one keeps it
        if kind in KEY_KINDS and getattr(entity, kind) is None:
            setattr(entity, kind, value)
            changed = True
        elif kind in ALIAS_KINDS:
            entity.aliases.append((kind, value))
        else:
            continue  # a second arXiv or OpenReview id: the paper keeps its own
        owners[kind][value] = entity
    return changed


def _chunks(values: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _paper(row: Row) -> Paper:
    return Paper(
        id=row[0],
        title=row[1],
        title_derived=bool(row[2]),
        abstract=row[3],
        authors=tuple(json.loads(row[4])) if row[4] and row[4] != "[]" else (),
        venue=row[5],
        year=row[6],
        status=row[7],
        url=row[8],
        pdf_url=row[9],
        code_url=row[10],
        arxiv_id=row[11],
        openreview_id=row[12],
        doi=row[13],
        external_id=row[14],
        source=row[15],
        published=row[16],
        added_at=row[17],
    )


_INSERT = (
    "INSERT INTO papers (title, title_derived, abstract, authors, venue, year, status, url, pdf_url, "
    "code_url, arxiv_id, openreview_id, doi, content_key, external_id, source, published, version, "
    "added_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE papers SET title = ?, title_derived = ?, abstract = COALESCE(?, abstract), authors = ?, "
    "venue = ?, year = ?, status = ?, url = ?, pdf_url = ?, code_url = ?, arxiv_id = ?, "
    "openreview_id = ?, doi = ?, content_key = ?, external_id = ?, source = ?, published = ?, "
    "version = ?, updated_at = ? WHERE id = ?"
)


def _row_values(entity: _Entity) -> tuple[Any, ...]:
    return (
        entity.title,
        int(entity.title_derived),
        entity.abstract,
        entity.authors,
        entity.venue,
        entity.year,
        entity.status,
        entity.url,
        entity.pdf_url,
        entity.code_url,
        entity.arxiv_id,
        entity.openreview_id,
        entity.doi,
        entity.content_key,
        entity.external_id,
        entity.source,
        entity.published,
        entity.version,
    )


async def _load_compared_abstracts(
    conn: Connection, prepared: list[_Prepared], owners: dict[str, dict[str, _Entity]]
) -> None:
    """The abstracts of the stored papers a record with a generic title would join by its title and
    first author (few: most titles are not generic), for `_same_text`."""
    wanted: dict[int, _Entity] = {}
    for prep in prepared:
        if prep.generic_title:
            for kind, value in prep.keys:
                entity = owners[kind].get(value) if kind == "title_author" else None
                if entity is not None and entity.id is not None:
                    wanted[entity.id] = entity
    for chunk in _chunks(sorted(wanted)):
        marks = ",".join("?" * len(chunk))
        for row in await conn.fetchall(
            f"SELECT id, abstract FROM papers WHERE id IN ({marks})", tuple(chunk)
        ):
            wanted[int(row[0])].compared_abstract = row[1]


async def _insert_new(conn: Connection, new: list[_Entity], now: str) -> None:
    """Insert the batch's new papers and give each its id (for its aliases).

    Paper writers go one at a time (SQLite's write lock; on PostgreSQL the change-sequence row lock
    `_upsert` takes), so the rows past the largest id before the insert are this batch's, in order.
    """
    if not any(e.aliases for e in new):
        await conn.executemany(_INSERT, [(*_row_values(e), now, now) for e in new])
        return
    before = int(await conn.fetchval("SELECT COALESCE(MAX(id), 0) FROM papers") or 0)
    await conn.executemany(_INSERT, [(*_row_values(e), now, now) for e in new])
    rows = await conn.fetchall("SELECT id FROM papers WHERE id > ? ORDER BY id", (before,))
    if len(rows) != len(new):
        raise RuntimeError(f"inserted {len(new)} papers but found {len(rows)} new rows")
    for entity, row in zip(new, rows, strict=True):
        entity.id = int(row[0])


class PaperRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # ------------------------------------------------------------------ writing

    async def upsert_many(
        self,
        records: Iterable[PaperRecord],
        *,
        conn: Connection | None = None,
        now: str | None = None,
    ) -> UpsertCounts:
        """Merge records into the store (rules in the module docstring).

        Pass `conn` (from `db.transaction()`) to merge inside the caller's transaction, so that a
        whole file is one transaction; without it the records get a transaction of their own.
        """
        if conn is None:
            async with self._db.transaction() as own:
                return await self._upsert(own, records, now or utcnow())
        return await self._upsert(conn, records, now or utcnow())

    async def _upsert(self, conn: Connection, records: Iterable[PaperRecord], now: str) -> UpsertCounts:
        prepared = [_prepare(record) for record in records]
        if not prepared:
            return UpsertCounts(0, 0, 0)
        if conn.dialect == "postgresql":
            # Paper writers one at a time, as SQLite's write lock has them: the matches loaded below
            # stay true until this commits (the change-sequence row is the lock every paper write
            # takes anyway).
            await conn.execute("SELECT 1 FROM paper_changes WHERE id = 1 FOR UPDATE")
        owners: dict[str, dict[str, _Entity]] = {kind: {} for kind in _ALL_KINDS}
        await self._load_matches(conn, prepared, owners)

        added = merged = unchanged = 0
        new: list[_Entity] = []
        for prep in prepared:
            target: _Entity | None = None
            matched = ""
            for matched, value in prep.keys:
                target = owners[matched].get(value)
                if target is not None and matched == "title_author" and not _joins_by_title(target, prep):
                    target = None  # the same title by the same first author, but another paper
                if target is not None:
                    break
            if target is None:
                entity = _new_entity(prep)
                taken = {
                    value for kind, value in prep.keys if kind == "title_author" and value in owners[kind]
                }
                if (
                    taken
                ):  # another paper's title and first author (it would not join it): that one keeps them
                    entity.aliases = [
                        (k, v) for k, v in entity.aliases if k != "title_author" or v not in taken
                    ]
                for kind, value in prep.keys:
                    if value not in taken:
                        owners[kind][value] = entity
                new.append(entity)
                added += 1
            elif _fill(target, prep, owners, matched):
                target.dirty = True
                merged += 1
            else:
                unchanged += 1

        if new:
            await _insert_new(conn, new, now)
        updates = {id(e): e for kinds in owners.values() for e in kinds.values() if e.dirty and e.id}
        if updates:
            await conn.executemany(_UPDATE, [(*_row_values(e), now, e.id) for e in updates.values()])
        aliases = {
            (kind, value, e.id)
            for kinds in owners.values()
            for e in kinds.values()
            for kind, value in e.aliases
        }
        if aliases:
            await conn.executemany(
                "INSERT INTO paper_aliases (kind, value, paper_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                sorted(aliases, key=lambda a: (a[0], a[1])),
            )
        return UpsertCounts(added, merged, unchanged)

    async def _load_matches(
        self, conn: Connection, prepared: list[_Prepared], owners: dict[str, dict[str, _Entity]]
    ) -> None:
        """Load every stored paper sharing a key with the batch, indexed by all its keys."""
        wanted: dict[str, set[str]] = {kind: set() for kind in _ALL_KINDS}
        for prep in prepared:
            for kind, value in prep.keys:
                wanted[kind].add(value)
        loaded: dict[int, _Entity] = {}
        for kind in KEY_KINDS:
            values = sorted(wanted[kind])
            for chunk in _chunks(values):
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT {_MERGE_COLUMNS} FROM papers WHERE {kind} IN ({marks})"
                for row in await conn.fetchall(sql, tuple(chunk)):
                    if row[0] not in loaded:
                        loaded[row[0]] = _Entity.from_row(row)
        aliased: list[tuple[str, str, int]] = []
        for kind in ALIAS_KINDS:
            for chunk in _chunks(sorted(wanted[kind])):
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT kind, value, paper_id FROM paper_aliases WHERE kind = ? AND value IN ({marks})"
                aliased += [(r[0], r[1], int(r[2])) for r in await conn.fetchall(sql, (kind, *chunk))]
        missing = sorted({paper_id for _, _, paper_id in aliased} - loaded.keys())
        for chunk in _chunks(missing):
            marks = ",".join("?" * len(chunk))
            for row in await conn.fetchall(
                f"SELECT {_MERGE_COLUMNS} FROM papers WHERE id IN ({marks})", tuple(chunk)
            ):
                loaded[row[0]] = _Entity.from_row(row)
        for entity in loaded.values():
            for kind in KEY_KINDS:
                value = getattr(entity, kind)
                if value:
                    owners[kind][value] = entity
        for kind, value, paper_id in aliased:
            owners[kind].setdefault(value, loaded[paper_id])
        await _load_compared_abstracts(conn, prepared, owners)

    async def backfill_title_keys(self, *, page: int = 5000) -> int:
        """Give the papers stored before title + first-author keys existed theirs (or before generic
        titles had them), so a journal article finds a preprint stored before; once per store (an `app_state` mark), a page of papers per
        transaction. Returns how many keys it added (0 once done)."""
        if await self._db.fetchval("SELECT value FROM app_state WHERE key = ?", (_BACKFILLED,)) is not None:
            return 0
        added, last = 0, -1
        while True:
            rows = await self._db.fetchall(
                "SELECT id, title, title_derived, authors FROM papers WHERE id > ? ORDER BY id LIMIT ?",
                (last, page),
            )
            if not rows:
                break
            last = int(rows[-1][0])
            keys = []
            for paper_id, title, derived, authors in rows:
                names = json.loads(authors) if authors and authors != "[]" else []
                key = None if derived else paper_keys.title_author_key(title, names)
                if key:
                    keys.append(("title_author", key, int(paper_id)))
            async with self._db.transaction() as conn:
                before = int(await conn.fetchval("SELECT COUNT(*) FROM paper_aliases") or 0)
                await conn.executemany(
                    "INSERT INTO paper_aliases (kind, value, paper_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    keys,
                )
                added += int(await conn.fetchval("SELECT COUNT(*) FROM paper_aliases") or 0) - before
        await self._db.execute(
            "INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (_BACKFILLED, str(added), utcnow()),
        )
        return added

    # ------------------------------------------------------------------ reading

    async def get(self, paper_id: int) -> Paper | None:
        row = await self._db.fetchone(f"SELECT {_PAPER_COLUMNS} FROM papers WHERE id = ?", (paper_id,))
        return None if row is None else _paper(row)

    async def get_many(self, paper_ids: Iterable[int]) -> dict[int, Paper]:
        return {row[0]: _paper(row) for row in await self._rows_by_id(_PAPER_COLUMNS, paper_ids)}

    async def identities(self, paper_ids: Iterable[int]) -> dict[int, PaperIdentity]:
        """Title and ids of these papers (no abstract or authors read): what a listing of search
        results prints of each."""
        rows = await self._rows_by_id("id, title, external_id, arxiv_id, openreview_id, doi", paper_ids)
        return {row[0]: PaperIdentity(*row) for row in rows}

    async def _rows_by_id(self, columns: str, paper_ids: Iterable[int]) -> list[Row]:
        """`columns` of the papers with these ids (one `IN (…)` query per chunk of ids), in id order."""
        rows: list[Row] = []
        for chunk in _chunks(sorted({int(i) for i in paper_ids})):
            marks = ",".join("?" * len(chunk))
            rows += await self._db.fetchall(
                f"SELECT {columns} FROM papers WHERE id IN ({marks})", tuple(chunk)
            )
        return rows

    async def _first(self, column: str, value: object) -> Paper | None:
        row = await self._db.fetchone(
            f"SELECT {_PAPER_COLUMNS} FROM papers WHERE {column} = ? ORDER BY id LIMIT 1", (value,)
        )
        return None if row is None else _paper(row)

    async def _aliased(self, kind: str, value: str) -> Paper | None:
        """The paper `paper_aliases` names for this key (another DOI of it: its journal version's)."""
        paper_id = await self._db.fetchval(
            "SELECT paper_id FROM paper_aliases WHERE kind = ? AND value = ?", (kind, value)
        )
        return None if paper_id is None else await self.get(int(paper_id))

    async def find_by_external(self, text: str) -> Paper | None:
        """The paper a user or a file names: "#12"/"12" (paper id), an arXiv id in any version or URL,
        an OpenReview id or URL, a DOI (bare, "doi:" or doi.org URL), or a source record's own id.

        A bare number is tried as a paper id first, then as an external id (SciFact ids are numbers).
        """
        value = text.strip()
        if not value:
            return None
        if value.startswith("#") and value[1:].isdigit():
            return await self.get(int(value[1:]))
        if value.isdigit() and len(value) < 19:
            paper = await self.get(int(value))
            if paper is not None:
                return paper
            return await self._first("external_id", value)
        arxiv = paper_keys.arxiv_id(value)
        if arxiv:
            paper = await self._first("arxiv_id", arxiv)
            if paper is not None:
                return paper
        lowered = value.lower()
        if lowered.startswith(("10.", "doi:", "https://doi.org/", "http://doi.org/", "http://dx.doi.org/")):
            found_doi = paper_keys.doi(value)
            if found_doi:
                paper = await self._first("doi", found_doi) or await self._aliased("doi", found_doi)
                if paper is not None:
                    return paper
        openreview = paper_keys.openreview_id(value)
        if openreview:
            paper = await self._first("openreview_id", openreview)
            if paper is not None:
                return paper
        return await self._first("external_id", value)

    async def count(self) -> int:
        return int(await self._db.fetchval("SELECT COUNT(*) FROM papers"))

    async def count_from_other_sources(self, sources: Sequence[str]) -> int:
        """Papers whose source is none of `sources` (is the store more than an interrupted seed load?)."""
        marks = ", ".join("?" for _ in sources) or "NULL"
        return int(
            await self._db.fetchval(
                f"SELECT COUNT(*) FROM papers WHERE source IS NULL OR source NOT IN ({marks})", tuple(sources)
            )
        )

    async def dates_and_titles(
        self, paper_ids: Iterable[int] | None = None
    ) -> list[tuple[int, str | None, int | None, str]]:
        """(id, published, year, title) of every paper, or of the given ids: what ranking keeps in
        memory for recency and near-copy checks (no abstracts read)."""
        columns = "id, published, year, title"
        if paper_ids is None:
            rows = await self._db.fetchall(f"SELECT {columns} FROM papers")
        else:
            rows = await self._rows_by_id(columns, paper_ids)
        return [(int(r[0]), r[1], r[2], str(r[3] or "")) for r in rows]

    async def credits(self, paper_ids: Iterable[int]) -> dict[int, Credits]:
        """Authors, venue and year of these papers (no abstracts read): what tells apart people who
        share a name."""
        found: dict[int, Credits] = {}
        for row in await self._rows_by_id("id, authors, venue, year", paper_ids):
            authors = tuple(json.loads(row[1])) if row[1] and row[1] != "[]" else ()
            found[int(row[0])] = Credits(int(row[0]), authors, row[2], row[3])
        return found

    async def iter_index_rows(
        self, *, ids: Iterable[int] | None = None, page: int = INDEX_PAGE
    ) -> list[IndexRow]:
        """Every paper (or the given ids) as (id, title, abstract, authors, venue, year, its arXiv /
        OpenReview ids and DOI), in id order, as one committed state (one read transaction).

        Reads in primary-key pages (`id > last`), each one indexed range scan; 100k papers take
        about a second.
        """
        async with self._db.snapshot() as conn:
            return await _index_rows(conn, ids=ids, page=page)

    async def index_position(self) -> IndexPosition:
        """Where the store is now: its id, its change sequence, how many papers it holds."""
        async with self._db.snapshot() as conn:
            return await _position(conn)

    async def index_rows_at(self) -> tuple[IndexPosition, list[IndexRow]]:
        """Every paper for a new index, and the position those rows are at (one read transaction)."""
        async with self._db.snapshot() as conn:
            return await _position(conn), await _index_rows(conn)

    @contextlib.asynccontextmanager
    async def index_pages_at(
        self, page: int = INDEX_PAGE
    ) -> AsyncIterator[tuple[IndexPosition, AsyncIterator[list[IndexRow]]]]:
        """Every paper for a new index, ``page`` at a time, and the position those rows are at: one
        read transaction, held while the caller takes each page in, so that a build never holds every
        paper's text at once (at 1M papers that was gigabytes)."""
        async with self._db.snapshot() as conn:
            yield await _position(conn), _index_pages(conn, page)

    async def changes_after(self, seq: int) -> PaperChanges:
        """The papers added or changed after change sequence `seq`, and the sequence they bring the
        reader to (one read transaction: a writer committing meanwhile is seen next time, whole)."""
        async with self._db.snapshot() as conn:
            now = int(await conn.fetchval("SELECT seq FROM paper_changes WHERE id = 1") or 0)
            if now <= seq:
                return PaperChanges(now, [])
            rows = await conn.fetchall(f"{_INDEX_SELECT} WHERE change_seq > ? ORDER BY id", (seq,))
            return PaperChanges(now, [_index_row(r) for r in rows])


class Credits(NamedTuple):
    """Who wrote a paper, where and when."""

    paper_id: int
    authors: tuple[str, ...]
    venue: str | None
    year: int | None


class PaperChanges(NamedTuple):
    seq: int  # the change sequence these changes bring a reader to
    changed: list[IndexRow]  # papers added or changed, in id order


class IndexPosition(NamedTuple):
    """What the search index holds when it holds exactly the store at this point."""

    store_id: str  # random per database (paper_changes.store_id)
    seq: int  # every paper written so far has a change_seq at or below this
    papers: int


_INDEX_SELECT = "SELECT id, title, abstract, authors, venue, year, arxiv_id, openreview_id, doi FROM papers"


async def _position(conn: Connection) -> IndexPosition:
    row = await conn.fetchone(
        "SELECT store_id, seq, (SELECT COUNT(*) FROM papers) FROM paper_changes WHERE id = 1"
    )
    assert row is not None, "paper_changes has its one row from migration 3 on"
    return IndexPosition(str(row[0]), int(row[1]), int(row[2]))


async def _index_rows(
    conn: Connection, *, ids: Iterable[int] | None = None, page: int = INDEX_PAGE
) -> list[IndexRow]:
    out: list[IndexRow] = []
    if ids is not None:
        wanted = sorted({int(i) for i in ids})
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            rows = await conn.fetchall(f"{_INDEX_SELECT} WHERE id IN ({marks}) ORDER BY id", tuple(chunk))
            out.extend(map(_index_row, rows))
        return out
    async for found in _index_pages(conn, page):
        out.extend(found)
    return out


async def _index_pages(conn: Connection, page: int) -> AsyncIterator[list[IndexRow]]:
    """Every paper's index row, ``page`` at a time, in id order."""
    last = -1
    while rows := await conn.fetchall(f"{_INDEX_SELECT} WHERE id > ? ORDER BY id LIMIT ?", (last, page)):
        yield list(map(_index_row, rows))
        last = rows[-1][0]


def _index_row(row: Row) -> IndexRow:
    authors = row[3]
    return IndexRow(
        row[0],
        row[1],
        row[2],
        tuple(json.loads(authors)) if authors != "[]" else (),
        row[4],
        row[5],
        tuple(value for value in (row[6], row[7], row[8]) if value),
    )
