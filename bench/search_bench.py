"""Search speed, memory and exactness of paperbot's BM25 beside rank-bm25, bm25s and tantivy.

    .venv/bin/pip install -e '.[bench]'                              # bm25s, numba, tantivy
    .venv/bin/python bench/search_bench.py                           # 2.6k, 36k, 100k, 1M papers
    .venv/bin/python bench/search_bench.py --sizes 2610,35712        # quick

Corpora: ICML 2024 (2,610 papers) for the smallest size; the multivenue corpus (35,712) for the
others, topped up with synthetic papers whose words, lengths, authors and venues are sampled from
it (title and abstract text, so building runs the real tokenizer).  Queries: 200 per size, half
titles of other papers, half 2–3-word phrases cut from titles.

Every engine runs in this one process on the same papers and the same query tokens (see
``search_peers.py`` for how each is set up).  Per query, each engine in turn (the order rotating),
the best of ``--repeat`` calls of its top 10; rank-bm25, far slower, on a seeded sample above 40k
papers.  For each size and engine it prints p50/p95, the ratio of its p50 to paperbot's on the same
queries, build time (paperbot's from the text, tokenising included; the others' from the token
lists), memory (what the engine's arrays hold, where it can say, the resident-memory growth of
its build and the build's peak above the resident memory before it: Linux's VmHWM, started again
before each build), and on how many queries its top 10 is rank-bm25's (score descending, then id); and the
largest |score difference| between paperbot and rank-bm25 over every paper.  Figures only: no
pass/fail.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import random
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search_peers import Peer, RankBM25, available  # noqa: E402

from paperindex import compiled  # noqa: E402
from paperindex.engine import SearchEngine, document_tokens  # noqa: E402
from paperindex.index import BM25Index  # noqa: E402
from paperindex.tokenizer import tokenize  # noqa: E402
from storage.models import IndexRow  # noqa: E402

SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
ICML = DATA / "icml2024" / "icml2024_papers.jsonl.gz"
MULTIVENUE = DATA / "multivenue" / "multivenue_corpus.jsonl.gz"


def rss_bytes(field: str = "VmRSS") -> int:
    """Resident memory of this process (Linux /proc; 0 elsewhere); ``VmHWM``: its peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak() -> bool:
    """Start the peak (VmHWM) again from the resident memory of now (Linux's ``clear_refs`` 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


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
    return document_tokens(row.title, row.abstract)


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def build_engine(
    size: int, base: list[IndexRow], synth: Synthesizer | None
) -> tuple[SearchEngine, list[IndexRow] | None, float]:
    """The engine over ``size`` papers, built in one call as the bot builds it at start, the rows (None at
    sizes too big to keep) and the time spent in SearchEngine.build only (generating synthetic text
    is not counted)."""
    rows = base[:size]
    if size > len(base):
        assert synth is not None
        rows = list(base) + list(synth.rows(len(base) + 1, size - len(base)))
    started = time.perf_counter()
    engine = SearchEngine.build(rows)
    return engine, (rows if size <= 200_000 else None), time.perf_counter() - started


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


def corpus_tokens(index: BM25Index) -> tuple[list[list[str]], np.ndarray]:
    """Every paper's token list as the engine indexed it (each term repeated tf times, in the paper's
    first-seen order, the very strings of the index's vocabulary) and the paper ids, in slot order."""
    ids = index.doc_ids
    corpus = [
        list(chain.from_iterable(map(repeat, d, d.values())))
        for d in (index.doc_terms(i, phrases=True) for i in ids)
    ]
    return corpus, np.array(ids, dtype=np.int64)


def interleaved(
    engines: dict[str, Callable[[list[str]], object]],
    queries: list[list[str]],
    only: dict[str, set[int]],
    repeat_: int,
) -> dict[str, list[float]]:
    """Milliseconds per query and engine: for each query every engine in turn (the order rotating from
    one query to the next), each the best of ``repeat_`` calls; ``only[name]`` limits an engine to
    those query numbers."""
    names = list(engines)
    out: dict[str, list[float]] = {name: [] for name in names}
    for n, query in enumerate(queries):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            if name in only and n not in only[name]:
                continue
            fn, best = engines[name], float("inf")
            for _ in range(1 if name in only else repeat_):
                started = time.perf_counter()
                fn(query)
                best = min(best, time.perf_counter() - started)
            out[name].append(best * 1e3)
    return out


