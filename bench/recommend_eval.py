"""Offline evaluation of recommendations that learn from reactions (issue 5).

Simulated users each like one research area. Each starts from one topic phrase (what a person
would type into `/paper interests add`), receives 5 recommendations a day for 10 days, and reacts
👍 to the papers in their area and 👎 to the rest. The harness is honest: a user sees only what was
recommended to them, and a method learns only from those reactions.

Areas:
* ICLR 2024 — the icml.cc/iclr.cc virtual-site taxonomy (`topic` = "Area->Subarea") from
  ../shared/data/airas-papers-db/iclr_2024.json.gz (deduplicated on id, unlabelled papers left
  out of the corpus): one user per subarea with >= 25 papers, one per area.
* ICLR 2017/2018 — the authors' keywords in ../shared/data/multivenue/ (a separate corpus): one user
  per keyword with >= 20 papers. Author keywords are incomplete (a paper on GANs need not list
  "gan"), so precision there is a lower bound for every method alike.

Methods, all on the same corpus and the same users:
* topics only — the product's recommender with the topic and no reactions recorded;
* feedback (ours) — the product's recommender, reactions recorded through FeedbackService;
* SVM (arxiv-sanity-lite) — TF-IDF of title+abstract with arxiv-sanity-lite's settings, one
  LinearSVC(C=0.01, class_weight=balanced) per user and day; positives are the liked papers and,
  as in arxiv-sanity-lite, every other paper is a negative. Before the first like it uses the topic
  query like ours;
* SVM (rated only) — the same SVM trained only on the rated papers (likes vs dislikes), topic
  query until both kinds exist.

"topics only" and "feedback" run through the real Recommender on a real temporary SQLite database
(papers ingested with PaperRepository, index built as the bot builds it), so the figures measure
the product. Run: `.venv/bin/python bench/recommend_eval.py [--days 10] [--users N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.services.feedback import FeedbackService  # noqa: E402
from bot.services.profile import ProfileService, RankingParams  # noqa: E402
from bot.services.recommender import Recommender  # noqa: E402
from bot.services.search import SearchEngine  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.models import PaperRecord  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import open_database  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PER_DAY = 5

# The phrase a person in that area would type: the subarea's own name, spelled out where the name
# only makes sense under its area ("Batch/Offline" is offline reinforcement learning).
PHRASES = {
    "Deep Learning->Large Language Models": "large language models",
    "Deep Learning->Generative Models and Autoencoders": "generative models and autoencoders",
    "Applications->Computer Vision": "computer vision",
    "Deep Learning->Graph Neural Networks": "graph neural networks",
    "Social Aspects->Trustworthy Machine Learning": "trustworthy machine learning",
    "Deep Learning->Robustness": "robustness of deep networks",
    "Deep Learning->Other Representation Learning": "representation learning",
    "Deep Learning->Self-Supervised Learning": "self-supervised learning",
    "Applications->Language, Speech and Dialog": "language, speech and dialog",
    "Reinforcement Learning->Deep RL": "deep reinforcement learning",
    "Applications->Neuroscience, Cognitive Science": "neuroscience and cognitive science",
    "Applications->Chemistry and Drug Discovery": "chemistry and drug discovery",
    "Miscellaneous Aspects of Machine Learning->Transfer, Multitask and Meta-learning": (
        "transfer, multitask and meta-learning"
    ),
    "Social Aspects->Accountability, Transparency and Interpretability": (
        "accountability, transparency and interpretability"
    ),
    "Miscellaneous Aspects of Machine Learning->Representation Learning": "representation learning",
    "Social Aspects->Fairness, Equity, Justice and Safety": "fairness, equity, justice and safety",
    "Reinforcement Learning": "reinforcement learning",
    "Applications->Robotics": "robotics",
    "Reinforcement Learning->Batch/Offline": "offline reinforcement learning",
    "Social Aspects->Privacy-preserving Statistics and Machine Learning": "privacy-preserving machine learning",
    "Theory->Learning Theory": "learning theory",
    "Deep Learning->Sequential Models, Time series": "sequential models, time series",
    "Miscellaneous Aspects of Machine Learning->Causality": "causality",
    "Deep Learning->Attention Mechanisms": "attention mechanisms",
    "Applications->Physics": "physics",
    "Applications->Time Series": "time series",
}
AREA_PHRASES = {
    "Deep Learning": "deep learning",
    "Applications": "applications of machine learning",
    "Reinforcement Learning": "reinforcement learning",
    "Social Aspects": "social aspects of machine learning",
    "Theory": "machine learning theory",
    "Optimization": "optimization",
    "Probabilistic Methods": "probabilistic methods",
    "Miscellaneous Aspects of Machine Learning": "machine learning",
}
# ICLR 2017/18 keyword groups (synonyms spelled differently by authors count as one area).
KEYWORD_GROUPS = {
    "reinforcement learning": ("reinforcement learning", "deep reinforcement learning"),
    "unsupervised learning": ("unsupervised learning",),
    "natural language processing": ("natural language processing",),
    "computer vision": ("computer vision",),
    "optimization": ("optimization",),
    "supervised learning": ("supervised learning",),
    "transfer learning": ("transfer learning",),
    "theory": ("theory",),
    "generative adversarial networks": (
        "generative adversarial networks",
        "gan",
        "gans",
        "adversarial learning",
    ),
    "semi-supervised learning": ("semi-supervised learning",),
    "structured prediction": ("structured prediction",),
    "generative models": ("generative models", "generative model", "deep generative models"),
    "recurrent neural networks": ("recurrent neural networks", "rnn", "lstm"),
    "representation learning": ("representation learning",),
    "adversarial examples": ("adversarial examples",),
    "generalization": ("generalization",),
    "domain adaptation": ("domain adaptation",),
    "variational inference": ("variational inference",),
    "convolutional neural networks": ("convolutional neural networks", "cnn"),
    "model compression": ("model compression",),
    "meta-learning": ("meta-learning",),
    "interpretability": ("interpretability",),
}


@dataclass(frozen=True)
class Doc:
    key: str
    title: str
    abstract: str
    authors: tuple[str, ...]
    venue: str
    year: int
    labels: frozenset[str]


@dataclass(frozen=True)
class SimUser:
    name: str
    phrase: str
    relevant: frozenset[str]  # doc keys


@dataclass
class Corpus:
    name: str
    docs: list[Doc]
    users: list[SimUser]


@dataclass
class Run:
    """precision per user per day, and recommend() latencies."""

    per_day: list[list[float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


def load_iclr2024(min_subarea: int) -> Corpus | None:
    path = SHARED / "airas-papers-db" / "iclr_2024.json.gz"
    if not path.exists():
        return None
    seen: dict[str, dict[str, object]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = json.load(handle)
    for row in rows:
        seen.setdefault(str(row["id"]), row)
    docs = [
        Doc(
            key=key,
            title=str(row["title"]),
            abstract=str(row["abstract"] or ""),
            authors=tuple(row.get("authors") or ()),  # type: ignore[arg-type]
            venue="ICLR 2024",
            year=2024,
            labels=frozenset({str(row["topic"]), str(row["topic"]).split("->")[0]}),
        )
        for key, row in seen.items()
        if row.get("topic")
    ]
    users: list[SimUser] = []
    subareas: dict[str, set[str]] = {}
    areas: dict[str, set[str]] = {}
    for doc in docs:
        for label in doc.labels:
            (subareas if "->" in label else areas).setdefault(label, set()).add(doc.key)
    for label, keys in sorted(subareas.items(), key=lambda kv: -len(kv[1])):
        if len(keys) >= min_subarea and label in PHRASES:
            users.append(SimUser(f"iclr24:{label}", PHRASES[label], frozenset(keys)))
    for label, keys in sorted(areas.items(), key=lambda kv: -len(kv[1])):
        if label in AREA_PHRASES:
            users.append(SimUser(f"iclr24:{label} (area)", AREA_PHRASES[label], frozenset(keys)))
    return Corpus("ICLR 2024 topics", docs, users)


def load_iclr1718(min_papers: int) -> Corpus | None:
    path = SHARED / "multivenue" / "multivenue_corpus.jsonl.gz"
    if not path.exists():
        return None
    docs: list[Doc] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("venue") != "ICLR" or row.get("year") not in (2017, 2018) or not row.get("keywords"):
                continue
            keywords = {str(k).strip().lower() for k in row["keywords"]}
            docs.append(
                Doc(
                    key=str(row["uid"]),
                    title=str(row["title"]),
                    abstract=str(row.get("abstract") or ""),
                    authors=tuple(row.get("authors") or ()),
                    venue=f"ICLR {row['year']}",
                    year=int(row["year"]),
                    labels=frozenset(keywords),
                )
            )
    users = []
    for name, synonyms in KEYWORD_GROUPS.items():
        keys = frozenset(d.key for d in docs if d.labels & set(synonyms))
        if len(keys) >= min_papers:
            users.append(SimUser(f"iclr17/18:{name}", name, keys))
    return Corpus("ICLR 2017/18 keywords", docs, users)


# -- the product, on a temporary database ---------------------------------------------------------


class Product:
    """A real temp database with the corpus ingested and the bot's own index and services."""

    def __init__(
        self, db: Database, recommender: Recommender, feedback: FeedbackService, ids: dict[str, int]
    ):
        self.db = db
        self.recommender = recommender
        self.feedback = feedback
        self.ids = ids
        self.keys = {v: k for k, v in ids.items()}

    @classmethod
    async def open(cls, folder: Path, corpus: Corpus, params: RankingParams) -> Product:
        db = await open_database(folder / f"{corpus.name.split()[1].replace('/', '-')}.db")
        papers = PaperRepository(db)
        await papers.upsert_many(
            PaperRecord(
                title=d.title,
                abstract=d.abstract,
                authors=d.authors,
                venue=d.venue,
                year=d.year,
                external_id=d.key,
                source="bench",
            )
            for d in corpus.docs
        )
        rows = await db.fetchall("SELECT external_id, id FROM papers")
        ids = {str(r[0]): int(r[1]) for r in rows}
        engine = SearchEngine.build(await papers.iter_index_rows())  # as bot.runtime builds it
        recommender = Recommender(db, engine, engine.index, params=params)
        return cls(db, recommender, FeedbackService(db), ids)


