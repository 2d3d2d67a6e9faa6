"""Learning from reactions, measured on simulated people the settings never saw.

Each simulated person wants one research area. They type a phrase into `/paper interests add` —
either the area's own name, or a broader parent field (they under-specify; only reactions can narrow
it down) — then get 5 picks a day for 6 days and react 👍 to the picks from their area and 👎 to the
rest. A method sees only what it picked and the reactions to it.

Splits, by venue:
* tune — the ICLR 2024 virtual-site subareas (``topic`` = "Area->Subarea") with ≥ 15 papers, and the
  author keyword groups of ICLR 2017 (synonyms merged) with ≥ 12 papers;
* test — the same keyword groups in ICLR 2018 and CoRL 2024/25, with ≥ 12 papers.
Every setting of every method is chosen on the tune split (``--grid``, which writes
``bench/recommend_settings.json``); the test split is read only for the reported figures. (A first
version tuned on the ICLR 2024 subareas alone and tested on all ICLR 2017/18 and CoRL groups; its
test run showed that topic areas say little about narrow keyword areas, so ICLR 2017 moved to the
tune split. The remaining test people were part of that one earlier run.)

Corpus: the whole multivenue file (35,712 papers) is ingested and indexed, so statistics, the paper
space and every candidate pool see 35k papers. Only papers whose labels of the person's kind are known
(ICLR 2024 papers with a topic; papers of the split's keyword venues with author keywords) can be
picked for them: the others are excluded,
because a person who "wants Large Language Models" would be wrongly shown to dislike an unlabelled
ICML paper on LLMs (condensed lists). Author keywords are incomplete, so precision on the test split
is a lower bound for every method alike.

A third start, ``--starts pressed``: the broader field typed, and then, when the answer calls it broad
and offers narrower topics as buttons, the person presses the one whose labelled papers are most
often of their area, if at least :data:`PRESS_SHARE` are (they recognise their area's name); the
baselines' first days come from the same no-feedback ranking, so they get the press too.

A fourth, ``--starts seeded``: the broader field typed and one paper of the person's area named as a
paper they like (``/paper interests add paper:``, which the note on a broad topic asks for), drawn at
random from their area; it counts as their 👍 from the start for every method (the baselines' models
are fitted from day 1), and is never picked.

Methods, on the same people and the same reactions:
* paperbot — the real ``Recommender`` and ratings stored as the bot stores them, over a real SQLite store of the corpus;
* no feedback — the same recommender with the topic only (no reactions recorded);
* SVM (arxiv-sanity-lite) — its TF-IDF (1–2-grams, sublinear tf, min_df 5, max_df 0.1, 20k features)
  and ``LinearSVC(C=0.01, class_weight="balanced")`` per person and day, liked papers against every
  other paper, as arxiv-sanity-lite trains it; "SVM tuned" — C, min_df and max_df chosen on the tune
  split;
* Rocchio — TF-IDF query = topic + β · mean of liked − γ · mean of disliked, β and γ tuned.
Before their first 👍 the SVMs and Rocchio show what paperbot's no-feedback ranking shows (they
cannot rank with no positive), so all methods start alike.

Reported: precision@5 per day with a 95 % bootstrap interval over people, and the mean of days 4–6;
paperbot's lead over each other method with a paired interval (the same people on both sides).
Run: ``.venv/bin/python bench/recommend_eval.py --split test`` (≈8 min on 2 cores; ``--runs 4`` ≈30 min);
``--grid`` runs the tuning grids on the tune split (≈1 h) and writes the settings.
``--runs N`` averages each person over N slightly perturbed runs (:func:`perturbed`), N times slower.
``--mislabelled 0.3`` leaves 30 % of each person's area unlabelled but pickable (:func:`mislabelled`): the
tune split then has the test split's kind of noise (authors leave keywords out), under which paperbot's
lead on the tune split goes (bench/README.md); with ``--mislabelled-liked`` as well the person 👍s those
papers all the same and only the measure misses them (what the 👎 on them cost, apart from the measure).

Other views of a paper (experiments, tune split): ``--paper-vectors FILE`` puts one vector per corpus
row (``embed_corpus.py``: sentence embeddings) in place of the paper space's LSA coordinates, or beside
them with ``--vectors-beside``; ``--authors-as-words`` adds each author's name to the paper as a word.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import MULTIVENUE, multivenue_rows, rate  # noqa: E402

from bot.services.recommend.learner import LearningParams  # noqa: E402
from bot.services.recommend.paper_space import PaperSpace  # noqa: E402
from bot.services.recommend.recommender import Recommender  # noqa: E402
from bot.services.recommend.topic_breadth import breadth, with_every_word  # noqa: E402
from paperindex.engine import SearchEngine  # noqa: E402
from paperindex.tokenizer import tokenize  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.models import PaperRecord  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import open_database  # noqa: E402

SETTINGS = Path(__file__).with_name("recommend_settings.json")
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PER_DAY = 5
DAYS = 6
REPORTED_DAYS = slice(3, 6)  # days 4–6
PRESS_SHARE = 0.3  # a "pressed" person presses an offered narrower topic this much about their area
STARTS = {
    "broad": "broader field typed",
    "name": "own name typed",
    "pressed": "broader field, a narrower topic pressed",
    "seeded": "broader field and one paper of theirs named",
}

# -- the people ------------------------------------------------------------------------------------

# ICLR 2024 subarea → (its own name, a broader parent field)
TUNE_AREAS = {
    "Deep Learning->Large Language Models": ("large language models", "natural language processing"),
    "Deep Learning->Generative Models and Autoencoders": (
        "generative models and autoencoders",
        "deep learning",
    ),
    "Applications->Computer Vision": ("computer vision", "deep learning"),
    "Deep Learning->Graph Neural Networks": ("graph neural networks", "deep learning"),
    "Social Aspects->Trustworthy Machine Learning": (
        "trustworthy machine learning",
        "social aspects of machine learning",
    ),
    "Deep Learning->Robustness": ("robustness of deep networks", "deep learning"),
    "Deep Learning->Other Representation Learning": ("representation learning", "deep learning"),
    "Deep Learning->Self-Supervised Learning": ("self-supervised learning", "representation learning"),
    "Applications->Language, Speech and Dialog": (
        "language, speech and dialog",
        "deep learning applications",
    ),
    "Reinforcement Learning->Deep RL": ("deep reinforcement learning", "reinforcement learning"),
    "Applications->Neuroscience, Cognitive Science": (
        "neuroscience and cognitive science",
        "applications of machine learning",
    ),
    "Applications->Chemistry and Drug Discovery": (
        "chemistry and drug discovery",
        "machine learning for science",
    ),
    "Miscellaneous Aspects of Machine Learning->Transfer, Multitask and Meta-learning": (
        "transfer, multitask and meta-learning",
        "machine learning",
    ),
    "Social Aspects->Accountability, Transparency and Interpretability": (
        "accountability, transparency and interpretability",
        "trustworthy machine learning",
    ),
    "Miscellaneous Aspects of Machine Learning->Representation Learning": (
        "representation learning",
        "machine learning",
    ),
    "Applications->Robotics": ("robotics", "applications of machine learning"),
    "Social Aspects->Fairness, Equity, Justice and Safety": (
        "fairness, equity, justice and safety",
        "trustworthy machine learning",
    ),
    "Reinforcement Learning->Batch/Offline": ("offline reinforcement learning", "reinforcement learning"),
    "Deep Learning->Sequential Models, Time series": ("sequential models, time series", "deep learning"),
    "Miscellaneous Aspects of Machine Learning->Causality": ("causality", "machine learning"),
    "Social Aspects->Privacy-preserving Statistics and Machine Learning": (
        "privacy-preserving machine learning",
        "trustworthy machine learning",
    ),
    "Theory->Learning Theory": ("learning theory", "machine learning theory"),
    "Deep Learning->Attention Mechanisms": ("attention mechanisms", "deep learning"),
    "Applications->Physics": ("machine learning for physics", "machine learning for science"),
    "Applications->Time Series": ("time series", "applications of machine learning"),
    "Deep Learning->Theory": ("deep learning theory", "machine learning theory"),
    "Optimization->Large Scale, Parallel and Distributed": (
        "large-scale distributed optimization",
        "optimization",
    ),
    "Miscellaneous Aspects of Machine Learning->Unsupervised and Semi-supervised Learning": (
        "unsupervised and semi-supervised learning",
        "machine learning",
    ),
    "Reinforcement Learning->Multi-agent": ("multi-agent reinforcement learning", "reinforcement learning"),
}
# keyword group (name typed) → (keywords that mean it, a broader parent field)
KEYWORD_AREAS = {
    "reinforcement learning": (("reinforcement learning", "deep reinforcement learning"), "machine learning"),
    "unsupervised learning": (("unsupervised learning", "unsupervised"), "machine learning"),
    "natural language processing": (("natural language processing",), "artificial intelligence"),
    "computer vision": (("computer vision",), "deep learning"),
    "imitation learning": (("imitation learning",), "robot learning"),
    "optimization": (("optimization",), "machine learning"),
    "supervised learning": (("supervised learning",), "machine learning"),
    "transfer learning": (("transfer learning",), "deep learning"),
    "generative adversarial networks": (
        ("generative adversarial networks", "gan", "gans", "adversarial learning"),
        "generative models",
    ),
    "generative models": (
        (
            "generative models",
            "generative model",
            "deep generative models",
            "diffusion model",
            "diffusion models",
        ),
        "deep learning",
    ),
    "robot manipulation": (
        ("manipulation", "robotic manipulation", "robot manipulation", "dexterous manipulation"),
        "robotics",
    ),
    "representation learning": (("representation learning",), "deep learning"),
    "semi-supervised learning": (("semi-supervised learning",), "machine learning"),
    "structured prediction": (("structured prediction",), "machine learning"),
    "recurrent neural networks": (("recurrent neural networks", "rnn", "lstm"), "neural networks"),
    "generalization": (("generalization",), "deep learning theory"),
    "adversarial examples": (("adversarial examples", "adversarial training"), "deep learning"),
    "autonomous driving": (("autonomous driving",), "robotics"),
    "sim-to-real": (("sim-to-real",), "robot learning"),
    "domain adaptation": (("domain adaptation",), "transfer learning"),
    "variational inference": (("variational inference",), "probabilistic machine learning"),
    "meta-learning": (("meta-learning", "few-shot learning"), "machine learning"),
    "convolutional neural networks": (("convolutional neural networks", "cnn"), "neural networks"),
    "navigation": (("navigation",), "robotics"),
    "tactile sensing": (("tactile sensing",), "robotics"),
    # added to the test split after its first reads: every further group of the test venues that
    # names a research area and has >= 12 papers once synonyms are merged (none of them in ICLR 2017)
    "attention": (
        ("attention", "attention mechanism", "attention mechanisms", "self-attention"),
        "deep learning",
    ),
    "image classification": (("image classification",), "computer vision"),
    "regularization": (("regularization", "dropout"), "deep learning"),
    "planning": (("planning", "motion planning", "task planning"), "artificial intelligence"),
    "interpretability": (
        ("interpretability", "explainability", "explainable ai", "interpretable machine learning"),
        "trustworthy machine learning",
    ),
    "data augmentation": (("data augmentation",), "deep learning"),
    "model compression": (
        ("model compression", "pruning", "network pruning", "quantization"),
        "deep learning",
    ),
    "legged locomotion": (
        ("legged locomotion", "legged robots", "legged robot", "locomotion", "quadrupedal locomotion"),
        "robotics",
    ),
    "word embeddings": (("word embeddings", "word embedding"), "natural language processing"),
}
TUNE_KEYWORD_VENUES = {("ICLR", 2017)}
TEST_KEYWORD_VENUES = {("ICLR", 2018), ("CoRL", 2024), ("CoRL", 2025)}
MIN_TOPIC_PAPERS = 15
MIN_KEYWORD_PAPERS = 12


@dataclass(frozen=True)
class Person:
    area: str
    name: str  # the area's own name, as typed
    broad: str  # a broader parent field, as typed
    relevant: frozenset[int]  # row numbers
    judged: frozenset[int]  # rows whose labels of this kind are known (the only ones picked for them)
    liked: frozenset[int] | None = None  # rows they 👍 when shown, if not just the relevant ones

    def likes(self, row: int) -> bool:
        return row in (self.relevant if self.liked is None else self.liked)


@dataclass(frozen=True)
class Split:
    name: str
    people: tuple[Person, ...]


def load_split(rows: Sequence[dict[str, Any]], name: str) -> Split:
    """tune: ICLR 2024 topics and ICLR 2017 keyword groups; test: ICLR 2018 and CoRL keyword groups."""
    people = []
    if name == "tune":
        topical = frozenset(i for i, r in enumerate(rows) if r.get("topic"))
        for area, (typed, broad) in TUNE_AREAS.items():
            relevant = frozenset(i for i in topical if rows[i]["topic"] == area)
            if len(relevant) >= MIN_TOPIC_PAPERS:
                people.append(Person(area, typed, broad, relevant, topical))
    venues = TUNE_KEYWORD_VENUES if name == "tune" else TEST_KEYWORD_VENUES
    keywords = {
        i: {str(k).strip().lower() for k in r.get("keywords") or ()}
        for i, r in enumerate(rows)
        if (r.get("venue"), r.get("year")) in venues
    }
    judged = frozenset(i for i, k in keywords.items() if k)
    for typed, (synonyms, broad) in KEYWORD_AREAS.items():
        relevant = frozenset(i for i in judged if keywords[i] & set(synonyms))
        if len(relevant) >= MIN_KEYWORD_PAPERS:
            people.append(Person(typed, typed, broad, relevant, judged))
    return Split(name, tuple(people))


# -- the product on a temporary store --------------------------------------------------------------


@dataclass
class Product:
    db: Database
    engine: SearchEngine
    space: PaperSpace
    ids: list[int]  # row → paper id
    rows_of: dict[int, int]  # paper id → row
    next_user: int = 1

    @classmethod
    async def open(
        cls, folder: Path, rows: Sequence[dict[str, Any]], *, authors_as_words: bool = False
    ) -> Product:
        """The corpus in a fresh store, indexed; ``authors_as_words``: each author's name is added to
        the paper's abstract as one word of its own (an experiment: the model's words and the paper
        space then carry the authors)."""
        db = await open_database(folder / "bench.db")
        papers = PaperRepository(db)
        await papers.upsert_many(
            PaperRecord(
                title=str(r["title"]),
                abstract=str(r.get("abstract") or "") + (author_words(r) if authors_as_words else ""),
                authors=tuple(r.get("authors") or ()),
                venue=str(r.get("venue") or ""),
                year=r.get("year"),
                external_id=str(r["uid"]),
                source="bench",
            )
            for r in rows
        )
        by_uid = {str(r[0]): int(r[1]) for r in await db.fetchall("SELECT external_id, id FROM papers")}
        # a row merged into an earlier one (the same paper listed twice) is not a paper of its own
        ids = [by_uid.get(str(r["uid"]), -1) for r in rows]
        engine = SearchEngine.build(await papers.iter_index_rows())  # as bot.runtime builds it
        space = PaperSpace(engine.index)
        space.rebuild()
        return cls(db, engine, space, ids, {p: i for i, p in enumerate(ids) if p >= 0})

    def use_vectors(self, vectors: np.ndarray, *, beside: bool) -> None:
        """Each paper's coordinates in the paper space become ``vectors[row]`` (one per corpus row, as
        ``embed_corpus.py`` writes them), or those appended to its LSA coordinates; unit length."""
        index, space = self.engine.index, self.space
        slots = int(index.n_slots)
        rows = np.array([self.rows_of.get(int(p), -1) for p in index.slot_ids[:slots]])
        placed = (rows >= 0) & index.alive[:slots]
        coords = np.zeros((slots, vectors.shape[1]), dtype=np.float32)
        coords[placed] = vectors[rows[placed]]
        if beside:
            coords = np.hstack([space.coords[:slots], coords])
        norms = np.linalg.norm(coords, axis=1, keepdims=True)
        # PaperSpace has no setter for its coordinates: paperbot never swaps them, only this experiment
        space._coords = (coords / np.maximum(norms, 1e-9)).astype(np.float32)
        space.dims = coords.shape[1]

    def recommender(self, learning: LearningParams | None = None) -> Recommender:
        kwargs = {"learning": learning} if learning is not None else {}
        return Recommender(self.db, self.engine, self.engine.index, space=self.space, **kwargs)

    def user(self) -> int:
        self.next_user += 1
        return self.next_user


def part_of_area(person: Person, rng: np.random.Generator, size: int) -> frozenset[int]:
    """``size`` papers of the person's area, drawn at random without repeats."""
    return frozenset(rng.choice(sorted(person.relevant), size=size, replace=False).tolist())


