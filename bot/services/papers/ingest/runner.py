"""Ingest files and folders: detect the format, parse, merge into the store in short transactions.

- Folders are walked recursively for `.txt`, `.md`, `.json`, `.jsonl`, `.ndjson`, `.xml`, `.atom`
  files, each optionally `.gz` (gzip is recognised by its magic bytes, whatever the name says).
- The format comes from the name and, when the name does not say, from the first bytes: `<` is an
  Atom feed, `[` a JSON list, `{` JSON or JSONL, anything else paper-list text. A `.json` holding a
  recorded arXiv response (`{"url", "status_code", "body"}`) is read as Atom.
- Records are merged in batches of `BATCH`, each batch one transaction, so SQLite's write lock is
  held for a fraction of a second at a time and the running bot (another process) writes between
  batches; after each commit the lock is left free for `BATCH_PAUSE`. A record is always merged whole
  within one batch, so a kill -9 (or any error) mid-file leaves a consistent store holding the
  batches committed so far, and ingesting the file again completes it (merging makes that harmless).
- A file that cannot be read at all (not UTF-8, damaged gzip, not JSON, an arXiv error feed, more than
  `max_bytes` once decompressed: `PAPERBOT_MAX_DECOMPRESSED_MB`) is reported and skipped, and writes
  nothing: every file is read through once, a chunk at a time, before its first batch, so damage
  half-way leaves no half file behind, and a gzip bomb is refused when its output passes the bound,
  holding no more than a chunk of it. A bad record is reported with its line and the rest go in.
- Decompressing, decoding and parsing run in a worker thread, a batch at a time, never on the event
  loop (the bot answers people meanwhile); batch N is merged while batch N+1 is parsed. JSONL is
  streamed, so memory stays flat; the other formats are read whole (at most `max_bytes`).
- `progress(done, total)` is called after each batch, in bytes of input read (compressed bytes for
  `.gz`), so the CLI can draw a bar.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import logging
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from bot.services.papers.ingest.arxiv_atom import is_atom, parse_atom, unwrap_recorded
from bot.services.papers.ingest.normalise import FileRejected, Rejected
from bot.services.papers.ingest.papertext import parse_paper_list
from bot.services.papers.ingest.records import parse_json, parse_jsonl
from storage.db import Database, utcnow
from storage.models import IngestSummary, PaperRecord
from storage.repositories.papers import PaperRepository, UpsertCounts
from storage.repositories.state import StateRepository

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "IngestSummary",
    "detect_format",
    "ensure_shipped_corpus",
    "expand_paths",
    "ingest_bytes",
    "ingest_paths",
]

log = logging.getLogger(__name__)

SHIPPED_CORPUS_KEY = "shipped_corpus"

Progress = Callable[[int, int], None]
_T = TypeVar("_T")

BATCH = 1000  # records per transaction: about 0.1 s of SQLite's write lock
BATCH_PAUSE = 0.03  # the longest the lock is left free after a batch (the bot's writers retry every 10 ms)
_MIN_PAUSE = 0.005
MAX_PROBLEMS = 50
SUFFIXES = {
    ".txt": "text",
    ".md": "text",
    ".text": "text",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".xml": "atom",
    ".atom": "atom",
}
#: the most one file may hold once decompressed, unless the caller says otherwise (the default of
#: PAPERBOT_MAX_DECOMPRESSED_MB, the setting that names it)
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
LIMIT_SETTING = "PAPERBOT_MAX_DECOMPRESSED_MB"
_SNIFF_CHARS = 4096
_CHECK_CHARS = 1 << 20


@dataclass
class _Tally:
    added: int = 0
    merged: int = 0
    unchanged: int = 0
    rejected: int = 0
    problems: list[str] = field(default_factory=list)
    more_problems: int = 0

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.more_problems += 1

    def reject(self, where: str, reason: str) -> None:
        self.rejected += 1
        self.problem(f"{where}: {reason}")

    def count(self, counts: UpsertCounts) -> None:
        self.added += counts.added
        self.merged += counts.merged
        self.unchanged += counts.unchanged

    def absorb(self, other: _Tally) -> None:
        self.added += other.added
        self.merged += other.merged
        self.unchanged += other.unchanged
        self.rejected += other.rejected
        for text in other.problems:
            self.problem(text)
        self.more_problems += other.more_problems

    def summary(self) -> IngestSummary:
        problems = list(self.problems)
        if self.more_problems:
            problems.append(f"… and {self.more_problems} more problems")
        return IngestSummary(
            added=self.added,
            merged=self.merged,
            unchanged=self.unchanged,
            rejected=self.rejected,
            problems=tuple(problems),
        )


def supported(name: str) -> bool:
    """Whether a folder walk picks this file up (by its suffix, `.gz` allowed)."""
    base = name.lower().removesuffix(".gz")
    return Path(base).suffix in SUFFIXES and not name.startswith(".")


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files named directly, plus every supported file under named folders, each once, in order."""
    files: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        found = (
            sorted(p for p in path.rglob("*") if p.is_file() and supported(p.name))
            if path.is_dir()
            else [path]
        )
        for file in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files


