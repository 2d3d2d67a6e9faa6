"""Every interest served: simulated researchers with one, two and three research areas, on areas that do
not run dry (each with ≥ 50 labelled papers), six days of five picks.

A person types each area's name (``name``), or a broader parent field (``broad``: IJCAI's area before
its colon, "machine learning" for "machine learning: reinforcement learning"), or the broader field and
then, as the bot's note on a broad topic asks, names one paper of their area (``answered``:
`/paper interests add paper:`, which counts as a 👍 — the baselines get it as a positive too). Then
each day they get 5 picks and react 👍 to those of any of their areas and 👎 to the rest.

Sources and split: IJCAI 2020–2024 ("area: sub-area", the 2023 abbreviation segment merged) and ICLR
2020–2023 author keywords under dotd's synonym map (``name`` start only: keywords have no parent), from
``../shared/data/labelled/``; each source's papers are the corpus. An area is in the test split when
the first hex digit of the SHA-1 of ``source:area`` is odd (:func:`library_eval.split_of`, the same rule,
written down before any test figure); a person's areas come from one split.

Methods on the same people and reactions: paperbot (the real ``Recommender`` and the ratings as the bot
stores them, over a SQLite store); paperbot without reactions (the typed topics only); arxiv-sanity-lite's TF-IDF +
``LinearSVC`` per person and day (liked against every other paper; before a first 👍 it shows what
paperbot without reactions shows); TF-IDF Rocchio (topic words + β · liked − γ · disliked). The
baselines' settings are chosen on the tune split (``--grid``). Two bounds beside them (a few seconds;
with ``--methods``, only when named): ``ceiling`` and ``ceiling by score`` (:class:`Ceiling`), a
classifier that knows each area from hundreds of its labelled papers, to tell how far the measures can
go on these labels.

Measures, 95 % bootstrap intervals over people and paired intervals against each baseline:
precision@5 per day and of days 4–6; coverage (share of digests from day 2 on in which every area of
the person has at least one relevant pick) and the interest-days served behind it (share of the pairs
(area, day from day 2 on) in which the area has a relevant pick: a finer measure of the same, as one
missed area makes a whole day uncovered); the average precision, on day 6, of the person's still
unseen relevant papers in the method's ranking of the whole unseen pool (paperbot:
``Recommender.ranking``; SVM and Rocchio: their scores).
Run: ``.venv/bin/python bench/interests_eval.py --split test`` (a few minutes on 2 cores: a person's six
days cost 0.15–0.5 s a method, so 30 people a row, the default, is cheap; ``--set NAME=VALUE`` changes
paperbot's ``LearningParams`` to choose them on the tune split).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import rate
from library_eval import (
    LABELLED,
    START,
    Store,
    load_source,
    shown,
    split_of,
    tfidf,
)

from bot.services.recommend.learner import DEFAULT_LEARNING, LearningParams
from bot.services.recommend.recommender import Recommender
from storage.repositories.users import ensure_user

PER_DAY = 5
DAYS = 6
MIN_AREA = 50
SETTINGS = {"svm": {"C": 0.1}, "rocchio": {"beta": 1.0, "gamma": 0.25}}
GRID = {
    "svm": [{"C": c} for c in (0.01, 0.1, 1.0)],
    "rocchio": [{"beta": b, "gamma": 0.25} for b in (0.5, 1.0, 2.0)],
}


@dataclass(frozen=True)
class Person:
    areas: tuple[str, ...]
    start: str  # name, broad, answered
    named: tuple[int, ...] = ()  # rows named as papers they like (answered)

    def phrases(self) -> list[str]:
        if self.start == "name":
            return [area.split(":")[-1].strip() for area in self.areas]
        return list(dict.fromkeys(area.split(":")[0].strip() for area in self.areas))


def make_people(
    source: str, labels: Sequence[set[str]], split: str, starts: Sequence[str], per_size: int, seed: int
) -> list[Person]:
    members: dict[str, list[int]] = defaultdict(list)
    for row, areas in enumerate(labels):
        for area in areas:
            members[area].append(row)
    areas = sorted(a for a, rows in members.items() if len(rows) >= MIN_AREA and split_of(source, a) == split)
    if source != "IJCAI":
        starts = [s for s in starts if s == "name"]
    else:  # "track: …" labels (survey, demo, special tracks) name no field
        areas = [a for a in areas if ":" in a and "track" not in a.split(":")[0]]
    rng = np.random.default_rng(seed)
    found: list[Person] = []
    for size in (1, 2, 3):
        combos = list(itertools.combinations(areas, size))
        if size > 1:  # several interests: prefer areas of different fields, as a person's lines of work
            different = [c for c in combos if len({a.split(":")[0] for a in c}) == size]
            combos = different or combos
        chosen = [combos[i] for i in rng.permutation(len(combos))[:per_size]]
        for combo in chosen:
            for start in starts:
                named = tuple(int(rng.choice(members[a])) for a in combo) if start == "answered" else ()
                found.append(Person(tuple(combo), start, named))
    return found


GENERIC_SUB_AREAS = frozenset({"general", "applications", "other", "others"})


def _words(phrase: str) -> frozenset[str]:
    """A keyword's words, lower case, a plural's final s dropped ("networks" and "network" alike)."""
    words = (w for w in re.split(r"[^0-9a-z]+", phrase.lower()) if w)
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def within(source: str, labels: Sequence[set[str]], areas: Collection[str]) -> list[set[str]]:
    """The labels with each of ``areas`` added to the papers that are about it under another name
    (the ``within`` relevance rule, bench/README.md): on ICLR, a paper whose author keyword holds
    every word of the area ("deep generative models", "low-resource nlp" and "unsupervised
    reinforcement learning" are about "generative models", "nlp", "unsupervised learning"); on
    IJCAI, a paper with the same sub-area under another field (the areas were renamed between years:
    "computational social choice" sits under "game theory and economic paradigms" in 2020–21 and under
    "agent-based and multi-agent systems" later), unless the sub-area is one of every field
    ("applications", "general", "other")."""
    widened = [set(ls) for ls in labels]
    if source == "IJCAI":
        by_sub: dict[str, list[str]] = defaultdict(list)
        for area in areas:
            sub = area.split(":")[-1].strip()
            if ":" in area and sub not in GENERIC_SUB_AREAS:
                by_sub[sub].append(area)
        for ls in widened:
            for label in list(ls):
                if ":" in label:
                    ls.update(by_sub.get(label.split(":")[-1].strip(), ()))
        return widened
    words = {area: _words(area) for area in areas}
    for ls in widened:
        held = [_words(label) for label in ls]
        ls.update(a for a, w in words.items() if w and any(w <= k for k in held))
    return widened


Pick = Callable[[Person, list[int], list[int], set[int], int], Awaitable[list[int]]]
Rank = Callable[[Person, set[int]], Awaitable[np.ndarray]]  # rows, best first, of the unseen pool


class Paperbot:
    """paperbot as a person meets it: typed topics (`/paper interests add topic:`), a named paper
    (`/paper interests add paper:`, a 👍), reactions, `/paper recommend`-sized picks each day."""

    def __init__(self, store: Store, *, learn: bool, learning: LearningParams = DEFAULT_LEARNING) -> None:
        self.store, self.learn = store, learn
        self.clock = {"now": START}
        now = lambda: self.clock["now"]  # noqa: E731
        self.recommender = Recommender(
            store.db, store.engine, store.engine.index, space=store.space, clock=now, learning=learning
        )
        self.users: dict[Person, int] = {}

    async def _user(self, person: Person) -> int:
        if person not in self.users:
            self.store.next_user += 1
            user = self.users[person] = self.store.next_user
            async with self.store.db.transaction() as conn:
                await ensure_user(conn, user)
            for phrase in person.phrases():
                await self.recommender.profiles.add_topic(user, phrase)
            for row in person.named:
                paper_id = self.store.ids[row]
                if paper_id < 0:
                    continue
                field = person.areas[person.named.index(row)].split(":")[0].strip()
                await self.name_paper(user, paper_id, field)
                await rate(self.store.db, user, paper_id, "like", at=self.clock["now"])
        return self.users[person]

    async def name_paper(self, user: int, paper_id: int, field: str) -> None:
        """`/paper interests add paper:` as the person answers the note on a broad topic: the paper
        named alone; where it went to another interest, the answer offers their other typed topics as
        buttons, and they press their field's (``Recommender.narrow_with``)."""
        interest, _ = await self.recommender.add_paper(user, paper_id)
        if interest.label.casefold() != field.casefold():
            await self.recommender.narrow_with(user, field, paper_id)

    async def pick(
        self, person: Person, liked: list[int], disliked: list[int], shown_: set[int], day: int
    ) -> list[int]:
        self.clock["now"] = START + timedelta(days=day)
        user = await self._user(person)
        if self.learn:
            for row in liked:
                await rate(self.store.db, user, self.store.ids[row], "like", at=self.clock["now"])
            for row in disliked:
                await rate(self.store.db, user, self.store.ids[row], "dislike", at=self.clock["now"])
        picks = await self.recommender.recommend(user, count=PER_DAY, now=self.clock["now"])
        return [self.store.row_of[p.paper_id] for p in picks]

    async def rank(self, person: Person, seen: set[int]) -> np.ndarray:
        if not hasattr(self.recommender, "ranking"):
            return np.zeros(0, dtype=np.int64)
        ids = await self.recommender.ranking(self.users[person], now=self.clock["now"])
        rows = [self.store.row_of[i] for i in ids if i in self.store.row_of]
        return np.array([r for r in rows if r not in seen], dtype=np.int64)


class Baseline:
    """SVM or Rocchio on TF-IDF, on the same people: before a first 👍 it shows paperbot's no-reaction
    picks (it cannot rank without a positive); the named paper counts as a positive from the start."""

    def __init__(self, kind: str, matrix: Any, vectorizer: Any, cold: Paperbot, **settings: float) -> None:
        self.kind, self.matrix, self.vectorizer, self.cold, self.settings = (
            kind,
            matrix,
            vectorizer,
            cold,
            settings,
        )

    def scores(self, person: Person, liked: list[int], disliked: list[int]) -> np.ndarray | None:
        positives = [*person.named, *liked]
        if not positives:
            return None
        if self.kind == "svm":
            from sklearn.svm import LinearSVC

            y = np.zeros(self.matrix.shape[0], dtype=int)
            y[positives] = 1
            clf = LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=self.settings["C"])
            return np.asarray(clf.fit(self.matrix, y).decision_function(self.matrix))
        query = np.asarray(self.vectorizer.transform([" ".join(person.phrases())]).todense()).ravel()
        query = query + self.settings["beta"] * np.asarray(self.matrix[positives].mean(axis=0)).ravel()
        if disliked:
            query -= self.settings["gamma"] * np.asarray(self.matrix[disliked].mean(axis=0)).ravel()
        return np.asarray(self.matrix @ query).ravel()

    async def pick(
        self, person: Person, liked: list[int], disliked: list[int], shown_: set[int], day: int
    ) -> list[int]:
        scores = self.scores(person, liked, disliked)
        if scores is None:
            return await self.cold.pick(person, liked, disliked, shown_, day)
        return _best(scores, shown_, PER_DAY)

    async def rank(self, person: Person, seen: set[int]) -> np.ndarray:
        scores = self.last_scores.get(person) if hasattr(self, "last_scores") else None
        return np.zeros(0, dtype=np.int64) if scores is None else _best(scores, seen, len(scores))