def author_words(row: dict[str, Any]) -> str:
    """Each author's name as one word ("Jane Q. Doe" → " zzauthorjaneqdoe"), for ``--authors-as-words``."""
    names = (
        "zzauthor" + "".join(c for c in str(a).lower() if c.isascii() and c.isalpha())
        for a in row.get("authors") or ()
    )
    return "".join(f" {name}" for name in names)


def perturbed(split: Split, run: int) -> Split:
    """Run 0 is the split itself; run k ≥ 1 leaves out a random tenth of each person's area (from what
    is relevant and what can be picked): the same people, slightly different. One different pick on
    day 1 changes every later day, so a single run cannot tell apart two settings a few hundredths
    apart; the mean over such runs can (``--runs``)."""
    if run == 0:
        return split
    rng = np.random.default_rng(run)
    people = []
    for person in split.people:
        left_out = part_of_area(person, rng, max(1, len(person.relevant) // 10))
        people.append(
            dataclasses.replace(person, relevant=person.relevant - left_out, judged=person.judged - left_out)
        )
    return Split(split.name, tuple(people))


def mislabelled(split: Split, share: float, *, liked: bool = False, seed: int = 12345) -> Split:
    """Each person's area with ``share`` of its papers left unlabelled but still pickable: shown one,
    the person reacts 👎, as keywords an author did not list make a person of the test split do (and
    as real people sometimes 👎 a paper of their own area). On the tune split, this is the test
    split's kind of noise. ``liked``: the person 👍s them all the same and only the measure misses
    them, which tells what the 👎 on them cost apart from what they take from the measure."""
    if not share:
        return split
    rng = np.random.default_rng(seed)
    people = []
    for person in split.people:
        unlabelled = part_of_area(person, rng, int(len(person.relevant) * share))
        people.append(
            dataclasses.replace(
                person, relevant=person.relevant - unlabelled, liked=person.relevant if liked else None
            )
        )
    return Split(split.name, tuple(people))


async def simulate_runs(
    split: Split, start: str, picker: Callable[[Split], Any], runs: int
) -> tuple[np.ndarray, list[Any]]:
    """precision@5 per person and day, the mean over ``runs`` perturbed runs (:func:`perturbed`),
    and each run's picker (``picker(split)`` makes a fresh one per run)."""
    results, pickers = [], []
    for run in range(runs):
        each = perturbed(split, run)
        pick = picker(each)
        results.append(await simulate(each, start, pick))
        pickers.append(pick)
    return np.mean(results, axis=0), pickers


def named_paper(person: Person) -> int:
    """The paper of their area a ``seeded`` person names: drawn from it by a seed of its own name (the
    same paper for every method; another in a perturbed run, whose area lacks a tenth)."""
    rng = np.random.default_rng(zlib.crc32(person.area.encode()))
    return int(rng.choice(sorted(person.relevant)))


async def simulate(split: Split, start: str, pick: Callable[..., Any]) -> np.ndarray:
    """precision@5 per person (rows) and day (columns); ``pick(person, phrase, liked, disliked, shown)``."""
    result = np.zeros((len(split.people), DAYS))
    for p, person in enumerate(split.people):
        phrase = person.name if start == "name" else person.broad
        liked: list[int] = []
        disliked: list[int] = []
        shown: set[int] = set()
        state: dict[str, Any] = {"presses": start == "pressed"}
        if start == "seeded":
            state["seed"] = named_paper(person)
            liked.append(state["seed"])
            shown.add(state["seed"])
        for day in range(DAYS):
            picks = await pick(person, phrase, liked, disliked, shown, day, state)
            for row in picks:
                shown.add(row)
                (liked if person.likes(row) else disliked).append(row)
            result[p, day] = sum(row in person.relevant for row in picks) / PER_DAY
    return result


def product_picker(product: Product, split: Split, *, learn: bool, learning: LearningParams | None = None):  # type: ignore[no-untyped-def]
    recommender = product.recommender(learning)
    unjudged: dict[frozenset[int], set[int]] = {}

    async def pick(person, phrase, liked, disliked, shown, day, state):  # type: ignore[no-untyped-def]
        if "user" not in state:
            state["user"] = product.user()
            await recommender.profiles.add_topic(state["user"], phrase)
            if state["presses"] and (narrower := pressed_topic(product, person, phrase)) is not None:
                await recommender.profiles.narrow_topic(state["user"], phrase, narrower)
            if learn and "seed" in state:  # /paper interests add paper: narrows the topic, and is a 👍
                seed = product.ids[state["seed"]]
                interest, _ = await recommender.add_paper(state["user"], seed)
                if interest.label.casefold() != phrase.casefold():  # the answer's button for the topic
                    await recommender.narrow_with(state["user"], phrase, seed)
                await rate(product.db, state["user"], product.ids[state["seed"]], "like", at=START)
            pick.people.append((person, state["user"], phrase, shown))  # type: ignore[attr-defined]
        user = state["user"]
        now = START + timedelta(days=day)
        if person.judged not in unjudged:
            unjudged[person.judged] = {
                pid for row, pid in enumerate(product.ids) if row not in person.judged and pid >= 0
            }
        exclude = unjudged[person.judged]
        if "seed" in state:  # never picked, also where it was not stored (no feedback)
            exclude = state.setdefault("exclude", exclude | {product.ids[state["seed"]]})
        picks = await recommender.recommend(user, count=PER_DAY, exclude=exclude, now=now)
        rows = [product.rows_of[p.paper_id] for p in picks]
        if learn:
            for row in rows:
                signal = "like" if person.likes(row) else "dislike"
                await rate(product.db, user, product.ids[row], signal, at=now + timedelta(hours=1))
        return rows

    pick.people = []  # type: ignore[attr-defined]
    pick.recommender = recommender  # type: ignore[attr-defined]
    return pick


def pressed_topic(product: Product, person: Person, phrase: str) -> str | None:
    """The narrower topic a person presses under the note on a broad phrase (``/paper interests add``):
    of those offered, the one whose labelled papers are most often of their area, if at least
    :data:`PRESS_SHARE` are (they recognise their area's name); None when nothing is offered or none
    names it."""
    found = breadth(product.engine, phrase)
    index = product.engine.index
    best: tuple[float, str] = (0.0, "")
    for narrower in found.narrower if found is not None else ():
        having = with_every_word(index, dict.fromkeys(tokenize(narrower)), index.alive)
        rows = [product.rows_of.get(int(p), -1) for p in index.slot_ids[np.flatnonzero(having)]]
        judged = [row for row in rows if row in person.judged]
        share = sum(row in person.relevant for row in judged) / len(judged) if judged else 0.0
        best = max(best, (share, narrower))
    return best[1] if best[0] >= PRESS_SHARE else None


async def search_top5(product: Product, split: Split, pick) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """Share of each person's area among the top 5 of a search for the phrase they typed, after the
    simulated days: today's order, and the order their model gives the close matches (the papers
    they already rated left out of both; only labelled papers listed, as in the simulation)."""
    plain, personal = [], []
    window = 20  # as SearchService.PERSONAL_WINDOW
    for person, user, phrase, shown in pick.people:
        hits = product.engine.search(phrase, limit=400).hits
        rows = [(product.rows_of.get(h.paper_id, -1), h) for h in hits]
        kept = [(row, h) for row, h in rows if row in person.judged and row not in shown][:window]
        order = await pick.recommender.personal_order(
            user, [h.paper_id for _, h in kept], [h.score for _, h in kept]
        )
        ids = order if order is not None else [h.paper_id for _, h in kept]
        plain.append(sum(row in person.relevant for row, _ in kept[:PER_DAY]) / PER_DAY)
        personal.append(sum(product.rows_of[i] in person.relevant for i in ids[:PER_DAY]) / PER_DAY)
    return np.array(plain), np.array(personal)


# -- baselines ---------------------------------------------------------------------------------------


def tfidf(rows: Sequence[dict[str, Any]], *, min_df: int, max_df: float):  # type: ignore[no-untyped-def]
    from sklearn.feature_extraction.text import TfidfVectorizer

    # arxiv-sanity-lite's compute.py, its defaults but for min_df / max_df
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
        max_df=max_df,
        min_df=min_df,
    )
    matrix = vectorizer.fit_transform([f"{r['title']}. {r.get('abstract') or ''}" for r in rows])
    return vectorizer, matrix


_TFIDF: dict[tuple[int, float], Any] = {}


def cached_tfidf(rows: Sequence[dict[str, Any]], min_df: int, max_df: float):  # type: ignore[no-untyped-def]
    key = (min_df, max_df)
    if key not in _TFIDF:
        _TFIDF[key] = tfidf(rows, min_df=min_df, max_df=max_df)
    return _TFIDF[key]


def best_unshown(scores: np.ndarray, person: Person, shown: set[int]) -> list[int]:
    allowed = np.zeros(len(scores), dtype=bool)
    allowed[list(person.judged)] = True
    allowed[list(shown)] = False  # (rows merged into others are not judged)
    candidates = np.flatnonzero(allowed)
    top = candidates[np.lexsort((candidates, -scores[candidates]))[:PER_DAY]]
    return [int(i) for i in top]


def svm_picker(product: Product, split: Split, rows, *, C: float, min_df: int, max_df: float):  # type: ignore[no-untyped-def]
    from sklearn import svm

    cold = product_picker(product, split, learn=False)
    _, matrix = cached_tfidf(rows, min_df, max_df)

    async def pick(person, phrase, liked, disliked, shown, day, state):  # type: ignore[no-untyped-def]
        if not liked:  # no positive yet: the no-feedback ranking (it also records what it showed)
            return await cold(person, phrase, liked, disliked, shown, day, state)
        y = np.zeros(matrix.shape[0], dtype=int)
        y[liked] = 1
        clf = svm.LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=C)
        clf.fit(matrix, y)
        picks = best_unshown(clf.decision_function(matrix), person, shown)
        if "user" in state:  # keep the cold ranking's record of what was shown up to date
            await product.recommender().feedback.mark_shown(state["user"], [product.ids[r] for r in picks])
        return picks

    return pick