def detect_format(name: str, head: str) -> str:
    """ "text", "json", "jsonl" or "atom" from the file name, else from its first characters."""
    base = name.lower().removesuffix(".gz")
    by_name = SUFFIXES.get(Path(base).suffix)
    if by_name:
        return by_name
    start = head.lstrip()
    if start.startswith("<"):
        return "atom"
    if start.startswith("["):
        return "json"
    if start.startswith("{"):
        lines = [line for line in start.splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].rstrip().endswith("}") and lines[1].lstrip().startswith("{"):
            return "jsonl"
        return "json"
    return "text"


class _Bounded(io.RawIOBase):
    """The bytes of `inner` (a file, or its gzip reader), refused with FileRejected once more than
    `limit` of them have been read."""

    def __init__(self, inner: IO[bytes], limit: int, *, owns_inner: bool) -> None:
        super().__init__()
        self._inner = inner
        self._left = limit
        self._limit = limit
        self._owns_inner = owns_inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._inner.read(min(len(view), self._left + 1))
        if len(data) > self._left:
            raise FileRejected(
                f"holds more than {self._limit / 1024 / 1024:g} MB once decompressed, the most one file "
                f"may hold ({LIMIT_SETTING}); nothing of it was stored"
            )
        self._left -= len(data)
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._owns_inner:
            self._inner.close()
        super().close()


