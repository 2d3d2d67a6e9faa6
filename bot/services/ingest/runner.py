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
- A file that cannot be read at all (not UTF-8, damaged gzip, not JSON, an arXiv error feed) is
  reported and skipped, and writes nothing: a streamed file (JSONL) is read through once before its
  first batch, so damage half-way leaves no half file behind. A bad record is reported with its line
  and the rest go in.
- JSONL is streamed, so memory stays flat, and batch N is merged while batch N+1 is parsed.
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
from typing import IO, cast

from bot.services.ingest.arxiv_atom import is_atom, parse_atom, unwrap_recorded
from bot.services.ingest.normalise import FileRejected, Rejected
from bot.services.ingest.papertext import parse_paper_list
from bot.services.ingest.records import parse_json, parse_jsonl
from storage.db import Database, utcnow
from storage.models import IngestSummary, PaperRecord
from storage.repositories.papers import PaperRepository, UpsertCounts
from storage.repositories.state import StateRepository

__all__ = [
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
_SNIFF_CHARS = 4096
_CHECK_CHARS = 1 << 20
_YIELD_EVERY = 50  # records parsed between chances for the running merge to proceed


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


def _binary_stream(raw: IO[bytes]) -> IO[bytes]:
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    return raw


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


async def _ingest_stream(
    db: Database,
    name: str,
    raw: IO[bytes],
    tally: _Tally,
    report: Callable[[int], None] | None = None,
) -> None:
    """Ingest one file's bytes batch by batch; problems go to `tally`, counts once the file is done."""
    here = _Tally()
    writer = _BatchWriter(db)
    text_stream: io.TextIOWrapper | None = None
    fmt = "unknown"
    try:
        text_stream = io.TextIOWrapper(
            _binary_stream(raw), encoding="utf-8-sig", errors="strict", newline=None
        )
        fmt = detect_format(name, text_stream.read(_SNIFF_CHARS))
        if fmt == "jsonl":
            # Streamed: its records are merged as they are read, so read it through once first. Not
            # UTF-8 or damaged gzip is then found before any batch is written. (Other formats are
            # read whole before their first record.)
            while text_stream.read(_CHECK_CHARS):
                pass
        text_stream.seek(0)
        seen = 0
        # Batch N is merged (the store working in its driver's thread, or the server) while batch N+1 is
        # parsed here; batches still merge one after another, so each sees the ones before it.
        merging: asyncio.Task[UpsertCounts] | None = None
        batch: list[PaperRecord] = []
        try:
            for item in _items(fmt, text_stream, name):
                if isinstance(item, Rejected):
                    here.reject(item.where(name), item.reason)
                    continue
                batch.append(item)
                seen += 1
                if len(batch) >= BATCH:
                    if merging is not None:
                        here.count(await merging)
                        if report is not None:
                            report(raw.tell())
                    merging = asyncio.create_task(writer.merge(batch))
                    batch = []
                if seen % _YIELD_EVERY == 0 and merging is not None and not merging.done():
                    await asyncio.sleep(0)  # let the merge take its next step
            if merging is not None:
                here.count(await merging)
                merging = None
            if batch:
                here.count(await writer.merge(batch))
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
    finally:
        if text_stream is not None:
            text_stream.close()  # also closes the gzip reader; the caller's file closes twice, harmlessly
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
    db: Database, paths: Sequence[Path], *, progress: Progress | None = None
) -> IngestSummary:
    """Ingest files and folders (see the module docstring), batch by batch."""
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
                await _ingest_stream(db, file.name, raw, tally, report)
        except OSError as error:
            tally.reject(str(file), f"cannot read ({error.strerror or error})")
        done += size
        if progress is not None:
            progress(done, total)
    if not files:
        tally.problem("no supported files found (.txt, .json, .jsonl, .xml, optionally .gz)")
    return tally.summary()


async def ingest_bytes(db: Database, name: str, data: bytes) -> IngestSummary:
    """Ingest one uploaded file (`/paperadmin ingest`), batch by batch."""
    tally = _Tally()
    await _ingest_stream(db, name, io.BytesIO(data), tally)
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
