"""`paperbot ingest`: files and folders, .gz, format detection, the summary, progress, the shipped corpus,
the 2,610 merge figure, idempotent re-ingest, a kill -9 mid-file, and the write lock left to the running
bot between batches."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from shared_data import shared_path

from bot.services.papers.ingest.runner import (
    BATCH,
    MAX_PROBLEMS,
    detect_format,
    ensure_shipped_corpus,
    expand_paths,
    ingest_bytes,
    ingest_paths,
    shipped_seed_files,
)
from storage.db import Database
from storage.repositories.papers import PaperRepository
from storage.store import open_database


def abstract(n: int) -> str:
    return (
        f"Paper number {n} studies a synthetic problem in depth. We propose Method{n}, a procedure that "
        f"solves instance {n} of the benchmark efficiently and reports results on {n % 7 + 2} datasets."
    )


def jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


ATOM = (
    "<?xml version='1.0' encoding='UTF-8'?><feed xmlns=\"http://www.w3.org/2005/Atom\" "
    'xmlns:arxiv="http://arxiv.org/schemas/atom"><title>arXiv Query</title>'
    "<entry><id>http://arxiv.org/abs/2404.00009v1</id><title>From arXiv</title>"
    f"<summary>{abstract(900)}</summary><published>2026-04-01T00:00:00Z</published>"
    '<author><name>A. Author</name></author><arxiv:primary_category term="cs.LG"/></entry></feed>'
)
ERROR_FEED = (
    "<?xml version='1.0' encoding='UTF-8'?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>arXiv</title>"
    "<entry><id>https://arxiv.org/api/errors#incorrect_id_format_for_abc</id><title>Error</title>"
    "<summary>incorrect id format for abc</summary></entry></feed>"
)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A folder with one file of each format, a .gz, a nested folder and a file to ignore."""
    folder = tmp_path / "corpus"
    (folder / "nested").mkdir(parents=True)
    (folder / "list.txt").write_text(f"NeurIPS 2023 papers\n\n{abstract(1)}\n\n{abstract(2)}\n", "utf-8")
    (folder / "records.jsonl.gz").write_bytes(
        gzip.compress(
            jsonl(
                [{"id": f"r{n}", "title": f"Record {n}", "abstract": abstract(n)} for n in range(2, 6)]
            ).encode()
        )
    )
    (folder / "nested" / "list.json").write_text(
        json.dumps([{"title": "Listed", "abstract": abstract(10), "authors": "A; B", "year": 2020}]), "utf-8"
    )
    (folder / "nested" / "feed.xml").write_text(ATOM, "utf-8")
    (folder / "notes.csv").write_text("title,abstract\nx,y\n", "utf-8")
    return folder


async def test_a_folder_of_mixed_formats(db: Database, corpus: Path) -> None:
    seen: list[tuple[int, int]] = []
    summary = await ingest_paths(db, [corpus], progress=lambda done, total: seen.append((done, total)))
    # abstract(2) is in list.txt and records.jsonl.gz: one paper, the record's real title wins
    assert (summary.added, summary.merged, summary.unchanged, summary.rejected) == (7, 1, 0, 0)
    assert summary.problems == ()
    repo = PaperRepository(db)
    assert await repo.count() == 7
    merged = await repo.find_by_external("r2")
    assert merged is not None
    assert merged.title == "Record 2"
    assert not merged.title_derived
    assert (merged.venue, merged.year) == ("NeurIPS", 2023), "filled from the paper list's header"
    assert (await repo.find_by_external("2404.00009")) is not None
    assert seen
    assert seen[-1][0] == seen[-1][1] == sum(p.stat().st_size for p in expand_paths([corpus]))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


async def test_ingesting_the_same_folder_again_changes_nothing(db: Database, corpus: Path) -> None:
    await ingest_paths(db, [corpus])
    before = [tuple(r) for r in await db.fetchall("SELECT * FROM papers ORDER BY id")]
    summary = await ingest_paths(db, [corpus, corpus / "list.txt"])
    assert (summary.added, summary.merged, summary.rejected) == (0, 0, 0)
    assert summary.unchanged == 8
    assert [tuple(r) for r in await db.fetchall("SELECT * FROM papers ORDER BY id")] == before


