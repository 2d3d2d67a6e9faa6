"""Search quality on the queries researchers type: author keywords and topic labels as queries.

    .venv/bin/python bench/keyword_eval.py                      # held-out split: the reported lines
    .venv/bin/python bench/keyword_eval.py --split tune --ablations   # where settings are chosen

A query is a label that authors or a venue put on papers — an author keyword ("graph neural
networks", "sim-to-real") or an ICLR 2024 virtual-site topic ("Large Language Models"; a one-word
subarea typed with its area, "Inverse" → "inverse reinforcement learning", see ``topic_query``) —
and the papers carrying it are relevant. Keywords that differ only by a plural "s" (per word) or a hyphen
are one query; a label needs ≥ ``--min-papers`` papers. The corpus is the whole multivenue file
(35,712 papers), indexed WITHOUT keywords or topics; each query ranks the papers of the venue its
label comes from that carry labels of that kind (a venue + year filter, the unlabelled papers of that
venue excluded), so statistics come from 36k papers and an unlabelled paper is never counted wrong.

Splits, by venue: **tune** = ICLR 2017 keywords (a fixed list of broad areas), ICLR 2024 topics and
CoRL 2024 keywords; **held-out** = ICLR 2018 and CoRL 2025 keywords (free-form, what researchers
type; the same words often label papers of both CoRL years, but the papers differ). Settings are
chosen on tune (``--ablations`` runs there only); held-out is read for the reported figures.

Engines, in the same run: rank-bm25's ``BM25Okapi`` on lower-cased words (``\\w+``) of title +
abstract; ``SearchEngine.search`` on the query as typed; and the search as the bot runs it, the query
repaired first (``ForgivingSearch``: unknown words corrected, other forms of compounds asked for too).
Ablations rank with ``BM25Index``, whose scores equal rank-bm25's on the same tokens. Reported:
nDCG@10 (binary gains) and P@10, and the paired difference to rank-bm25 with a 95 % bootstrap
interval over queries.

**Typo set** (``--typos``): the same queries, each word of at least four letters with no digit given
one slip by a fixed rule (:func:`typo`, seeded by the query's text): a letter deleted, inserted,
replaced or swapped with its neighbour, never the first letter. Shorter words are left as typed: the
corrector never touches them (an acronym, "gan", "rl", is as likely as a slip), so editing them would
only measure words nobody could correct. The typo set is scored for the plain and the repaired
search, beside the correctly typed queries.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_common import MULTIVENUE, multivenue_rows  # noqa: E402

from paperindex.engine import SearchEngine  # noqa: E402
from paperindex.forgiving import ForgivingSearch  # noqa: E402
from paperindex.index import BM25Index  # noqa: E402
from paperindex.tokenizer import tokenize  # noqa: E402
from storage.models import IndexRow  # noqa: E402

_WORDS = re.compile(r"\w+")
_KEY_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Query:
    text: str  # the commonest spelling of the label
    group: str  # where it comes from: "ICLR 2017 keywords", …
    venue: str
    year: int | None
    relevant: frozenset[int]  # row numbers
    judged: frozenset[int]  # rows of that venue carrying labels of that kind


@dataclass(frozen=True)
class Group:
    name: str
    split: str
    venue: str
    year: int | None
    kind: str  # "keywords" or "topic"


GROUPS = (
    Group("ICLR 2017 keywords", "tune", "ICLR", 2017, "keywords"),
    Group("ICLR 2024 topics", "tune", "ICLR", 2024, "topic"),
    Group("CoRL 2024 keywords", "tune", "CoRL", 2024, "keywords"),
    Group("ICLR 2018 keywords", "heldout", "ICLR", 2018, "keywords"),
    Group("CoRL 2025 keywords", "heldout", "CoRL", 2025, "keywords"),
)


def label_key(label: str) -> str:
    """The form that merges spellings of one label: words lower-cased, a plural "s" dropped."""
    words = _KEY_WORDS.findall(label.casefold())
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


#: How a one-word subarea of these areas is typed: "Inverse" → "inverse reinforcement learning".
_AREA_WORDS = {
    "Reinforcement Learning": "{sub} reinforcement learning",
    "Optimization": "{sub} optimization",
    "Deep Learning": "deep learning {sub}",
    "Theory": "{sub} theory",
}


def topic_query(topic: str) -> str | None:
    """The phrase a researcher would type for an ICLR 2024 topic "Area->Subarea": the subarea, with
    its area where the subarea is one word of an area that it only qualifies ("Online", "Non-Convex"),
    "theory" after a Theory subarea; None for a bare area and for "Everything Else" / "Other …"."""
    area, _, sub = (part.strip() for part in topic.partition("->"))
    if not sub or sub == "Everything Else" or sub.startswith("Other "):
        return None
    pattern = _AREA_WORDS.get(area)
    one_word = " " not in sub
    if pattern and (one_word or area == "Theory") and "theory" not in sub.lower():
        return pattern.format(sub=sub)
    return sub


def build_queries(rows: Sequence[dict], min_papers: int) -> list[Query]:  # type: ignore[type-arg]
    queries: list[Query] = []
    for group in GROUPS:
        in_venue = [
            n
            for n, r in enumerate(rows)
            if r["venue"] == group.venue and (group.year is None or r["year"] == group.year)
        ]
        by_key: dict[str, set[int]] = defaultdict(set)
        spellings: dict[str, Counter[str]] = defaultdict(Counter)
        judged: set[int] = set()
        for n in in_venue:
            row = rows[n]
            if group.kind == "topic":
                typed = topic_query(row["topic"]) if row.get("topic") else None
                labels = [typed] if typed else []
            else:
                labels = [k.strip() for k in row.get("keywords") or [] if k.strip()]
            if not labels:
                continue
            judged.add(n)
            for label in labels:
                key = label_key(label)
                if key:
                    by_key[key].add(n)
                    spellings[key][label.lower()] += 1
        for key, members in sorted(by_key.items()):
            text = min(spellings[key], key=lambda s: (-spellings[key][s], s))
            if len(members) < min_papers:
                continue
            queries.append(
                Query(text, group.name, group.venue, group.year, frozenset(members), frozenset(judged))
            )
    return queries


def ndcg_at_10(ranked: Sequence[int], relevant: frozenset[int]) -> float:
    dcg = sum(1 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]) if doc in relevant)
    idcg = sum(1 / math.log2(rank + 2) for rank in range(min(10, len(relevant))))
    return dcg / idcg


def p_at_10(ranked: Sequence[int], relevant: frozenset[int]) -> float:
    return sum(1 for doc in ranked[:10] if doc in relevant) / 10


Run = Callable[[Query], list[int]]


def masks(rows_n: int, queries: Sequence[Query]) -> dict[frozenset[int], np.ndarray]:
    out: dict[frozenset[int], np.ndarray] = {}
    for q in queries:
        if q.judged not in out:
            mask = np.zeros(rows_n, dtype=bool)
            mask[list(q.judged)] = True
            out[q.judged] = mask
    return out


def lower_words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def rank_bm25_run(rows: Sequence[dict], queries: Sequence[Query]) -> Run:  # type: ignore[type-arg]
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([lower_words(r["title"] or "") + lower_words(r["abstract"] or "") for r in rows])
    allowed = masks(len(rows), queries)
    ids = np.arange(len(rows))

    def run(q: Query) -> list[int]:
        scores = model.get_scores(lower_words(q.text))
        mask = allowed[q.judged]
        order = np.lexsort((ids[mask], -scores[mask]))[:10]
        return ids[mask][order].tolist()

    return run


DocTokens = Callable[[str, str], list[str]]


def index_run(
    rows: Sequence[dict], queries: Sequence[Query], doc: DocTokens, query: Callable[[str], list[str]]
) -> Run:  # type: ignore[type-arg]
    index = BM25Index()
    index.add(list(range(len(rows))), [doc(r["title"] or "", r["abstract"] or "") for r in rows])
    allowed = masks(len(rows), queries)
    return lambda q: [d for d, _ in index.top_k(query(q.text), 10, allowed=allowed[q.judged])]


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_TYPO_SEED = 2024


def typo(query: str) -> str:
    """``query`` with one slip in each word of at least four letters and no digit (see the module):
    the same slips on every run (a generator seeded by the query's text)."""
    rng = random.Random(f"{_TYPO_SEED}:{query}")

    def slip(match: re.Match[str]) -> str:
        word = match.group()
        if len(word) < 4 or any(c.isdigit() for c in word):
            return word
        while True:
            at = rng.randrange(1, len(word))
            kind = rng.choice(("delete", "insert", "replace", "swap"))
            if kind == "delete":
                slipped = word[:at] + word[at + 1 :]
            elif kind == "insert":
                slipped = word[:at] + rng.choice(_LETTERS) + word[at:]
            elif kind == "replace":
                slipped = word[:at] + rng.choice(_LETTERS) + word[at + 1 :]
            else:
                at = min(at, len(word) - 2)
                slipped = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
            if slipped != word:
                return slipped

    return _KEY_WORDS.sub(slip, query)


def typo_queries(queries: Sequence[Query]) -> list[Query]:
    return [replace(q, text=typo(q.text)) for q in queries]


def build_engine(rows: Sequence[dict]) -> SearchEngine:  # type: ignore[type-arg]
    return SearchEngine.build(
        IndexRow(
            n, r["title"] or "", r["abstract"] or "", tuple(r.get("authors") or ()), r["venue"], r["year"]
        )
        for n, r in enumerate(rows)
    )


def engine_run(
    rows: Sequence[dict],  # type: ignore[type-arg]
    queries: Sequence[Query],
    *,
    repaired: bool = False,
    engine: SearchEngine | None = None,
) -> Run:
    """``SearchEngine.search`` on each query as typed, or (``repaired``) the bot's repaired search."""
    engine = engine or build_engine(rows)
    forgiving = ForgivingSearch()
    # The venue's papers without labels of the query's kind are left out, as `exclude` would.
    unjudged: dict[frozenset[int], frozenset[int]] = {}
    for q in queries:
        if q.judged not in unjudged:
            unjudged[q.judged] = frozenset(
                n
                for n, r in enumerate(rows)
                if r["venue"] == q.venue and (q.year is None or r["year"] == q.year) and n not in q.judged
            )

    def run(q: Query) -> list[int]:
        options = {"limit": 10, "venue": q.venue, "year": q.year, "exclude": unjudged[q.judged]}
        if repaired:
            results, _ = forgiving.search(engine, q.text, **options)  # type: ignore[arg-type]
        else:
            results = engine.search(q.text, **options)  # type: ignore[arg-type]
        return [hit.paper_id for hit in results.hits]

    return run


def title_times(weight: int) -> DocTokens:
    return lambda title, abstract: tokenize(title) * weight + tokenize(abstract)


def evaluate(run: Run, queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray]:
    ranked = [run(q) for q in queries]
    ndcg = np.array([ndcg_at_10(r, q.relevant) for r, q in zip(ranked, queries, strict=True)])
    prec = np.array([p_at_10(r, q.relevant) for r, q in zip(ranked, queries, strict=True)])
    return ndcg, prec


def paired_interval(diff: np.ndarray, rounds: int = 10_000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(rounds, len(diff)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tune", "heldout"), default="heldout")
    parser.add_argument("--min-papers", type=int, default=5, help="papers a label needs to be a query")
    parser.add_argument("--ablations", action="store_true", help="tokenizer and field variants (tune only)")
    parser.add_argument("--typos", action="store_true", help="also the typo set: one slip per word")
    args = parser.parse_args()
    if args.ablations and args.split != "tune":
        parser.error("--ablations chooses settings: run it on --split tune")
    if not MULTIVENUE.exists():
        print(f"skipped: the multivenue corpus is not at {MULTIVENUE} (../shared/data/ beside the repo)")
        return 0
    rows = multivenue_rows()
    split = {g.name for g in GROUPS if g.split == args.split}
    queries = [q for q in build_queries(rows, args.min_papers) if q.group in split]
    counts = Counter(q.group for q in queries)
    print(
        f"{args.split} split: {len(queries)} queries ("
        + ", ".join(f"{counts[g]} {g}" for g in sorted(counts))
        + f"), labels on ≥ {args.min_papers} papers, ranked among their venue's labelled papers;"
        f" corpus {len(rows):,} papers without labels"
    )
    typos = typo_queries(queries)
    engine = functools.cache(lambda: build_engine(rows))
    # (name, run, queries, the line it is compared with: paired interval over the same queries)
    lines: list[tuple[str, Callable[[], Run], Sequence[Query], str]] = [
        ("rank-bm25, lower-cased words, title + abstract", lambda: rank_bm25_run(rows, queries), queries, ""),
        (
            "paperbot SearchEngine.search, the query as typed",
            lambda: engine_run(rows, queries, engine=engine()),
            queries,
            "rank-bm25",
        ),
        (
            "paperbot as the bot runs (query repaired)",
            lambda: engine_run(rows, queries, engine=engine(), repaired=True),
            queries,
            "rank-bm25",
        ),
    ]
    if args.typos:
        lines += [
            (
                "typo set: SearchEngine.search as typed",
                lambda: engine_run(rows, typos, engine=engine()),
                typos,
                "repaired",
            ),
            (
                "typo set: as the bot runs (query repaired)",
                lambda: engine_run(rows, typos, engine=engine(), repaired=True),
                typos,
                "repaired",
            ),
        ]
    if args.ablations:
        for weight in (1, 2, 3, 4):
            lines.append(
                (
                    f"  ours, title x{weight}",
                    lambda w=weight: index_run(rows, queries, title_times(w), tokenize),  # type: ignore[misc]
                    queries,
                    "rank-bm25",
                )
            )
    if args.typos:
        changed = sum(q.text != t.text for q, t in zip(queries, typos, strict=True))
        print(
            f"typo set: {changed} of {len(queries)} queries changed, e.g. "
            + "; ".join(f"{q.text!r} → {t.text!r}" for q, t in list(zip(queries, typos, strict=True))[:3])
        )
    scores: dict[str, np.ndarray] = {}
    print(f"{'':52s} {'nDCG@10':>8s} {'P@10':>6s}   vs (paired 95% interval)")
    for name, make, asked, against in lines:
        started = time.perf_counter()
        ndcg, prec = evaluate(make(), asked)
        key = (
            "rank-bm25"
            if name.startswith("rank-bm25")
            else "repaired"
            if name.startswith("paperbot as")
            else name
        )
        scores[key] = ndcg
        versus = ""
        if against:
            low, high = paired_interval(ndcg - scores[against])
            versus = f"{ndcg.mean() - scores[against].mean():+.3f} ({low:+.3f} to {high:+.3f}) {against}"
        took = time.perf_counter() - started
        print(f"{name:52s} {ndcg.mean():8.4f} {prec.mean():6.3f}   {versus:38s} ({took:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
