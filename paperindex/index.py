"""An inverted index that returns exactly rank-bm25's BM25 Okapi scores, fast.

``rank_bm25.BM25Okapi(corpus).get_scores(query)`` loops in Python over every document for every
query term, and has to be rebuilt to add a document.  :class:`BM25Index` keeps, per term, the
postings (document slot, term frequency), so a query only touches the postings of its own terms:
for each query term, in query order, a compiled loop (:mod:`paperindex.kernels`) adds the
term's idf times rank-bm25's per-posting factor

    tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl))

into a score array, computing the factor as it goes.  Every floating-point operation is the one
rank-bm25 performs, in the same order, so the scores are not just close but equal (the property
test checks 1e-9; in practice the difference is 0.0).  The best k of a query (:meth:`BM25Index.rank`) need not
score every posting exactly: :mod:`paperindex.topk` sums one-byte impacts per posting into
upper bounds and rescores exactly only the few documents whose bound can reach the k-th score.  The idf follows rank-bm25 too:
``log(N − df + 0.5) − log(df + 0.5)``, and every negative idf is replaced by ``epsilon ·
average_idf``, the average taken over the whole vocabulary before the floor is applied.

Adding documents never re-reads old ones.  New documents form a new *segment* (term-major
postings plus a document-major copy for :meth:`BM25Index.doc_terms`); small segments are merged
into bigger ones by a linear-time merge, so a handful of segments exist at any time.  A merge runs
without the lock (:mod:`paperindex.merges`): searches go on meanwhile over the segments it
reads, and the merged segment takes their place in one step.  Adding
changes N and avgdl, hence every idf and every per-posting factor: the idf vector and the
per-document length factors are recomputed vectorised at once (O(vocabulary + documents)); the
factors themselves are never stored.

Re-adding an existing id replaces that document (the old version stops counting at once; its
postings are dropped at the next merge).  Adding, removing and every query hold the index's
re-entrant ``lock``, so papers can be added from a worker thread while another thread searches.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from operator import attrgetter, methodcaller
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import topk
from paperindex.bulk_kernels import document_lengths
from paperindex.forward import ForwardReads
from paperindex.locking import locked
from paperindex.merges import MergeJob, due_pair, replace_pair, run_merges
from paperindex.packed import PackedSlice
from paperindex.ranking import Query as Query
from paperindex.ranking import Ranking
from paperindex.segments import (
    SEGMENT_ARRAYS,
    Segment,
    merge,
    new_segment,
    segments_from_snapshot,
    tf_dtype,
)
from paperindex.slots import SlotMap
from paperindex.snapshot import Snapshot, check_range, expect
from paperindex.term_ids import DuplicateTermError, TermIds, TermTable

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

_values: Final = methodcaller("values")
_postings: Final = attrgetter("n_postings")
_MAX_SEGMENTS: Final = 6


def _counts_as_postings(
    doc_ids: Sequence[int], counts: Sequence[Mapping[str, int]]
) -> tuple[list[int], IntArray, npt.NDArray[np.int32], npt.NDArray[np.unsignedinteger], list[str]]:
    """Documents given as term → frequency as :meth:`BM25Index.add_postings` takes them; of a repeated
    id, the last document."""
    if len(doc_ids) != len(counts):
        raise ValueError(f"{len(doc_ids)} ids but {len(counts)} documents")
    ids = [int(i) for i in doc_ids]
    if len(set(ids)) != len(ids):  # keep the last document of a repeated id
        last = {doc_id: n for n, doc_id in enumerate(ids)}
        keep = sorted(last.values())
        ids = [ids[n] for n in keep]
        counts = [counts[n] for n in keep]
    n_unique = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    total = int(n_unique.sum())
    # C-level iterators end to end: no Python code runs per posting.
    tf_all = np.fromiter(chain.from_iterable(map(_values, counts)), dtype=np.int64, count=total)
    if tf_all.min(initial=1) <= 0:
        raise ValueError("term frequencies must be positive")  # before changing anything
    local = TermIds([])  # the terms numbered in order of appearance
    term_ids = np.fromiter(map(local.__getitem__, chain.from_iterable(counts)), dtype=np.int32, count=total)
    return ids, n_unique, term_ids, tf_all.astype(tf_dtype(int(tf_all.max(initial=0)))), local.terms


def _check_postings(
    ids: list[int],
    n_unique: IntArray,
    term_ids: npt.NDArray[np.int32],
    tf: npt.NDArray[np.unsignedinteger],
    terms: Sequence[str],
) -> None:
    """ValueError unless documents ``ids`` (distinct) hold exactly these postings, frequencies positive."""
    if len(ids) != len(n_unique) or len(set(ids)) != len(ids):
        raise ValueError("one distinct document id per document, please")
    if (
        int(n_unique.sum()) != len(term_ids)
        or len(tf) != len(term_ids)
        or len(terms) <= term_ids.max(initial=-1)
    ):
        raise ValueError("postings do not match their documents")
    if tf.min(initial=1) == 0:
        raise ValueError("term frequencies must be positive")


def _vocabulary_ids(
    vocab: TermTable, terms: Sequence[str], term_ids: npt.NDArray[np.int32]
) -> npt.NDArray[np.int32]:
    """``term_ids`` (numbered in order of appearance, named by ``terms``) as ids of ``vocab``, which
    gives a new term the next id."""
    first_new = len(vocab)
    vocab_ids = vocab.add(terms)
    if not np.array_equal(vocab_ids, np.arange(first_new, first_new + len(terms), dtype=np.int32)):
        return vocab_ids[term_ids]
    # Every term is new (a build): numbered in their order of appearance, as the vocabulary does.
    return term_ids + np.int32(first_new) if first_new else term_ids


class BM25Index(Ranking, ForwardReads):
    """rank-bm25's BM25 Okapi over documents given as term lists, keyed by integer ids."""

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.lock = threading.RLock()
        self._merging = threading.Lock()  # one merge at a time; searches never take it
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self._vocab = TermTable()
        self._terms = self._vocab.terms
        self._df: IntArray = np.zeros(0, dtype=np.int64)
        self._idf: FloatArray = np.zeros(0)
        self.average_idf = 0.0
        self._segments: list[Segment] = []
        self._seg_starts: list[int] = []
        self._slot_of = SlotMap()
        self._slot_ids: IntArray = np.zeros(0, dtype=np.int64)
        self._dl: IntArray = np.zeros(0, dtype=np.int64)
        self._alive: BoolArray = np.zeros(0, dtype=bool)
        self._dead: IntArray = np.zeros(0, dtype=np.int64)
        self._len_factor: FloatArray = np.zeros(0)  # k1 · (1 − b + b · |d| / avgdl) per slot
        self._n_live = 0
        self._total_len = 0
        self._log_half: FloatArray = np.zeros(0)  # math.log(m + 0.5) for m = 0, 1, ...
        self._topk_space = topk.Workspace()

    # ----------------------------------------------------------------------------- snapshots

    def snapshot_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Sequence[str]]]:
        """What a snapshot keeps (call holding :attr:`lock`): JSON scalars, arrays that later changes
        leave alone, and the vocabulary. Document frequencies, idf, length factors and each posting's tf
        factor are derived again on load (the same operations, so the same scores)."""
        meta: dict[str, Any] = {
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
            "segments": [[seg.slot0, seg.n_docs] for seg in self._segments],
        }
        arrays: dict[str, np.ndarray] = {
            "index.slot_ids": self._slot_ids,
            "index.dl": self._dl,
            "index.alive": self._alive.copy(),  # the only one changed in place (by removals)
        }
        for n, seg in enumerate(self._segments):
            for name in SEGMENT_ARRAYS:
                arrays[f"index.seg{n}.{name}"] = getattr(seg, name)
        return meta, arrays, {"index.terms": self._terms}

    @classmethod
    def from_snapshot(
        cls,
        meta: Any,
        snapshot: Snapshot,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> BM25Index:
        """The index :meth:`snapshot_state` saved, every array checked (dtype, length, bounds, agreement
        between the term-major and document-major postings) before use; SnapshotError otherwise."""
        expect(isinstance(meta, dict), "index: no metadata")
        expect(
            (meta.get("k1"), meta.get("b"), meta.get("epsilon")) == (k1, b, epsilon),
            "index: other BM25 parameters",
        )
        # read, not mapped: every term's bytes are hashed now
        terms = snapshot.packed("index.terms", mapped=False)
        index = cls(k1=k1, b=b, epsilon=epsilon)
        n_terms = len(terms)
        try:
            vocab = TermTable(terms)
        except DuplicateTermError:
            expect(False, "index: a term twice in the vocabulary")
        slot_ids = snapshot.array("index.slot_ids", (np.int64,))
        n_slots = len(slot_ids)
        dl = snapshot.array("index.dl", (np.int64,), length=n_slots)
        alive = snapshot.array("index.alive", (np.bool_,), length=n_slots)
        check_range("index.dl", dl, 0, 1 << 40)
        live = np.flatnonzero(alive)
        expect(len(np.unique(slot_ids[live])) == len(live), "index: a document in two slots")
        slot_of = SlotMap()
        slot_of.assign(slot_ids[live].tolist(), live.tolist())
        segments, df = segments_from_snapshot(
            snapshot, meta.get("segments"), alive=alive, dl=dl, n_terms=n_terms
        )
        index._terms = vocab.terms
        index._vocab = vocab
        index._df = df
        index._segments = segments
        index._seg_starts = [seg.slot0 for seg in segments]
        index._slot_of = slot_of
        index._slot_ids = slot_ids
        index._dl = dl
        index._alive = alive
        index._dead = np.flatnonzero(~alive).astype(np.int64)
        index._n_live = len(live)
        index._total_len = int(dl[live].sum())
        index._refresh_stats()
        return index

    # ----------------------------------------------------------------------------- basics
    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def avgdl(self) -> float:
        return self._total_len / self._n_live if self._n_live else 0.0

    @property
    def n_slots(self) -> int:
        """Slots ever used (removed and replaced documents keep theirs, empty)."""
        return len(self._slot_ids)

    @property
    def slot_ids(self) -> IntArray:
        """Document id of each slot (read-only view; meaningful where :attr:`alive`)."""
        view = self._slot_ids.view()
        view.flags.writeable = False
        return view

    @property
    def alive(self) -> BoolArray:
        view = self._alive.view()
        view.flags.writeable = False
        return view

    @locked
    def slot_of(self, doc_id: int) -> int:
        """The slot holding ``doc_id`` (KeyError if absent): index of masks for ``allowed``."""
        return self._slot_of[doc_id]

    @property
    def doc_ids(self) -> list[int]:
        """Ids of the documents in the index, in insertion order."""
        return [int(i) for i in self._slot_ids[self._alive]]

    @property
    def vocabulary_size(self) -> int:
        return int(np.count_nonzero(self._df))

    @property
    def n_segments(self) -> int:
        return len(self._segments)

    @property
    def n_postings(self) -> int:
        return sum(s.n_postings for s in self._segments)

    def nbytes(self) -> int:
        """Bytes held by the index's arrays and its vocabulary."""
        arrays = sum(s.nbytes for s in self._segments) + sum(
            a.nbytes
            for a in (
                self._df,
                self._idf,
                self._slot_ids,
                self._dl,
                self._alive,
                self._len_factor,
                self._log_half,
            )
        )
        return arrays + self._vocab.nbytes + self._slot_of.nbytes

    @locked
    def df(self, term: str) -> int:
        """Number of documents containing ``term``."""
        tid = self._vocab.get(term)
        return 0 if tid is None else int(self._df[tid])

    @locked
    def idf(self, term: str) -> float:
        """rank-bm25's idf of ``term`` (after its floor); 0.0 for a term no document has."""
        tid = self._vocab.get(term)
        if tid is None or self._df[tid] == 0:
            return 0.0
        return float(self._idf[tid])

    @locked
    def doc_length(self, doc_id: int) -> int:
        return int(self._dl[self._slot_of[doc_id]])

    @locked
    def term_ids(self, terms: Iterable[str]) -> IntArray:
        """Index ids of ``terms`` (−1 for a term never indexed), to compare with :meth:`doc_weights`."""
        get = self._vocab.get
        return np.fromiter((get(t, -1) for t in terms), dtype=np.int64)

    @locked
    def terms_since(self, start: int) -> Sequence[str]:
        """The vocabulary's terms from id ``start`` on (ids only grow: a reader can follow it), decoded
        as they are read (how many there are costs nothing)."""
        return PackedSlice(self._terms, start, len(self._terms))

    @locked
    def term_name(self, term_id: int) -> str:
        """The term with this id (ids as :meth:`term_ids` and :meth:`doc_weights` give them)."""
        return self._terms[term_id]

    def doc_freqs(self, term_ids: IntArray) -> IntArray:
        """Number of documents holding each term of :meth:`term_ids` (0 for −1)."""
        ids = np.asarray(term_ids, dtype=np.int64)
        return np.where(ids >= 0, self._df[np.maximum(ids, 0)] if len(self._df) else 0, 0)

    # ----------------------------------------------------------------------------- adding
    def add(self, doc_ids: Sequence[int], docs: Sequence[Sequence[str]]) -> None:
        """Add documents given as term lists; an id already present is replaced.

        Within one call a repeated id keeps its last document.  Equivalent to rebuilding
        ``BM25Okapi`` over all documents in insertion order (a replaced document moves last).
        """
        if isinstance(docs, str) or any(isinstance(d, str) for d in docs):
            raise TypeError("docs must be sequences of terms, not strings")
        self.add_counts(doc_ids, [Counter(d) for d in docs])

    def add_counts(
        self, doc_ids: Sequence[int], counts: Sequence[Mapping[str, int]], *, merge: bool = True
    ) -> None:
        """Like :meth:`add`, with each document given as term → frequency.

        The document's length is the sum of its frequencies; the first-seen order of the terms
        (mapping order) matters only in the last bits of the idf average, as in rank-bm25.
        ``merge=False``: the caller, holding :attr:`lock` around more, calls :meth:`merge_segments` after.
        """
        self.add_postings(*_counts_as_postings(doc_ids, counts), merge=merge)

    def add_postings(
        self,
        doc_ids: Sequence[int],
        n_unique: IntArray,
        term_ids: npt.NDArray[np.int32],
        tf: npt.NDArray[np.unsignedinteger],
        terms: Sequence[str],
        *,
        merge: bool = True,
    ) -> None:
        """Like :meth:`add_counts`, the documents as arrays (:class:`paperindex.bulk_terms.DocumentPostings`):
        document ``n`` holds the next ``n_unique[n]`` of ``term_ids`` (numbered ``0 ..`` in order of first
        appearance, named by ``terms``), frequencies ``tf``. Distinct ids; one present is replaced."""
        self._add_postings(doc_ids, n_unique, term_ids, tf, terms)
        if merge:
            self.merge_segments()

    @locked
    def _add_postings(
        self,
        doc_ids: Sequence[int],
        n_unique: IntArray,
        term_ids: npt.NDArray[np.int32],
        tf: npt.NDArray[np.unsignedinteger],
        terms: Sequence[str],
    ) -> None:
        ids = [int(i) for i in doc_ids]
        n_unique = np.asarray(n_unique, dtype=np.int64)
        _check_postings(ids, n_unique, term_ids, tf, terms)
        if not ids:
            return
        term_ids = _vocabulary_ids(self._vocab, terms, term_ids)
        self._kill([self._slot_of[i] for i in ids if i in self._slot_of])
        lengths = document_lengths(n_unique, tf)
        n_new, slot0, n_terms = len(ids), self.n_slots, len(self._terms)
        segment, term_counts = new_segment(slot0, n_unique, term_ids, tf, n_terms)
        self._df = np.concatenate([self._df, np.zeros(n_terms - len(self._df), np.int64)])
        self._df += term_counts
        self._slot_of.assign(ids, range(slot0, slot0 + n_new))
        self._slot_ids = np.concatenate([self._slot_ids, np.array(ids, dtype=np.int64)])
        self._dl = np.concatenate([self._dl, lengths])
        self._alive = np.concatenate([self._alive, np.ones(n_new, dtype=bool)])
        self._n_live += n_new
        self._total_len += int(lengths.sum())
        self._segments.append(segment)
        self._seg_starts.append(slot0)
        self._refresh_stats()

    @locked
    def remove(self, doc_ids: Iterable[int]) -> None:
        """Remove documents (unknown ids are ignored)."""
        slots = [self._slot_of.pop(int(i)) for i in doc_ids if int(i) in self._slot_of]
        if slots:
            self._kill(slots)
            self._refresh_stats()

    def _kill(self, slots: list[int]) -> None:
        """Stop counting the documents in ``slots`` (the caller re-points or drops their ids)."""
        if not slots:
            return
        for slot in slots:
            terms, _ = self._forward(slot)
            self._df[terms] -= 1
            self._alive[slot] = False
            self._total_len -= int(self._dl[slot])
        self._n_live -= len(slots)
        self._dead = np.concatenate([self._dead, np.array(slots, dtype=np.int64)])

    def _refresh_stats(self) -> None:
        """Recompute idf and per-document length factors after N or avgdl changed."""
        n = self._n_live
        if n + 1 > len(self._log_half):
            start = len(self._log_half)
            grow = max(n + 1, 2 * start)
            extra = np.array([math.log(m + 0.5) for m in range(start, grow)])
            self._log_half = np.concatenate([self._log_half, extra])
        df = self._df
        present = df > 0
        idf = np.zeros(len(df))
        if n:
            idf = self._log_half[np.clip(n - df, 0, None)] - self._log_half[df]
            live_idf = idf[present]
            # rank-bm25 sums idf in vocabulary order with a plain loop: cumsum does the same.
            total = float(np.cumsum(live_idf)[-1]) if len(live_idf) else 0.0
            self.average_idf = total / len(live_idf) if len(live_idf) else 0.0
            eps = self.epsilon * self.average_idf
            idf[present & (idf < 0)] = eps
            idf[~present] = 0.0
            avgdl = self._total_len / n
            if avgdl > 0:
                relative = np.asarray(self.b * self._dl / avgdl, dtype=np.float64)
                self._len_factor = self.k1 * (1 - self.b + relative)
            else:
                self._len_factor = np.full(len(self._dl), self.k1 * (1 - self.b))
        else:
            self.average_idf = 0.0
        self._idf = idf
        self._requantise()

    def _requantise(self) -> None:
        """Impacts for the segments that have none or whose avgdl has drifted (index_topk)."""
        avgdl = self.avgdl
        if avgdl > 0 and topk.bounded(self.k1, self.b):
            for seg in self._segments:
                if topk.stale(seg, avgdl):
                    topk.quantise(seg, self.k1, self._len_factor, avgdl)

    def merge_segments(self) -> None:
        """Merge the last segments while the newest hold too much of the postings or there are too
        many, without holding :attr:`lock` while merging (a thread merging already does it instead)."""
        run_merges(self.lock, self._merging, self._due_merge, self._install)

    def _due_merge(self) -> MergeJob[Segment] | None:
        pair = due_pair(self._segments, _postings, _MAX_SEGMENTS)
        return None if pair is None else self._merge_job(*pair)

    def _merge_job(self, a: Segment, b: Segment | None) -> MergeJob[Segment]:
        """``a`` merged with ``b`` without the lock (:func:`_merge_job`), impacts for the length factors of now."""
        avgdl = self.avgdl
        impacts = avgdl > 0 and topk.bounded(self.k1, self.b)
        quantise = functools.partial(topk.quantise, k1=self.k1, len_factor=self._len_factor, avgdl=avgdl)
        return _merge_job(a, b, self._alive.copy(), quantise if impacts else None)

    def _install(self, job: MergeJob[Segment], merged: Segment) -> None:
        self._seg_starts[replace_pair(self._segments, job, merged)] = [merged.slot0]
        self._requantise()  # the merged segment's impacts again if avgdl moved too far meanwhile


def warm_up(index: BM25Index, stop: threading.Event | None = None) -> None:
    """Prepare the compiled loops a search takes (the bounded best k; every slot's score, as similar
    papers and the recommender ask) for the arrays ``index`` holds and for every number of segments it
    may come to hold, so that numba does it now (its code generator set up, the machine code loaded
    from its disk cache or compiled: 0.4 to 1 s and more in a fresh process, and again for each new
    number of segments) instead of during a search, which holds the lock. On small twins of the
    index: ``index`` itself is not locked meanwhile. Ends early, between two twins, once ``stop`` is set."""
    with index.lock:
        now = max(1, len(index._segments))
    for n_segments in dict.fromkeys([now, *range(1, _MAX_SEGMENTS + 2)]):  # the layout of now first
        if stop is not None and stop.is_set():
            return
        twin = BM25Index(k1=index.k1, b=index.b, epsilon=index.epsilon)
        twin.add_counts([0, 1, 2, 3], [{"q": 2}, {"r": 1}, {"s": 1}, {"t": 1}], merge=False)
        for n in range(1, n_segments):
            twin.add_counts([3 + n], [{f"u{n}": 1}], merge=False)
        twin.rank(["q"], 10)
        twin.rank({"q": 1.0, "r": -1.0}, 10)  # a weight below zero: every slot scored, matches marked
        twin.score_array(["q"])


def _merge_job(
    a: Segment, b: Segment | None, alive: BoolArray, quantise: Callable[[Segment], None] | None
) -> MergeJob[Segment]:
    """The merge of ``a`` and ``b`` as it can run without the lock: over a copy of which slots are alive
    (a slot never comes back to life, so postings it drops stay dropped; documents removed during the
    merge keep theirs until the next one, masked meanwhile as any removed document's)."""

    def build() -> Segment:
        merged = merge(a, b, alive)
        if quantise is not None:
            quantise(merged)
        return merged

    return MergeJob(a, b, build)