def rocchio_picker(product: Product, split: Split, rows, *, beta: float, gamma: float):  # type: ignore[no-untyped-def]
    cold = product_picker(product, split, learn=False)
    vectorizer, matrix = cached_tfidf(rows, 5, 0.1)

    async def pick(person, phrase, liked, disliked, shown, day, state):  # type: ignore[no-untyped-def]
        if not liked:
            return await cold(person, phrase, liked, disliked, shown, day, state)
        query = np.asarray(vectorizer.transform([phrase]).todense()).ravel()
        query = query + beta * np.asarray(matrix[liked].mean(axis=0)).ravel()
        if disliked:
            query = query - gamma * np.asarray(matrix[disliked].mean(axis=0)).ravel()
        picks = best_unshown(np.asarray(matrix @ query).ravel(), person, shown)
        if "user" in state:
            await product.recommender().feedback.mark_shown(state["user"], [product.ids[r] for r in picks])
        return picks

    return pick


# -- settings, grids and report --------------------------------------------------------------------

ASL = {"C": 0.01, "min_df": 5, "max_df": 0.1}  # arxiv-sanity-lite's LinearSVC and TF-IDF settings
DEFAULT_SETTINGS: dict[str, dict[str, Any]] = {
    "paperbot": {},
    "svm_tuned": {"C": 0.01, "min_df": 5, "max_df": 0.1},
    "rocchio": {"beta": 0.75, "gamma": 0.15},
}
GRIDS: dict[str, list[dict[str, Any]]] = {
    "paperbot": [  # around the defaults of LearningParams; a first round (--runs 2) chose coord_l2 0.3
        {"coord_l2": 0.3},
        {"coord_l2": 0.1},
        {"coord_l2": 1.0},
        {"coord_l2": 0.3, "word_l2": 0.3},
        {"coord_l2": 0.3, "word_l2": 3.0},
        {"coord_l2": 0.3, "exploration": 0.3},
        {"coord_l2": 0.3, "dislike_weight": 2.0},
    ],
    "svm_tuned": [
        {"C": 0.001, "min_df": 5, "max_df": 0.1},
        {"C": 0.003, "min_df": 5, "max_df": 0.1},
        {"C": 0.01, "min_df": 5, "max_df": 0.1},
        {"C": 0.03, "min_df": 5, "max_df": 0.1},
        {"C": 0.1, "min_df": 5, "max_df": 0.1},
        {"C": 1.0, "min_df": 5, "max_df": 0.1},
        {"C": 0.01, "min_df": 2, "max_df": 0.1},
        {"C": 0.01, "min_df": 5, "max_df": 0.3},
        {"C": 0.01, "min_df": 5, "max_df": 0.05},
        {"C": 0.003, "min_df": 2, "max_df": 0.3},
    ],
    "rocchio": [
        {"beta": 0.75, "gamma": 0.15},
        {"beta": 2.0, "gamma": 0.5},
        {"beta": 4.0, "gamma": 1.0},
        {"beta": 4.0, "gamma": 0.25},
        {"beta": 8.0, "gamma": 2.0},
        {"beta": 8.0, "gamma": 0.5},
    ],
}


