"""Each person's model (:mod:`bot.services.recommend.learner`) fitted over the search index and the paper space:
the training examples their reactions make, what the model says of papers, and its words."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from bot.services.recommend.learner import (
    DEFAULT_LEARNING,
    Examples,
    LearningParams,
    PersonModel,
    fit,
    unit_rows,
)
from bot.services.recommend.paper_space import PaperSpace
from bot.services.recommend.profile import decay
from storage.repositories.feedback import FeedbackRow, Signal

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
WeightedWords = tuple[tuple[str, float], ...]

SYNC_SPACE_PAPERS: Final = 5000  # a corpus this small gets its paper space on first use (well under 1 s)
MIN_WORD_PAPERS: Final = 3  # a word shown as learned occurs in at least this many papers near the interest
TOPIC_MATCHES: Final = 64  # topics whose match to every paper is kept (0.4 MB each at 100k papers)
MIN_LIFT: Final = 2.0  # …and this many times as often there as in the corpus
#: …and in at least this share of them: a word of the interest's field is shared by many of its papers,
#: where a rare word of a few ("obviates", "ameliorate", a name) is not (bench/learned_words_eval.py)
FIELD_SUPPORT: float = 0.08
#: …or, for a word few papers hold ("kv" among 2,610 ICML papers), at least this share of those papers,
#: and at least RARE_WORD_PAPERS of them (a tool's or a lab's name in three abstracts is no field)
NEAR_DF_SHARE: float = 0.5
RARE_WORD_PAPERS: Final = 5
#: …and whose papers lie together in the paper space: the mean direction of the papers holding it is
#: this many times as long as that of as many papers drawn at random. A word of a field clusters
#: ("quantization" 1.27, "pessimism" 1.41, "graph" 1.20 on 35,712 papers); one of general English is
#: spread evenly over every field ("despite" 1.07, "obviates" 1.06, "ameliorate" 1.02, "han" 1.10,
#: "learning" 1.10). Tuned in bench/learned_words_eval.py.
CONCENTRATION: float = 1.10
#: …in a corpus of at least this many placed papers per dimension of the space: with about as many
#: dimensions as papers (the shipped 38 in 100), no word's papers look together, not even "kv"'s. In a
#: smaller corpus no word is shown: there the over-represented words of an interest were general
#: English ("human", "parameters", "reduce" for one on speculative decoding in the shipped 38).
CONCENTRATION_PAPERS_PER_DIM: Final = 5


def wanted(signals: Sequence[FeedbackRow]) -> list[tuple[int, Signal]]:
    """(paper id, "like" or "save") of each paper the person wants: liked, or saved and not disliked
    (a paper liked and saved counts once, as a like)."""
    kinds: dict[int, set[Signal]] = {}
    for row in signals:
        kinds.setdefault(row.paper_id, set()).add(row.signal)
    return [
        (paper_id, "like" if "like" in signal_kinds else "save")
        for paper_id, signal_kinds in kinds.items()
        if "like" in signal_kinds or ("save" in signal_kinds and "dislike" not in signal_kinds)
    ]


def _columns(rows: sp.csr_matrix, columns: IntArray) -> sp.csr_matrix:
    """These columns of ``rows`` (term ids past its last column are columns of zeros)."""
    top = int(columns.max(initial=-1)) + 1
    if top > rows.shape[1]:
        rows = sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=(rows.shape[0], top))
    return rows[:, columns]


class IndexedPapers(Protocol):
    """What the models read of the search index (``paperindex.index.BM25Index``)."""

    lock: threading.RLock

    @property
    def slot_ids(self) -> IntArray: ...

    @property
    def n_slots(self) -> int: ...

    def __len__(self) -> int: ...

    def slot_of(self, doc_id: int) -> int: ...

    def score_array(self, query: Mapping[str, float]) -> FloatArray: ...

    def doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, FloatArray]: ...

    def doc_freqs(self, term_ids: IntArray) -> IntArray: ...

    def term_name(self, term_id: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Fitted:
    """A person's model, every placed paper's match to their typed topics (0–1, by slot),
    whether they have liked anything yet (until then the picks explore), and whether a paper they
    named narrowed the topic (its words then bind no pick)."""

    model: PersonModel
    topic_match: FloatArray
    liked: bool
    narrowed: bool = False


class PersonModels:
    """Fits people's models and scores papers with them; holds no state about anyone."""

    def __init__(
        self,
        index: IndexedPapers,
        space: PaperSpace,
        params: LearningParams = DEFAULT_LEARNING,
        *,
        shown: Callable[[str], str] = str,
    ) -> None:
        self.index = index
        #: the word to show for an index term (the engine's ``vocabulary.form``; the term itself without one)
        self.shown = shown
        self.space = space
        self.params = params
        self._background_rows: tuple[tuple[int, int, int], IntArray, sp.csr_matrix] | None = None
        # each topic's match, dense or (when few papers match) as the slots that do and their values
        self._matches: OrderedDict[tuple[tuple[str, float], ...], _Match] = OrderedDict()
        self._matches_of: tuple[int, int, int] = (-1, -1, -1)
        # (the coordinates' array, how many were placed) → unit coordinates and their mean's length²
        self._unit: tuple[object, int, FloatArray, float] | None = None

    def slot(self, paper_id: int, n: int) -> int | None:
        """The paper's slot if the space has coordinates for it."""
        try:
            slot = self.index.slot_of(paper_id)
        except KeyError:
            return None
        return slot if slot < n else None

    def space_ready(self) -> bool:
        """Whether every paper has its place yet: a small corpus gets its space on first use
        (milliseconds); a large one's is computed by the runtime in a thread, seconds after a start."""
        if self.space.ready:
            return True
        if len(self.index) > SYNC_SPACE_PAPERS:
            return False
        self.space.rebuild()
        return True

    def fit(
        self,
        topic_query: Mapping[str, float],
        signals: Sequence[FeedbackRow],
        seen: Collection[int],
        *,
        now: datetime,
        several: bool = False,
        grouped: bool = False,
        narrowed: bool = False,
    ) -> Fitted | None:
        """The person's model fitted to their reactions. None when none of the rated papers is in
        the index (nothing to learn from), or while the paper space of a large corpus is still being
        computed (then the topic ranking stands in). ``several``: the interest is one of several the
        person has (:func:`bot.services.recommend.learner.fit`); ``grouped``: it is a group of the person's own 👍
        (a library), whose 👎 weigh ``grouped_dislike_weight``; ``narrowed``: its topic was narrowed by a
        paper the person named."""
        params, space = self.params, self.space
        if not self.space_ready():
            return None
        coords = space.coords  # papers not placed yet (the runtime does, once ingest is quiet) have none
        n = len(coords)
        topic_match = self.topic_match(topic_query, n)

        dislike_weight = params.grouped_dislike_weight if grouped else params.dislike_weight
        rated = self._rated(signals, n, now, dislike_weight)
        if not rated:
            return None
        labels = dict(rated)
        for paper_id in seen:
            slot = self.slot(paper_id, n)
            if slot is not None and slot not in labels:
                labels[slot] = (0.0, params.ignored_weight)
        background, background_words = self._background()
        each = params.background_weight / params.background
        slots = np.array([*labels, *background], dtype=np.int64)
        # a paper of the sample that the person rated or was shown counts as that, not twice
        values = [*labels.values(), *((0.0, 0.0 if int(s) in labels else each) for s in background)]

        papers = self.index.doc_weights(self.index.slot_ids[np.array(list(labels), dtype=np.int64)].tolist())
        indptr, terms, _ = papers
        # the words of the rated papers are the model's words (a word no rated paper has would only
        # be pushed down a little by the background; leaving it out keeps the fit small)
        columns = np.unique(terms[: indptr[len(rated)]])
        liked = any(label > 0 for label, _ in rated.values())
        examples = Examples(
            words=sp.vstack([unit_rows(papers, columns), _columns(background_words, columns)], format="csr"),
            terms=columns,
            coords=coords[slots],
            topic_match=topic_match[slots],
            labels=np.array([v[0] for v in values]),
            weights=np.array([v[1] for v in values]),
            rated=len(rated),
        )
        model = fit(examples, params, liked=liked, several=several, narrowed=narrowed)
        return Fitted(model, topic_match, liked, narrowed)

    def topic_match(self, topic_query: Mapping[str, float], n: int) -> FloatArray:
        """Every placed paper's BM25 match to the typed words, scaled to 0–1 by the best match (a
        whole-corpus scan: kept for the last ``TOPIC_MATCHES`` topics until the index or space moves,
        as many people follow the same topics)."""
        if not topic_query:
            return np.zeros(n)
        generation = (n, self.index.n_slots, len(self.index))
        if generation != self._matches_of:
            self._matches.clear()
            self._matches_of = generation
        key = tuple(sorted(topic_query.items()))
        match = self._matches.get(key)
        if match is None:
            raw = self.index.score_array(dict(topic_query))[:n]
            best = float(raw.max()) if len(raw) else 0.0
            dense = (raw / best if best > 0 else np.zeros(n)).astype(np.float32)
            match = _packed(dense)
            self._matches[key] = match
            if len(self._matches) > TOPIC_MATCHES:
                self._matches.popitem(last=False)
        else:
            self._matches.move_to_end(key)
        return _unpacked(match, n)

    def _background(self) -> tuple[IntArray, sp.csr_matrix]:
        """The background sample's slots and their unit BM25 rows over every term id, kept until the
        space or the index moves (every person's fit reads them)."""
        slots = self.space.background(self.params.background)
        key = (self.space.placed, self.index.n_slots, len(self.index))
        if self._background_rows is None or self._background_rows[0] != key:
            papers = self.index.doc_weights(self.index.slot_ids[slots].tolist())
            terms = papers[1]
            columns = np.arange(int(terms.max(initial=-1)) + 1, dtype=np.int64)
            self._background_rows = (key, slots, unit_rows(papers, columns))
        return self._background_rows[1], self._background_rows[2]

    def _rated(
        self, signals: Sequence[FeedbackRow], n: int, now: datetime, dislike_weight: float
    ) -> dict[int, tuple[float, float]]:
        """slot → (label, weight) of each rated paper the space has placed: wanted (:func:`wanted`) or
        not, counting less with age."""
        times: dict[int, str] = {}
        for row in signals:
            times[row.paper_id] = max(times.get(row.paper_id, row.created_at), row.created_at)
        liked = {paper_id for paper_id, _ in wanted(signals)}
        rated: dict[int, tuple[float, float]] = {}
        for paper_id, when in times.items():
            slot = self.slot(paper_id, n)
            if slot is None:
                continue
            age = decay(when, now, self.params.half_life_days)
            rated[slot] = (1.0, age) if paper_id in liked else (0.0, age * dislike_weight)
        return rated

    def word_scores(self, model: PersonModel, slots: IntArray) -> FloatArray:
        """The words' part of the model's logit for the papers in these slots."""
        return model.word_scores(self.index.doc_weights(self.index.slot_ids[slots].tolist()))

    def scores(self, fitted: Fitted, slots: IntArray) -> FloatArray:
        """The model's whole logit for the papers in these slots (placed ones)."""
        place = fitted.model.place_scores(self.space.coords[slots], fitted.topic_match[slots])
        return place + self.word_scores(fitted.model, slots)

    def words(
        self, model: PersonModel, n: int, near: IntArray, *, rated: Sequence[int] = ()
    ) -> tuple[WeightedWords, WeightedWords]:
        """The words the model counts most for and against a paper, with their weights, strongest
        first: words of the field, not the stray rare words of one liked paper ("obviates", a name).
        A word is shown when it is over-represented among ``near`` (slots of the papers the model
        ranks best, or that lie closest to what was 👎'd): in at least ``MIN_WORD_PAPERS`` of them and
        ``FIELD_SUPPORT`` of them, ``MIN_LIFT`` times as often as in the corpus, and its papers lie
        together in the paper space (``CONCENTRATION``: not "despite", "learning"; none where the corpus
        is too small for that test, ``CONCENTRATION_PAPERS_PER_DIM``). The papers the person rated
        (``rated``, slots) are not counted among ``near``: a word only they hold says what they hold,
        not the field. No numbers."""
        coords = self.space.coords
        if coords.ndim != 2 or len(coords) < CONCENTRATION_PAPERS_PER_DIM * coords.shape[1]:
            return (), ()  # too few papers to tell a field's words from general English: none shown
        if len(rated):
            near = near[~np.isin(near, np.asarray(rated, dtype=np.int64))]
        field = self._over_represented(model.terms, near)
        field &= [not self.index.term_name(int(t)).isdigit() for t in model.terms]  # "7" is no word
        candidates = np.flatnonzero(field)
        field[candidates] = self._concentrated(model.terms[candidates])

        def named(pairs: Iterable[tuple[int, float]]) -> WeightedWords:
            return tuple((self.shown(self.index.term_name(t)), round(w, 2)) for t, w in pairs)

        kept = PersonModel(model.terms[field], model.term_weights[field], model.coord_weights, 0.0, 0.0)
        return (
            named(kept.strongest_words(n, positive=True)),
            named(kept.strongest_words(n, positive=False)),
        )

    def _over_represented(self, terms: IntArray, near: IntArray) -> npt.NDArray[np.bool_]:
        if not len(terms) or not len(near):
            return np.zeros(len(terms), dtype=bool)
        _, near_terms, _ = self.index.doc_weights(self.index.slot_ids[near].tolist())
        counts = np.bincount(near_terms, minlength=int(max(terms.max(), near_terms.max(initial=0))) + 1)[
            terms
        ]
        share_near = counts / len(near)
        papers = len(self.index)
        df = self.index.doc_freqs(terms)
        share_corpus = df / max(1, papers)
        rare_but_near = (counts >= NEAR_DF_SHARE * df) & (counts >= RARE_WORD_PAPERS)
        shared = (counts >= FIELD_SUPPORT * len(near)) | rare_but_near
        return np.asarray(
            (counts >= MIN_WORD_PAPERS) & shared & (share_near >= MIN_LIFT * share_corpus), dtype=bool
        )

    def _concentrated(self, terms: IntArray) -> npt.NDArray[np.bool_]:
        """Whether the papers holding each term lie together in the paper space (``CONCENTRATION``)."""
        out = np.zeros(len(terms), dtype=bool)
        if not len(terms):
            return out
        unit, mean_square = self._unit_coords()
        n = len(unit)
        for k, term in enumerate(terms.tolist()):
            holding = self.index.score_array({self.index.term_name(term): 1.0})[:n] > 0
            count = int(np.count_nonzero(holding))
            if count:
                length = float(np.linalg.norm(unit[holding].mean(axis=0)))
                at_random = math.sqrt(mean_square + (1.0 - mean_square) / count)
                out[k] = length >= CONCENTRATION * at_random
        return out

    def _unit_coords(self) -> tuple[FloatArray, float]:
        """Every placed paper's coordinates at unit length, and the squared length of their mean."""
        coords = self.space.coords
        array = coords if coords.base is None else coords.base  # (a view of the space's array)
        if self._unit is None or self._unit[0] is not array or self._unit[1] != len(coords):
            unit = coords.astype(np.float64)
            unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
            mean = unit.mean(axis=0) if len(unit) else np.zeros(unit.shape[1])
            self._unit = (array, len(coords), unit, float(mean @ mean))
        return self._unit[2], self._unit[3]


#: a topic's match to every placed paper: dense, or the slots with a match and their values
_Match = npt.NDArray[np.float32] | tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]


def _packed(match: npt.NDArray[np.float32]) -> _Match:
    """``match`` as kept: most topics match a small share of the papers, so their nonzero slots and
    values (8 bytes each) take less than the dense array (4 bytes a paper) when under half are nonzero."""
    slots = np.flatnonzero(match)
    if 2 * len(slots) >= len(match):
        match.flags.writeable = False
        return match
    return slots.astype(np.int32), match[slots]


def _unpacked(match: _Match, n: int) -> FloatArray:
    """The dense float64 match again, the same values."""
    if not isinstance(match, tuple):
        return np.asarray(match, dtype=np.float64)
    slots, values = match
    dense = np.zeros(n)
    dense[slots] = values
    return dense