class Ceiling:
    """What a content model can reach when it knows each area: per area, a TF-IDF ``LinearSVC`` trained
    on the area's labelled papers (hundreds, where a person's 👍 are a handful), cross-fitted so that a
    paper is scored by the model trained on the other half of the corpus; no reactions needed. Shared,
    each day every area gets its turn at the picks (round robin); not shared, the five best by any
    area's score. Not a method a person could be served by: a ceiling for the measures, to tell how
    far coverage and precision can go on these labels."""

    def __init__(self, matrix: Any, labels: Sequence[set[str]], C: float, *, shared: bool) -> None:
        self.matrix, self.labels, self.C, self.shared = matrix, labels, C, shared
        self.fold = np.arange(matrix.shape[0]) % 2
        self.by_area: dict[str, np.ndarray] = {}

    def area_scores(self, area: str) -> np.ndarray:
        if area not in self.by_area:
            from sklearn.svm import LinearSVC

            y = np.array([area in ls for ls in self.labels], dtype=int)
            scores = np.zeros(len(y))
            for held in (0, 1):
                train, score = self.fold != held, self.fold == held
                clf = LinearSVC(class_weight="balanced", max_iter=10000, C=self.C)
                clf.fit(self.matrix[train], y[train])
                scores[score] = clf.decision_function(self.matrix[score])
            self.by_area[area] = scores
        return self.by_area[area]

    async def pick(
        self, person: Person, liked: list[int], disliked: list[int], shown_: set[int], day: int
    ) -> list[int]:
        if not self.shared:
            return list(await self.rank(person, shown_))[:PER_DAY]
        taken = set(shown_)
        picks: list[int] = []
        for turn in range(PER_DAY):
            row = _best(self.area_scores(person.areas[turn % len(person.areas)]), taken, 1)[0]
            picks.append(row)
            taken.add(row)
        return picks

    async def rank(self, person: Person, seen: set[int]) -> np.ndarray:
        best = np.max([self.area_scores(a) for a in person.areas], axis=0)
        return np.asarray(_best(best, seen, len(best)))