def picker_for(method: str, settings: dict[str, Any], product: Product, split: Split, rows):  # type: ignore[no-untyped-def]
    if method == "paperbot":
        return product_picker(product, split, learn=True, learning=LearningParams(**settings))
    if method == "no feedback":
        return product_picker(product, split, learn=False)
    if method == "svm_asl":
        return svm_picker(product, split, rows, **ASL)
    if method == "svm_tuned":
        return svm_picker(product, split, rows, **settings)
    if method == "rocchio":
        return rocchio_picker(product, split, rows, **settings)
    raise ValueError(method)


def bootstrap(values: np.ndarray, *, rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % interval of the mean over people (rows resampled with replacement)."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(rounds, len(values)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def reported(result: np.ndarray) -> float:
    return float(result[:, REPORTED_DAYS].mean())


def table(split: Split, start: str, results: dict[str, np.ndarray], runs: int = 1) -> str:
    header = f"| method | {' | '.join(f'day {d + 1}' for d in range(DAYS))} | days 4–6 (95 % CI) |"
    lines = [
        f"### {split.name} split, {STARTS[start]} "
        f"({len(split.people)} people, precision@{PER_DAY}"
        + (f", each the mean of {runs} runs)" if runs > 1 else ")"),
        "",
        header,
        "|" + "---|" * (DAYS + 2),
    ]
    for name, result in results.items():
        by_day = result.mean(axis=0)
        low, high = bootstrap(result[:, REPORTED_DAYS].mean(axis=1))
        days = " | ".join(f"{v:.2f}" for v in by_day)
        lines.append(f"| {name} | {days} | **{reported(result):.3f}** ({low:.2f}–{high:.2f}) |")
    return "\n".join(lines)


def differences(results: dict[str, np.ndarray], ours: str) -> str:
    """``ours`` minus each other method, days 4–6, with a paired 95 % bootstrap interval over people
    (the same people in both: much narrower than the two methods' own intervals)."""
    if ours not in results:
        return ""
    mine = results[ours][:, REPORTED_DAYS].mean(axis=1)
    lines = []
    for name, result in results.items():
        if name == ours:
            continue
        gap = mine - result[:, REPORTED_DAYS].mean(axis=1)
        low, high = bootstrap(gap)
        lines.append(f"- {ours} − {name}: {gap.mean():+.3f} ({low:+.2f} to {high:+.2f}, paired)")
    return "\n".join(lines)


def without_merged(split: Split, product: Product) -> Split:
    """Rows merged into an earlier one (the same paper listed twice) are neither relevant nor judged."""
    merged = {row for row, pid in enumerate(product.ids) if pid < 0}
    people = (
        dataclasses.replace(p, relevant=p.relevant - merged, judged=p.judged - merged) for p in split.people
    )
    return Split(split.name, tuple(people))


async def run(args: argparse.Namespace) -> int:
    rows = multivenue_rows()
    vectors = np.load(args.paper_vectors) if args.paper_vectors is not None else None
    if vectors is not None and len(vectors) != len(rows):
        print(
            f"{args.paper_vectors} has {len(vectors):,} vectors for {len(rows):,} papers "
            "(embed_corpus.py without --limit writes one per paper)",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        product = await Product.open(Path(folder), rows, authors_as_words=args.authors_as_words)
        if vectors is not None:
            product.use_vectors(vectors, beside=args.vectors_beside)
        split = without_merged(load_split(rows, "tune" if args.grid else args.split), product)
        split = mislabelled(split, args.mislabelled, liked=args.mislabelled_liked)
        labelled = frozenset().union(*(p.judged for p in split.people))
        print(
            f"corpus {len(rows):,} papers, {split.name} split: {len(split.people)} people, "
            f"{len(labelled):,} labelled papers"
            + (f", {args.mislabelled:.0%} of each area unlabelled" if args.mislabelled else "")
            + (" (👍 all the same)" if args.mislabelled_liked else "")
            + f" (setup {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        try:
            if args.grid:
                await grid(product, split, rows, args.methods, args.runs)
            else:
                await report(product, split, rows, args.methods, args.runs, args.starts)
        finally:
            await product.db.close()
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


async def grid(product: Product, split: Split, rows, methods: Sequence[str], runs: int) -> None:  # type: ignore[no-untyped-def]
    """Each method's grid on the tune split; the best mean of both starts (days 4–6) is kept."""
    chosen = json.loads(SETTINGS.read_text()) if SETTINGS.exists() else dict(DEFAULT_SETTINGS)
    for method in methods:
        if method not in GRIDS:
            continue
        best: tuple[float, dict[str, Any]] | None = None
        for settings in GRIDS[method]:
            scores = {}
            for start in ("name", "broad"):
                result, _ = await simulate_runs(
                    split,
                    start,
                    lambda each, m=method, s=settings: picker_for(m, s, product, each, rows),
                    runs,
                )
                scores[start] = reported(result)
            value = (scores["name"] + scores["broad"]) / 2
            print(
                f"{method:10s} {json.dumps(settings):55s} name {scores['name']:.3f} broad {scores['broad']:.3f} "
                f"mean {value:.3f}",
                flush=True,
            )
            if best is None or value > best[0]:
                best = (value, settings)
        assert best is not None
        chosen[method] = best[1]
        print(f"chosen for {method}: {json.dumps(best[1])}", flush=True)
        SETTINGS.write_text(json.dumps(chosen, indent=2) + "\n")


async def report(
    product: Product, split: Split, rows, methods: Sequence[str], runs: int, starts: Sequence[str]
) -> None:  # type: ignore[no-untyped-def]
    settings = json.loads(SETTINGS.read_text()) if SETTINGS.exists() else dict(DEFAULT_SETTINGS)
    labels = {
        "paperbot": "paperbot (reactions)",
        "no feedback": "paperbot, no reactions",
        "svm_asl": "SVM, arxiv-sanity-lite's settings",
        "svm_tuned": "SVM, tuned",
        "rocchio": "Rocchio, tuned",
    }
    searches = []
    for start in starts:
        results = {}
        for method in methods:
            if method == "svm_tuned" and settings.get(method) == ASL and "svm_asl" in methods:
                # the tuning chose arxiv-sanity-lite's own settings: the same run
                results[labels[method] + " (= its settings)"] = results[labels["svm_asl"]]
                continue
            chosen = settings.get(method, {})
            results[labels[method]], pickers = await simulate_runs(
                split, start, lambda each, m=method, s=chosen: picker_for(m, s, product, each, rows), runs
            )
            if method == "paperbot":
                orders = [await search_top5(product, split, pick) for pick in pickers]
                searches.append((start, *(np.mean(side, axis=0) for side in zip(*orders, strict=True))))
        print(table(split, start, results, runs) + "\n", flush=True)
        if gaps := differences(results, labels["paperbot"]):
            print(gaps + "\n", flush=True)
    if searches:
        print("### A search for the typed phrase after the 6 days: share of the person's area in the top 5\n")
        print("| typed | today's order | ordered by their model | gain (95 % CI) |\n|---|---|---|---|")
        for start, plain, personal in searches:
            low, high = bootstrap(personal - plain)
            print(
                f"| {STARTS[start]} | {plain.mean():.3f} | "
                f"{personal.mean():.3f} | {personal.mean() - plain.mean():+.3f} ({low:+.2f} to {high:+.2f}) |"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--grid", action="store_true", help="tune every method on the tune split")
    parser.add_argument(
        "--methods",
        default="paperbot,no feedback,svm_asl,svm_tuned,rocchio",
        help="comma-separated: paperbot, no feedback, svm_asl, svm_tuned, rocchio",
    )
    parser.add_argument(
        "--starts",
        default="broad,name",
        help="comma-separated: broad, name, pressed (the broader field typed, then the offered narrower "
        "topic that names the person's area pressed, if one does), seeded (the broader field typed and "
        "one paper of their area named as liked)",
    )
    parser.add_argument(
        "--runs", type=int, default=1, help="perturbed runs per person, averaged (run 0 = the split itself)"
    )
    parser.add_argument(
        "--mislabelled",
        type=float,
        default=0.0,
        help="share of each person's area left unlabelled (👎 when shown), as the test split's "
        "incomplete keywords leave it; for the tune split",
    )
    parser.add_argument(
        "--mislabelled-liked",
        action="store_true",
        help="with --mislabelled: the person 👍s the unlabelled papers of their area all the same (only "
        "the measure misses them)",
    )
    parser.add_argument(
        "--paper-vectors",
        type=Path,
        default=None,
        help="a .npy of one vector per corpus row (embed_corpus.py): the paper space's coordinates "
        "instead of LSA (an experiment, tune split)",
    )
    parser.add_argument(
        "--vectors-beside", action="store_true", help="with --paper-vectors: appended to the LSA coordinates"
    )
    parser.add_argument(
        "--authors-as-words",
        action="store_true",
        help="each author's name added to the paper as one word of its own (an experiment, tune split)",
    )
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",")]
    args.starts = [s.strip() for s in args.starts.split(",")]
    if not 0.0 <= args.mislabelled < 1.0:
        parser.error(
            f"--mislabelled is a share of each area, from 0 up to (not including) 1: got {args.mislabelled}"
        )
    if args.mislabelled_liked and not args.mislabelled:
        parser.error("--mislabelled-liked needs --mislabelled (the share of each area left unlabelled)")
    if args.vectors_beside and args.paper_vectors is None:
        parser.error("--vectors-beside needs --paper-vectors (the .npy that embed_corpus.py writes)")
    if unknown := set(args.starts) - set(STARTS):
        parser.error(f"unknown --starts: {', '.join(sorted(unknown))}")
    logging.basicConfig(level=logging.WARNING)
    if not MULTIVENUE.exists():
        print(f"needs {MULTIVENUE} (the shared data); not found", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
