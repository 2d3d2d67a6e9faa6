"""How well the groups under a name tell people who share it apart, against OpenReview's author ids.

    .venv/bin/python bench/author_groups.py

paperbot stores names, not people. Where the papers under a name have no co-author in common they
fall into several groups (``bot.services.authors.group_papers``), and ``/paper follow`` says the name
may be shared and shows what tells the groups apart. The papercopilot ICML 2024 list gives each
author of each paper an OpenReview profile id (``~Wei_Wang1``), which stands in for the person here
(a person with two profiles counts as two). Over the names with two papers or more:

* names of several ids: how often their papers fall into several groups (the bot says so), and how
  often every group holds one id only (what the groups show matches who wrote them);
* names of one id: how often their papers still fall into several groups (the bot says the name may
  be shared when it is not).

Only co-authors are compared: every paper here is ICML 2024, so venue and year tell nothing apart.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.services.authors import group_papers  # noqa: E402
from bot.services.search import fold  # noqa: E402
from storage.repositories.papers import Credits  # noqa: E402

PAPERCOPILOT = REPO.parent / "shared" / "data" / "icml2024" / "raw" / "papercopilot_icml2024.json.gz"


def main() -> int:
    if not PAPERCOPILOT.is_file():
        print(f"needs {PAPERCOPILOT} (../shared/data): not found", file=sys.stderr)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
