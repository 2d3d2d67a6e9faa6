"""The same papers from two sources are held once, at scale: the multivenue corpus as bioRxiv-style
preprints and as a journal's feed entries, merged page by page as `paperbot fetch` merges them.

    .venv/bin/python bench/sources_dedup_bench.py [--papers N] [--order preprints-first|journal-first|both]

Each paper of ../shared/data/multivenue becomes two records: a preprint (a DOI of its own,
`Last, First` authors, version 1; every other preprint names its journal DOI as bioRxiv's `published`
does) and the journal article (the journal DOI, `First Last` authors, the abstract without its first
sentence as a journal edits it). The preprints are merged in pages of 30 (bioRxiv's page), the articles
in pages of 100, each page one transaction (`PaperRepository.upsert_many`, the fetch's merge), into a
fresh SQLite store. It prints the papers held after each source (each paper once: the count after the
second source equals the first's), how many articles joined by DOI and by title + first author, the
rate, the corpus's own duplicates by title + first author (which the store also holds once), and the
papers still held twice (their preprint and their article two papers), each by title and authors.
Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import MULTIVENUE, load_average, multivenue_rows  # noqa: E402

from storage.models import PaperRecord  # noqa: E402
from storage.repositories import paper_keys  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import open_database  # noqa: E402


def last_first(name: str) -> str:
    parts = name.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name


def records(rows: list[dict]) -> tuple[list[PaperRecord], list[PaperRecord]]:
    preprints, articles = [], []
    for i, row in enumerate(rows):
        journal = f"10.5555/journal.{i}"
        # A few corpus rows hold their whole author list as one comma-separated name; a source's
        # parser gives names one by one, so each record gets them split before it is written its way.
        authors = tuple(name.strip() for entry in row.get("authors") or () for name in entry.split(","))
        preprints.append(
            PaperRecord(
                title=row["title"],
                abstract=row["abstract"],
                authors=tuple(last_first(a) for a in authors),
                doi=f"10.1101/bench.{i}",
                other_dois=(journal,) if i % 2 == 0 else (),
                version=1,
                source="biorxiv",
            )
        )
        _head, dot, rest = row["abstract"].partition(". ")
        articles.append(
            PaperRecord(
                title=row["title"],
                abstract=rest if dot and len(rest) > 100 else row["abstract"] + " (Journal version.)",
                authors=authors,
                doi=journal,
                source="rss",
            )
        )
    return preprints, articles


async def merge(repo: PaperRepository, batch: list[PaperRecord], page: int) -> tuple[float, int, int]:
    started = time.perf_counter()
    added = joined = 0
    for start in range(0, len(batch), page):
        counts = await repo.upsert_many(batch[start : start + page])
        added += counts.added
        joined += counts.merged + counts.unchanged
    return time.perf_counter() - started, added, joined


async def run(rows: list[dict], order: str) -> None:
    preprints, articles = records(rows)
    sources = [("preprints", preprints, 30), ("journal", articles, 100)]
    if order == "journal-first":
        sources.reverse()
    with tempfile.TemporaryDirectory() as folder:
        async with await open_database(Path(folder) / "bench.db") as db:
            repo = PaperRepository(db)
            print(f"\n{order}:")
            print("| source | records | added | joined a stored paper | papers held | seconds | records/s |")
            print("|---|---|---|---|---|---|---|")
            for name, batch, page in sources:
                seconds, added, joined = await merge(repo, batch, page)
                held = await repo.count()
                rate = len(batch) / seconds
                print(
                    f"| {name} | {len(batch):,} | {added:,} | {joined:,} | {held:,} | {seconds:.1f} | {rate:,.0f} |"
                )
            twice = await held_twice(repo, rows, preprints, articles)
            print(f"held twice (its preprint and its article two papers): {len(twice)}")
            for row in twice:
                authors = ", ".join(row.get("authors") or ())
                print(f"  {row['title']!r} by {authors!r}: {row['abstract'][:60]!r}…")


async def held_twice(
    repo: PaperRepository, rows: list[dict], preprints: list[PaperRecord], articles: list[PaperRecord]
) -> list[dict]:
    """The papers whose preprint and journal article the store holds as two papers (by their DOIs)."""
    twice = []
    for row, preprint, article in zip(rows, preprints, articles, strict=True):
        one = await repo.find_by_external(preprint.doi or "")
        other = await repo.find_by_external(article.doi or "")
        if one is None or other is None or one.id != other.id:
            twice.append(row)
    return twice


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--papers", type=int, default=0, help="the first N papers (default: all)")
    parser.add_argument("--order", choices=("preprints-first", "journal-first", "both"), default="both")
    args = parser.parse_args()
    if not MULTIVENUE.is_file():
        sys.exit(f"needs {MULTIVENUE} (the research data beside the repository); it is absent")
    rows = [r for r in multivenue_rows() if r.get("title") and r.get("abstract")]
    if args.papers:
        rows = rows[: args.papers]
    keys = [
        None
        if paper_keys.generic_title(r["title"])
        else paper_keys.title_author_key(r["title"], r["authors"] or [])
        for r in rows
    ]
    repeated = len([k for k in keys if k]) - len({k for k in keys if k})
    print(
        f"{len(rows):,} papers of the multivenue corpus; {repeated:,} share a title and first author with another"
    )
    print(f"load average before: {load_average()}")
    for order in ("preprints-first", "journal-first") if args.order == "both" else (args.order,):
        asyncio.run(run(rows, order))


if __name__ == "__main__":
    main()
