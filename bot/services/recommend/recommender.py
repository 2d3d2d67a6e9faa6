"""Personal recommendations, and search results ordered for a person.

For a person with reactions, :meth:`Recommender.recommend` fits their model
(:mod:`bot.services.recommend.learner`, :mod:`bot.services.recommend.person_models`) over every paper's words, its place
in the field (:mod:`bot.services.recommend.paper_space`) and the BM25 match of their typed topics, scores every
paper with it, takes the best unseen ones, nudges newer papers up, picks (exploring until the first
👍, :func:`bot.services.recommend.learner.choose`), skips
near-copies of a paper already picked (overlap of their distinctive terms, or the same title), and
explains each pick: "matched: <topic words it has> · like: <the liked paper it lies closest to>".

Without reactions (and for a channel's feed) the topics alone rank, through the search engine: the
profile query (see :mod:`bot.services.recommend.profile`) picks a pool of candidates, which must match enough
of the query ("nothing good" otherwise), with the same recency, near-copy guard and reasons.

:meth:`Recommender.personal_order` lets the model reorder a search's close matches, and
:meth:`Recommender.model_words` says what it learned, in words. ``bench/recommend_eval.py`` measures
it on simulated people the settings never saw.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.services.recommend.learner import DEFAULT_LEARNING, LearningParams, choose, rows_and_lengths
from bot.services.recommend.paper_space import PaperSpace
from bot.services.recommend.person_models import Fitted, IndexedPapers, PersonModels, wanted
from bot.services.recommend.profile import (
    DEFAULT_PARAMS,
    PaperVector,
    Profile,
    ProfileService,
    RankingParams,
    Source,
    VectorCache,
    topic_terms,
)
from storage.db import Database
from storage.models import Paper
from storage.repositories.feedback import FeedbackRepository, FeedbackRow
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

REASON_TERMS: Final = 3
REASON_TITLE_CHARS: Final = 60
MIN_SOURCE_SIMILARITY: Final = 0.05  # below this (decayed cosine) a liked paper is not named as the reason
DUPLICATE_TERMS: Final = 12  # distinctive terms compared by the near-copy guard
MIN_LIKE_COSINE: Final = 0.05  # a liked paper closer than this (in the paper space) is named as the reason
SEARCH_CLOSE: Final = 0.7  # search results scoring this share of the best are reordered by the person's model

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class Hit(Protocol):
    @property
    def paper_id(self) -> int: ...

    @property
    def score(self) -> float: ...


class RecommendationEngine(Protocol):
    """What the recommender needs from the search engine (``paperindex.engine.SearchEngine``)."""

    def weighted(
        self,
        query: Mapping[str, float],
        *,
        limit: int,
        exclude: Collection[int] = (),
        allowed: Collection[int] | None = None,
        matched: bool = True,
    ) -> Sequence[Hit]: ...

    def title(self, paper_id: int) -> str: ...


class TermIndex(IndexedPapers, Protocol):
    """Per-term and per-paper statistics of the BM25 index (``paperindex.index.BM25Index``): what
    the person models read, and more."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    @property
    def alive(self) -> npt.NDArray[np.bool_]: ...

    def __contains__(self, doc_id: object) -> bool: ...

    def idf(self, term: str) -> float: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...

    def term_ids(self, terms: Iterable[str]) -> IntArray: ...

    def matched_terms(self, doc_id: int, terms: Iterable[str]) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Recommendation:
    paper_id: int
    score: float
    reason: str  # "matched: quantization, kv cache · like: <short title>"


@dataclass(frozen=True, slots=True)
class PopularPaper:
    paper_id: int
    votes: int  # likes + saves − dislikes


@dataclass(frozen=True, slots=True)
class PersonalPicks:
    """What `/paper recommend` shows: personal picks, or a start for someone without a profile.

    status: "picks" (personal picks), "popular" (no profile yet: the server's most liked papers),
    "no_profile" (no profile and nothing popular), "nothing_new" (a profile, but nothing unseen
    clears the bar).
    """

    status: str
    picks: tuple[Recommendation, ...] = ()
    popular: tuple[PopularPaper, ...] = ()


_TITLE_WORD = re.compile(r"\w+")


def _title_key(title: str) -> str:
    return " ".join(_TITLE_WORD.findall(title.casefold()))


