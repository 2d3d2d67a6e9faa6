"""How well the groups under a name tell people who share it apart, against OpenReview's author ids.

    .venv/bin/python bench/author_groups.py
    .venv/bin/python bench/author_groups.py --directory     # and the author directory on 35,712 papers

paperbot stores names, not people. Where the papers under a name have no co-author in common they
fall into several groups (``bot.services.people.authors.group_papers``), and ``/paper follow`` says the name
may be shared and shows what tells the groups apart. The papercopilot ICML 2024 list gives each
author of each paper an OpenReview profile id (``~Wei_Wang1``), which stands in for the person here
(a person with two profiles counts as two). Over the names with two papers or more:

* names of several ids: how often their papers fall into several groups (the bot says so), and how
  often every group holds one id only (what the groups show matches who wrote them);
* names of one id: how often their papers still fall into several groups (the bot says the name may
  be shared when it is not).

Only co-authors are compared: every paper here is ICML 2024, so venue and year tell nothing apart.

``--directory`` also ingests the multivenue corpus (35,712 papers) into a temporary store, indexes it
as the bot does, and measures the author directory the follow commands use: the time to take in
every name, the memory it holds (tracemalloc), and the time of an author autocomplete (median and
largest over a few typed texts, each answered twice: the second is what a person typing sees).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import MULTIVENUE, SHARED  # noqa: E402

from bot.services.papers.ingest.runner import ingest_paths  # noqa: E402
from bot.services.people.authors import AuthorDirectory, group_papers  # noqa: E402
from bot.services.people.follows import FollowService  # noqa: E402
from paperindex.engine import SearchEngine, fold  # noqa: E402
from storage.repositories.papers import Credits, PaperRepository  # noqa: E402
from storage.sqlite import SQLiteDatabase  # noqa: E402

PAPERCOPILOT = SHARED / "icml2024" / "raw" / "papercopilot_icml2024.json.gz"
TYPED = (
    "w",
    "wei",
    "wei wang",
    "levine",
    "sergey lev",
    "bengio",
    "michael i. jordan",
    "zhang",
    "schöl",
    "xu",
)


async def directory() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = await SQLiteDatabase.open(Path(folder) / "bench.db")
        try:
            await ingest_paths(db, [MULTIVENUE])
            papers = PaperRepository(db)
            _, rows = await papers.index_rows_at()
            engine = SearchEngine.build(rows)
            names = AuthorDirectory(engine, papers)
            started = time.perf_counter()
            await names.refresh()
            took = time.perf_counter() - started
            tracemalloc.start()  # again, traced (which slows it), for what it holds
            traced = AuthorDirectory(engine, papers)
            await traced.refresh()
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            del traced
            follows = FollowService(db, names, papers=papers)
            times = []
            for text in TYPED:
                await follows.suggest(text)
                started = time.perf_counter()
                await follows.suggest(text)
                times.append(time.perf_counter() - started)
            print(f"\nauthor directory over {len(engine):,} papers ({MULTIVENUE.name}):")
            print(
                f"| take in every name | memory held | autocomplete median | largest ({len(TYPED)} texts) |"
            )
            print("|---|---|---|---|")
            print(
                f"| {took:.2f} s | {held / 2**20:.1f} MiB | {statistics.median(times) * 1000:.1f} ms | "
                f"{max(times) * 1000:.1f} ms |"
            )
        finally:
            await db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--directory", action="store_true", help="also measure the author directory")
    args = parser.parse_args()
    if not PAPERCOPILOT.is_file() or (args.directory and not MULTIVENUE.is_file()):
        print(f"needs {PAPERCOPILOT} and {MULTIVENUE} (../shared/data): not found", file=sys.stderr)
        return 2
    with gzip.open(PAPERCOPILOT, "rt", encoding="utf-8") as file:
        records = json.load(file)
    papers: dict[str, list[Credits]] = defaultdict(list)
    ids_of: dict[tuple[str, int], str] = {}
    for number, record in enumerate(records, 1):
        names = [n.strip() for n in record["author"].split(";")]
        ids = [i.strip() for i in record["authorids"].split(";")]
        if len(names) != len(ids):
            continue
        credits = Credits(number, tuple(names), "ICML 2024", 2024)
        for name, author_id in zip(names, ids, strict=True):
            key = fold(name)
            papers[key].append(credits)
            ids_of[key, number] = author_id
    shared = one = shared_split = shared_pure = one_split = 0
    for key, found in papers.items():
        if len(found) < 2:
            continue
        groups = group_papers(key, found)
        people = {ids_of[key, c.paper_id] for c in found}
        if len(people) > 1:
            shared += 1
            shared_split += len(groups) > 1
            shared_pure += all(len({ids_of[key, p] for p in g.paper_ids}) == 1 for g in groups)
        else:
            one += 1
            one_split += len(groups) > 1
    print(f"ICML 2024 (papercopilot, {len(records):,} papers): names with two papers or more")
    print("| names | how many | in several groups | every group one id |")
    print("|---|---|---|---|")
    print(f"| of several ids | {shared} | {shared_split / shared:.1%} | {shared_pure / shared:.1%} |")
    print(f"| of one id | {one} | {one_split / one:.1%} | — |")
    if args.directory:
        asyncio.run(directory())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