def _best(scores: np.ndarray, seen: set[int], k: int) -> Any:
    ok = np.ones(len(scores), dtype=bool)
    ok[list(seen)] = False
    candidates = np.flatnonzero(ok)
    top = candidates[np.lexsort((candidates, -scores[candidates]))[:k]]
    return [int(i) for i in top] if k <= PER_DAY else top


def average_precision(ranked: np.ndarray, relevant: set[int]) -> float:
    if not relevant or not len(ranked):
        return float("nan")
    hits = np.isin(ranked, np.fromiter(relevant, dtype=np.int64))
    precision_at = np.cumsum(hits) / np.arange(1, len(ranked) + 1)
    return float(precision_at[hits].sum() / len(relevant))


async def simulate(
    person: Person, labels: Sequence[set[str]], method: Any, alive: np.ndarray
) -> tuple[list[float], list[bool], float, float]:
    liked: list[int] = []
    disliked: list[int] = []
    seen: set[int] = set(person.named) | set(np.flatnonzero(~alive).tolist())
    precision, covered = [], []
    interest_days: list[bool] = []  # (area, day from day 2 on): a relevant pick for the area
    for day in range(DAYS):
        picks = await method.pick(person, liked, disliked, seen, day)
        good = [bool(labels[r] & set(person.areas)) for r in picks]
        precision.append(sum(good) / PER_DAY)
        served = [any(a in labels[r] for r in picks) for a in person.areas]
        covered.append(all(served))
        if day > 0:
            interest_days.extend(served)
        seen.update(picks)
        liked += [r for r, ok in zip(picks, good, strict=True) if ok]
        disliked += [r for r, ok in zip(picks, good, strict=True) if not ok]
    # day 6's ranking of everything still unseen, and where the person's unseen relevant papers are in it
    if isinstance(method, Baseline):
        scores = method.scores(person, liked, disliked)
        ranked = np.zeros(0, dtype=np.int64) if scores is None else _best(scores, seen, len(scores))
    else:
        ranked = await method.rank(person, seen)
    relevant = {r for r, ls in enumerate(labels) if ls & set(person.areas) and r not in seen and alive[r]}
    return precision, covered, average_precision(np.asarray(ranked), relevant), float(np.mean(interest_days))