def _short_title(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= REASON_TITLE_CHARS else title[: REASON_TITLE_CHARS - 1].rstrip() + "…"


def _date(published: str | None, year: int | None) -> date | None:
    if published:
        try:
            return date.fromisoformat(published[:10])
        except ValueError:
            pass
    if year:
        try:
            return date(int(year), 7, 1)
        except ValueError:
            return None
    return None


def paper_date(paper: Paper) -> date | None:
    """When the paper came out: its `published` date, else the middle of its year."""
    return _date(paper.published, paper.year)


def _ordinal(published: str | None, year: int | None) -> int:
    """date.toordinal() of :func:`paper_date`, 0 when unknown."""
    day = _date(published, year)
    return 0 if day is None else day.toordinal()


def _title_hash(title: str) -> int:
    """A number standing for the title's words (same words, same number; 0 for no words)."""
    key = _title_key(title)
    return (hash(key) or 1) if key else 0


def recency_factor(published: date | None, today: date, params: RankingParams) -> float:
    """1.0 for a paper out today, falling smoothly to `recency_floor` for very old papers.

    A paper with no known date is treated as one half-life old.
    """
    age = params.recency_half_life_days if published is None else max(0, (today - published).days)
    floor = params.recency_floor
    return float(floor + (1.0 - floor) * 0.5 ** (age / params.recency_half_life_days))


def jaccard(a: frozenset[str] | frozenset[int], b: frozenset[str] | frozenset[int]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


class _TermTable:
    """Term id → position lookups by one gather from a reusable array (no sorting, no binary search).

    ``positions(keys, values)``: for each value, the index of the equal key, else -1 (keys distinct and
    ≥ 0). The array is left all -1 between calls, so a call costs O(len(keys) + len(values)).
    """

    def __init__(self) -> None:
        self._table = np.full(0, -1, dtype=np.int64)

    def positions(self, keys: IntArray, values: IntArray) -> IntArray:
        if not len(keys) or not len(values):
            return np.full(len(values), -1, dtype=np.int64)
        top = max(int(keys.max()), int(values.max())) + 1
        if top > len(self._table):
            self._table = np.full(max(top, 2 * len(self._table)), -1, dtype=np.int64)
        table = self._table
        table[keys] = np.arange(len(keys))
        try:
            return table[values]
        finally:
            table[keys] = -1


def _group_similarity(sims: FloatArray, k: int) -> FloatArray:
    """Per candidate (row): the mean of its k largest similarities (fewer columns: all of them)."""
    if sims.shape[1] == 0:
        return np.zeros(sims.shape[0])
    k = min(k, sims.shape[1])
    if k < sims.shape[1]:
        sims = -np.partition(-sims, k - 1, axis=1)[:, :k]
    return np.asarray(sims.mean(axis=1), dtype=np.float64)


@dataclass(slots=True)
class _Pool:
    """The candidate pool's terms as flat arrays (row = candidate, sorted), from the index."""

    ids: list[int]
    indptr: IntArray
    row: IntArray
    terms: IntArray  # index term id of each (candidate, term)
    weights: FloatArray  # its BM25 weight in the candidate
    unit: FloatArray  # the weight divided by the candidate's vector norm

    def top_terms(self, n: int, k: int = DUPLICATE_TERMS) -> frozenset[int]:
        """The candidate's k distinctive terms (largest BM25 weights), for the near-copy guard."""
        lo, hi = int(self.indptr[n]), int(self.indptr[n + 1])
        terms, weights = self.terms[lo:hi], self.weights[lo:hi]
        if hi - lo > k:
            terms = terms[np.argpartition(-weights, k - 1)[:k]]
        return frozenset(terms.tolist())


NO_VECTOR: Final = PaperVector({}, {})


def best_of(candidates: IntArray, scores: FloatArray, k: int) -> IntArray:
    """The ``k`` candidates with the best scores (all of them if there are no more), in no order."""
    if len(candidates) <= k:
        return candidates
    return candidates[np.argpartition(-scores[candidates], k)[:k]]


def values_of(values: IntArray, paper_ids: IntArray) -> IntArray:
    """values[paper_ids], 0 for ids past the end (papers indexed after the last sync)."""
    inside = paper_ids < len(values)
    if not len(values):
        return np.zeros(len(paper_ids), dtype=np.int64)
    return np.where(inside, values[np.where(inside, paper_ids, 0)], 0)


class Recommender:
    def __init__(
        self,
        db: Database,
        engine: RecommendationEngine,
        index: TermIndex,
        *,
        params: RankingParams = DEFAULT_PARAMS,
        learning: LearningParams = DEFAULT_LEARNING,
        clock: Callable[[], datetime] | None = None,
        profiles: ProfileService | None = None,
        space: PaperSpace | None = None,
    ) -> None:
        self.engine = engine
        self.index = index
        self.params = params
        self.learning = learning
        self.space = space or PaperSpace(index)
        self.models = PersonModels(index, self.space, learning)
        self.feedback = FeedbackRepository(db)
        self.papers = PaperRepository(db)
        self._clock = clock or (lambda: datetime.now(UTC))
        self.profiles = profiles or ProfileService(
            db,
            index,
            params=params,
            clock=self._clock,
            vectors=VectorCache(index, top_k=params.terms_per_paper, documents=index),
        )
        self._day = np.zeros(0, dtype=np.int64)  # by paper id: date ordinal, 0 = unknown
        self._title_hash = np.zeros(0, dtype=np.int64)  # by paper id: hash of the title key, 0 = none
        self._synced_slots = 0
        self._idfs: dict[str, float] = {}
        self._table = _TermTable()
        self._generation: tuple[int, int] = (-1, -1)
        self.profiles.model_words = self.model_words

    # -- public API -----------------------------------------------------------------------------

    async def recommend(
        self,
        user_id: int | None,
        *,
        count: int,
        topics: Sequence[str] = (),
        exclude: Collection[int] = (),
        now: datetime | None = None,
        mark_shown: bool = True,
    ) -> list[Recommendation]:
        """Up to `count` unseen papers for the user (or, with None, for a channel's `topics`).

        Returns fewer — possibly none — when nothing clears the bar; the caller says so.
        A user with no topics and no feedback gets nothing (see :meth:`popular`).
        """
        if count <= 0:
            return []
        now = now or self._clock()
        if user_id is None:
            profile = await self.profiles.from_rows((), (), extra_topics=topics, now=now)
            seen: set[int] = set()
        else:
            # One read for topics, reactions and what the user has seen. With reactions, the learned
            # model ranks and needs only the topics of the profile (its learned terms are Rocchio's).
            own_topics, signals, seen = await self.feedback.learning_inputs(user_id)
            profile = await self.profiles.from_rows(own_topics, (), extra_topics=topics, now=now)
        skip = seen | set(exclude) if exclude else seen
        if user_id is not None and signals:
            picks = await self.rank_learned(profile, signals, seen, count=count, exclude=skip, now=now)
            if picks is None:  # nothing to learn from yet: the profile of topics and reactions
                profile = await self.profiles.from_rows(own_topics, signals, extra_topics=topics, now=now)
                picks = [] if profile.empty else await self.rank(profile, count=count, exclude=skip, now=now)
        elif profile.empty:
            return []
        else:
            picks = await self.rank(profile, count=count, exclude=skip, now=now)
        if mark_shown and user_id is not None and picks:
            await self.feedback.mark_shown(
                user_id, [p.paper_id for p in picks], at=now.astimezone(UTC).isoformat(timespec="seconds")
            )
        return picks

    async def ranking(self, user_id: int, *, now: datetime) -> list[int]:
        """Every unseen indexed paper's id, in the order the person's model ranks them (best first):
        what the model would pick from, beyond the few it shows (the evaluation's average precision
        reads it). Without reactions, the typed topics' BM25 match orders them."""
        topics, signals, seen = await self.feedback.learning_inputs(user_id)
        topic_query, _ = topic_terms(topics, self.params.topic_weight)
        fitted = await self._fit(topic_query, signals, seen, now=now) if signals else None
        slots = np.flatnonzero(self.index.alive[: self.index.n_slots])
        ids = self.index.slot_ids[slots]
        if seen:
            keep = ~np.isin(ids, np.fromiter(seen, dtype=np.int64, count=len(seen)))
            slots, ids = slots[keep], ids[keep]
        scores = np.full(len(slots), -np.inf)
        first = np.zeros(len(slots), dtype=bool)  # the papers whose words were scored lead
        if fitted is not None:
            placed = np.flatnonzero(slots < len(self.space.coords))
            at = slots[placed]
            scores[placed] = fitted.model.place_scores(self.space.coords[at], fitted.topic_match[at])
            best = placed[np.argsort(-scores[placed], kind="stable")[: self.learning.pool]]
            scores[best] += self.models.word_scores(fitted.model, slots[best])
            first[best] = True
        elif topic_query:
            scores = self.index.score_array(dict(topic_query))[slots]
        order = np.lexsort((ids, -scores, ~first))
        return [int(i) for i in ids[order]]

    async def personal(
        self, user_id: int, *, guild_id: int | None, count: int, mark_shown: bool = True
    ) -> PersonalPicks:
        """`/paper recommend`: personal picks, else the server's popular papers, else why not. Without
        ``mark_shown`` the picks stay unseen until :meth:`mark_shown` (once the answer went out)."""
        picks = await self.recommend(user_id, count=count, mark_shown=mark_shown)
        if picks:
            return PersonalPicks("picks", picks=tuple(picks))
        profile = await self.profiles.profile(user_id)
        if not profile.empty:
            return PersonalPicks("nothing_new")
        popular = await self.popular(guild_id=guild_id, count=count, user_id=user_id)
        if popular:
            return PersonalPicks("popular", popular=tuple(popular))
        return PersonalPicks("no_profile")

    async def mark_shown(self, user_id: int, paper_ids: Sequence[int]) -> None:
        """The person saw these picks: they are not recommended again."""
        stamp = self._clock().astimezone(UTC).isoformat(timespec="seconds")
        await self.feedback.mark_shown(user_id, paper_ids, at=stamp)

    async def popular(
        self, *, guild_id: int | None, count: int, user_id: int | None = None
    ) -> list[PopularPaper]:
        """The papers people here liked and saved most (a start for someone with no profile)."""
        skip = await self.feedback.seen_ids(user_id) if user_id is not None else set()
        rows = await self.feedback.popular(guild_id=guild_id, limit=count, exclude=skip)
        return [PopularPaper(paper_id, votes) for paper_id, votes in rows]

    # -- ranking --------------------------------------------------------------------------------

    async def rank(
        self, profile: Profile, *, count: int, exclude: Collection[int], now: datetime
    ) -> list[Recommendation]:
        """Rank unseen papers for a profile (no database writes)."""
        params = self.params
        self._check_generation()
        query = profile.query()
        positive = {t: w for t, w in query.items() if w > 0}
        if not positive:
            return []
        # Stage 1: the strongest positive terms pick a pool of candidates (fast top-k on the index);
        # the pool is then scored with the whole query from its own term arrays.
        limit = max(6 * count, params.pool)
        probe = positive
        if len(positive) > params.probe_terms:
            strongest = sorted(positive, key=lambda t: (-positive[t] * self._idf(t), t))
            kept = set(strongest[: params.probe_terms]) | set(profile.topic_terms)
            probe = {t: w for t, w in positive.items() if t in kept}
        hits = [
            h for h in self.engine.weighted(probe, limit=limit, exclude=exclude, matched=False) if h.score > 0
        ]
        if not hits:
            return []
        try:
            pool = self._pool([h.paper_id for h in hits])
        except KeyError:  # a paper left the index since the query
            hits = [h for h in hits if h.paper_id in self.index]
            pool = self._pool([h.paper_id for h in hits])
        n = len(hits)

        # Stage 2, on the pool's term arrays: the bar, disliked terms, similarity to rated papers.
        terms = list(query)
        q_weight = np.fromiter(query.values(), dtype=np.float64, count=len(terms))
        q_idf = np.fromiter(map(self._idf, terms), dtype=np.float64, count=len(terms))
        q_ids = self.index.term_ids(terms)
        known = np.flatnonzero(q_ids >= 0)
        at = self._table.positions(q_ids[known], pool.terms)
        at = np.where(at >= 0, known[np.maximum(at, 0)], -1)
        in_query = at >= 0
        rows, where, weights = pool.row[in_query], at[in_query], pool.weights[in_query]
        is_positive = q_weight[where] > 0
        mass = float(np.sum((q_weight * q_idf)[q_weight > 0])) or 1.0
        coverage = (
            np.bincount(rows[is_positive], weights=(q_weight * q_idf)[where[is_positive]], minlength=n) / mass
        )
        # Σ weight · BM25 of the term, positive and negative terms alike (as the engine would score it)
        score = np.asarray(
            np.bincount(rows, weights=q_weight[where] * weights, minlength=n), dtype=np.float64
        )

        liked = self._strongest([s for s in profile.sources if s.signal != "dislike"])
        disliked = self._strongest([s for s in profile.sources if s.signal == "dislike"])
        sims = self._similarities(pool, [*liked, *disliked], n)
        like_sims = sims[:, : len(liked)]
        if liked and params.like_boost:
            score *= 1.0 + params.like_boost * _group_similarity(like_sims, params.similar_k)
        if disliked and params.dislike_penalty:
            closeness = _group_similarity(sims[:, len(liked) :], params.similar_k)
            score *= np.maximum(0.0, 1.0 - params.dislike_penalty * closeness)

        keep = np.flatnonzero((coverage >= params.min_coverage) & (score > 0))
        if not len(keep):
            return []
        await self._sync_dates()
        ids = np.asarray(pool.ids, dtype=np.int64)[keep]
        final = score[keep] * self._recency(ids, now.astimezone(UTC).date().toordinal())
        title_hashes = values_of(self._title_hash, ids)

        picked: list[tuple[float, int, int]] = []  # (score, paper id, pool row)
        tops: list[frozenset[int]] = []
        titles: set[int] = set()
        for k in np.lexsort((ids, -final)).tolist():
            title = int(title_hashes[k])
            if title and title in titles:
                continue
            i = int(keep[k])
            top = pool.top_terms(i)
            if any(jaccard(top, other) >= params.duplicate_jaccard for other in tops):
                continue
            picked.append((float(final[k]), int(ids[k]), i))
            tops.append(top)
            titles.add(title)
            if len(picked) == count:
                break

        # Reasons: the query words each pick matched, and the liked paper it is closest to.
        found_rows, found_terms = rows[is_positive], where[is_positive]
        idf = dict(zip(terms, q_idf.tolist(), strict=True))
        named: list[Source | None] = []
        for _, _, i in picked:
            best = int(np.argmax(like_sims[i])) if liked else -1
            named.append(liked[best] if best >= 0 and like_sims[i, best] >= MIN_SOURCE_SIMILARITY else None)
        titles_of = await self._short_titles([s.paper_id for s in named if s is not None])
        picked_rows = np.array([i for _, _, i in picked], dtype=np.int64)
        starts = np.searchsorted(found_rows, picked_rows).tolist()
        ends = np.searchsorted(found_rows, picked_rows, "right").tolist()
        picks: list[Recommendation] = []
        for (value, paper_id, _), source, lo, hi in zip(picked, named, starts, ends, strict=True):
            matched = [terms[t] for t in found_terms[lo:hi].tolist()]
            named_title = titles_of.get(source.paper_id) if source is not None else None
            reason = self._reason(profile, matched, query, idf, source, named_title)
            picks.append(Recommendation(paper_id, round(value, 4), reason))
        return picks

    async def rank_learned(
        self,
        profile: Profile,
        signals: Sequence[FeedbackRow],
        seen: Collection[int],
        *,
        count: int,
        exclude: Collection[int],
        now: datetime,
    ) -> list[Recommendation] | None:
        """Rank unseen papers by the person's model over the whole corpus (no database writes); None
        when there is no model to rank with (:meth:`PersonModels.fit`)."""
        fitted = await self._fit(profile.topic_terms, signals, seen, now=now)
        if fitted is None:
            return None
        learning = self.learning
        coords = self.space.coords
        n = len(coords)
        scores = fitted.model.place_scores(coords, fitted.topic_match)
        open_ = self.index.alive[:n].copy()
        if exclude:
            open_ &= ~np.isin(
                self.index.slot_ids[:n], np.fromiter(exclude, dtype=np.int64, count=len(exclude))
            )
        candidates = np.flatnonzero(open_)
        if not len(candidates):
            return []
        size = learning.candidates if fitted.liked else learning.candidates_unliked
        if not fitted.liked and profile.topic_terms and learning.unliked_match:
            # exploring a broad field stays inside it: the typed topics bound where it looks
            within = candidates[fitted.topic_match[candidates] >= learning.unliked_match]
            candidates = within if len(within) else candidates
        # the words, on the papers best by their place and topic match
        candidates = best_of(candidates, scores, max(size, learning.pool))
        scores[candidates] += self.models.word_scores(fitted.model, candidates)
        candidates = best_of(candidates, scores, size)
        await self._sync_dates()
        ids = self.index.slot_ids[candidates]
        # newer papers first among near-equals: the recency factor's log (0 to −0.16) as a nudge, in
        # units of the candidates' spread (a model of one 👍 tells its candidates apart by hundredths)
        spread = float(np.std(scores[candidates])) if len(candidates) > 1 else 0.0
        scores[candidates] += spread * np.log(self._recency(ids, now.astimezone(UTC).date().toordinal()))
        exploration = learning.exploration if fitted.liked else learning.exploration_unliked
        disliked = {s.paper_id for s in signals if s.signal == "dislike"}
        avoid = coords[[slot for paper_id in disliked if (slot := self.models.slot(paper_id, n)) is not None]]
        order = choose(scores, coords, candidates.tolist(), 2 * count, exploration, avoid)

        pool = self._pool([int(self.index.slot_ids[s]) for s in order])
        picked: list[tuple[int, int]] = []  # (slot, pool row)
        tops: list[frozenset[int]] = []
        titles: set[int] = set()
        hashes = values_of(self._title_hash, np.asarray(pool.ids, dtype=np.int64)).tolist()
        for row, slot in enumerate(order):
            top = pool.top_terms(row)
            if (hashes[row] and hashes[row] in titles) or any(
                jaccard(top, other) >= self.params.duplicate_jaccard for other in tops
            ):
                continue
            picked.append((slot, row))
            tops.append(top)
            titles.add(hashes[row])
            if len(picked) == count:
                break

        # Reasons: the topic words a pick matches, and the liked paper it lies closest to.
        liked = [Source(paper_id, signal, 1.0, NO_VECTOR) for paper_id, signal in wanted(signals)]
        liked_slots = [
            (source, at) for source in liked if (at := self.models.slot(source.paper_id, n)) is not None
        ]
        closest: list[Source | None] = []
        for slot, _ in picked:
            if not liked_slots:
                closest.append(None)
                continue
            sims = coords[[s for _, s in liked_slots]] @ coords[slot]
            best_at = int(np.argmax(sims))
            closest.append(liked_slots[best_at][0] if sims[best_at] >= MIN_LIKE_COSINE else None)
        titles_of = await self._short_titles([s.paper_id for s in closest if s is not None])
        topic_query = dict(profile.topic_terms)
        idf = {t: self._idf(t) for t in topic_query}
        picks: list[Recommendation] = []
        for (slot, _), source in zip(picked, closest, strict=True):
            paper_id = int(self.index.slot_ids[slot])
            matched = self.index.matched_terms(paper_id, topic_query) if topic_query else []
            named = titles_of.get(source.paper_id) if source is not None else None
            reason = self._reason(profile, matched, topic_query, idf, source, named)
            picks.append(Recommendation(paper_id, round(float(scores[slot]), 4), reason))
        return picks

    async def personal_order(
        self, user_id: int, paper_ids: Sequence[int], scores: Sequence[float]
    ) -> list[int] | None:
        """Search results reordered for the person: the close matches (BM25 within ``SEARCH_CLOSE``
        of the best) by the person's model, best first; the rest keep their place. None — today's
        order — when learning is paused or the person has no reactions."""
        if len(paper_ids) < 2 or self._index_busy() or not await self.feedback.learns_from_reactions(user_id):
            return None
        topics, signals, seen = await self.feedback.learning_inputs(user_id)
        if not signals:  # the reactions were taken back since the read above
            return None
        now = self._clock()
        topic_query, _ = topic_terms(topics, self.params.topic_weight)
        # A search must answer within Discord's 3 s: while another thread holds the index (an
        # ingest adding a batch), the engine's own order it is.
        fitted = await self._fit(topic_query, signals, seen, now=now, wait=False)
        if fitted is None:
            return None
        n = len(self.space.coords)
        slots = [self.models.slot(paper_id, n) for paper_id in paper_ids]
        best = max(scores)
        close = [i for i, score in enumerate(scores) if score >= SEARCH_CLOSE * best and slots[i] is not None]
        if len(close) < 2:
            return None
        taste = self.models.scores(fitted, np.array([slots[i] for i in close], dtype=np.int64))
        reordered = [close[k] for k in np.lexsort((np.arange(len(close)), -taste)).tolist()]
        order = list(range(len(paper_ids)))
        for place, index in zip(sorted(close), reordered, strict=True):
            order[place] = index
        return [paper_ids[i] for i in order]

    async def model_words(
        self, user_id: int, n: int, now: datetime
    ) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]]:
        """What `/paper interests show` lists: the person's model's strongest words for and against."""
        topics, signals, seen = await self.feedback.learning_inputs(user_id)
        if not signals:
            return (), ()
        fitted = await self._fit(topic_terms(topics, self.params.topic_weight)[0], signals, seen, now=now)
        if fitted is None:
            return (), ()
        liked, disliked = self.models.words(fitted.model, n)
        return liked, disliked[: max(1, n // 2)]

    async def _fit(
        self,
        topic_query: Mapping[str, float],
        signals: Sequence[FeedbackRow],
        seen: Collection[int],
        *,
        now: datetime,
        wait: bool = True,
    ) -> Fitted | None:
        """The person's model (:meth:`PersonModels.fit`), fitted in a worker thread: a fit reads the
        whole corpus (tens of milliseconds at 100k papers), which nobody else's answer should wait
        for. It holds the index's lock, so an ingest never changes the index under it; without
        ``wait``, None while another thread holds it."""

        def fit() -> Fitted | None:
            if not self.index.lock.acquire(blocking=wait):
                return None
            try:
                return self.models.fit(topic_query, signals, seen, now=now)
            finally:
                self.index.lock.release()

        return await asyncio.to_thread(fit)

    def _index_busy(self) -> bool:
        """Another thread (an ingest adding a batch) holds the index right now."""
        if not self.index.lock.acquire(blocking=False):
            return True
        self.index.lock.release()
        return False

    def _pool(self, paper_ids: list[int]) -> _Pool:
        papers = self.index.doc_weights(paper_ids)
        indptr, terms, weights = papers
        row, norms = rows_and_lengths(papers)
        return _Pool(paper_ids, indptr, row, terms, weights, weights / norms[row])

    def _strongest(self, sources: list[Source]) -> list[Source]:
        """The `max_sources` rated papers that count most (recent first), as the similarity uses them."""
        if len(sources) > self.params.max_sources:
            sources = sorted(sources, key=lambda s: (-s.weight, s.paper_id))[: self.params.max_sources]
        return sources

    def _source_vectors(self, sources: Sequence[Source]) -> list[tuple[IntArray, FloatArray]]:
        """Each rated paper's unit BM25 vector over all its terms (index), else its profile vector."""
        indexed = [s.paper_id for s in sources if s.paper_id in self.index]
        full = self._pool(indexed)
        row_of = {paper_id: k for k, paper_id in enumerate(indexed)}
        vectors: list[tuple[IntArray, FloatArray]] = []
        for source in sources:
            k = row_of.get(source.paper_id)
            if k is not None:
                lo, hi = int(full.indptr[k]), int(full.indptr[k + 1])
                vectors.append((full.terms[lo:hi], full.unit[lo:hi]))
                continue
            ids = self.index.term_ids(source.vector.weights)
            values = np.fromiter(source.vector.weights.values(), dtype=np.float64, count=len(ids))
            vectors.append((ids[ids >= 0], values[ids >= 0]))
        return vectors

    def _similarities(self, pool: _Pool, sources: Sequence[Source], n: int) -> FloatArray:
        """n × len(sources): decayed cosine of each candidate with each rated paper's vector."""
        if not sources:
            return np.zeros((n, 0))
        arrays = self._source_vectors(sources)
        src_terms = np.concatenate([ids for ids, _ in arrays])
        src_values = np.concatenate(
            [values * source.weight for (_, values), source in zip(arrays, sources, strict=True)]
        )
        src_of = np.repeat(np.arange(len(sources)), [len(ids) for ids, _ in arrays])
        # Sources × their terms as a dense matrix over the terms the pool shares with them, times the
        # pool's unit vectors over the same terms.
        terms, column = np.unique(src_terms, return_inverse=True)
        where = self._table.positions(terms, pool.terms)
        shared = where >= 0
        if not shared.any():
            return np.zeros((n, len(sources)))
        used, slot = np.unique(where[shared], return_inverse=True)
        remap = np.full(len(terms), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        keep = remap[column] >= 0
        rated = np.zeros((len(sources), len(used)))
        rated[src_of[keep], remap[column[keep]]] = src_values[keep]
        candidates = np.zeros((n, len(used)))
        candidates[pool.row[shared], slot] = pool.unit[shared]
        return np.asarray(candidates @ rated.T, dtype=np.float64)

    def _check_generation(self) -> None:
        """Forget cached idf values once papers were added, changed or removed.

        A changed paper is indexed again in a new slot and a removed one lowers the live count, so
        (slots, live papers) moves whenever the index does.
        """
        generation = (self.index.n_slots, len(self.index))
        if generation != self._generation:
            self._generation = generation
            self._idfs.clear()

    def _idf(self, term: str) -> float:
        idf = self._idfs.get(term)
        if idf is None:
            idf = self._idfs[term] = self.index.idf(term)
        return idf

    def _recency(self, paper_ids: IntArray, today: int) -> FloatArray:
        """recency_factor of each paper (vectorised); an unknown date counts as one half-life old."""
        params = self.params
        days = values_of(self._day, paper_ids)
        age = np.where(days > 0, np.maximum(0, today - days), params.recency_half_life_days)
        floor = params.recency_floor
        factor = floor + (1.0 - floor) * 0.5 ** (age / params.recency_half_life_days)
        return np.asarray(factor, dtype=np.float64)

    async def _sync_dates(self) -> None:
        """Keep every indexed paper's date and title key in memory (arrays by paper id).

        The first call reads all papers' (published, year, title) at once (about 0.3 s at 100k); later
        calls read only papers indexed since (new ones, and changed ones: they get a new slot).
        """
        slots = self.index.n_slots
        done = self._synced_slots
        if slots == done:
            return
        if done == 0:
            rows = await self.papers.dates_and_titles()
        else:
            rows = await self.papers.dates_and_titles(self.index.slot_ids[done:slots].tolist())
        self._synced_slots = max(self._synced_slots, slots)
        if not rows:
            return
        top = max(r[0] for r in rows) + 1
        if top > len(self._day):
            grow = max(top, len(self._day) + len(self._day) // 4)
            self._day = np.concatenate([self._day, np.zeros(grow - len(self._day), dtype=np.int64)])
            self._title_hash = np.concatenate(
                [self._title_hash, np.zeros(grow - len(self._title_hash), dtype=np.int64)]
            )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._day[ids] = [_ordinal(published, year) for _, published, year, _ in rows]
        self._title_hash[ids] = [_title_hash(title) for *_, title in rows]

    async def _short_titles(self, paper_ids: Sequence[int]) -> dict[int, str]:
        """Short titles of liked papers named in reasons: from the search engine, else the store."""
        found: dict[int, str] = {}
        missing: list[int] = []
        for paper_id in paper_ids:
            try:
                found[paper_id] = _short_title(self.engine.title(paper_id))
            except KeyError:  # not indexed (any more)
                missing.append(paper_id)
        if missing:
            for paper_id, _, _, title in await self.papers.dates_and_titles(missing):
                found[paper_id] = _short_title(title)
        return found

    def _reason(
        self,
        profile: Profile,
        matched_terms: list[str],
        query: Mapping[str, float],
        idf: Mapping[str, float],
        source: Source | None,
        source_title: str | None,
    ) -> str:
        matched = sorted(
            matched_terms,
            key=lambda t: (-(query[t] * idf[t] * (2.0 if t in profile.topic_terms else 1.0)), t),
        )
        words: list[str] = []
        for term in matched:
            word = profile.word(term)
            if word.casefold() not in {w.casefold() for w in words}:
                words.append(word)
            if len(words) == REASON_TERMS:
                break
        parts = [f"matched: {', '.join(words)}"] if words else []
        if source is not None and source_title is not None:
            label = "like" if source.signal == "like" else "saved"
            parts.append(f"{label}: {source_title}")
        return " · ".join(parts) or "close to your interests"