async def run_product(product: Product, corpus: Corpus, *, days: int, learn: bool, user_offset: int) -> Run:
    run = Run()
    profiles: ProfileService = product.recommender.profiles
    for n, user in enumerate(corpus.users):
        uid = user_offset + n
        await profiles.add_topic(uid, user.phrase)
        precisions = []
        for day in range(days):
            now = START + timedelta(days=day)
            started = time.perf_counter()
            picks = await product.recommender.recommend(uid, count=PER_DAY, now=now)
            run.latencies.append(time.perf_counter() - started)
            hits = 0
            for pick in picks:
                relevant = product.keys[pick.paper_id] in user.relevant
                hits += relevant
                if learn:
                    await product.feedback.set(
                        uid, pick.paper_id, "like" if relevant else "dislike", now=now + timedelta(hours=1)
                    )
            precisions.append(hits / PER_DAY)
        run.per_day.append(precisions)
    return run


# -- arxiv-sanity-lite's SVM ------------------------------------------------------------------------


def tfidf_matrix(docs: Sequence[Doc]):  # type: ignore[no-untyped-def]
    from sklearn.feature_extraction.text import TfidfVectorizer

    # arxiv-sanity-lite compute.py, with its defaults (max_features 20000, min_df 5, max_df 0.1)
    vectorizer = TfidfVectorizer(
        input="content",
        encoding="utf-8",
        decode_error="replace",
        strip_accents="unicode",
        lowercase=True,
        analyzer="word",
        stop_words="english",
        token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b",
        ngram_range=(1, 2),
        max_features=20000,
        norm="l2",
        use_idf=True,
        smooth_idf=True,
        sublinear_tf=True,
        max_df=0.1,
        min_df=5,
    )
    return vectorizer.fit_transform([f"{d.title}. {d.abstract}" for d in docs])


