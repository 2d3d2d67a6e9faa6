"""Search speed and memory against rank-bm25, at 2.6k, 36k, 100k and 1M papers.

    .venv/bin/python bench/search_bench.py                      # all sizes (about 5 minutes)
    .venv/bin/python bench/search_bench.py --sizes 2600,36000   # quick

Corpora: ICML 2024 (2,610 papers) for the smallest size; the multivenue corpus (35,712) for the
others, topped up with synthetic papers whose words, lengths, authors and venues are sampled from
it (title and abstract text, so building runs the real tokenizer).  Queries: 200 per size, half
titles of other papers, half 2–3-word phrases cut from titles (fewer for rank-bm25 at 100k).

For each size it prints: build time of the SearchEngine (tokenising included) and of rank-bm25's
BM25Okapi on the same token lists, index memory (array bytes, and the process's resident-memory
growth), query latency p50/p95 of the index ranking (``BM25Index.rank``, top 10) and of the whole
``SearchEngine.search`` (tokenising + ranking + matched terms), rank-bm25's latency
(``get_scores`` + top 10) on the same tokens, their ratio, whether every query's top 10 is the
same, and the largest score difference over all documents.  Figures only: no pass/fail.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import random
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.services.search import TITLE_WEIGHT, IndexRow, SearchEngine  # noqa: E402
from bot.services.tokenize import tokenize  # noqa: E402

SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
ICML = DATA / "icml2024" / "icml2024_papers.jsonl.gz"
MULTIVENUE = DATA / "multivenue" / "multivenue_corpus.jsonl.gz"


def rss_bytes() -> int:
    """Resident memory of this process (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def load_rows(path: Path) -> list[IndexRow]:
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            rec = json.loads(line)
            rows.append(
                IndexRow(
                    paper_id=n + 1,
                    title=rec.get("title") or "",
                    abstract=rec.get("abstract") or "",
                    authors=tuple(rec.get("authors") or ()),
                    venue=rec.get("venue"),
                    year=rec.get("year"),
                )
            )
    return rows


class Synthesizer:
    """Synthetic papers: words, lengths, authors, venues and years drawn from real ones."""

    def __init__(self, rows: Sequence[IndexRow], seed: int = 7) -> None:
        self.rng = random.Random(seed)
        abstract_words = [w for r in rows for w in r.abstract.split()]
        title_words = [w for r in rows for w in r.title.split()]
        self.abstract_words = abstract_words
        self.title_words = title_words
        self.abstract_lengths = [len(r.abstract.split()) for r in rows]
        self.title_lengths = [max(1, len(r.title.split())) for r in rows]
        self.authors = [r.authors for r in rows if r.authors]
        self.venues = [(r.venue, r.year) for r in rows]

    def rows(self, first_id: int, count: int) -> Iterator[IndexRow]:
        rng = self.rng
        for n in range(count):
            venue, year = rng.choice(self.venues)
            yield IndexRow(
                paper_id=first_id + n,
                title=" ".join(rng.choices(self.title_words, k=rng.choice(self.title_lengths))),
                abstract=" ".join(rng.choices(self.abstract_words, k=rng.choice(self.abstract_lengths))),
                authors=rng.choice(self.authors),
                venue=venue,
                year=year,
            )


def make_queries(rows: Sequence[IndexRow], n: int, seed: int = 11) -> list[str]:
    """Half titles, half 2-3-word phrases from titles, plus a few typical user queries."""
    rng = random.Random(seed)
    titled = [r.title for r in rows if len(r.title.split()) >= 3]
    queries = [
        "kv cache quantization",
        "diffusion models for image generation",
        "graph neural networks",
        "reinforcement learning from human feedback",
        "federated learning privacy",
    ]
    while len(queries) < n:
        title = rng.choice(titled)
        if len(queries) % 2:
            queries.append(title)
        else:
            words = title.split()
            size = rng.choice((2, 3))
            start = rng.randrange(max(1, len(words) - size + 1))
            queries.append(" ".join(words[start : start + size]))
    return [q for q in queries if tokenize(q)][:n]


def doc_tokens(row: IndexRow) -> list[str]:
    """The token list rank-bm25 is given for a paper: what the engine indexes."""
    return tokenize(row.title) * TITLE_WEIGHT + tokenize(row.abstract)


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def time_calls(fn, args: Sequence, repeat: int = 1) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for arg in args:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            fn(arg)
            best = min(best, time.perf_counter() - start)
        out.append(best * 1e3)
    return out


def bench_size(size: int, base: list[IndexRow], synth: Synthesizer | None, args: argparse.Namespace) -> None:
    print(f"\n=== {size:,} papers ===", flush=True)
    gc.collect()
    rss0 = rss_bytes()
    started = time.perf_counter()
    if size <= len(base):
        rows = base[:size]
        engine = SearchEngine.build(rows)
    else:
        assert synth is not None
        rows = list(base)
        engine = SearchEngine.build(rows)
        chunk = 100_000
        next_id = len(base) + 1
        while len(engine) < size:
            count = min(chunk, size - len(engine))
            batch = list(synth.rows(next_id, count))
            next_id += count
            engine.add(batch)
            if size <= 200_000:
                rows.extend(batch)
    build_s = time.perf_counter() - started
    gc.collect()
    rss_engine = rss_bytes() - rss0
    index = engine.index
    print(
        f"engine build: {build_s:.2f} s ({len(engine) / build_s:,.0f} papers/s), "
        f"{index.n_postings:,} postings, {index.vocabulary_size:,} terms, "
        f"{index.n_segments} segment(s)"
    )
    print(
        f"index memory: {index.nbytes() / 1e6:.0f} MB in arrays+vocabulary "
        f"({index.nbytes() / max(1, index.n_postings):.1f} B/posting), "
        f"process RSS +{rss_engine / 1e6:.0f} MB (engine incl. metadata, tokenizer cache)"
    )

    queries = make_queries(base, args.queries)
    tokens = [tokenize(q) for q in queries]
    for q in tokens[:20]:  # warm caches and lazy weights
        index.rank(q, 10)
    rank_ms = time_calls(lambda q: index.rank(q, 10), tokens, repeat=3)
    search_ms = time_calls(lambda q: engine.search(q, limit=10), queries, repeat=3)
    p50, p95 = percentile(rank_ms, 50), percentile(rank_ms, 95)
    print(
        f"index ranking (top 10), {len(tokens)} queries: p50 {p50:.3f} ms, p95 {p95:.3f} ms, "
        f"max {max(rank_ms):.3f} ms"
    )
    print(
        f"engine.search (tokenise + rank + matched terms): p50 "
        f"{percentile(search_ms, 50):.3f} ms, p95 {percentile(search_ms, 95):.3f} ms"
    )
    auto = ["", "atten", "graph neu", "diffusion models for", "123", "reinforcement learning f"]
    auto_ms = time_calls(lambda t: engine.autocomplete(t, 25), auto, repeat=3)
    print(f"autocomplete ({len(auto)} inputs): max {max(auto_ms):.2f} ms")

    if size > args.max_rank_bm25:
        print("rank-bm25: skipped at this size")
        return
    from rank_bm25 import BM25Okapi

    corpus = [doc_tokens(r) for r in rows]
    ids = np.array([r.paper_id for r in rows])
    gc.collect()
    rss1 = rss_bytes()
    started = time.perf_counter()
    reference = BM25Okapi(corpus)
    ref_build = time.perf_counter() - started
    gc.collect()
    rss_ref = rss_bytes() - rss1
    print(
        f"rank-bm25 build: {ref_build:.2f} s (tokens given), process RSS +{rss_ref / 1e6:.0f} MB "
        f"({rss_ref / len(rows) / 1e3:.1f} KB/paper)"
    )
    n_ref = len(tokens) if size <= 40_000 else args.rank_bm25_queries_large
    picked = tokens[:: max(1, len(tokens) // n_ref)][:n_ref]

    def ref_top(q: list[str]) -> tuple[np.ndarray, np.ndarray]:
        scores = reference.get_scores(q)
        order = np.lexsort((ids, -scores))[:10]
        return order, scores

    ref_ms = time_calls(ref_top, picked)
    same = 0
    worst = 0.0
    slots = np.array([index.slot_of(int(pid)) for pid in ids])
    for q in picked:
        order, ref_scores = ref_top(q)
        matched = [i for i in order.tolist() if any(t in corpus[i] for t in q)]
        ours = index.rank(q, 10)[0]
        if [ids[i] for i in matched] == [pid for pid, _ in ours]:
            same += 1
        mine = index.score_array(q)
        worst = max(worst, float(np.abs(mine[slots] - ref_scores).max()))
    ours_sub = time_calls(lambda q: index.rank(q, 10), picked, repeat=3)
    r50, r95 = percentile(ref_ms, 50), percentile(ref_ms, 95)
    print(
        f"rank-bm25 ranking, {len(picked)} queries: p50 {r50:.1f} ms, p95 {r95:.1f} ms; "
        f"index on the same queries: p50 {percentile(ours_sub, 50):.3f} ms"
    )
    print(
        f"ratio (rank-bm25 p50 / index p50, same queries): "
        f"{r50 / percentile(ours_sub, 50):,.0f}x; same top 10: {same}/{len(picked)}; "
        f"max |score difference| over all papers: {worst:.3g}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2610,35712,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries-large", type=int, default=25)
    parser.add_argument("--max-rank-bm25", type=int, default=200_000)
    args = parser.parse_args()
    if not (ICML.exists() and MULTIVENUE.exists()):
        print(f"skipped: the benchmark corpora are not in {DATA} (../shared/ next to the repo)")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    icml = load_rows(ICML)
    multivenue = load_rows(MULTIVENUE)
    synth = Synthesizer(multivenue)
    for size in sizes:
        if size <= len(icml):
            bench_size(size, icml, None, args)
        else:
            bench_size(size, multivenue, synth, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
