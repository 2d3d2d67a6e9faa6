"""The other BM25 engines `search_bench.py` runs beside paperbot's, each behind the same small interface.

Every peer is given the exact token lists paperbot indexes (``document_tokens(title, abstract)``: the title's terms × 3, the abstract's, the title's phrase terms;
rebuilt from the index in each paper's first-seen term order, so rank-bm25's statistics are the ones the
engine reproduces) and the same query tokens. Each is set up as its documentation recommends for speed,
with rank-bm25's parameters where it has them (k1 1.5, b 0.75):

- **rank-bm25** ``BM25Okapi``: the reference for scores and top 10.
- **bm25s** with its numba backend where numba imports (else its numpy one), Robertson's BM25 (the
  variant rank-bm25 implements; bm25s floors a negative idf at 0 where rank-bm25 uses 0.25 × the mean
  idf), ``retrieve(..., n_threads=1)`` one query at a time as the bot asks.
- **tantivy** (the Python binding of the Rust engine): a RAM index, the tokens joined by spaces under its
  ``whitespace`` tokenizer with term frequencies, an OR of term queries, ``searcher.search(query, 10)``
  (block-max WAND). Its BM25 is Lucene's (k1 1.2, b 0.75 fixed, idf ``log(1 + (N − df + 0.5)/(df +
  0.5))``), so its top 10 differs from rank-bm25's by design.

``prepare`` is timed as the build; ``top10`` is timed per query and returns anything; ``ids`` turns that
into paper ids best first (not timed).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np


class Peer:
    name = ""
    note = ""

    def prepare(self, corpus: Sequence[list[str]], ids: np.ndarray) -> None:
        raise NotImplementedError

    def top10(self, tokens: list[str]) -> Any:
        raise NotImplementedError

    def ids(self, result: Any) -> list[int]:
        raise NotImplementedError

    def nbytes(self) -> int | None:
        """Bytes the engine holds, where it can say (None: only the resident-memory growth is known)."""
        return None


class RankBM25(Peer):
    name = "rank-bm25"

    def prepare(self, corpus: Sequence[list[str]], ids: np.ndarray) -> None:
        from rank_bm25 import BM25Okapi

        self.ids_ = ids
        self.corpus = corpus
        self.engine = BM25Okapi(corpus)

    def scores(self, tokens: list[str]) -> np.ndarray:
        return np.asarray(self.engine.get_scores(tokens))

    def top10(self, tokens: list[str]) -> Any:
        scores = self.scores(tokens)
        return np.lexsort((self.ids_, -scores))[:10], scores

    def ids(self, result: Any) -> list[int]:
        """Best 10 by score then id, among papers holding a query term (rank-bm25 scores others 0)."""
        order, scores = result
        return [int(self.ids_[i]) for i in order.tolist() if scores[i] > 0]


class BM25S(Peer):
    name = "bm25s"

    def __init__(self) -> None:
        self.backend = "numba" if importlib.util.find_spec("numba") else "numpy"
        self.note = f"{self.backend} backend, Robertson, k1 1.5, b 0.75"

    def prepare(self, corpus: Sequence[list[str]], ids: np.ndarray) -> None:
        import bm25s

        self.ids_ = ids
        self.engine = bm25s.BM25(method="robertson", k1=1.5, b=0.75, backend=self.backend)
        self.engine.index(corpus, show_progress=False)
        self.engine.retrieve([["warm"]], k=10, show_progress=False, n_threads=1)  # compile the JIT

    def top10(self, tokens: list[str]) -> Any:
        return self.engine.retrieve([tokens], k=10, show_progress=False, n_threads=1)

    def ids(self, result: Any) -> list[int]:
        docs, scores = result.documents[0], result.scores[0]
        return [int(self.ids_[d]) for d, s in zip(docs.tolist(), scores.tolist(), strict=True) if s > 0]

    def nbytes(self) -> int:
        arrays = sum(a.nbytes for a in self.engine.scores.values() if isinstance(a, np.ndarray))
        vocab = sum(49 + len(t) + 8 * 4 for t in self.engine.vocab_dict)  # as BM25Index.nbytes estimates
        return arrays + vocab


class Tantivy(Peer):
    name = "tantivy"
    note = "RAM index, 2 writer threads, Lucene BM25 (k1 1.2)"

    def prepare(self, corpus: Sequence[list[str]], ids: np.ndarray) -> None:
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
        builder.add_integer_field("pid", stored=True)
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema)
        writer = self.index.writer(heap_size=512_000_000, num_threads=2)
        for tokens, pid in zip(corpus, ids.tolist(), strict=True):
            writer.add_document(tantivy.Document(body=" ".join(tokens), pid=pid))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self._should = tantivy.Occur.Should

    def top10(self, tokens: list[str]) -> Any:
        term = self.tantivy.Query.term_query
        query = self.tantivy.Query.boolean_query(
            [(self._should, term(self.schema, "body", t)) for t in tokens]
        )
        return self.searcher.search(query, 10)

    def ids(self, result: Any) -> list[int]:
        return [int(self.searcher.doc(address)["pid"][0]) for _, address in result.hits]


def available() -> list[Peer]:
    """The fast peers installed here (``pip install -e '.[bench]'`` brings both)."""
    peers: list[Peer] = []
    if importlib.util.find_spec("bm25s"):
        peers.append(BM25S())
    if importlib.util.find_spec("tantivy"):
        peers.append(Tantivy())
    return peers