def test_folder_walk_picks_supported_files_once(corpus: Path) -> None:
    names = [p.name for p in expand_paths([corpus, corpus / "list.txt"])]
    assert names == ["list.txt", "feed.xml", "list.json", "records.jsonl.gz"]


@pytest.mark.parametrize(
    ("name", "head", "fmt"),
    [
        ("a.jsonl.gz", "", "jsonl"),
        ("a.ndjson", "", "jsonl"),
        ("a.JSON", "", "json"),
        ("a.atom", "", "atom"),
        ("upload", '{"title": "a"}\n{"title": "b"}\n', "jsonl"),
        ("upload", '{"papers": []}', "json"),
        ("upload", "[{}]", "json"),
        ("upload", "  <?xml version='1.0'?><feed>", "atom"),
        ("upload", "ICML 2024\n\nSome abstract", "text"),
    ],
)
def test_format_detection(name: str, head: str, fmt: str) -> None:
    assert detect_format(name, head) == fmt


async def test_a_bad_file_is_reported_and_the_other_files_go_in(db: Database, tmp_path: Path) -> None:
    (tmp_path / "good.jsonl").write_text(jsonl([{"title": "Good", "abstract": abstract(1)}]), "utf-8")
    (tmp_path / "broken.json").write_text('{"title": "x",\n "abstract": }', "utf-8")
    (tmp_path / "latin1.txt").write_bytes(("Liste\n\n" + abstract(2) + " café").encode("latin-1"))
    (tmp_path / "damaged.jsonl.gz").write_bytes(gzip.compress(b'{"title": "t"}\n' * 50)[:40])
    (tmp_path / "error.xml").write_text(ERROR_FEED, "utf-8")
    (tmp_path / "empty.json").write_text("[]", "utf-8")
    summary = await ingest_paths(db, [tmp_path])
    assert summary.added == 1
    assert summary.rejected == 4
    problems = "\n".join(summary.problems)
    assert "broken.json:2: invalid JSON" in problems
    assert "latin1.txt: not UTF-8 text" in problems
    assert "damaged.jsonl.gz: damaged gzip data" in problems
    assert "error.xml: arXiv API error: incorrect id format for abc" in problems
    assert "empty.json: no papers found" in problems
    assert await PaperRepository(db).count() == 1


async def test_bad_records_are_reported_with_file_and_line(db: Database) -> None:
    lines = [json.dumps({"title": f"T{n}", "abstract": abstract(n)}) for n in range(3)]
    lines.insert(1, "{oops")
    lines.append(json.dumps({"title": "Y", "abstract": abstract(9), "year": "soon"}))
    summary = await ingest_bytes(db, "upload.jsonl", "\n".join(lines).encode())
    assert (summary.added, summary.rejected) == (3, 2)
    assert summary.problems[0].startswith("upload.jsonl:2: invalid JSON")
    assert summary.problems[1] == "upload.jsonl:5: invalid year 'soon'"


async def test_a_file_that_fails_midway_leaves_nothing_behind(db: Database) -> None:
    """A file that is not UTF-8 half-way is found out before its first batch is written."""
    good = "".join(json.dumps({"title": f"T{n}", "abstract": abstract(n)}) + "\n" for n in range(2500))
    summary = await ingest_bytes(db, "upload.jsonl", good.encode() + b'{"title": "\xff\xfe"}\n')
    assert summary.rejected == 1
    assert summary.added == 0
    assert "not UTF-8" in summary.problems[0]
    assert await PaperRepository(db).count() == 0