async def run_svm(product: Product, corpus: Corpus, *, days: int, rated_only: bool, user_offset: int) -> Run:
    from sklearn import svm

    matrix = tfidf_matrix(corpus.docs)
    row_of = {d.key: i for i, d in enumerate(corpus.docs)}
    run = Run()
    for n, user in enumerate(corpus.users):
        uid = user_offset + n
        await product.recommender.profiles.add_topic(uid, user.phrase)
        shown: set[str] = set()
        liked: set[str] = set()
        disliked: set[str] = set()
        precisions = []
        for day in range(days):
            now = START + timedelta(days=day)
            started = time.perf_counter()
            ready = bool(liked) and (bool(disliked) or not rated_only)
            if not ready:
                # the topic query, like ours, through the same recommender (it records what it showed)
                picks = [
                    product.keys[p.paper_id]
                    for p in await product.recommender.recommend(uid, count=PER_DAY, now=now)
                ]
            else:
                if rated_only:
                    rows = [row_of[k] for k in (*liked, *disliked)]
                    y = np.array([1] * len(liked) + [0] * len(disliked))
                    x = matrix[rows]
                else:
                    x = matrix
                    y = np.zeros(matrix.shape[0], dtype=int)
                    y[[row_of[k] for k in liked]] = 1
                clf = svm.LinearSVC(class_weight="balanced", verbose=0, max_iter=10000, tol=1e-6, C=0.01)
                clf.fit(x, y)
                scores = clf.decision_function(matrix)
                order = np.argsort(-scores)
                picks = []
                for i in order:
                    key = corpus.docs[i].key
                    if key not in shown:
                        picks.append(key)
                        if len(picks) == PER_DAY:
                            break
                await product.recommender.feedback.mark_shown(uid, [product.ids[k] for k in picks])
            run.latencies.append(time.perf_counter() - started)
            hits = 0
            for key in picks:
                shown.add(key)
                if key in user.relevant:
                    hits += 1
                    liked.add(key)
                else:
                    disliked.add(key)
            precisions.append(hits / PER_DAY)
        run.per_day.append(precisions)
    return run


