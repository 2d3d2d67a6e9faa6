"""Starting from your own library (`/paper interests add file:`), measured on simulated researchers.

A person's library is ``--sizes`` (10, 20, 40) papers of their research area from the earlier years of a
venue; paperbot then picks 5 papers a day for 3 days from the later years, and the person reacts 👍 to
the picks of their area and 👎 to the rest. The library goes in as paperbot takes it — each paper a 👍
(what `/paper interests add file:` records) — and the baselines get the same library as positives.

Sources (``../shared/data/labelled/``, see its SOURCES.md section 5):

* IJCAI — library from 2020–2022, picks from 2023–2024; areas are the "area: sub-area" labels with the
  abbreviation segment of 2023 merged (``machine learning: ml: x`` → ``machine learning: x``);
* ICLR — library from 2020–2022, picks from 2023; areas are author keywords under dotd's synonym map.

An area takes part when its earlier years hold at least as many of its papers as a library size (10,
20, 40: an area of 25 early papers makes people of 10 and 20) and its later years ≥ 15. People with two areas (``--two``) have 10 papers of each in their library; coverage is the
share of days on which both areas have a relevant pick.

Split (written before any test figure was read): an area is in the test split when the first hex digit of
the SHA-1 of ``source:area`` is odd, the tune split otherwise. Settings of every method (the SVM's C,
Rocchio's β and γ) are chosen on the tune split (``--grid``); paperbot's own settings are its defaults
and ``recommend_settings.json``'s (chosen on ``recommend_eval.py``'s tune split), so nothing of
paperbot was chosen on either split here.

Methods on the same people and the same reactions:

* paperbot — the real ``Recommender`` and the ratings as the bot stores them, over a SQLite store of
  the source's papers (all years), the library's papers 👍 (no typed topic);
* SVM (arxiv-sanity-lite) — TF-IDF (1–2-grams, sublinear tf) and ``LinearSVC(class_weight="balanced")``
  trained on the liked papers against every other paper of the source, as arxiv-sanity-lite trains it;
* Rocchio — TF-IDF query = β · mean of liked − γ · mean of disliked, cosine.

Reported: precision@5 of day 1 and of days 1–3 with 95 % bootstrap intervals over people, and paperbot's
lead over each baseline with a paired interval (the same people on both sides). ``--per-area N``: up to N
libraries of each area (of each pair of areas) that share no paper, for more people per row than one
library an area gives (6–20 people, intervals of ±0.2); the intervals are then drawn by area, each area
with all its people, as several libraries of one area answer the same later papers.
Run: ``.venv/bin/python bench/library_eval.py --split test --per-area 4`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import rate  # noqa: E402

from bot.services.recommend.learner import DEFAULT_LEARNING, LearningParams  # noqa: E402
from bot.services.recommend.paper_space import PaperSpace  # noqa: E402
from bot.services.recommend.recommender import Recommender  # noqa: E402
from paperindex.engine import SearchEngine  # noqa: E402
from storage.models import PaperRecord  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.repositories.users import ensure_user  # noqa: E402
from storage.store import open_database  # noqa: E402

LABELLED = REPO.parent / "shared" / "data" / "labelled"
PER_DAY = 5
DAYS = 3
LIBRARY_YEARS = {"IJCAI": (2020, 2021, 2022), "ICLR": (2020, 2021, 2022)}
MIN_LATER = 15
SETTINGS = {"svm": {"C": 0.1}, "rocchio": {"beta": 1.0, "gamma": 0.0}}  # --grid --per-area 4
GRID = {
    "svm": [{"C": c} for c in (0.01, 0.1, 1.0)],
    "rocchio": [{"beta": 1.0, "gamma": g} for g in (0.0, 0.25, 0.5)],
}
START = datetime(2026, 6, 1, 9, tzinfo=UTC)


# -- data --------------------------------------------------------------------------------------------


def _rows(name: str) -> list[dict[str, Any]]:
    with gzip.open(LABELLED / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _ijcai_label(raw: str) -> str:
    parts = [p.strip() for p in raw.split(":")]
    if len(parts) >= 3 and len(parts[1]) <= 5:
        parts = [parts[0], *parts[2:]]
    return ": ".join(parts)


def _synonyms() -> dict[str, str]:
    canonical: dict[str, str] = {}
    for line in (LABELLED / "keyword_normalization.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        canonical[fields[0].lower()] = fields[0].lower()
        for variant in fields[2:]:
            canonical[variant.rsplit(":", 1)[0].strip().lower()] = fields[0].lower()
    return canonical


def load_source(source: str) -> tuple[list[dict[str, Any]], list[set[str]]]:
    """The source's papers and each one's areas."""
    if source == "IJCAI":
        rows = _rows("ijcai2020-2024.jsonl.gz")
        labels = [{_ijcai_label(k) for k in r["keywords"]} for r in rows]
    else:
        rows = _rows("iclr2020-2023_keywords.jsonl.gz")
        synonyms = _synonyms()
        labels = [{synonyms.get(k, k) for k in r["keywords"]} for r in rows]
    return rows, labels


def split_of(source: str, area: str) -> str:
    """The split rule: odd first hex digit of SHA-1("source:area") → test."""
    return "test" if int(hashlib.sha1(f"{source}:{area}".encode()).hexdigest()[0], 16) % 2 else "tune"


@dataclass(frozen=True)
class Person:
    source: str
    areas: tuple[str, ...]
    library: tuple[int, ...]  # rows
    size: int


def people(
    source: str,
    rows: Sequence[dict[str, Any]],
    labels: Sequence[set[str]],
    split: str,
    *,
    sizes: Sequence[int],
    two: bool,
    seed: int,
    per_area: int = 1,
) -> list[Person]:
    early = LIBRARY_YEARS[source]
    by_area_early: dict[str, list[int]] = defaultdict(list)
    by_area_late: dict[str, int] = defaultdict(int)
    for i, (row, areas) in enumerate(zip(rows, labels, strict=True)):
        for area in areas:
            if row["year"] in early:
                by_area_early[area].append(i)
            else:
                by_area_late[area] += 1
    areas = sorted(
        a
        for a, papers in by_area_early.items()
        if len(papers) >= min(sizes) and by_area_late[a] >= MIN_LATER and split_of(source, a) == split
    )
    rng = np.random.default_rng(seed)
    found: list[Person] = []

    def libraries(area: str, size: int) -> list[list[int]]:
        """``per_area`` libraries of the area's early papers that share no paper (fewer when it has
        fewer than ``per_area`` × ``size``); with one, the draw the earlier figures were made with."""
        papers = by_area_early[area]
        if per_area == 1:
            return [list(rng.choice(papers, size=size, replace=False))]
        shuffled = rng.permutation(papers)
        return [list(shuffled[k * size : (k + 1) * size]) for k in range(min(per_area, len(papers) // size))]

    for area in areas:
        for size in sizes:
            if len(by_area_early[area]) < size:
                continue  # not that many papers of the area in the earlier years
            for library in libraries(area, size):
                found.append(Person(source, (area,), tuple(int(r) for r in library), size))
    areas = [a for a in areas if len(by_area_early[a]) >= 10]
    if two:
        for a, b in zip(areas, areas[1:] + areas[:1], strict=True):
            if a == b:
                continue
            for first, second in zip(libraries(a, 10), libraries(b, 10), strict=False):
                found.append(Person(source, (a, b), tuple(int(r) for r in [*first, *second]), 20))
    return found


# -- methods -----------------------------------------------------------------------------------------

Picker = Callable[[Person, list[int], list[int], set[int], int], Awaitable[list[int]]]


class Store:
    """The source's papers in a fresh paperbot store, indexed, as the bot builds it."""

    def __init__(self, db: Any, engine: SearchEngine, space: PaperSpace, ids: list[int]) -> None:
        self.db, self.engine, self.space, self.ids = db, engine, space, ids
        self.row_of = {p: i for i, p in enumerate(ids) if p >= 0}
        self.next_user = 1000

    @classmethod
    async def open(cls, folder: Path, rows: Sequence[dict[str, Any]]) -> Store:
        db = await open_database(folder / "library.db")
        papers = PaperRepository(db)
        await papers.upsert_many(
            PaperRecord(
                title=str(r["title"]),
                abstract=str(r.get("abstract") or ""),
                authors=tuple(r.get("authors") or ()),
                venue=str(r.get("venue") or ""),
                year=r.get("year"),
                external_id=str(r["uid"]),
                source="bench",
            )
            for r in rows
        )
        by_uid = {str(r[0]): int(r[1]) for r in await db.fetchall("SELECT external_id, id FROM papers")}
        ids = [by_uid.get(str(r["uid"]), -1) for r in rows]
        engine = SearchEngine.build(await papers.iter_index_rows())
        space = PaperSpace(engine.index)
        space.rebuild()
        return cls(db, engine, space, ids)