async def test_a_gzip_file_cut_short_midway_leaves_nothing_behind(db: Database) -> None:
    good = "".join(json.dumps({"title": f"T{n}", "abstract": abstract(n)}) + "\n" for n in range(5000))
    packed = gzip.compress(good.encode())
    summary = await ingest_bytes(db, "upload.jsonl.gz", packed[: len(packed) * 3 // 4])
    assert summary.rejected == 1
    assert "damaged gzip data" in summary.problems[0]
    assert await PaperRepository(db).count() == 0


def gzip_bomb(megabytes: int) -> bytes:
    """That many MB of spaces, gzipped (about a thousandth of it), made a MB at a time."""
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9) as out:
        for _ in range(megabytes):
            out.write(b" " * (1024 * 1024))
    return packed.getvalue()


@pytest.mark.parametrize("name", ["upload.jsonl.gz", "upload.json.gz", "upload.jsonl"])
async def test_a_file_holding_more_than_the_bound_is_refused_whole(db: Database, name: str) -> None:
    """Past `max_bytes` once decompressed, a file is refused, naming the bound and the setting, and
    nothing of it is stored — not even the records before the point where it passed the bound."""
    records = [{"title": f"T{n}", "abstract": abstract(n)} for n in range(3000)]
    text = json.dumps(records) if ".json." in name else jsonl(records)
    data = text.encode()
    limit = len(data) - 1
    packed = gzip.compress(data) if name.endswith(".gz") else data
    summary = await ingest_bytes(db, name, packed, max_bytes=limit)
    assert (summary.added, summary.rejected) == (0, 1)
    assert summary.problems == (
        f"{name}: holds more than {limit / 1024 / 1024:g} MB once decompressed, the most one file may hold "
        "(PAPERBOT_MAX_DECOMPRESSED_MB); nothing of it was stored",
    )
    assert await PaperRepository(db).count() == 0
    exactly = await ingest_bytes(db, name, packed, max_bytes=len(data))
    assert (exactly.added, exactly.rejected) == (3000, 0), "a file of exactly the bound goes in"


async def test_a_gzip_bomb_is_refused_holding_no_more_than_a_chunk_of_it(db: Database) -> None:
    """A few hundred KB that expand to 256 MB: refused at the default bound, and reading it never
    holds more than a few MB of it (the whole would be 256 MB, and as much again as text)."""
    bomb = gzip_bomb(257)
    assert len(bomb) < 300_000
    tracemalloc.start()
    try:
        summary = await ingest_bytes(db, "bomb.json.gz", bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary.rejected == 1
    assert "holds more than 256 MB once decompressed" in summary.problems[0]
    assert peak < 16 * 1024 * 1024, f"held {peak / 1024 / 1024:.0f} MB"


async def test_uploads_are_recognised_by_content(db: Database) -> None:
    data = gzip.compress(jsonl([{"title": "Zipped", "abstract": abstract(3)}]).encode())
    summary = await ingest_bytes(db, "attachment.bin", data)
    assert summary.added == 1
    recorded = json.dumps({"url": "https://export.arxiv.org/api/query", "status_code": 200, "body": ATOM})
    assert (await ingest_bytes(db, "response.json", recorded.encode())).added == 1


async def test_problems_are_capped(db: Database) -> None:
    lines = "\n".join(["{bad"] * (MAX_PROBLEMS + 7) + [json.dumps({"title": "ok"})])
    summary = await ingest_bytes(db, "many.jsonl", lines.encode())
    assert summary.rejected == MAX_PROBLEMS + 7
    assert len(summary.problems) == MAX_PROBLEMS + 1
    assert summary.problems[-1] == "… and 7 more problems"


async def test_the_shipped_corpus_loads_into_an_empty_store_once(db: Database) -> None:
    summary = await ensure_shipped_corpus(db)
    assert summary is not None
    assert (summary.added, summary.rejected) == (38, 0)
    assert (
        await db.fetchval(
            "SELECT COUNT(*) FROM papers WHERE title_derived = 1 AND venue = 'ICML' AND year = 2024"
        )
        == 38
    )
    assert await ensure_shipped_corpus(db) is None
    assert await PaperRepository(db).count() == 38


async def test_a_shipped_corpus_load_cut_short_is_completed_at_the_next_start(db: Database) -> None:
    first_name, first_data = shipped_seed_files()[0]
    await ingest_bytes(db, first_name, first_data)  # as if killed before the second file
    summary = await ensure_shipped_corpus(db)
    assert summary is not None
    assert await PaperRepository(db).count() == 38


async def test_the_shipped_corpus_is_not_mixed_into_a_store_loaded_from_elsewhere(db: Database) -> None:
    await ingest_bytes(
        db, "mine.jsonl", json.dumps({"title": "My own paper", "abstract": "x" * 200}).encode()
    )
    assert await ensure_shipped_corpus(db) is None
    assert await PaperRepository(db).count() == 1


async def test_nothing_to_ingest_is_said_plainly(db: Database, tmp_path: Path) -> None:
    summary = await ingest_paths(db, [tmp_path])
    assert summary.problems
    assert "no supported files" in summary.problems[0]


# ----------------------------------------------------------------------------- the real corpora


@pytest.mark.shared
async def test_seeds_then_icml_leave_2610_papers_with_real_titles_and_authors(db: Database) -> None:
    seeds = shared_path("seeds")
    icml = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    first = await ingest_paths(db, [seeds])
    assert (first.added, first.rejected) == (38, 0)
    seed_ids = [row[0] for row in await db.fetchall("SELECT id FROM papers")]
    second = await ingest_paths(db, [icml])
    assert (second.added, second.merged, second.rejected) == (2572, 38, 0)
    assert await PaperRepository(db).count() == 2610
    papers = await PaperRepository(db).get_many(seed_ids)
    assert all(not p.title_derived and p.authors and p.openreview_id for p in papers.values())
    medusa = next(p for p in papers.values() if "we present Medusa" in p.abstract)
    assert medusa.title == "Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads"
    assert medusa.authors[:2] == ("Tianle Cai", "Yuhong Li")
    assert medusa.status in {"Oral", "Spotlight", "Poster"}

    before = [tuple(r) for r in await db.fetchall("SELECT * FROM papers ORDER BY id")]
    again = await ingest_paths(db, [seeds, icml])
    assert (again.added, again.merged, again.unchanged) == (0, 0, 2648)
    assert [tuple(r) for r in await db.fetchall("SELECT * FROM papers ORDER BY id")] == before


@pytest.mark.shared
async def test_icml_first_then_seeds_also_leaves_2610(db: Database) -> None:
    await ingest_paths(db, [shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")])
    summary = await ingest_paths(db, [shared_path("seeds")])
    assert (summary.added, summary.unchanged) == (0, 38)
    assert await db.fetchval("SELECT COUNT(*) FROM papers WHERE title_derived = 1") == 0


@pytest.mark.shared
async def test_airas_folder_duplicates_merge_without_rejections(db: Database) -> None:
    summary = await ingest_paths(db, [shared_path("data", "airas-papers-db")])
    assert summary.rejected == 0
    assert summary.unchanged > 0  # oral and poster events of one paper
    assert await db.fetchval("SELECT COUNT(*) FROM papers WHERE venue = 'ICLR' AND year = 2024") > 2000


@pytest.mark.shared
async def test_the_recorded_arxiv_folder(db: Database) -> None:
    summary = await ingest_paths(db, [shared_path("data", "arxiv-api")])
    assert summary.rejected == 1
    assert any("arXiv API error: incorrect id format for abc" in p for p in summary.problems)
    assert await db.fetchval("SELECT COUNT(*) FROM papers WHERE arxiv_id IS NULL") == 0
    assert await PaperRepository(db).find_by_external("quant-ph/0201082v1") is not None


@pytest.mark.shared
@pytest.mark.slow
async def test_multivenue_corpus(db: Database) -> None:
    summary = await ingest_paths(db, [shared_path("data", "multivenue", "multivenue_corpus.jsonl.gz")])
    assert summary.rejected == 0
    assert summary.added + summary.merged + summary.unchanged == 35712
    assert summary.added > 35000


# ----------------------------------------------------------------------------- kill -9

REPO = Path(__file__).resolve().parents[4]
CHILD = """
import asyncio, sys, time
from pathlib import Path
from bot.services.papers.ingest.runner import ingest_paths
from storage.store import open_database


async def main(db_path, small, big):
    async with await open_database(db_path) as db:
        await ingest_paths(db, [Path(small)])
        print("small done", flush=True)
        def progress(done, total):
            print(f"progress {done} {total}", flush=True)
            time.sleep(0.3)
        await ingest_paths(db, [Path(big)], progress=progress)
        print("big done", flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_kill_9_mid_file_leaves_the_store_consistent(tmp_path: Path) -> None:
    db_path = tmp_path / "killed.db"
    small = tmp_path / "small.jsonl"
    small.write_text(jsonl([{"title": f"S{n}", "abstract": abstract(n)} for n in range(3)]), "utf-8")
    big = tmp_path / "big.jsonl"
    big.write_text(jsonl([{"title": f"B{n}", "abstract": abstract(n)} for n in range(100, 5100)]), "utf-8")
    script = tmp_path / "child.py"
    script.write_text(CHILD, "utf-8")

    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(db_path),
        str(small),
        str(big),
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    assert child.stdout is not None
    lines = []
    try:
        while line := (await asyncio.wait_for(child.stdout.readline(), 60)).decode():
            lines.append(line.strip())
            if line.startswith("progress"):
                child.kill()  # SIGKILL while a batch of the big file is written but not committed
                break
    finally:
        returncode = await asyncio.wait_for(child.wait(), 30)
    assert lines[0] == "small done"
    assert returncode == -signal.SIGKILL

    async with await open_database(db_path) as db:
        assert await db.fetchval("PRAGMA integrity_check") == "ok"
        kept = await PaperRepository(db).count() - 3
        assert 0 < kept < 5000, "the batches committed before the kill stay; the rest is not there"
        assert kept % BATCH == 0, "whole batches only"
        rows = await db.fetchall("SELECT title, abstract FROM papers WHERE title LIKE 'B%'")
        assert all(row[1] == abstract(int(row[0][1:])) for row in rows), "every paper stored whole"
        summary = await ingest_paths(db, [big])  # the rerun completes the file
        assert (summary.added, summary.unchanged) == (5000 - kept, kept)
        assert await PaperRepository(db).count() == 5003


# ----------------------------------------------------------------------------- beside the running bot


async def test_an_ingest_in_another_process_lets_other_writers_in_between_batches(tmp_path: Path) -> None:
    """`paperbot ingest` of a file that takes seconds, beside a process that writes now and then (the
    bot storing reactions): every one of those writes gets the lock within a moment, none waits for
    the whole file (SQLite's busy timeout is 5 s), and the ingest still stores every paper."""
    db_path = tmp_path / "shared.db"
    big = tmp_path / "big.jsonl"
    big.write_text(jsonl([{"title": f"B{n}", "abstract": abstract(n)} for n in range(150_000)]), "utf-8")
    async with await open_database(db_path) as db:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "ingest", str(big),
            env={**os.environ, "PAPERBOT_DB": str(db_path), "PAPERBOT_LOG_LEVEL": "WARNING"},
            stdout=asyncio.subprocess.DEVNULL, cwd=REPO,
        )  # fmt: skip
        waits: list[float] = []
        during: list[int] = []
        while child.returncode is None:
            await asyncio.sleep(0.1)
            stored = await PaperRepository(db).count()
            started = time.perf_counter()
            await db.execute(
                "INSERT INTO users (id, created_at) VALUES (?, 'now')", (len(waits) + 1,)
            )  # a write with the default patience: never lost, only delayed
            waits.append(time.perf_counter() - started)
            if 0 < stored < 150_000:
                during.append(stored)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.wait()), 0.01)
        assert await child.wait() == 0
        assert max(waits) < 1.0, f"a write waited {max(waits):.1f} s for the ingest's lock"
        assert len(during) >= 5, "the ingest ran for a while, and its batches were visible as they committed"
        assert await PaperRepository(db).count() == 150_000
        assert await db.fetchval("SELECT COUNT(*) FROM users") == len(waits)