class _Source:
    """One file's bytes, as text (through gzip when they are gzipped, whatever the name says), within
    the bound on what it may hold; each `text()` reads it again from the start."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._limit = limit

    def text(self) -> io.TextIOWrapper:
        self._raw.seek(0)
        gzipped = self._raw.read(2) == b"\x1f\x8b"
        self._raw.seek(0)
        inner = cast(IO[bytes], gzip.GzipFile(fileobj=self._raw, mode="rb")) if gzipped else self._raw
        bounded = _Bounded(inner, self._limit, owns_inner=gzipped)
        return io.TextIOWrapper(
            io.BufferedReader(bounded), encoding="utf-8-sig", errors="strict", newline=None
        )

    def position(self) -> int:
        """How far into the file (its compressed bytes, for gzip) reading has gone."""
        return self._raw.tell()

    def check(self, name: str) -> str:
        """Read the whole file through, a chunk at a time, and say its format. Damaged gzip, text that
        is not UTF-8, or more than the bound raise here, before anything of the file is stored."""
        with self.text() as text:
            fmt = detect_format(name, text.read(_SNIFF_CHARS))
            while text.read(_CHECK_CHARS):
                pass
        return fmt


def _items(fmt: str, text_stream: io.TextIOWrapper, name: str) -> Iterator[PaperRecord | Rejected]:
    """Records and rejections of one file; FileRejected when the whole file is unusable."""
    if fmt == "jsonl":
        yield from parse_jsonl(text_stream, source=name)
        return
    text = text_stream.read()
    if fmt == "json":
        recorded = unwrap_recorded(text)
        if recorded is not None:
            fmt, (text, status) = "atom", recorded
            yield from _atom_items(text, name, status)
            return
        if _looks_like_jsonl(text):
            yield from parse_jsonl(text.splitlines(), source=name)
            return
        yield from parse_json(text, source=name)
    elif fmt == "atom":
        if not is_atom(text):
            raise FileRejected("not an Atom feed")
        yield from _atom_items(text, name, None)
    else:
        yield from parse_paper_list(text, source=name)


def _atom_items(text: str, name: str, status: int | None) -> Iterator[PaperRecord | Rejected]:
    page = parse_atom(text, source=name, status=status)
    yield from page.rejected
    yield from page.records


def _looks_like_jsonl(text: str) -> bool:
    """JSON Lines saved as .json: several top-level objects, one per line."""
    start = text.lstrip()
    if not start.startswith("{"):
        return False
    first, _, rest = start.partition("\n")
    return first.rstrip().endswith("}") and rest.lstrip().startswith("{")


async def _settle(task: asyncio.Task[UpsertCounts] | None) -> None:
    """Wait for a merge to finish (without raising its error) before giving up on the file."""
    if task is None:
        return
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not task.cancelled():
        task.exception()  # retrieved: the error that matters is the one already propagating


class _BatchWriter:
    """Merges batches one transaction each, and starts a batch only once the write lock has been free
    for a quarter of the time the previous batch held it (at most `BATCH_PAUSE`), so other writers
    (the running bot) always find a gap. Parsing the next batch usually takes longer than that."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._repo = PaperRepository(db)
        self._free_until = 0.0  # loop time before which the lock is left to others

    async def merge(self, batch: list[PaperRecord]) -> UpsertCounts:
        loop = asyncio.get_running_loop()
        if (wait := self._free_until - loop.time()) > 0:
            await asyncio.sleep(wait)
        started = loop.time()
        try:
            async with self._db.transaction() as conn:
                return await self._repo.upsert_many(batch, conn=conn, now=utcnow())
        finally:
            held = loop.time() - started
            self._free_until = loop.time() + min(BATCH_PAUSE, max(_MIN_PAUSE, held / 4))


@dataclass
class _Parsed:
    """What the parsing thread read since it was last asked: records, rejections, and whether the
    file is done."""

    records: list[PaperRecord] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    done: bool = False
    position: int = 0


def _parse_batch(items: Iterator[PaperRecord | Rejected], source: _Source) -> _Parsed:
    """The next batch (in the worker thread): up to `BATCH` records, or as many rejections."""
    parsed = _Parsed()
    for item in items:
        if isinstance(item, Rejected):
            parsed.rejected.append(item)
        else:
            parsed.records.append(item)
        if len(parsed.records) >= BATCH or len(parsed.rejected) >= BATCH:
            break
    else:
        parsed.done = True
    parsed.position = source.position()
    return parsed


async def _in_thread(work: Callable[[], _T]) -> _T:
    """`work()` in a worker thread. If the caller is cancelled meanwhile, the step in progress is let
    finish first (it reads a file the caller is about to close)."""
    step = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(step)
    except asyncio.CancelledError:
        await asyncio.wait({step})
        raise


