"""Digest bench: build every digest for 10,000 subscriptions over 100,000 papers (target ≤ 60 s).

What is timed is what the scheduler does for each subscription when it fires, before sending:
``DigestPlanner.choose`` — the real Recommender on the real search index (profile from topics and
reactions, exclusion of everything already sent, ranking, near-copy guard, reasons) over a real
SQLite database, one subscription after another, in one process as the bot runs them. Reading the
chosen papers for their messages happens as they are sent and is reported separately; sending is
not timed: Discord's global rate limit (50 requests/s), not the build, bounds delivery.

Data:
* papers — ``../shared/data/multivenue/multivenue_corpus.jsonl.gz`` (35,712 real papers), plus
  synthetic papers to reach ``--papers``: each mixes sentences of three real abstracts (so the
  vocabulary and term statistics stay realistic) under a title built from real title words. Skipped
  with a clear line when the shared data is absent.
* subscribers — 95 % users (1–3 topics each from a list of ML research topics, daily/weekdays/weekly,
  3–10 papers, timezones across the world), 5 % channel feeds; 30 % of the users have reactions
  (2–8 likes on papers of their topics, 0–3 dislikes), 20 % have a digest history (5–30 papers
  already sent, which every build must leave out).

Setup (ingest, index, subscribers) is reported separately. Peak memory is the process's peak RSS.
Run: ``.venv/bin/python bench/digest_bench.py [--subscribers 10000] [--papers 100000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import logging
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.runtime import build_digests, one_blas_thread  # noqa: E402
from bot.services.digests.subscriptions import recipient_of  # noqa: E402
from bot.services.people.mutes import MuteMatcher, MuteService  # noqa: E402
from bot.services.recommend.recommender import Recommender  # noqa: E402
from bot.services.search.live_index import LiveIndex  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.models import PaperRecord  # noqa: E402
from storage.repositories.library_texts import LibraryTextRepository  # noqa: E402
from storage.repositories.papers import PaperRepository  # noqa: E402
from storage.store import open_database  # noqa: E402

CORPUS = REPO.parent / "shared" / "data" / "multivenue" / "multivenue_corpus.jsonl.gz"
TARGET_SECONDS = 60.0

TOPICS = [
    "reinforcement learning",
    "offline reinforcement learning",
    "multi-agent reinforcement learning",
    "graph neural networks",
    "diffusion models",
    "score-based generative models",
    "large language models",
    "in-context learning",
    "instruction tuning",
    "kv cache",
    "quantization",
    "model compression",
    "knowledge distillation",
    "federated learning",
    "differential privacy",
    "adversarial robustness",
    "certified robustness",
    "contrastive learning",
    "self-supervised learning",
    "vision transformers",
    "object detection",
    "semantic segmentation",
    "3d reconstruction",
    "neural radiance fields",
    "bayesian optimization",
    "gaussian processes",
    "variational inference",
    "causal inference",
    "domain adaptation",
    "out-of-distribution detection",
    "continual learning",
    "meta-learning",
    "few-shot learning",
    "active learning",
    "imitation learning",
    "robot manipulation",
    "speech recognition",
    "machine translation",
    "question answering",
    "retrieval augmented generation",
    "recommender systems",
    "time series forecasting",
    "anomaly detection",
    "optimal transport",
    "stochastic optimization",
    "convex optimization",
    "sparse coding",
    "kernel methods",
    "neural architecture search",
    "hyperparameter optimization",
    "explainability",
    "fairness",
    "protein structure",
    "molecule generation",
    "drug discovery",
    "climate modeling",
    "theorem proving",
    "program synthesis",
    "mixture of experts",
    "state space models",
]
ZONES = [
    "UTC",
    "Europe/Berlin",
    "Europe/London",
    "America/New_York",
    "America/Los_Angeles",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Australia/Sydney",
    "America/Sao_Paulo",
    "Africa/Johannesburg",
]


def load_corpus(path: Path) -> list[PaperRecord]:
    records: list[PaperRecord] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not row.get("abstract"):
                continue
            records.append(
                PaperRecord(
                    title=row.get("title") or "",
                    abstract=row["abstract"],
                    authors=tuple(row.get("authors") or ()),
                    venue=row.get("venue"),
                    year=row.get("year"),
                    external_id=row.get("uid"),
                    source="bench",
                )
            )
    return records


def synthetic(real: list[PaperRecord], n: int, rng: random.Random) -> list[PaperRecord]:
    """Papers mixing sentences of three real abstracts under a title of real title words."""
    sentences = [[s.strip() for s in r.abstract.split(". ") if len(s.strip()) > 20] for r in real]
    sentences = [s for s in sentences if s]
    title_words = [w for r in real[:5000] for w in r.title.split() if len(w) > 3]
    made: list[PaperRecord] = []
    for i in range(n):
        parts = [rng.choice(rng.choice(sentences)) for _ in range(rng.randint(3, 6))]
        made.append(
            PaperRecord(
                title=f"{' '.join(rng.sample(title_words, 6))} ({i})",
                abstract=". ".join(parts) + f". Synthetic bench paper {i}.",
                authors=(f"Author {rng.randint(1, 20000)}", f"Author {rng.randint(1, 20000)}"),
                venue="SynthConf",
                year=rng.randint(2015, 2026),
                external_id=f"synthetic:{i}",
                source="bench",
            )
        )
    return made


async def prepare(db: Database, args: argparse.Namespace) -> None:
    """Fill a fresh database with papers and subscribers (run in a child process, see ``main``)."""
    rng = random.Random(args.seed)
    started = time.perf_counter()
    real = load_corpus(CORPUS)
    records = real[: args.papers] + synthetic(real, max(0, args.papers - len(real)), rng)
    papers = PaperRepository(db)
    for start in range(0, len(records), 5000):
        await papers.upsert_many(records[start : start + 5000])
    count = await papers.count()
    print(f"setup: {count:,} papers stored in {time.perf_counter() - started:.1f} s", flush=True)

    started = time.perf_counter()
    engine = (await LiveIndex.open(papers)).engine
    ids = [int(r[0]) for r in await db.fetchall("SELECT id FROM papers")]
    # Papers per topic, for believable reactions (a user likes papers of their own topics).
    per_topic = {
        topic: [
            hit.paper_id for hit in engine.weighted({t: 1.0 for t in engine.validate_query(topic)}, limit=60)
        ]
        for topic in TOPICS
    }
    now = datetime(2026, 11, 30, 6, 0, tzinfo=UTC).isoformat(timespec="seconds")
    users, subs, feedback, sent, interests = [], [], [], [], []
    n_channels = args.subscribers // 20
    for i in range(args.subscribers):
        topics = rng.sample(TOPICS, rng.randint(1, 3))
        frequency = rng.choice(["daily", "daily", "weekdays", "weekly"])
        schedule = (
            f"{rng.randint(6, 10):02d}:{rng.choice(['00', '30'])}",
            rng.choice(ZONES),
            frequency,
            rng.randint(0, 6),
            rng.randint(3, 10),
        )
        if i < n_channels:
            channel_id = 10_000_000 + i
            subs.append(("channel", None, 1, channel_id, json.dumps(topics), *schedule, 1, now, now))
            recipient = ("channel", channel_id)
        else:
            user_id = 1_000_000 + i
            users.append((user_id, now))
            subs.append(("user", user_id, None, None, json.dumps(topics), *schedule, user_id, now, now))
            # a digest's topics are the person's interests too, as `/paper subscribe` stores them
            interests.extend((user_id, f"topic:{topic}", topic, now) for topic in topics)
            recipient = ("user", user_id)
            if rng.random() < 0.30:
                pool = [p for t in topics for p in per_topic[t]] or ids
                for paper_id in set(rng.sample(pool, min(len(pool), rng.randint(2, 8)))):
                    feedback.append((user_id, paper_id, "like", now))
                for paper_id in set(rng.sample(ids, rng.randint(0, 3))):
                    feedback.append((user_id, paper_id, "dislike", now))
        if rng.random() < 0.20:
            for paper_id in set(rng.sample(ids, rng.randint(5, 30))):
                sent.append(
                    (
                        *((recipient[1], None) if recipient[0] == "user" else (None, recipient[1])),
                        paper_id,
                        now,
                    )
                )
    # Bulk inserts keep the set-up short; the timed part below goes through the product's code only.
    await db.executemany("INSERT INTO users (id, created_at) VALUES (?, ?)", users)
    await db.executemany(
        "INSERT INTO subscriptions (kind, user_id, guild_id, channel_id, topics, time_local, timezone, frequency, "
        "weekday, count, active, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
        subs,
    )
    await db.executemany(
        "INSERT INTO interests (user_id, kind, key, topic, origin, added_at) VALUES (?, 'topic', ?, ?, 'subscribe', ?)",
        interests,
    )
    await db.executemany(
        "INSERT OR IGNORE INTO feedback (user_id, paper_id, signal, created_at) VALUES (?, ?, ?, ?)", feedback
    )
    await db.executemany(
        "INSERT OR IGNORE INTO digest_sent (user_id, channel_id, paper_id, sent_at) VALUES (?, ?, ?, ?)", sent
    )
    print(
        f"setup: {len(subs):,} subscriptions ({n_channels:,} channel feeds), {len(feedback):,} reactions, "
        f"{len(sent):,} already-sent papers in {time.perf_counter() - started:.1f} s",
        flush=True,
    )


class TimedRecommender:
    """The real Recommender, with the time spent in ``recommend`` added up (to split the figure)."""

    def __init__(self, inner: Recommender) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def recommend(self, user_id: int | None, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.recommend(user_id, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


def load_average() -> str:
    """The 1-minute load average (other work on the machine slows the wall-clock figure)."""
    with open("/proc/loadavg", encoding="ascii") as handle:
        return handle.read().split()[0]


def rss_mb() -> float:
    """Current resident memory of this process (Linux), in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def measure(db_path: Path, args: argparse.Namespace) -> int:
    """In this process, as the bot does at start: open the store, build the index; then time the builds."""
    one_blas_thread()  # as open_services does for the bot
    async with await open_database(db_path) as db:
        started = time.perf_counter()
        papers = PaperRepository(db)
        engine = (await LiveIndex.open(papers)).engine
        # as the bot wires it: people's mutes and library texts read for every person (none have any
        # here: what is timed is their cost); --bare leaves them out, as before they existed
        mutes = None if args.bare else MuteService(db, MuteMatcher(engine.index, papers))
        library = None if args.bare else LibraryTextRepository(db)
        recommender = Recommender(db, engine, engine.index, mutes=mutes, library=library)
        n_papers = len(engine)
        print(
            f"bot-like start: search index over {n_papers:,} papers in {time.perf_counter() - started:.1f} s"
        )
        started = time.perf_counter()
        await asyncio.to_thread(recommender.space.rebuild)  # as the bot does beside its start
        print(f"paper space (the learned models' coordinates) in {time.perf_counter() - started:.1f} s")
        clock_now = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
        timed = TimedRecommender(recommender)
        service = build_digests(db, papers=papers, recommender=timed, clock=lambda: clock_now, mutes=mutes)
        subs = await service.subscriptions.active()
        reacted = {int(r[0]) for r in await db.fetchall("SELECT DISTINCT user_id FROM feedback")}
        rss_before = rss_mb()

        started = time.perf_counter()
        cpu_started = time.process_time()
        sent = await service.repository.all_sent_paper_ids()
        durations: list[float] = []
        sizes: list[int] = []
        chosen: list[list[int]] = []
        for sub in subs:
            t0 = time.perf_counter()
            picks = await service.planner.choose(sub, sent=sent.get(recipient_of(sub), set()))
            durations.append(time.perf_counter() - t0)
            sizes.append(len(picks))
            chosen.append([pick.paper_id for pick in picks])
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        for sub, ids in zip(subs, chosen, strict=True):
            repeats = set(ids) & sent.get(recipient_of(sub), set())
            assert not repeats, f"subscription {sub.id} would get already-sent papers {repeats}"
        # Reading the chosen papers for their messages happens at send time, paced by Discord's limits;
        # its cost per digest, on the first 1,000:
        t0 = time.perf_counter()
        for ids in chosen[:1000]:
            await papers.get_many(ids)
        lookup_ms = (time.perf_counter() - t0) / max(1, min(1000, len(chosen))) * 1000
        rss_after = rss_mb()
        recommend_s = timed.seconds
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # `/paper recommend` (count 5) for people with reactions and several interests: what the
        # command computes before it answers (nothing marked shown, so the digests above stay valid)
        asked: list[float] = []
        for user_id in sorted(reacted)[: args.recommend]:
            t0 = time.perf_counter()
            await recommender.personal(user_id, guild_id=None, count=5, mark_shown=False)
            asked.append((time.perf_counter() - t0) * 1000)

    ms = sorted(d * 1000 for d in durations)
    kinds: dict[str, list[float]] = {
        "channel feeds": [],
        "users, topics only": [],
        "users with reactions": [],
    }
    for sub, seconds in zip(subs, durations, strict=True):
        kind = (
            "channel feeds"
            if sub.user_id is None
            else "users with reactions"
            if sub.user_id in reacted
            else "users, topics only"
        )
        kinds[kind].append(seconds * 1000)
    empty = sum(1 for s in sizes if s == 0)
    print()
    print(f"digests built:  {len(subs):,} subscriptions over {n_papers:,} papers")
    load = load_average()
    print(
        f"time:           {elapsed:.1f} s wall ({len(subs) / elapsed:,.0f} digests/s), {cpu:.1f} s CPU "
        f"(both threads); load average {load} on {os.cpu_count()} cores"
    )
    print(
        f"                of which Recommender.recommend {recommend_s:.1f} s ({recommend_s / elapsed:.0%}); "
        f"the digest layer (exclusions, filtering, reasons) {elapsed - recommend_s:.1f} s"
    )
    print(
        f"per digest:     mean {statistics.fmean(ms):.2f} ms, median {ms[len(ms) // 2]:.2f} ms, "
        f"p95 {ms[int(len(ms) * 0.95)]:.2f} ms, max {ms[-1]:.1f} ms"
    )
    for kind, values in kinds.items():
        if values:
            values.sort()
            print(
                f"                {kind}: {len(values):,}, median {values[len(values) // 2]:.2f} ms, "
                f"p95 {values[int(len(values) * 0.95)]:.2f} ms, {sum(values) / 1000:.1f} s in all"
            )
    print(f"paper look-up:  {lookup_ms:.2f} ms per digest when its messages are sent (not in the time above)")
    if asked:
        asked.sort()
        print(
            f"/paper recommend: {len(asked):,} people with reactions, median {asked[len(asked) // 2]:.2f} ms, "
            f"p95 {asked[int(len(asked) * 0.95)]:.2f} ms, max {asked[-1]:.1f} ms (target p95 ≤ 50 ms)"
        )
    print(
        f"papers planned: {sum(sizes):,} (mean {statistics.fmean(sizes):.2f}); {empty:,} digests say 'nothing new'"
    )
    print(
        f"memory:         peak {peak:,.0f} MB resident (index + builds, this process); "
        f"{rss_before:,.0f} MB before the builds, {rss_after:,.0f} MB after"
    )
    verdict = "PASS" if elapsed <= TARGET_SECONDS else "FAIL"
    print(f"target:         ≤ {TARGET_SECONDS:.0f} s → {verdict}")
    return 0 if elapsed <= TARGET_SECONDS else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--bare", action="store_true", help="without people's mutes and library texts")
    parser.add_argument(
        "--recommend",
        type=int,
        default=1000,
        help="then time /paper recommend for this many people with reactions",
    )
    parser.add_argument("--db", type=Path, help="keep the prepared database here and reuse it next time")
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)  # internal: the child's job
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.prepare is not None:
        asyncio.run(_prepare_file(args.prepare, args))
        return 0
    if not CORPUS.exists():
        print(f"digest bench skipped: {CORPUS} is absent (research data kept beside the repo, not shipped)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        db_path = args.db or Path(tmp) / "bench.db"
        if not db_path.exists():
            # Ingest in a child process, so the memory measured below is the bot-like process only.
            command = [sys.executable, __file__, "--prepare", str(db_path)]
            command += [
                "--subscribers",
                str(args.subscribers),
                "--papers",
                str(args.papers),
                "--seed",
                str(args.seed),
            ]
            subprocess.run(command, check=True)
        else:
            print(f"reusing the prepared database {db_path}")
        return asyncio.run(measure(db_path, args))


async def _prepare_file(path: Path, args: argparse.Namespace) -> None:
    async with await open_database(path) as db:
        await prepare(db, args)


if __name__ == "__main__":
    raise SystemExit(main())