def paperbot(store: Store, early_ids: set[int], learning: LearningParams = DEFAULT_LEARNING) -> Picker:
    clock = {"now": START}
    recommender = Recommender(
        store.db,
        store.engine,
        store.engine.index,
        space=store.space,
        clock=lambda: clock["now"],
        learning=learning,
    )
    users: dict[Person, int] = {}

    async def pick(
        person: Person, liked: list[int], disliked: list[int], shown: set[int], day: int
    ) -> list[int]:
        clock["now"] = START + timedelta(days=day)
        if person not in users:
            store.next_user += 1
            users[person] = store.next_user
            async with store.db.transaction() as conn:  # the person's row, as their first command makes it
                await ensure_user(conn, users[person])
            for row in person.library:  # the library as /paper interests add file: records it
                if store.ids[row] >= 0:  # (a row the store merged into another is not a paper of its own)
                    await rate(store.db, users[person], store.ids[row], "like", at=clock["now"])
        user = users[person]
        for row in liked:
            if row not in person.library:
                await rate(store.db, user, store.ids[row], "like", at=clock["now"])
        for row in disliked:
            await rate(store.db, user, store.ids[row], "dislike", at=clock["now"])
        picks = await recommender.recommend(user, count=PER_DAY, exclude=early_ids, now=clock["now"])
        return [store.row_of[p.paper_id] for p in picks]

    return pick