async def _ingest_stream(
    db: Database,
    name: str,
    raw: IO[bytes],
    tally: _Tally,
    report: Callable[[int], None] | None = None,
    *,
    max_bytes: int = MAX_DECOMPRESSED_BYTES,
) -> None:
    """Ingest one file's bytes batch by batch; problems go to `tally`, counts once the file is done."""
    here = _Tally()
    writer = _BatchWriter(db)
    source = _Source(raw, max_bytes)
    fmt = "unknown"
    try:
        fmt = await _in_thread(lambda: source.check(name))
        with source.text() as text:
            items = _items(fmt, text, name)
            seen = 0
            # Batch N is merged (the store working in its driver's thread, or the server) while batch
            # N+1 is parsed in a worker thread; batches still merge one after another, so each sees the
            # ones before it.
            merging: asyncio.Task[UpsertCounts] | None = None
            try:
                while True:
                    parsed = await _in_thread(lambda: _parse_batch(items, source))
                    for rejection in parsed.rejected:
                        here.reject(rejection.where(name), rejection.reason)
                    if parsed.records:
                        seen += len(parsed.records)
                        if merging is not None:
                            here.count(await merging)
                            if report is not None:
                                report(parsed.position)
                        merging = asyncio.create_task(writer.merge(parsed.records))
                    if parsed.done:
                        break
                if merging is not None:
                    here.count(await merging)
                    merging = None
            finally:
                await _settle(merging)  # a merge still running ends (commits or rolls back) first
        if seen == 0 and here.rejected == 0:
            here.problem(f"{name}: no papers found")
    except FileRejected as error:
        where = f"{name}:{error.line}" if error.line else name
        tally.reject(where, error.reason)
        return
    except UnicodeDecodeError:
        tally.reject(name, "not UTF-8 text")
        return
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        tally.reject(name, f"damaged gzip data ({error})")
        return
    tally.absorb(here)
    log.info(
        "ingested %s (%s): %d added, %d merged, %d unchanged, %d rejected",
        name,
        fmt,
        here.added,
        here.merged,
        here.unchanged,
        here.rejected,
    )


async def ingest_paths(
    db: Database,
    paths: Sequence[Path],
    *,
    progress: Progress | None = None,
    max_bytes: int = MAX_DECOMPRESSED_BYTES,
) -> IngestSummary:
    """Ingest files and folders (see the module docstring), batch by batch; a file holding more than
    `max_bytes` once decompressed is refused."""
    files = expand_paths(paths)
    sizes = []
    for file in files:
        try:
            sizes.append(file.stat().st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    done = 0
    tally = _Tally()
    for file, size in zip(files, sizes, strict=True):

        def report(position: int, base: int = done) -> None:
            if progress is not None:
                progress(min(base + position, total), total)

        try:
            with file.open("rb") as raw:
                await _ingest_stream(db, file.name, raw, tally, report, max_bytes=max_bytes)
        except OSError as error:
            tally.reject(str(file), f"cannot read ({error.strerror or error})")
        done += size
        if progress is not None:
            progress(done, total)
    if not files:
        tally.problem("no supported files found (.txt, .json, .jsonl, .xml, optionally .gz)")
    return tally.summary()


async def ingest_bytes(
    db: Database, name: str, data: bytes, *, max_bytes: int = MAX_DECOMPRESSED_BYTES
) -> IngestSummary:
    """Ingest one uploaded file (`/paperadmin ingest`), batch by batch; refused if it holds more than
    `max_bytes` once decompressed."""
    tally = _Tally()
    await _ingest_stream(db, name, io.BytesIO(data), tally, max_bytes=max_bytes)
    return tally.summary()


def shipped_seed_files() -> list[tuple[str, bytes]]:
    """(name, bytes) of the paper lists shipped in the package (`bot/data/seeds/*.txt`)."""
    folder = resources.files("bot").joinpath("data", "seeds")
    entries: Iterable[Traversable] = folder.iterdir() if folder.is_dir() else []
    return sorted((entry.name, entry.read_bytes()) for entry in entries if entry.name.endswith(".txt"))


async def ensure_shipped_corpus(db: Database) -> IngestSummary | None:
    """Load the shipped paper lists into a new store; None when there is nothing to do.

    A marker in app_state says the load finished: a load cut short (a kill at any point, which keeps
    the batches committed so far) is completed at the next start; re-ingesting a file is harmless.
    A store that holds papers from anywhere else is left alone.
    """
    state = StateRepository(db)
    if await state.get(SHIPPED_CORPUS_KEY) is not None:
        return None
    seeds = shipped_seed_files()
    if await PaperRepository(db).count_from_other_sources([name for name, _ in seeds]) > 0:
        return None
    tally = _Tally()
    for name, data in seeds:
        await _ingest_stream(db, name, io.BytesIO(data), tally)
    await state.set(SHIPPED_CORPUS_KEY, ",".join(name for name, _ in seeds))
    summary = tally.summary()
    log.info("loaded the shipped corpus: %d papers", summary.added)
    return summary