def bench_size(
    size: int, base: list[IndexRow], synth: Synthesizer | None, args: argparse.Namespace
) -> list[dict[str, str]]:
    print(f"\n=== {size:,} papers ===", flush=True)
    gc.collect()
    rss0 = rss_bytes()
    reset_peak()
    engine, rows, build_s = build_engine(size, base, synth)
    index = engine.index
    gc.collect()
    ours_rss, ours_peak = rss_bytes() - rss0, rss_bytes("VmHWM") - rss0
    print(
        f"paperbot build: {build_s:.2f} s ({len(engine) / build_s:,.0f} papers/s, tokenising included), "
        f"{index.n_postings:,} postings, {index.vocabulary_size:,} terms, {index.n_segments} segment(s)"
    )
    line = (
        f"paperbot index memory: {index.nbytes() / 1e6:.0f} MB "
        f"({index.nbytes() / max(1, index.n_postings):.1f} B/posting, arrays + vocabulary)"
    )
    if rows is not None and size <= args.max_traced:
        engine_bytes = traced_bytes(lambda: SearchEngine.build(rows))
        line += f"; whole engine, traced: {engine_bytes / 1e6:.0f} MB (index + filters + autocomplete)"
    print(line, flush=True)
    rows = None

    queries = make_queries(base, args.queries)
    tokens = [tokenize(q) for q in queries]
    for q in tokens:  # warm caches and lazily refreshed weights
        index.top_k(q, 10)
    search_ms = interleaved({"search": lambda q: engine.search(q, limit=10)}, queries, {}, 3)["search"]  # type: ignore[arg-type]
    print(
        f"engine.search (tokenise + rank + count + matched terms): p50 "
        f"{percentile(search_ms, 50):.3f} ms, p95 {percentile(search_ms, 95):.3f} ms"
    )
    auto = ["", "atten", "graph neu", "diffusion models for", "123", "reinforcement learning f", "a"]
    auto_ms = interleaved(
        {"auto": lambda t: engine.autocomplete(" ".join(t), 25)}, [[a] for a in auto], {}, 3
    )
    print(
        f"autocomplete ({len(auto)} inputs incl. one letter): max {max(auto_ms['auto']):.2f} ms", flush=True
    )

    corpus, ids = corpus_tokens(index)
    peers: list[Peer] = list(available())
    if size <= args.max_rank_bm25:
        peers.append(RankBM25())
    else:
        print(f"rank-bm25: skipped above {args.max_rank_bm25:,} papers (--max-rank-bm25)")
    built: dict[str, tuple[float, int, int | None]] = {}
    peaks: dict[str, int] = {}
    for peer in peers:
        gc.collect()
        before = rss_bytes()
        reset_peak()
        started = time.perf_counter()
        peer.prepare(corpus, ids)
        spent = time.perf_counter() - started
        gc.collect()
        built[peer.name] = (spent, rss_bytes() - before, peer.nbytes())
        peaks[peer.name] = rss_bytes("VmHWM") - before
        print(
            f"{peer.name} build: {spent:.2f} s from the token lists{f' ({peer.note})' if peer.note else ''}",
            flush=True,
        )
    reference = next((p for p in peers if isinstance(p, RankBM25)), None)
    if reference is not None and size <= args.max_traced:

        def held_reference() -> RankBM25:
            peer = RankBM25()
            peer.prepare(corpus, ids)
            return peer

        ref_bytes = traced_bytes(held_reference)
        built["rank-bm25"] = (built["rank-bm25"][0], built["rank-bm25"][1], ref_bytes)
    corpus = []

    n_ref = len(tokens) if size <= 40_000 else args.rank_bm25_queries_large
    # A seeded sample keeps the mix of titles and short phrases.
    sample = (
        set(range(len(tokens)))
        if n_ref >= len(tokens)
        else set(random.Random(5).sample(range(len(tokens)), n_ref))
    )
    engines: dict[str, Callable[[list[str]], object]] = {"paperbot": lambda q: index.top_k(q, 10)}
    engines.update({p.name: p.top10 for p in peers})
    only = {"rank-bm25": sample} if reference is not None else {}
    ms = interleaved(engines, tokens, only, args.repeat)

    same: dict[str, int] = {name: 0 for name in engines}
    worst = 0.0
    if reference is not None:
        slots = np.array([index.slot_of(int(pid)) for pid in ids])
        for n in sorted(sample):
            q = tokens[n]
            want = reference.ids(reference.top10(q))
            same["paperbot"] += [pid for pid, _ in index.top_k(q, 10)] == want
            for peer in peers:
                same[peer.name] += peer.ids(peer.top10(q)) == want
            worst = max(worst, float(np.abs(index.score_array(q)[slots] - reference.scores(q)).max()))
        print(
            f"max |score difference| paperbot vs rank-bm25 over all papers, {len(sample)} queries: {worst:.3g}"
        )

    ours50 = percentile(ms["paperbot"], 50)
    ours_sample50 = percentile([ms["paperbot"][n] for n in sorted(sample)], 50)
    table = []
    for name in engines:
        values = ms[name]
        p50, p95 = percentile(values, 50), percentile(values, 95)
        ratio = p50 / (ours_sample50 if name in only else ours50)
        if name == "paperbot":
            build, rss, held, peak = build_s, ours_rss, index.nbytes(), ours_peak
        else:
            (build, rss, held), peak = built[name], peaks[name]
        row = {
            "papers": f"{size:,}",
            "engine": name,
            "queries": str(len(values)),
            "p50 ms": f"{p50:.3f}",
            "p95 ms": f"{p95:.3f}",
            "vs paperbot": "1" if name == "paperbot" else f"{ratio:,.2f}x",
            "build s": f"{build:.1f}",
            "memory MB": "-" if held is None else f"{held / 1e6:,.0f}",
            "RSS growth MB": f"{rss / 1e6:,.0f}",
            "build peak MB": f"{peak / 1e6:,.0f}",
            "same top 10 as rank-bm25": f"{same[name]}/{len(sample)}" if reference is not None else "-",
        }
        table.append(row)
        print(
            f"{name:>10}: p50 {p50:.3f} ms, p95 {p95:.3f} ms over {len(values)} queries "
            f"({row['vs paperbot']} paperbot's p50 on the same queries), top 10 as rank-bm25's: "
            f"{row['same top 10 as rank-bm25']}",
            flush=True,
        )
    for peer in peers:
        del peer
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2610,35712,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries-large", type=int, default=40)
    parser.add_argument("--max-rank-bm25", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many calls per query")
    parser.add_argument("--max-traced", type=int, default=100_000, help="trace memory up to this size")
    args = parser.parse_args()
    if not (ICML.exists() and MULTIVENUE.exists()):
        print(f"skipped: the benchmark corpora are not in {DATA} (../shared/ next to the repo)")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    loops = (
        "compiled ahead of time" if compiled.ahead_of_time_loaded() else "numba's (PAPERINDEX_LOOPS=numba)"
    )
    print(f"paperbot's loops: {loops}")
    icml = load_rows(ICML)
    multivenue = load_rows(MULTIVENUE)
    synth = Synthesizer(multivenue)
    table: list[dict[str, str]] = []
    for size in sizes:
        if size <= len(icml):
            table.extend(bench_size(size, icml, None, args))
        else:
            table.extend(bench_size(size, multivenue, synth, args))
    print(
        "\nSummary (top 10 per query, interleaved; paperbot = BM25Index.top_k; ratio on the same queries; "
        f"load average now {os.getloadavg()[0]:.1f}):"
    )
    columns = list(table[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in table:
        print("| " + " | ".join(row[c] for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
