"""Where each paper lies among the others: latent semantic analysis (LSA) of the search index.

BM25 scores a paper by the words it shares with a query, and two papers of one sub-area often share
few of them. A truncated SVD of every paper's unit-length BM25 vector gives each paper ``dims``
coordinates in which papers about the same things lie close, whatever words they use; a person's
model (:mod:`bot.services.recommend.learner`) learns in those coordinates which corner of the field they want
from a handful of reactions.

Papers indexed after the basis was computed are folded in with it (their BM25 vector times the term
loadings); once the corpus has doubled since, :meth:`PaperSpace.stale` says so and the
owner recomputes the basis (:meth:`PaperSpace.rebuild`, seconds at 100k papers, meant for a thread).

The owner saves the space beside the search snapshot (:meth:`PaperSpace.save`) and a later start
maps it back from the file (:meth:`PaperSpace.load`) instead of computing it again: recomputing it at
each start took a core for a minute at 100k papers on a busy machine and peaked over 1 GB, memory
the process then kept.
"""

from __future__ import annotations

import hashlib
import mmap
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from paperindex import snapshot

DIMS: Final = 100
OVERSAMPLE: Final = 10
POWER_STEPS: Final = 3
ROWS_PER_STEP: Final = 2000
#: rows of a stretch of aᵀq (:func:`_t_times`): the columns a stretch uses grow slower than its rows
T_ROWS_PER_STEP: Final = 20_000
SKETCH_ROWS: Final = 20_000  # rows of the random start drawn at a time
REBUILD_GROWTH: Final = 2.0  # recompute the basis once the corpus is this many times larger
UNIT_ROWS_STEP: Final = 10_000  # papers' BM25 vectors gathered at a time (their float64 temporaries)
SAVED_FORMAT: Final = 1
READ_ATTEMPTS: Final = 3  # reads of every paper's vector a rebuild tries (papers replaced meanwhile)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


class IndexedPapers(Protocol):
    """What the space reads of the search index (``paperindex.index.BM25Index``)."""

    @property
    def n_slots(self) -> int: ...

    @property
    def slot_ids(self) -> IntArray: ...

    @property
    def alive(self) -> npt.NDArray[np.bool_]: ...

    def __len__(self) -> int: ...

    def doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, npt.NDArray[np.float64]]: ...


@dataclass(frozen=True, slots=True)
class _Basis:
    terms: IntArray  # the term ids the papers used, sorted: loadings' rows in this order
    loadings: FloatArray  # per term of ``terms``, its ``dims`` loadings (the SVD's right singular vectors)
    papers: int  # live papers when it was computed


