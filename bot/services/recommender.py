"""Personal recommendations: rank unseen papers with a BM25 query built from the user's profile.

One call of :meth:`Recommender.recommend`:

1. builds the profile query (topics + Rocchio feedback, see :mod:`bot.services.profile`);
2. asks the search engine for a pool of the best candidates of that weighted query, leaving out
   papers the user was already shown, sent, or rated, and anything the caller excludes;
3. drops candidates under the bar (matching too small a share of the query: "nothing good");
4. re-ranks the pool: disliked terms' BM25 score is subtracted, a candidate close to the liked
   papers goes up and one close to the disliked papers goes down (cosine of BM25-weighted term
   vectors, mean of the few closest), newer papers are preferred slightly (recency decay on
   ``published``/``year``);
5. skips near-copies of a paper already picked (overlap of their distinctive terms, or the same
   title), and explains each pick: "matched: quantization, kv cache · like: <a liked paper's title>".

The re-rank works on the pool's term arrays at once (numpy, from the index), and paper dates and
titles are kept in memory after the first read, so a call takes a few milliseconds at 100k papers
(``bench/digest_bench.py``); ``bench/recommend_eval.py`` measures what it is worth.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.services.profile import (
    DEFAULT_PARAMS,
    Profile,
    ProfileService,
    RankingParams,
    Source,
    VectorCache,
)
from storage.db import Database
from storage.models import Paper
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

REASON_TERMS: Final = 3
REASON_TITLE_CHARS: Final = 60
MIN_SOURCE_SIMILARITY: Final = 0.05  # below this (decayed cosine) a liked paper is not named as the reason
DUPLICATE_TERMS: Final = 12  # distinctive terms compared by the near-copy guard
_FACTS_CAPACITY: Final = 250_000

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class Hit(Protocol):
    @property
    def paper_id(self) -> int: ...

    @property
    def score(self) -> float: ...


class RecommendationEngine(Protocol):
    """What the recommender needs from the search engine (``bot.services.search.SearchEngine``)."""

    def weighted(
        self,
        query: Mapping[str, float],
        *,
        limit: int,
        exclude: Collection[int] = (),
        allowed: Collection[int] | None = None,
        matched: bool = True,
    ) -> Sequence[Hit]: ...


class TermIndex(Protocol):
    """Per-term and per-paper statistics of the BM25 index (``bot.services.index.BM25Index``)."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    def __contains__(self, doc_id: object) -> bool: ...

    def idf(self, term: str) -> float: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...

    def df(self, term: str) -> int: ...

    def slot_of(self, doc_id: int) -> int: ...

    def term_ids(self, terms: Iterable[str]) -> IntArray: ...

    def doc_weights(self, doc_ids: Sequence[int]) -> tuple[IntArray, IntArray, FloatArray]: ...


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


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the ranking needs of a paper besides its terms, kept in memory after the first read."""

    slot: int  # index slot when read (-1: not indexed); a changed paper is re-indexed in a new slot
    day: int | None  # date.toordinal() of `published`/`year`, None when unknown
    title_key: str  # for the same-title guard
    short_title: str  # for "like: <title>"


_TITLE_WORD = re.compile(r"\w+")


def _title_key(title: str) -> str:
    return " ".join(_TITLE_WORD.findall(title.casefold()))


def _short_title(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= REASON_TITLE_CHARS else title[: REASON_TITLE_CHARS - 1].rstrip() + "…"


def paper_date(paper: Paper) -> date | None:
    """When the paper came out: its `published` date, else the middle of its year."""
    if paper.published:
        try:
            return date.fromisoformat(paper.published[:10])
        except ValueError:
            pass
    if paper.year:
        try:
            return date(paper.year, 7, 1)
        except ValueError:
            return None
    return None


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


def _positions(keys: IntArray, values: IntArray) -> IntArray:
    """For each value, the index of the equal key (keys distinct, any order), else -1."""
    if not len(keys) or not len(values):
        return np.full(len(values), -1, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return np.where(ordered[at] == values, order[at], -1)


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


class Recommender:
    def __init__(
        self,
        db: Database,
        engine: RecommendationEngine,
        index: TermIndex,
        *,
        params: RankingParams = DEFAULT_PARAMS,
        clock: Callable[[], datetime] | None = None,
        profiles: ProfileService | None = None,
    ) -> None:
        self.engine = engine
        self.index = index
        self.params = params
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
        self._facts: OrderedDict[int, _Facts] = OrderedDict()

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
            profile = await self.profiles.profile(None, extra_topics=topics, now=now)
            seen: set[int] = set()
        else:
            # The reads queue on the connection's thread together (fewer hand-overs than one by one).
            profile, seen = await asyncio.gather(
                self.profiles.profile(user_id, extra_topics=topics, now=now), self.feedback.seen_ids(user_id)
            )
        if profile.empty:
            return []
        skip = seen | set(exclude) if exclude else seen
        picks = await self.rank(profile, count=count, exclude=skip, now=now)
        if mark_shown and user_id is not None and picks:
            await self.feedback.mark_shown(
                user_id, [p.paper_id for p in picks], at=now.astimezone(UTC).isoformat(timespec="seconds")
            )
        return picks

    async def personal(self, user_id: int, *, guild_id: int | None, count: int) -> PersonalPicks:
        """`/paper recommend`: personal picks, else the server's popular papers, else why not."""
        picks = await self.recommend(user_id, count=count)
        if picks:
            return PersonalPicks("picks", picks=tuple(picks))
        profile = await self.profiles.profile(user_id)
        if not profile.empty:
            return PersonalPicks("nothing_new")
        popular = await self.popular(guild_id=guild_id, count=count, user_id=user_id)
        if popular:
            return PersonalPicks("popular", popular=tuple(popular))
        return PersonalPicks("no_profile")

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
        query = profile.query()
        positive = {t: w for t, w in query.items() if w > 0}
        if not positive:
            return []
        # Stage 1: the positive part of the query picks a pool of candidates (fast top-k on the index).
        limit = max(6 * count, params.pool)
        hits = [
            h
            for h in self.engine.weighted(positive, limit=limit, exclude=exclude, matched=False)
            if h.score > 0 and h.paper_id in self.index
        ]
        if not hits:
            return []
        pool = self._pool([h.paper_id for h in hits])
        n = len(hits)

        # Stage 2, on the pool's term arrays: the bar, disliked terms, similarity to rated papers.
        terms = list(query)
        q_weight = np.fromiter(query.values(), dtype=np.float64, count=len(terms))
        q_idf = np.fromiter((self.index.idf(t) for t in terms), dtype=np.float64, count=len(terms))
        at = _positions(self.index.term_ids(terms), pool.terms)
        in_query = at >= 0
        rows, where, weights = pool.row[in_query], at[in_query], pool.weights[in_query]
        is_positive = q_weight[where] > 0
        mass = float(np.sum((q_weight * q_idf)[q_weight > 0])) or 1.0
        coverage = (
            np.bincount(rows[is_positive], weights=(q_weight * q_idf)[where[is_positive]], minlength=n) / mass
        )
        score = np.fromiter((h.score for h in hits), dtype=np.float64, count=n)
        if not is_positive.all():
            negative = ~is_positive
            score += np.bincount(
                rows[negative], weights=q_weight[where[negative]] * weights[negative], minlength=n
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
        facts = await self._paper_facts([pool.ids[i] for i in keep.tolist()] + [s.paper_id for s in liked])
        today = now.astimezone(UTC).date().toordinal()
        scored: list[tuple[float, int, int]] = []  # (score, paper id, row)
        for i in keep.tolist():
            paper_id = pool.ids[i]
            fact = facts.get(paper_id)
            if fact is None:  # not in the store any more
                continue
            scored.append((float(score[i]) * self._recency(fact.day, today), paper_id, i))
        scored.sort(key=lambda item: (-item[0], item[1]))

        picked: list[tuple[float, int, int]] = []
        tops: list[frozenset[int]] = []
        titles: set[str] = set()
        for value, paper_id, i in scored:
            title = facts[paper_id].title_key
            if title and title in titles:
                continue
            top = pool.top_terms(i)
            if any(jaccard(top, other) >= params.duplicate_jaccard for other in tops):
                continue
            picked.append((value, paper_id, i))
            tops.append(top)
            titles.add(title)
            if len(picked) == count:
                break
        found_rows = rows[is_positive]
        found_terms = where[is_positive]
        return [
            Recommendation(
                paper_id,
                round(value, 4),
                self._reason(
                    profile,
                    [
                        terms[t]
                        for t in found_terms[
                            np.searchsorted(found_rows, i) : np.searchsorted(found_rows, i, "right")
                        ].tolist()
                    ],
                    query,
                    q_idf,
                    terms,
                    liked,
                    like_sims[i],
                    facts,
                ),
            )
            for value, paper_id, i in picked
        ]

    def _pool(self, paper_ids: list[int]) -> _Pool:
        indptr, terms, weights = self.index.doc_weights(paper_ids)
        row = np.repeat(np.arange(len(paper_ids), dtype=np.int64), np.diff(indptr))
        norms = np.sqrt(np.bincount(row, weights=weights * weights, minlength=len(paper_ids)))
        norms[norms == 0] = 1.0
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
        order = np.argsort(src_terms, kind="stable")
        ordered = src_terms[order]
        lo = np.searchsorted(ordered, pool.terms, "left")
        hi = np.searchsorted(ordered, pool.terms, "right")
        counts = hi - lo
        total = int(counts.sum())
        if not total:
            return np.zeros((n, len(sources)))
        posting = np.repeat(np.arange(len(pool.terms)), counts)
        starts = np.cumsum(counts) - counts
        entry = order[np.repeat(lo, counts) + np.arange(total) - np.repeat(starts, counts)]
        cells = pool.row[posting] * len(sources) + src_of[entry]
        products = pool.unit[posting] * src_values[entry]
        sums = np.asarray(np.bincount(cells, weights=products, minlength=n * len(sources)), dtype=np.float64)
        return sums.reshape(n, len(sources))

    def _recency(self, day: int | None, today: int) -> float:
        params = self.params
        age = params.recency_half_life_days if day is None else max(0, today - day)
        floor = params.recency_floor
        return float(floor + (1.0 - floor) * 0.5 ** (age / params.recency_half_life_days))

    async def _paper_facts(self, paper_ids: Iterable[int]) -> dict[int, _Facts]:
        """Dates and titles of these papers: from memory, reading the others in one batch."""
        found: dict[int, _Facts] = {}
        missing: list[int] = []
        for paper_id in paper_ids:
            fact = self._facts.get(paper_id)
            slot = self.index.slot_of(paper_id) if paper_id in self.index else -1
            if fact is not None and fact.slot == slot:
                found[paper_id] = fact
            else:
                missing.append(paper_id)
        if missing:
            papers = await self.papers.get_many(missing)
            for paper_id, paper in papers.items():
                day = paper_date(paper)
                fact = _Facts(
                    slot=self.index.slot_of(paper_id) if paper_id in self.index else -1,
                    day=None if day is None else day.toordinal(),
                    title_key=_title_key(paper.title),
                    short_title=_short_title(paper.title),
                )
                found[paper_id] = self._facts[paper_id] = fact
            while len(self._facts) > _FACTS_CAPACITY:
                self._facts.popitem(last=False)
        return found

    def _reason(
        self,
        profile: Profile,
        matched_terms: list[str],
        query: Mapping[str, float],
        q_idf: FloatArray,
        terms: list[str],
        liked: Sequence[Source],
        like_sims: FloatArray,
        facts: Mapping[int, _Facts],
    ) -> str:
        idf = dict(zip(terms, q_idf.tolist(), strict=True))
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
        if liked:
            best = int(np.argmax(like_sims))
            source = liked[best]
            fact = facts.get(source.paper_id)
            if like_sims[best] >= MIN_SOURCE_SIMILARITY and fact is not None:
                label = "like" if source.signal == "like" else "saved"
                parts.append(f"{label}: {fact.short_title}")
        return " · ".join(parts) or "close to your interests"