def tfidf(rows: Sequence[dict[str, Any]]) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        strip_accents="unicode",
        lowercase=True,
        stop_words="english",
        token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b",
        ngram_range=(1, 2),
        max_features=20000,
        sublinear_tf=True,
        min_df=3,
        max_df=0.3,
    )
    return vectorizer.fit_transform([f"{r['title']}. {r.get('abstract') or ''}" for r in rows])


def _best(scores: np.ndarray, allowed: np.ndarray, shown: set[int]) -> list[int]:
    ok = allowed.copy()
    ok[list(shown)] = False
    candidates = np.flatnonzero(ok)
    return [int(i) for i in candidates[np.lexsort((candidates, -scores[candidates]))[:PER_DAY]]]


def svm(matrix: Any, allowed: np.ndarray, *, C: float) -> Picker:
    from sklearn.svm import LinearSVC

    async def pick(
        person: Person, liked: list[int], disliked: list[int], shown: set[int], day: int
    ) -> list[int]:
        y = np.zeros(matrix.shape[0], dtype=int)
        y[list(person.library) + liked] = 1
        clf = LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=C).fit(matrix, y)
        return _best(clf.decision_function(matrix), allowed, shown)

    return pick


def rocchio(matrix: Any, allowed: np.ndarray, *, beta: float, gamma: float) -> Picker:
    async def pick(
        person: Person, liked: list[int], disliked: list[int], shown: set[int], day: int
    ) -> list[int]:
        query = beta * np.asarray(matrix[list(person.library) + liked].mean(axis=0)).ravel()
        if disliked:
            query -= gamma * np.asarray(matrix[disliked].mean(axis=0)).ravel()
        return _best(matrix @ query, allowed, shown)

    return pick


def ceiling_scores(
    matrix: Any,
    labels: Sequence[set[str]],
    early: np.ndarray,
    areas: Sequence[str],
    *,
    C: float,
    knowing: bool,
) -> np.ndarray:
    """Not a method but a bound: the scores of the SVM given far more than a library. With ``knowing``
    False, trained on every paper of ``areas`` in the library years (21 to 219 for the 20-paper
    libraries; a library is a sample of them); with ``knowing`` True, also on the later papers of those areas, cross-fitted:
    each later paper of them scored by a model trained on the other half of them."""
    from sklearn.svm import LinearSVC

    def fitted(positives: np.ndarray) -> np.ndarray:
        y = np.zeros(matrix.shape[0], dtype=int)
        y[positives] = 1
        model = LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=C).fit(matrix, y)
        return np.asarray(model.decision_function(matrix))

    wanted = set(areas)
    in_areas = np.array([bool(row_labels & wanted) for row_labels in labels])
    known = np.flatnonzero(early & in_areas)
    if not knowing:
        return fitted(known)
    later = np.flatnonzero(~early & in_areas)
    half = np.random.default_rng(0).permutation(len(later)) % 2
    out = np.zeros(matrix.shape[0])
    for h in (0, 1):
        values = fitted(np.concatenate([known, later[half != h]]))
        if h == 0:
            out[:] = values  # the papers of neither half (the other areas') from the first model
        out[later[half == h]] = values[later[half == h]]
    return out