def _times(a: sp.csr_matrix, m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``a @ m``, a stretch of rows at a time: scipy holds the GIL while it multiplies, and the
    bot's event loop must get a turn between stretches (this runs in a worker thread)."""
    out = np.empty((a.shape[0], m.shape[1]), dtype=np.float32)
    for lo in range(0, a.shape[0], ROWS_PER_STEP):
        out[lo : lo + ROWS_PER_STEP] = a[lo : lo + ROWS_PER_STEP] @ m
        time.sleep(0)
    return out


def _t_times(a: sp.csr_matrix, q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``a.T @ q``, summed over stretches of rows (see :func:`_times`), each stretch's product taken over
    only the columns it uses: scipy's product over every column allocated a terms × width array per
    stretch (0.4 GB at 1M papers) to add into the sum."""
    out = np.zeros((a.shape[1], q.shape[1]), dtype=np.float32)
    used = np.zeros(a.shape[1], dtype=bool)
    for lo in range(0, a.shape[0], T_ROWS_PER_STEP):
        part = a[lo : lo + T_ROWS_PER_STEP]
        used[part.indices] = True
        columns = np.flatnonzero(used)
        position = np.cumsum(used, dtype=np.int32) - 1
        compact = sp.csr_matrix(
            (part.data, position[part.indices], part.indptr), shape=(part.shape[0], len(columns))
        )
        out[columns] += compact.T @ q[lo : lo + T_ROWS_PER_STEP]
        used[columns] = False
        time.sleep(0)
    return out


def _sketch(rng: np.random.Generator, rows: IntArray, width: int) -> npt.NDArray[np.float32]:
    """Rows ``rows`` (sorted) of a standard normal matrix with ``rows[-1] + 1`` rows, drawn a stretch at
    a time: the same numbers as the whole matrix, without holding it."""
    out = np.empty((len(rows), width), dtype=np.float32)
    end = int(rows[-1]) + 1 if len(rows) else 0
    for lo in range(0, end, SKETCH_ROWS):
        hi = min(lo + SKETCH_ROWS, end)
        block = rng.standard_normal((hi - lo, width))
        first, last = np.searchsorted(rows, [lo, hi])
        out[first:last] = block[rows[first:last] - lo]
    return out


def _orthonormalise(y: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``y``'s columns made orthonormal in place, spanning what they spanned (CholeskyQR2: the Gram
    matrix in float64, its Cholesky factor divided out a stretch of rows at a time, twice, the second
    pass mending what rounding left of the first). numpy's QR of a million rows by 110 held 3.4 GB
    beside the 0.4 GB of ``y``; this holds none. A small shift keeps the factor defined when the
    columns are not independent (a corpus smaller than the sketch)."""
    width = y.shape[1]
    for _ in range(2):
        gram = np.zeros((width, width))
        for lo in range(0, len(y), ROWS_PER_STEP * 10):
            block = y[lo : lo + ROWS_PER_STEP * 10].astype(np.float64)
            gram += block.T @ block
        shift = 1e-10 * max(float(np.trace(gram)), np.finfo(np.float64).tiny)
        upper = np.linalg.cholesky(gram + shift * np.eye(width)).T
        inverse = np.linalg.inv(upper)
        for lo in range(0, len(y), ROWS_PER_STEP * 10):
            rows = slice(lo, lo + ROWS_PER_STEP * 10)
            y[rows] = y[rows].astype(np.float64) @ inverse
        time.sleep(0)
    return y


def randomized_svd_loadings(
    matrix: sp.csr_matrix, dims: int, *, seed: int = 0, terms: IntArray | None = None
) -> FloatArray:
    """The top ``dims`` right singular vectors of a sparse matrix, as columns (Halko et al. 2011).
    ``terms``: the term id of each column, when the columns are a subset of the vocabulary; the
    random start is then the one the whole vocabulary would have had, so the result does not depend
    on which unused terms were left out."""
    rng = np.random.default_rng(seed)
    a = sp.csr_matrix(matrix, dtype=np.float32)
    width = min(dims + OVERSAMPLE, min(a.shape))
    rows = terms if terms is not None else np.arange(a.shape[1], dtype=np.int64)
    q = _orthonormalise(_times(a, _sketch(rng, rows, width)))
    for _ in range(POWER_STEPS):
        z = _orthonormalise(_t_times(a, q))
        del q
        q = _orthonormalise(_times(a, z))
        del z
    m = _t_times(a, q)
    del q
    return _left_singular(m, dims)


def _left_singular(m: npt.NDArray[np.float32], dims: int) -> FloatArray:
    """The top ``dims`` left singular vectors of a tall ``m`` (terms × sketch), as columns, written over
    ``m`` (the answer is a view of its memory; ``m`` is left meaningless): from the eigenvectors of the small ``mᵀm``
    (in float64), ``m``'s rows turned into them a stretch at a time. numpy's SVD of a million terms by
    110 held 3.4 GB; this holds nothing beside ``m``. A direction the columns do not span (a corpus
    smaller than the sketch) gets a column of zeros."""
    gram = np.zeros((m.shape[1], m.shape[1]))
    for lo in range(0, len(m), ROWS_PER_STEP * 10):
        block = m[lo : lo + ROWS_PER_STEP * 10].astype(np.float64)
        gram += block.T @ block
    values, vectors = np.linalg.eigh(gram)  # ascending
    order = np.argsort(values)[::-1][:dims]
    sigma = np.sqrt(np.clip(values[order], 0.0, None))
    spanned = sigma > 1e-6 * max(float(sigma[0]) if len(sigma) else 0.0, np.finfo(np.float64).tiny)
    turn = np.where(spanned, vectors[:, order] / np.where(spanned, sigma, 1.0), 0.0)
    # Written over m's own memory, row after row, narrower: a stretch is read whole before it is
    # written, and it is written where only rows already read lay.
    flat, width = m.reshape(-1), len(order)
    for lo in range(0, len(m), ROWS_PER_STEP * 10):
        hi = min(lo + ROWS_PER_STEP * 10, len(m))
        flat[lo * width : hi * width] = (m[lo:hi].astype(np.float64) @ turn).reshape(-1)
        time.sleep(0)
    return flat[: len(m) * width].reshape(len(m), width)


class IndexMoved(RuntimeError):
    """A paper was replaced in the index while its vectors were being read (:func:`_unit_rows`)."""


def _unit_rows(
    index: IndexedPapers, doc_ids: Sequence[int] | IntArray, columns: IntArray | None
) -> tuple[sp.csr_matrix, IntArray]:
    """The documents' BM25 vectors scaled to length 1 (float32), one column per term of ``columns``
    (sorted term ids; others left out) or, when it is None, per term the documents use; and those
    columns' terms. Only used terms become columns: the vocabulary also holds phrase terms that no
    paper's vector has, and every empty column would cost the SVD as much as a used one.

    Read from the index twice, :data:`UNIT_ROWS_STEP` documents at a time: first how many weights each
    document has and which terms they use, then the weights, written straight into the matrix's own
    arrays. The index gives each stretch as float64 with int64 term ids (gigabytes for every paper at
    once at 1M papers), and joining the stretches at the end held the matrix twice. :class:`IndexMoved`
    when a document changed between the two reads."""
    ids = np.asarray(doc_ids, dtype=np.int64)
    starts = range(0, len(ids), UNIT_ROWS_STEP)
    lengths = np.zeros(len(ids), dtype=np.int64)
    used = np.zeros(0, dtype=bool)
    for lo in starts:
        indptr, terms, _ = index.doc_weights(ids[lo : lo + UNIT_ROWS_STEP].tolist())
        lengths[lo : lo + len(indptr) - 1] = np.diff(indptr)
        if columns is None and len(terms):
            if int(terms.max()) >= len(used):
                used = np.concatenate([used, np.zeros(int(terms.max()) + 1 - len(used), dtype=bool)])
            used[terms] = True
        del indptr, terms
    column_of = np.zeros(0, dtype=np.int32)
    if columns is None:
        columns = np.flatnonzero(used).astype(np.int64)
        column_of = (np.cumsum(used, dtype=np.int32) - 1).astype(np.int32)
    indptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    term_ids = np.empty(int(indptr[-1]), dtype=np.int32)
    for lo in starts:
        stretch, terms, weights = index.doc_weights(ids[lo : lo + UNIT_ROWS_STEP].tolist())
        counts = np.diff(stretch)
        if not np.array_equal(counts, lengths[lo : lo + len(counts)]):
            raise IndexMoved("a paper was replaced while the paper space read it")
        if len(column_of):
            if len(terms) and (int(terms.max()) >= len(used) or not used[terms].all()):
                raise IndexMoved("a paper was replaced while the paper space read it")
            at = column_of[terms]
        else:
            at = np.minimum(np.searchsorted(columns, terms), max(len(columns) - 1, 0))
            known = (columns[at] == terms) if len(columns) else np.zeros(len(terms), dtype=bool)
            weights = np.where(known, weights, 0.0)
            at = np.where(known, at, 0)
        rows = np.repeat(np.arange(len(counts)), counts)
        norms = np.sqrt(np.bincount(rows, weights=weights * weights, minlength=len(counts)))
        norms[norms == 0] = 1.0
        first, last = int(indptr[lo]), int(indptr[lo + len(counts)])
        np.divide(weights, np.repeat(norms, counts), out=data[first:last], casting="same_kind")
        term_ids[first:last] = at
        del stretch, terms, weights, rows, at
    shape = (len(ids), max(len(columns), 1))
    return sp.csr_matrix((data, term_ids, indptr), shape=shape), columns


def _check_finite(name: str, values: npt.NDArray[np.float32]) -> None:
    """Every value of a mapped array finite (a NaN would rank every paper as NaN), read a stretch at a
    time; the pages read are then given back (the file keeps them), so the check leaves none resident."""
    step = 1 << 22
    for lo in range(0, len(values), step):
        snapshot.expect(bool(np.isfinite(values[lo : lo + step]).all()), f"{name}: not finite")
    mapping = getattr(values, "_mmap", None)
    if isinstance(mapping, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        mapping.madvise(mmap.MADV_DONTNEED)


def _unit(vectors: npt.NDArray[np.float32]) -> FloatArray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(vectors / norms, dtype=np.float32)


class PaperSpace:
    """Unit-length LSA coordinates of every indexed paper, by index slot (zeros for empty slots)."""

    def __init__(self, index: IndexedPapers, *, dims: int = DIMS, seed: int = 0) -> None:
        self.index = index
        self.dims = dims
        self.seed = seed
        self._basis: _Basis | None = None
        self._coords = np.zeros((0, dims), dtype=np.float32)
        self._done = 0  # slots below this have coordinates
        self._lock = threading.Lock()
        self._sample: tuple[tuple[int, int], IntArray] = ((-1, 0), np.zeros(0, dtype=np.int64))

    @property
    def ready(self) -> bool:
        return self._basis is not None

    @property
    def placed(self) -> int:
        """Slots that have coordinates (the index's first ``placed`` slots)."""
        return self._done

    @property
    def stale(self) -> bool:
        """No basis yet, or the corpus has outgrown it (:meth:`rebuild` then)."""
        basis = self._basis
        return basis is None or len(self.index) > REBUILD_GROWTH * max(basis.papers, 1)

    def rebuild(self) -> None:
        """Compute the basis from every live paper and their coordinates (safe from a thread)."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                self._rebuild()
                return
            except IndexMoved:
                if attempt == READ_ATTEMPTS:
                    raise

    def _rebuild(self) -> None:
        alive = np.flatnonzero(self.index.alive[: self.index.n_slots])
        slots = int(self.index.n_slots)
        ids = self.index.slot_ids[alive]
        if len(ids) < 2:
            return
        matrix, terms = _unit_rows(self.index, ids, None)
        dims = max(1, min(self.dims, len(ids) - 1, matrix.shape[1] - 1))
        loadings = randomized_svd_loadings(matrix, dims, seed=self.seed, terms=terms)
        coords = np.zeros((slots, self.dims), dtype=np.float32)
        for lo in range(0, len(alive), UNIT_ROWS_STEP):  # (not every paper's temporaries at once)
            coords[alive[lo : lo + UNIT_ROWS_STEP], :dims] = _unit(
                matrix[lo : lo + UNIT_ROWS_STEP] @ loadings
            )
        with self._lock:
            if dims < self.dims:  # (a corpus too small for every dimension)
                loadings = np.pad(loadings, ((0, 0), (0, self.dims - dims)))
            self._basis = _Basis(terms, loadings, len(ids))
            self._coords = coords
            self._done = slots
        self.follow()  # papers indexed while it was computing

    def follow(self) -> None:
        """Fold in the papers indexed since (no-op when nothing was); builds the basis if there is none."""
        if self._basis is None:
            self.rebuild()
            return
        with self._lock:
            basis, done, slots = self._basis, self._done, int(self.index.n_slots)
            if slots <= done:
                return
            if slots > len(self._coords) or not self._coords.flags.writeable:
                grown = np.zeros(
                    (max(slots, len(self._coords) + len(self._coords) // 4), self.dims), np.float32
                )
                grown[: len(self._coords)] = self._coords
                self._coords = grown
            new = done + np.flatnonzero(self.index.alive[done:slots])
            if len(new):
                ids = self.index.slot_ids[new].tolist()
                try:
                    rows, _ = _unit_rows(self.index, ids, basis.terms)
                except IndexMoved:  # placed at the next call
                    return
                self._coords[new] = _unit(_times(rows, basis.loadings))
            self._done = slots

    def _key(self, store: str, slots: int) -> str:
        """What a saved space was computed over: the store, and which paper each of its slots held."""
        ids = np.ascontiguousarray(self.index.slot_ids[:slots], dtype=np.int64)
        return f"store={store} slots={slots} ids={hashlib.blake2b(ids.tobytes(), digest_size=16).hexdigest()}"

    def save(self, path: Path, store: str) -> None:
        """Write the basis and the coordinates of the placed slots to ``path`` (atomically), for
        :meth:`load` at the next start over the index of the same ``store``."""
        with self._lock:
            basis, done, coords = self._basis, self._done, self._coords
        if basis is None:
            return
        meta = {
            "format": SAVED_FORMAT,
            "key": self._key(store, done),
            "slots": done,
            "dims": self.dims,
            "seed": self.seed,
            "papers": basis.papers,
        }
        arrays: dict[str, np.ndarray[Any, Any]] = {
            "terms": basis.terms,
            "loadings": basis.loadings.reshape(-1),
            "coords": np.ascontiguousarray(coords[:done]).reshape(-1),
        }
        snapshot.write(path, meta, arrays, {})

    def load(self, path: Path, store: str) -> bool:
        """Take the space saved at ``path`` if it was computed over these very slots of ``store``'s
        index (a prefix of them: papers indexed since are folded in by :meth:`follow`); its arrays are
        memory-mapped, checked first. False when absent, stale or not one this version wrote."""
        try:
            with snapshot.Snapshot(path) as saved:
                meta = saved.meta
                snapshot.expect(isinstance(meta, dict) and meta.get("format") == SAVED_FORMAT, "format")
                slots, papers = meta.get("slots"), meta.get("papers")
                snapshot.expect(isinstance(slots, int) and 0 < slots <= self.index.n_slots, "slots")
                snapshot.expect(isinstance(papers, int) and papers > 0, "papers")
                if (meta.get("dims"), meta.get("seed")) != (self.dims, self.seed) or meta.get(
                    "key"
                ) != self._key(store, slots):
                    return False
                terms = saved.array("terms", (np.int64,))
                snapshot.expect(len(terms) > 0, "terms: none")
                snapshot.check_range("terms", terms, 0, 2**62)
                snapshot.expect(bool(np.all(terms[1:] > terms[:-1])), "terms: not sorted")
                loadings = saved.mapped("loadings", (np.float32,), length=len(terms) * self.dims)
                coords = saved.mapped("coords", (np.float32,), length=slots * self.dims)
                for name, values in (("loadings", loadings), ("coords", coords)):
                    _check_finite(name, values)
        except (FileNotFoundError, snapshot.SnapshotError):
            return False
        with self._lock:
            self._basis = _Basis(terms, loadings.reshape(len(terms), self.dims), papers)
            self._coords = coords.reshape(slots, self.dims)
            self._done = slots
        return True

    @property
    def coords(self) -> FloatArray:
        """Coordinates by slot, for the slots the space has followed (call :meth:`follow` first)."""
        return self._coords[: self._done]

    def background(self, size: int) -> IntArray:
        """A fixed random sample of the placed live papers' slots (the same until the space moves)."""
        key = (self._done, size)
        if self._sample[0] != key:
            alive = np.flatnonzero(self.index.alive[: self._done])
            rng = np.random.default_rng(self.seed)
            chosen = np.sort(rng.choice(alive, min(size, len(alive)), replace=False)) if len(alive) else alive
            self._sample = (key, chosen.astype(np.int64))
        return self._sample[1]
