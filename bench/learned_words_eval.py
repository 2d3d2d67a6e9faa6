"""The words `/paper interests show` says an interest learned: words of the field, or noise?

People are the author-keyword areas of ``recommend_eval`` (tune: ICLR 2017 groups and ICLR 2024
subareas; test: ICLR 2018 and CoRL groups), over the whole multivenue corpus (35,712 papers, so
document frequencies and the paper space are the product's). Each person 👍 ``--likes`` papers drawn
from their area; the interest's model is fitted as the bot fits it, and the words it shows are taken
exactly as :meth:`Recommender._words` takes them (the papers its model ranks best, ``SHOWN_WORDS``).

A shown word is judged by labels nobody tuned on: it is a *word of the field* when it is a word of at
least ``KEYWORD_USES`` author keywords of the labelled sets (ICLR 2017/18 and CoRL in the corpus, and
ICLR 2020–2023 with keywords; "quantization", "pessimism" and "transformer" are; "obviates", "han",
"ameliorate" and "load" are not). Reported per setting of ``FIELD_SUPPORT`` and ``CONCENTRATION``
(with ``--grid``, on the tune split only; ``--baseline``: neither, as before them): the share of shown words that are words of the field (a 95 % bootstrap interval over
people), the words shown per interest, and the most frequent words that are not.

    .venv/bin/python bench/learned_words_eval.py --split tune --grid
    .venv/bin/python bench/learned_words_eval.py --split test
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_common import multivenue_rows
from recommend_eval import load_split

from bot.services.recommend import person_models
from bot.services.recommend.learner import DEFAULT_LEARNING
from bot.services.recommend.paper_space import PaperSpace
from bot.services.recommend.person_models import PersonModels
from bot.services.recommend.recommender import MIN_NEAR, NEAR_PAPERS, NEAR_SHARE, SHOWN_WORDS
from paperindex.documents import Document
from paperindex.engine import SearchEngine
from paperindex.tokenizer import tokenize
from storage.repositories.feedback import FeedbackRow

KEYWORDS_2020_2023 = (
    Path(__file__).resolve().parents[2] / "shared/data/labelled/iclr2020-2023_keywords.jsonl.gz"
)
KEYWORD_USES = 2
SUPPORTS = (0.05, 0.08, 0.12)
CONCENTRATIONS = (1.0, 1.1, 1.13, 1.16)


def keyword_terms(rows: Sequence[dict[str, Any]]) -> Counter[str]:
    """How many author keywords (of every labelled set) each index term is a word of."""
    counts: Counter[str] = Counter()
    keywords = [k for r in rows for k in r.get("keywords") or ()]
    if KEYWORDS_2020_2023.exists():
        with gzip.open(KEYWORDS_2020_2023, "rt", encoding="utf-8") as handle:
            keywords += [k for line in handle for k in json.loads(line).get("keywords") or ()]
    for keyword in keywords:
        counts.update(set(tokenize(str(keyword))))
    return counts


def shown_words(models: PersonModels, liked: Sequence[int], now: datetime, *, baseline: bool) -> list[str]:
    """The words an interest taught these 👍 shows, as `/paper interests show` takes them."""
    signals = [FeedbackRow(paper_id, "like", "2024-01-01T00:00:00+00:00") for paper_id in liked]
    fitted = models.fit({}, signals, set(liked), now=now)
    if fitted is None:
        return []
    coords = models.space.coords
    near_size = max(MIN_NEAR, min(NEAR_PAPERS, len(coords) // NEAR_SHARE))
    near = np.argsort(-fitted.model.place_scores(coords, fitted.topic_match))[:near_size]
    rated = (
        [] if baseline else [s for paper_id in liked if (s := models.slot(paper_id, len(coords))) is not None]
    )
    words, _ = models.words(fitted.model, SHOWN_WORDS, near, rated=rated)
    return [word for word, _ in words]


def bootstrap(values: np.ndarray, rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = [float(np.mean(rng.choice(values, len(values)))) for _ in range(rounds)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    parser.add_argument("--grid", action="store_true", help="every FIELD_SUPPORT in SUPPORTS (tune only)")
    parser.add_argument("--likes", type=int, default=5)
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="as before the field filter: no share, no concentration, the rated papers counted among the near",
    )
    parser.add_argument("--people", type=int, default=40, help="at most this many areas")
    args = parser.parse_args(argv)
    if args.grid and args.split != "tune":
        parser.error("settings are chosen on the tune split only")
    rows = multivenue_rows()
    engine = SearchEngine.build(
        Document(i, r.get("title") or "", r.get("abstract") or "") for i, r in enumerate(rows)
    )
    index = engine.index
    space = PaperSpace(index)
    space.rebuild()
    models = PersonModels(
        index, space, DEFAULT_LEARNING, shown=engine.vocabulary.form
    )  # as the bot shows them
    field = keyword_terms(rows)
    split = load_split(rows, args.split)
    people = sorted(split.people, key=lambda p: p.area)[: args.people]
    rng = np.random.default_rng(7)
    likes = [sorted(rng.choice(sorted(p.relevant), args.likes, replace=False).tolist()) for p in people]
    now = datetime(2025, 1, 1, tzinfo=UTC)
    print(f"{args.split}: {len(people)} people, {args.likes} 👍 each, {len(rows):,} papers")
    print(
        "| FIELD_SUPPORT | CONCENTRATION | words of the field | 95 % interval | words shown | commonest others |"
    )
    print("|---|---|---|---|---|---|")
    if args.baseline:
        settings = [(0.0, 0.0)]
    elif args.grid:
        settings = [(s, c) for s in SUPPORTS for c in CONCENTRATIONS]
    else:
        settings = [(person_models.FIELD_SUPPORT, person_models.CONCENTRATION)]
    for support, concentration in settings:
        person_models.FIELD_SUPPORT, person_models.CONCENTRATION = support, concentration
        shares, counts, others = [], [], Counter[str]()
        for liked in likes:
            words = shown_words(models, liked, now, baseline=args.baseline)
            counts.append(len(words))
            if words:
                good = [w for w in words if all(field[t] >= KEYWORD_USES for t in tokenize(w))]
                shares.append(len(good) / len(words))
                others.update(w for w in words if w not in good)
        values = np.asarray(shares)
        low, high = bootstrap(values)
        common = ", ".join(f"{w} ({n})" for w, n in others.most_common(8))
        print(
            f"| {support:.2f} | {concentration:.2f} | {values.mean():.1%} | {low:.1%}–{high:.1%} | {np.mean(counts):.1f} | {common} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
