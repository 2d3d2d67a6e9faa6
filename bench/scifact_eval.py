"""Search quality: nDCG@10 on BEIR SciFact (training split: 809 queries, 5,183 abstracts).

    .venv/bin/python bench/scifact_eval.py              # the three headline lines (~1 min)
    .venv/bin/python bench/scifact_eval.py --ablations  # plus the tokenizer/title variants

Headline lines:
1. rank-bm25's BM25Okapi with lower-cased word tokens (``\\w+``), title + abstract;
2. rank-bm25's BM25Okapi with our tokenizer (``paperindex.tokenizer.tokenize``), title + abstract;
3. our SearchEngine as the bot runs it (same tokenizer, title counted TITLE_WEIGHT times).

Ablations rank with BM25Index, whose scores equal rank-bm25's on the same tokens, so they are the
figures rank-bm25 would give, in seconds.  Reference figures for this split, measured with
rank-bm25 Okapi: 0.658 (lower-cased words), 0.695 (stop words + Snowball); bm25s with Lucene's
BM25 and stemming: 0.696.  Data: ``../shared/data/beir-scifact/`` beside the repo; the script
says so and exits 0 when it is absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import Stemmer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperindex.engine import TITLE_WEIGHT, SearchEngine  # noqa: E402
from paperindex.forgiving import ForgivingSearch  # noqa: E402
from paperindex.index import BM25Index  # noqa: E402
from paperindex.tokenizer import STOP_WORDS, tokenize  # noqa: E402
from storage.models import IndexRow  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "data" / "beir-scifact"

Tokenizer = Callable[[str], list[str]]


def load() -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, dict[int, int]]]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus = [json.loads(line) for line in fh]
    qrels: dict[str, dict[int, int]] = {}
    lines = (SCIFACT / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        query_id, doc_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[int(doc_id)] = int(score)
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = [q for q in map(json.loads, fh) if q["_id"] in qrels]
    return corpus, queries, qrels


def ndcg_at_10(ranked: Sequence[int], relevant: dict[int, int]) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mean_ndcg(run: Callable[[str], list[int]], queries: list[dict[str, str]], qrels) -> float:  # type: ignore[no-untyped-def]
    return float(np.mean([ndcg_at_10(run(q["text"]), qrels[q["_id"]]) for q in queries]))


def rank_bm25_run(corpus: list[dict[str, str]], tok: Tokenizer) -> Callable[[str], list[int]]:
    from rank_bm25 import BM25Okapi

    ids = np.array([int(d["_id"]) for d in corpus])
    model = BM25Okapi([tok(d["title"]) + tok(d["text"]) for d in corpus])

    def run(query: str) -> list[int]:
        scores = model.get_scores(tok(query))
        return ids[np.lexsort((ids, -scores))[:10]].tolist()

    return run


def index_run(corpus: list[dict[str, str]], tok: Tokenizer, title_weight: int) -> Callable[[str], list[int]]:
    index = BM25Index()
    index.add(
        [int(d["_id"]) for d in corpus],
        [tok(d["title"]) * title_weight + tok(d["text"]) for d in corpus],
    )
    return lambda query: [doc for doc, _ in index.top_k(tok(query), 10)]


def engine_run(corpus: list[dict[str, str]], *, repaired: bool = False) -> Callable[[str], list[int]]:
    """``SearchEngine.search`` on each claim as written, or (``repaired``) as the bot searches a typed
    query: unknown words corrected, other forms of compounds asked for too (``ForgivingSearch``)."""
    engine = SearchEngine.build(IndexRow(int(d["_id"]), d["title"], d["text"]) for d in corpus)
    forgiving = ForgivingSearch()

    def run(query: str) -> list[int]:
        if repaired:
            return [hit.paper_id for hit in forgiving.search(engine, query[:300], limit=10)[0].hits]
        return [hit.paper_id for hit in engine.search(query[:300], limit=10).hits]

    return run


_stemmer = Stemmer.Stemmer("english")
_WORDS = re.compile(r"\w+")
_LUCENE_STOP_TEXT = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)
LUCENE_STOP_WORDS = frozenset(_LUCENE_STOP_TEXT.split())


def lower_words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def words_stop_stem(stop: frozenset[str]) -> Tokenizer:
    def tok(text: str) -> list[str]:
        return _stemmer.stemWords([w for w in _WORDS.findall(text.lower()) if w not in stop])

    return tok


def ours_no_stemming(text: str) -> list[str]:
    return [w for w in _WORDS.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]


_HYPHENATED = re.compile(r"\w+(?:-\w+)+")


def ours_with_hyphen_compounds(text: str) -> list[str]:
    """Ours, plus each hyphenated word as one more term ("kv-cache")."""
    extra = [m.lower() for m in _HYPHENATED.findall(text)]
    return tokenize(text) + extra


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ablations", action="store_true", help="also print tokenizer/title variants")
    args = parser.parse_args()
    if not (SCIFACT / "corpus.jsonl.gz").exists():
        print(f"skipped: BEIR SciFact is not in {SCIFACT} (../shared/data/ beside the repo)")
        return 0
    corpus, queries, qrels = load()
    print(f"BEIR SciFact train: {len(corpus):,} abstracts, {len(queries)} queries; nDCG@10")
    lines: list[tuple[str, Callable[[], Callable[[str], list[int]]]]] = [
        ("rank-bm25, lower-cased word tokens", lambda: rank_bm25_run(corpus, lower_words)),
        ("rank-bm25, our tokenizer (title once)", lambda: rank_bm25_run(corpus, tokenize)),
        (f"our engine (title x{TITLE_WEIGHT}), the claim as written", lambda: engine_run(corpus)),
        (
            f"our engine (title x{TITLE_WEIGHT}), as the bot runs (repaired)",
            lambda: engine_run(corpus, repaired=True),
        ),
    ]
    if args.ablations:
        lines += [
            (
                "  Lucene's 33 stop words + Snowball",
                lambda: index_run(corpus, words_stop_stem(LUCENE_STOP_WORDS), 1),
            ),
            ("  our stop words, no stemming", lambda: index_run(corpus, ours_no_stemming, 1)),
            (
                "  ours + hyphenated compounds, title x2",
                lambda: index_run(corpus, ours_with_hyphen_compounds, 2),
            ),
        ]
        for weight in (1, 2, 3, 4):
            lines.append((f"  ours, title x{weight}", lambda w=weight: index_run(corpus, tokenize, w)))  # type: ignore[misc]
    for name, make in lines:
        started = time.perf_counter()
        score = mean_ndcg(make(), queries, qrels)
        print(f"{name:48s} {score:.4f}   ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
