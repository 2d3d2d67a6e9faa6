"""A store fed the same 3,000 real papers from two sources — as preprints and as journal articles with
another DOI, other author spelling and an edited abstract — holds each once (multivenue corpus;
skipped without ../shared). The whole corpus: bench/sources_dedup_bench.py."""

from __future__ import annotations

import gzip
import json

from shared_data import shared_path

from storage.db import Database
from storage.models import PaperRecord
from storage.repositories import paper_keys
from storage.repositories.papers import PaperRepository

PAPERS = 3000


def _last_first(name: str) -> str:
    parts = name.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name


async def test_the_same_papers_from_two_sources_are_held_once(db: Database) -> None:
    path = shared_path("data", "multivenue", "multivenue_corpus.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rows = [
            row for line in lines if (row := json.loads(line))["title"] and row["abstract"] and row["authors"]
        ]
    rows = rows[-PAPERS:]  # the newest venues last in the file: ICML, ICLR, NeurIPS 2023, CoRL…
    keys = [
        None
        if paper_keys.generic_title(r["title"])
        else paper_keys.title_author_key(r["title"], r["authors"])
        for r in rows
    ]
    distinct = len({k for k in keys if k}) + keys.count(None)  # a generic title: each its own
    repo = PaperRepository(db)
    preprints = [
        PaperRecord(
            title=r["title"],
            abstract=r["abstract"],
            authors=tuple(_last_first(a) for a in r["authors"]),
            doi=f"10.1101/test.{i}",
            other_dois=(f"10.5555/j.{i}",) if i % 2 else (),
            version=1,
        )
        for i, r in enumerate(rows)
    ]
    articles = [
        PaperRecord(
            title=r["title"].upper(),
            abstract=r["abstract"].partition(". ")[2] or r["abstract"] + " (Journal.)",
            authors=tuple(r["authors"]),
            doi=f"10.5555/j.{i}",
        )
        for i, r in enumerate(rows)
    ]
    for start in range(0, PAPERS, 30):
        await repo.upsert_many(preprints[start : start + 30])
    held = await repo.count()
    assert held == distinct, "the corpus's own title + first author repeats are one paper each"
    for start in range(0, PAPERS, 100):
        counts = await repo.upsert_many(articles[start : start + 100])
        assert counts.added == 0
    assert await repo.count() == held