def ceiling(
    matrix: Any,
    allowed: np.ndarray,
    labels: Sequence[set[str]],
    early: np.ndarray,
    *,
    C: float,
    knowing: bool,
) -> Picker:
    """The picks of :func:`ceiling_scores` (reactions are not read)."""
    scores: dict[Person, np.ndarray] = {}

    async def pick(
        person: Person, liked: list[int], disliked: list[int], shown: set[int], day: int
    ) -> list[int]:
        if person not in scores:
            scores[person] = ceiling_scores(matrix, labels, early, person.areas, C=C, knowing=knowing)
        return _best(scores[person], allowed, shown)

    return pick


# -- simulation and measures -------------------------------------------------------------------------


async def simulate(
    person: Person, labels: Sequence[set[str]], pick: Picker
) -> tuple[list[float], list[bool]]:
    liked: list[int] = []
    disliked: list[int] = []
    shown: set[int] = set(person.library)
    precision, covered = [], []
    for day in range(DAYS):
        picks = await pick(person, liked, disliked, shown, day)
        relevant = [bool(labels[r] & set(person.areas)) for r in picks]
        precision.append(sum(relevant) / PER_DAY)
        covered.append(all(any(area in labels[r] for r in picks) for area in person.areas))
        shown.update(picks)
        liked += [r for r, ok in zip(picks, relevant, strict=True) if ok]
        disliked += [r for r, ok in zip(picks, relevant, strict=True) if not ok]
    return precision, covered


