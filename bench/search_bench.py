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
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.services.search import TITLE_WEIGHT, SearchEngine  # noqa: E402
from bot.services.tokenize import tokenize  # noqa: E402
from storage.models import IndexRow  # noqa: E402

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
    """Synthetic papers drawn from real ones, keeping their burstiness.

    Each synthetic paper takes a real paper as its topic: 3/4 of its words are drawn from that
    paper's words, 1/4 from the whole corpus; its length, authors, venue and year are drawn
    from real papers.  (Words drawn independently from the corpus would give every paper
    twice the distinct terms of a real one, and an unrealistically uniform index.)
    """

    TOPIC_SHARE = 0.75

    def __init__(self, rows: Sequence[IndexRow], seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.rows_ = rows
        self.abstract = self._field([r.abstract for r in rows])
        self.title = self._field([r.title for r in rows])

    @staticmethod
    def _field(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        words = [t.split() for t in texts]
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in words], out=offsets[1:])
        flat = np.array([w for ws in words for w in ws], dtype=object)
        return flat, offsets

    def _text(self, field: tuple[np.ndarray, np.ndarray], source: int, length: int) -> str:
        flat, offsets = field
        lo, hi = int(offsets[source]), int(offsets[source + 1])
        if hi == lo or length == 0:
            return ""
        topical = round(length * self.TOPIC_SHARE)
        picks = np.concatenate(
            [
                self.rng.integers(lo, hi, topical),
                self.rng.integers(0, len(flat), length - topical),
            ]
        )
        return " ".join(flat[picks].tolist())

    def rows(self, first_id: int, count: int) -> Iterator[IndexRow]:
        n_real = len(self.rows_)
        sources = self.rng.integers(0, n_real, count)
        shapes = self.rng.integers(0, n_real, count)  # length donor
        metas = self.rng.integers(0, n_real, count)
        a_off, t_off = self.abstract[1], self.title[1]
        for n in range(count):
            source, shape, meta = int(sources[n]), int(shapes[n]), self.rows_[int(metas[n])]
            yield IndexRow(
                paper_id=first_id + n,
                title=self._text(self.title, source, int(t_off[shape + 1] - t_off[shape])),
                abstract=self._text(self.abstract, source, int(a_off[shape + 1] - a_off[shape])),
                authors=meta.authors,
                venue=meta.venue,
                year=meta.year,
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


def build_engine(
    size: int, base: list[IndexRow], synth: Synthesizer | None
) -> tuple[SearchEngine, list[IndexRow] | None, float]:
    """The engine over ``size`` papers, the rows (None at sizes too big to keep) and the time
    spent in SearchEngine.build/add only (generating synthetic text is not counted)."""
    if size <= len(base):
        rows = base[:size]
        started = time.perf_counter()
        return SearchEngine.build(rows), rows, time.perf_counter() - started
    assert synth is not None
    chunk = 100_000
    keep = size <= 200_000
    rows: list[IndexRow] = list(base) if keep else []
    first = list(base) + list(synth.rows(len(base) + 1, min(chunk, size) - len(base)))
    if keep:
        rows = list(first)
    started = time.perf_counter()
    engine = SearchEngine.build(first)
    spent = time.perf_counter() - started
    next_id = len(first) + 1
    del first
    while len(engine) < size:
        count = min(chunk, size - len(engine))
        batch = list(synth.rows(next_id, count))
        next_id += count
        started = time.perf_counter()
        engine.add(batch)
        spent += time.perf_counter() - started
        if keep:
            rows.extend(batch)
    return engine, (rows if keep else None), spent


def traced_bytes(make) -> int:  # type: ignore[no-untyped-def]
    """Python-heap bytes (numpy arrays included) still held by what ``make()`` returns."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = make()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return after - before


def bench_size(
    size: int, base: list[IndexRow], synth: Synthesizer | None, args: argparse.Namespace
) -> dict[str, str]:
    print(f"\n=== {size:,} papers ===", flush=True)
    gc.collect()
    engine, rows, build_s = build_engine(size, base, synth)
    index = engine.index
    print(
        f"engine build: {build_s:.2f} s ({len(engine) / build_s:,.0f} papers/s, tokenising included), "
        f"{index.n_postings:,} postings, {index.vocabulary_size:,} terms, {index.n_segments} segment(s)"
    )
    line = (
        f"index memory: {index.nbytes() / 1e6:.0f} MB "
        f"({index.nbytes() / max(1, index.n_postings):.1f} B/posting, arrays + vocabulary)"
    )
    if rows is not None and size <= args.max_traced:
        engine_bytes = traced_bytes(lambda: SearchEngine.build(rows))
        line += f"; whole engine, traced: {engine_bytes / 1e6:.0f} MB (index + filters + autocomplete)"
    print(line, flush=True)

    queries = make_queries(base, args.queries)
    tokens = [tokenize(q) for q in queries]
    for q in tokens:  # warm caches and lazily refreshed weights
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
    auto = ["", "atten", "graph neu", "diffusion models for", "123", "reinforcement learning f", "a"]
    auto_ms = time_calls(lambda t: engine.autocomplete(t, 25), auto, repeat=3)
    print(f"autocomplete ({len(auto)} inputs incl. one letter): max {max(auto_ms):.2f} ms", flush=True)
    summary = {
        "papers": f"{size:,}",
        "build s": f"{build_s:.1f}",
        "index MB": f"{index.nbytes() / 1e6:.0f}",
        "p50 ms": f"{p50:.3f}",
        "p95 ms": f"{p95:.3f}",
        "rank-bm25 p50 ms": "-",
        "ratio": "-",
        "same top 10": "-",
        "rank-bm25 MB": "-",
    }
    if rows is None or size > args.max_rank_bm25:
        print("rank-bm25: skipped at this size")
        return summary
    from rank_bm25 import BM25Okapi

    corpus = [doc_tokens(r) for r in rows]
    ids = np.array([r.paper_id for r in rows])
    started = time.perf_counter()
    reference = BM25Okapi(corpus)
    ref_build = time.perf_counter() - started
    ref_bytes = traced_bytes(lambda: BM25Okapi(corpus))
    print(
        f"rank-bm25 build: {ref_build:.2f} s (from the same token lists), traced memory "
        f"{ref_bytes / 1e6:.0f} MB ({ref_bytes / len(rows) / 1e3:.1f} KB/paper)",
        flush=True,
    )
    n_ref = len(tokens) if size <= 40_000 else args.rank_bm25_queries_large
    # A seeded sample keeps the mix of titles and short phrases.
    picked = random.Random(5).sample(tokens, n_ref) if n_ref < len(tokens) else tokens

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
        f"max |score difference| over all papers: {worst:.3g}",
        flush=True,
    )
    ratio = r50 / percentile(ours_sub, 50)
    summary.update(
        {
            "rank-bm25 p50 ms": f"{r50:.1f}",
            "ratio": f"{ratio:,.0f}x ({len(picked)} q)",
            "same top 10": f"{same}/{len(picked)}",
            "rank-bm25 MB": f"{ref_bytes / 1e6:.0f}",
        }
    )
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2610,35712,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries-large", type=int, default=40)
    parser.add_argument("--max-rank-bm25", type=int, default=200_000)
    parser.add_argument("--max-traced", type=int, default=100_000, help="trace memory up to this size")
    args = parser.parse_args()
    if not (ICML.exists() and MULTIVENUE.exists()):
        print(f"skipped: the benchmark corpora are not in {DATA} (../shared/ next to the repo)")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    icml = load_rows(ICML)
    multivenue = load_rows(MULTIVENUE)
    synth = Synthesizer(multivenue)
    table = []
    for size in sizes:
        if size <= len(icml):
            table.append(bench_size(size, icml, None, args))
        else:
            table.append(bench_size(size, multivenue, synth, args))
    print("\nSummary (ranking latency = BM25Index.rank top 10; ratio on the same queries):")
    columns = list(table[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in table:
        print("| " + " | ".join(row[c] for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
