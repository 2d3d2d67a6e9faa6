"""Personal recommendations: rank unseen papers with a BM25 query built from the user's profile.

One call of :meth:`Recommender.recommend`:

1. builds the profile query (topics + Rocchio feedback, see :mod:`bot.services.profile`);
2. asks the search engine for the best candidates of that weighted query, leaving out papers the
   user was already shown, sent, or rated, and anything the caller excludes;
3. drops candidates under the bar (matching too small a share of the query: "nothing good"),
   prefers newer papers slightly (recency decay on ``published``/``year``), and skips near-copies of
   a paper already picked (overlap of their distinctive terms, or the same title);
4. explains each pick: "matched: quantization, kv cache · like: <a liked paper's title>".

Candidate term sets and paper vectors are cached, database reads are batched, so a call takes a few
milliseconds even at 100k papers (``bench/recommend_eval.py`` and the digest bench measure it).
"""

from __future__ import annotations

import logging
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Final, Protocol

from bot.services.profile import DEFAULT_PARAMS, Profile, ProfileService, RankingParams, VectorCache
from storage.db import Database
from storage.models import Paper
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

REASON_TERMS: Final = 3
REASON_TITLE_CHARS: Final = 60
MIN_SOURCE_SIMILARITY: Final = 0.05  # below this a liked paper is not named as the reason


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
    ) -> Sequence[Hit]: ...


class TermIndex(Protocol):
    """Per-term and per-paper statistics of the BM25 index (``bot.services.index.BM25Index``)."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    def idf(self, term: str) -> float: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...


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
class _Candidate:
    paper_id: int
    score: float
    terms: Mapping[str, int]
    top: frozenset[str]


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


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


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
            vectors=VectorCache(index, top_k=params.terms_per_paper),
        )
        self._top_terms: OrderedDict[int, frozenset[str]] = OrderedDict()

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
        profile = await self.profiles.profile(user_id, extra_topics=topics, now=now)
        if profile.empty:
            return []
        skip: set[int] = set(exclude)
        if user_id is not None:
            skip |= await self.feedback.seen_ids(user_id)
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
        query = profile.query()
        positive = {t: w for t, w in query.items() if w > 0}
        negative = {t: w for t, w in query.items() if w < 0}
        if not positive:
            return []
        # Stage 1: the positive part of the query picks a pool of candidates (fast top-k on the
        # index); stage 2 subtracts the disliked terms' BM25 score from each candidate exactly.
        pool = max(6 * count, 40)
        hits = self.engine.weighted(positive, limit=pool, exclude=exclude)
        if not hits:
            return []
        idf = {t: self.index.idf(t) for t in query}
        mass = sum(w * idf[t] for t, w in positive.items()) or 1.0
        k1, b, avgdl = self.index.k1, self.index.b, self.index.avgdl or 1.0
        candidates: list[_Candidate] = []
        for hit in hits:
            if hit.score <= 0:
                continue
            terms = self.index.doc_terms(hit.paper_id)
            coverage = sum(w * idf[t] for t, w in positive.items() if t in terms) / mass
            if coverage < self.params.min_coverage:
                continue
            score = hit.score
            if negative:
                norm = k1 * (1 - b + b * self.index.doc_length(hit.paper_id) / avgdl)
                for term, weight in negative.items():
                    tf = terms.get(term)
                    if tf:
                        score += weight * idf[term] * tf * (k1 + 1) / (tf + norm)
            if score <= 0:
                continue
            candidates.append(_Candidate(hit.paper_id, score, terms, self._top(hit.paper_id, terms)))
        if not candidates:
            return []
        source_ids = [s.paper_id for s in profile.sources if s.signal != "dislike"]
        papers = await self.papers.get_many([c.paper_id for c in candidates] + source_ids)
        today = now.astimezone(UTC).date()
        scored = sorted(
            (
                (c.score * recency_factor(paper_date(papers[c.paper_id]), today, self.params), c)
                for c in candidates
                if c.paper_id in papers
            ),
            key=lambda item: (-item[0], item[1].paper_id),
        )
        picked: list[tuple[float, _Candidate]] = []
        titles: set[str] = set()
        for score, candidate in scored:
            title = _title_key(papers[candidate.paper_id].title)
            if title and title in titles:
                continue
            if any(jaccard(candidate.top, other.top) >= self.params.duplicate_jaccard for _, other in picked):
                continue
            picked.append((score, candidate))
            titles.add(title)
            if len(picked) == count:
                break
        return [
            Recommendation(c.paper_id, round(score, 4), self._reason(profile, query, idf, c, papers))
            for score, c in picked
        ]

    def _top(self, paper_id: int, terms: Mapping[str, int], k: int = 12) -> frozenset[str]:
        """A paper's most distinctive terms (for the near-duplicate guard), cached."""
        cached = self._top_terms.get(paper_id)
        if cached is not None:
            return cached
        scored = sorted(
            terms.items(), key=lambda item: (-(1.0 + math.log(item[1])) * self.index.idf(item[0]), item[0])
        )
        top = frozenset(t for t, _ in scored[:k])
        self._top_terms[paper_id] = top
        if len(self._top_terms) > 50_000:
            self._top_terms.popitem(last=False)
        return top

    def _reason(
        self,
        profile: Profile,
        query: Mapping[str, float],
        idf: Mapping[str, float],
        candidate: _Candidate,
        papers: Mapping[int, Paper],
    ) -> str:
        matched = sorted(
            (t for t, w in query.items() if w > 0 and t in candidate.terms),
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
        best, best_similarity = None, MIN_SOURCE_SIMILARITY
        for source in profile.sources:
            if source.signal == "dislike" or source.paper_id == candidate.paper_id:
                continue
            similarity = source.weight * sum(
                w for t, w in source.vector.weights.items() if t in candidate.terms
            )
            if similarity > best_similarity:
                best, best_similarity = source, similarity
        if best is not None and best.paper_id in papers:
            label = "like" if best.signal == "like" else "saved"
            parts.append(f"{label}: {_short_title(papers[best.paper_id].title)}")
        return " · ".join(parts) or "close to your interests"