def interval(
    values: np.ndarray, *, clusters: Sequence[Any] | None = None, rounds: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95 % bootstrap interval of the mean over people; with ``clusters`` (each person's areas), the
    areas are drawn instead, each with all its people (several libraries of one area are not
    independent: the same later papers answer them)."""
    rng = np.random.default_rng(seed)
    if clusters is None:
        means = values[rng.integers(0, len(values), size=(rounds, len(values)))].mean(axis=1)
    else:
        keys = sorted(set(clusters))
        members = [np.array([i for i, c in enumerate(clusters) if c == k]) for k in keys]
        sums = np.array([values[m].sum() for m in members])
        counts = np.array([len(m) for m in members], dtype=np.float64)
        draws = rng.integers(0, len(keys), size=(rounds, len(keys)))
        means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def shown(values: np.ndarray, clusters: Sequence[Any] | None = None) -> str:
    low, high = interval(values, clusters=clusters)
    return f"{values.mean():.3f} [{low:.3f}, {high:.3f}]"


async def run_source(
    source: str,
    split: str,
    sizes: Sequence[int],
    two: bool,
    settings: dict[str, dict[str, float]],
    per_area: int = 1,
    learning: LearningParams = DEFAULT_LEARNING,
    with_ceiling: bool = False,
) -> dict[str, dict[str, Any]]:
    rows, labels = load_source(source)
    group = people(source, rows, labels, split, sizes=sizes, two=two, seed=7, per_area=per_area)
    early = np.array([r["year"] in LIBRARY_YEARS[source] for r in rows])
    with tempfile.TemporaryDirectory() as folder:
        store = await Store.open(Path(folder), rows)
        matrix = tfidf(rows)
        allowed = ~early & np.array([p >= 0 for p in store.ids])
        early_ids = {store.ids[i] for i in np.flatnonzero(early) if store.ids[i] >= 0}
        methods: dict[str, Picker] = {
            "paperbot": paperbot(store, early_ids, learning),
            "SVM": svm(matrix, allowed, **settings["svm"]),
            "Rocchio": rocchio(matrix, allowed, **settings["rocchio"]),
        }
        if with_ceiling:
            for name, knowing in (("ceiling: every early paper", False), ("ceiling: knowing later", True)):
                methods[name] = ceiling(matrix, allowed, labels, early, **settings["svm"], knowing=knowing)
        results: dict[str, dict[str, Any]] = {}
        for name, pick in methods.items():
            per_person = [await simulate(p, labels, pick) for p in group]
            results[name] = {
                "people": group,
                "precision": np.array([p for p, _ in per_person]),
                "covered": np.array([c for _, c in per_person]),
            }
        await store.db.close()
    return results


def report(results: dict[str, dict[str, Any]], title: str) -> str:
    people_ = results["paperbot"]["people"]
    lines = [f"\n### {title}\n"]
    for label, keep in [
        *(
            (f"{size}-paper library, one area", lambda p, s=size: len(p.areas) == 1 and p.size == s)
            for size in sorted({p.size for p in people_ if len(p.areas) == 1})
        ),
        ("20-paper library, two areas (10 each)", lambda p: len(p.areas) == 2),
    ]:
        rows = np.array([keep(p) for p in people_])
        if not rows.any():
            continue
        areas = [p.areas for p, keep_ in zip(people_, rows, strict=True) if keep_]
        several = len(set(areas)) < len(areas)  # several libraries of one area: drawn by area
        clusters = areas if several else None
        lines.append(
            f"{label}: {int(rows.sum())} people"
            + (f" ({len(set(areas))} areas; intervals drawn by area)" if several else "")
        )
        lines.append("| method | p@5 day 1 | p@5 days 1–3 | coverage (both areas on a day) |")
        lines.append("|---|---|---|---|")
        for name, result in results.items():
            precision = result["precision"][rows]
            cover = result["covered"][rows].mean(axis=1)
            lines.append(
                f"| {name} | {shown(precision[:, 0], clusters)} | {shown(precision.mean(axis=1), clusters)} "
                f"| {shown(cover, clusters)} |"
            )
        ours = results["paperbot"]["precision"][rows]
        for name, result in results.items():
            if name == "paperbot":
                continue
            diff_day1 = ours[:, 0] - result["precision"][rows][:, 0]
            diff_all = ours.mean(axis=1) - result["precision"][rows].mean(axis=1)
            lines.append(
                f"paperbot − {name}: day 1 {shown(diff_day1, clusters)}; days 1–3 {shown(diff_all, clusters)}"
            )
        svm_day1 = results["SVM"]["precision"][rows][:, 0]
        for name in (n for n in results if n.startswith("ceiling")):  # how far above the SVM anything reaches
            lead = results[name]["precision"][rows][:, 0] - svm_day1
            lines.append(f"{name} − SVM: day 1 {shown(lead, clusters)}")
        lines.append("")
    return "\n".join(lines)


def learning_of(overrides: Sequence[str]) -> LearningParams:
    """paperbot's learning settings with ``name=value`` overrides (to try one on the tune split)."""
    changed = {}
    for item in overrides:
        name, value = item.split("=", 1)
        kind = type(getattr(DEFAULT_LEARNING, name))
        changed[name] = kind(float(value)) if kind is int else kind(value)
    return replace(DEFAULT_LEARNING, **changed)


async def main_async(args: argparse.Namespace) -> int:
    if not LABELLED.is_dir():
        print(f"needs {LABELLED} (../shared/data/labelled), which is absent here")
        return 2
    started = time.perf_counter()
    sources = args.sources.split(",")
    if args.grid:
        for method, options in GRID.items():
            for option in options:
                settings = {**SETTINGS, method: option}
                scores = []
                for source in sources:
                    result = await run_source(source, "tune", [20], False, settings, args.per_area)
                    scores.append(result["SVM" if method == "svm" else "Rocchio"]["precision"].mean())
                print(f"tune {method} {option}: p@5 days 1–3 {np.mean(scores):.3f}")
        return 0
    for source in sources:
        results = await run_source(
            source,
            args.split,
            [int(s) for s in args.sizes.split(",")],
            args.two,
            SETTINGS,
            args.per_area,
            learning_of(args.learning),
            args.ceiling,
        )
        print(report(results, f"{source}, {args.split} split"))
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--sources", default="IJCAI,ICLR")
    parser.add_argument("--sizes", default="10,20,40")
    parser.add_argument("--two", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--per-area",
        type=int,
        default=1,
        help="libraries per area that share no paper (more people per row; intervals then drawn by area)",
    )
    parser.add_argument(
        "--learning",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="paperbot's LearningParams changed (to try a setting on the tune split)",
    )
    parser.add_argument(
        "--grid", action="store_true", help="choose the baselines' settings on the tune split"
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also the SVM given every early paper of the areas, and one knowing the later labels (bounds)",
    )
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