async def run_source(
    source: str,
    split: str,
    starts: Sequence[str],
    per_size: int,
    settings: dict[str, dict[str, float]],
    only: Sequence[str] = (),
    learning: LearningParams = DEFAULT_LEARNING,
    relevance: str = "within",
) -> tuple[list[Person], dict[str, Any]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    rows, labels = load_source(source)
    group = make_people(source, labels, split, starts, per_size, seed=11)  # (by the exact labels)
    if relevance == "within":
        labels = within(source, labels, {a for p in group for a in p.areas})
    with tempfile.TemporaryDirectory() as folder:
        store = await Store.open(Path(folder), rows)
        alive = np.array([p >= 0 for p in store.ids])
        matrix = tfidf(rows)
        vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit(
            [f"{r['title']}. {r.get('abstract') or ''}" for r in rows]
        )
        text_matrix = vectorizer.transform([f"{r['title']}. {r.get('abstract') or ''}" for r in rows])
        cold = Paperbot(store, learn=False)
        methods: dict[str, Any] = {
            "paperbot": Paperbot(store, learn=True, learning=learning),
            "no reactions": cold,
            "SVM": Baseline("svm", matrix, None, Paperbot(store, learn=False), **settings["svm"]),
            "Rocchio": Baseline(
                "rocchio", text_matrix, vectorizer, Paperbot(store, learn=False), **settings["rocchio"]
            ),
        }
        for name, shared in (("ceiling", True), ("ceiling by score", False)):
            if not only or name in only:  # a bound, not a method (seconds: beside every full run)
                methods[name] = Ceiling(matrix, labels, C=settings["svm"]["C"], shared=shared)
        results: dict[str, Any] = {}
        for name, method in methods.items():
            if only and name not in only:
                continue
            began = time.perf_counter()
            runs = [await simulate(p, labels, method, alive) for p in group]
            print(
                f"({source} {name}: {len(group)} people in {time.perf_counter() - began:.0f} s)", flush=True
            )
            results[name] = {
                "precision": np.array([r[0] for r in runs]),
                "covered": np.array([r[1] for r in runs]),
                "ap": np.array([r[2] for r in runs]),
                "served": np.array([r[3] for r in runs]),
            }
        await store.db.close()
    return group, results


def report(group: list[Person], results: dict[str, Any], title: str) -> str:
    lines = [f"\n### {title}\n"]
    for size in (1, 2, 3):
        for start in ("name", "broad", "answered"):
            keep = np.array([len(p.areas) == size and p.start == start for p in group])
            if not keep.any():
                continue
            lines.append(
                f"{size} interest{'s' if size > 1 else ''}, start: {start} — {int(keep.sum())} people"
            )
            lines.append(
                "| method | p@5 day 1 | p@5 days 4–6 | coverage, days 2–6 | interest-days served "
                "| AP of the unseen, day 6 |"
            )
            lines.append("|---|---|---|---|---|---|")
            for name, r in results.items():
                p = r["precision"][keep]
                c = r["covered"][keep][:, 1:].mean(axis=1)
                ap = r["ap"][keep]
                ap_text = shown(ap[~np.isnan(ap)]) if (~np.isnan(ap)).any() else "—"
                lines.append(
                    f"| {name} | {shown(p[:, 0])} | {shown(p[:, 3:].mean(axis=1))} | {shown(c)} "
                    f"| {shown(r['served'][keep])} | {ap_text} |"
                )
            ours = results.get("paperbot")
            for name in ("SVM", "Rocchio") if ours is not None else ():
                if name not in results:
                    continue
                d46 = ours["precision"][keep][:, 3:].mean(axis=1) - results[name]["precision"][keep][
                    :, 3:
                ].mean(axis=1)
                d1 = ours["precision"][keep][:, 0] - results[name]["precision"][keep][:, 0]
                dc = ours["covered"][keep][:, 1:].mean(axis=1) - results[name]["covered"][keep][:, 1:].mean(
                    axis=1
                )
                lines.append(
                    f"paperbot − {name}: day 1 {shown(d1)}; days 4–6 {shown(d46)}; coverage {shown(dc)}"
                )
            lines.append("")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    if not LABELLED.is_dir():
        print(f"needs {LABELLED} (../shared/data/labelled), which is absent here")
        return 2
    started = time.perf_counter()
    starts = args.starts.split(",")
    if args.grid:
        for method, options in GRID.items():
            for option in options:
                settings = {**SETTINGS, method: option}
                means = []
                for source in args.sources.split(","):
                    _, result = await run_source(
                        source,
                        "tune",
                        starts,
                        args.people,
                        settings,
                        ("SVM",) if method == "svm" else ("Rocchio",),
                        relevance=args.relevance,
                    )
                    means.append(result["SVM" if method == "svm" else "Rocchio"]["precision"][:, 3:].mean())
                print(f"tune {method} {option}: p@5 days 4–6 {np.mean(means):.3f}", flush=True)
        return 0
    for source in args.sources.split(","):
        only = args.methods.split(",") if args.methods else ()
        learning = replace(
            DEFAULT_LEARNING,
            **{k: type(getattr(DEFAULT_LEARNING, k))(v) for k, v in (o.split("=") for o in args.set)},
        )
        group, results = await run_source(
            source,
            args.split,
            starts,
            args.people,
            SETTINGS,
            only,
            learning=learning,
            relevance=args.relevance,
        )
        print(report(group, results, f"{source}, {args.split} split"), flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--sources", default="IJCAI,ICLR")
    parser.add_argument("--starts", default="name,broad,answered")
    parser.add_argument("--people", type=int, default=30, help="people per number of interests and start")
    parser.add_argument(
        "--grid", action="store_true", help="choose the baselines' settings on the tune split"
    )
    parser.add_argument(
        "--methods",
        default="",
        help="only these (comma-separated: paperbot,no reactions,SVM,Rocchio,ceiling,ceiling by score)",
    )
    parser.add_argument(
        "--relevance",
        choices=("within", "exact"),
        default="within",
        help="a paper is about an area by its exact label, or also under another name (within())",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="paperbot's LearningParams changed (to choose them on the tune split)",
    )
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