# -- report ---------------------------------------------------------------------------------------


def mean_by_day(run: Run) -> list[float]:
    return [statistics.fmean(day) for day in zip(*run.per_day, strict=True)]


def table(title: str, results: dict[str, Run], days: int, n_users: int) -> str:
    header = f"{'method':<28}" + "".join(f"{'d' + str(d + 1):>7}" for d in range(days)) + f"{'mean':>8}"
    lines = [f"## {title} — precision@{PER_DAY} per day, mean over {n_users} users", "", header]
    for name, run in results.items():
        by_day = mean_by_day(run)
        lines.append(
            f"{name:<28}" + "".join(f"{p:>7.3f}" for p in by_day) + f"{statistics.fmean(by_day):>8.3f}"
        )
    return "\n".join(lines)


async def evaluate(
    corpus: Corpus, *, days: int, params: RankingParams, methods: Sequence[str]
) -> dict[str, Run]:
    results: dict[str, Run] = {}
    with tempfile.TemporaryDirectory() as folder:
        product = await Product.open(Path(folder), corpus, params)
        try:
            runners: dict[str, Callable[[int], object]] = {
                "topics only (no feedback)": lambda off: run_product(
                    product, corpus, days=days, learn=False, user_offset=off
                ),
                "feedback (ours)": lambda off: run_product(
                    product, corpus, days=days, learn=True, user_offset=off
                ),
                "SVM arxiv-sanity-lite": lambda off: run_svm(
                    product, corpus, days=days, rated_only=False, user_offset=off
                ),
                "SVM rated only": lambda off: run_svm(
                    product, corpus, days=days, rated_only=True, user_offset=off
                ),
            }
            for i, name in enumerate(methods):
                results[name] = await runners[name]((i + 1) * 100_000)  # type: ignore[misc]
        finally:
            await product.db.close()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--min-subarea", type=int, default=20)
    parser.add_argument("--min-keyword", type=int, default=15)
    parser.add_argument("--only", choices=("iclr24", "iclr1718"), help="one corpus only")
    parser.add_argument("--fast", action="store_true", help="ours and topics only (no SVM)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    corpora = []
    if args.only in (None, "iclr24"):
        corpora.append(load_iclr2024(args.min_subarea))
    if args.only in (None, "iclr1718"):
        corpora.append(load_iclr1718(args.min_keyword))
    corpora = [c for c in corpora if c is not None]
    if not corpora:
        print("needs ../shared/data (airas-papers-db, multivenue); not found", file=sys.stderr)
        return 2
    methods = ["topics only (no feedback)", "feedback (ours)"]
    if not args.fast:
        methods += ["SVM arxiv-sanity-lite", "SVM rated only"]
    params = RankingParams()
    combined: dict[str, Run] = {m: Run() for m in methods}
    total_users = 0
    for corpus in corpora:
        started = time.perf_counter()
        results = asyncio.run(evaluate(corpus, days=args.days, params=params, methods=methods))
        print(table(f"{corpus.name} ({len(corpus.docs)} papers)", results, args.days, len(corpus.users)))
        print(f"({time.perf_counter() - started:.1f}s)\n")
        total_users += len(corpus.users)
        for name, run in results.items():
            combined[name].per_day.extend(run.per_day)
            combined[name].latencies.extend(run.latencies)
    print(table("All users", combined, args.days, total_users))
    for name, run in combined.items():
        lat = sorted(run.latencies)
        print(
            f"{name}: recommend() median {1000 * lat[len(lat) // 2]:.1f} ms, "
            f"p95 {1000 * lat[int(len(lat) * 0.95)]:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
