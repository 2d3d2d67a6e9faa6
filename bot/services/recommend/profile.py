"""A user's profile: their topics plus what their 👍 👎 🔖 taught (Rocchio relevance feedback).

The profile is a weighted BM25 query over index terms:

    q = topics + β · Σ w(p)·v(p) over liked and saved papers − γ · Σ w(p)·v(p) over disliked papers

where ``v(p)`` is the paper's distinctive-term vector (see :func:`indexed_vector`: its terms with
the largest BM25 weight, each weighted by the tf part of that weight, unit length) and
``w(p) = 0.5 ** (age / half-life)`` makes older signals count less. The liked and disliked sums
are divided by the square root of their total weight, so confidence grows with the number of
reactions but one reaction cannot drown the user's topics.

For a person with reactions the recommender ranks with their learned model instead
(:mod:`bot.services.recommend.learner`); this query ranks for topics alone and channel feeds, and stands in
for a large corpus while the paper space is being computed after a start.

This module holds the pure part (vectors, profile building) and :class:`ProfileService`, which
serves ``/paper interests``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.errors import UserFacingError
from bot.services.search.snippets import echo
from paperindex.tokenizer import count_terms, display_terms, surface_form, tokenize
from storage.db import Database
from storage.models import Paper
from storage.repositories.feedback import FeedbackCounts, FeedbackRepository, FeedbackRow, Signal
from storage.repositories.follows import FollowRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.users import UserRepository

log = logging.getLogger(__name__)

MAX_TOPICS: Final = 25
MAX_TOPIC_CHARS: Final = 100


class TermStats(Protocol):
    """What the profile needs from the search index: inverse document frequencies."""

    def idf(self, term: str) -> float: ...


class DocumentStats(TermStats, Protocol):
    """The indexed papers' own terms (``paperindex.index.BM25Index``): vectors without re-reading text."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    def __contains__(self, doc_id: object) -> bool: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...

    def term_ids(self, terms: Iterable[str]) -> npt.NDArray[np.int64]: ...

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...

    def doc_weights(
        self, doc_ids: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]: ...


@dataclass(frozen=True, slots=True)
class RankingParams:
    """Weights of the profile query and of the ranking; tuned on `bench/recommend_eval.py`."""

    topic_weight: float = 1.0  # α: each topic term
    like_weight: float = 2.0  # β: liked and saved papers
    dislike_weight: float = 0.5  # γ: disliked papers (topic terms are never pushed below zero)
    half_life_days: float = 30.0  # older signals count less
    terms_per_paper: int = 40  # distinctive terms kept per paper
    query_terms: int = 80  # the profile query keeps its strongest terms
    min_coverage: float = 0.04  # the bar: share of the query's positive mass a pick must match
    recency_floor: float = 0.85  # score multiplier for a very old paper (new papers get 1.0)
    recency_half_life_days: float = 365.0
    duplicate_jaccard: float = 0.6  # top-term overlap above which two picks are near-copies
    pool: int = 100  # candidates the query fetches for the re-rank (at least 6 × the count)
    like_boost: float = 10.0  # μ: score × (1 + μ · closeness to the liked papers)
    dislike_penalty: float = 2.0  # λ: score × max(0, 1 − λ · closeness to the disliked papers)
    similar_k: int = 3  # closeness to a group = mean of the k largest decayed cosines
    max_sources: int = 50  # strongest liked (and disliked) papers compared with each candidate
    probe_terms: int = 40  # the pool is fetched with the strongest terms (and the topics'), then fully scored


DEFAULT_PARAMS: Final = RankingParams()


# -- paper vectors ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaperVector:
    """A paper's distinctive terms: unit-length tf·idf weights of its top terms, and their words."""

    weights: Mapping[str, float]
    words: Mapping[str, str]  # index term → the word as written in the paper

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(self.weights)


def _display_form(word: str) -> str:
    """ "Transformer" (sentence case) → "transformer"; acronyms and mixed case ("KV", "LoRA") stay."""
    return word.lower() if word[:1].isupper() and word[1:].islower() else word


def surface_words(text: str) -> dict[str, str]:
    """index term → the word it came from in `text` ("cach" → "cache"), first occurrence."""
    return {term: _display_form(word) for word, term in display_terms(text)}


def paper_text(paper: Paper) -> str:
    return f"{paper.title}\n{paper.abstract}"


def _unit_top(scored: list[tuple[str, float]], top_k: int) -> dict[str, float]:
    scored.sort(key=lambda item: (-item[1], item[0]))
    top = scored[:top_k]
    norm = math.sqrt(sum(w * w for _, w in top)) or 1.0
    return {term: w / norm for term, w in top}


def indexed_vector(paper_id: int, index: DocumentStats, *, top_k: int, min_df: int = 2) -> PaperVector:
    """An indexed paper's distinctive terms, unit length, from the index's own counts (no text read).

    The terms kept are the `top_k` with the largest BM25 weight in the paper, ``idf · tf·(k1 + 1) /
    (tf + k1·(1 − b + b·|d|/avgdl))``, among terms at least `min_df` papers have (a word only this
    paper uses finds nothing else). Each is weighted by the tf part of that weight only: the profile
    query is scored with BM25, which applies idf itself. With idf in the query weights too, the rare
    words of one liked paper outweighed the words all liked papers share (``bench/recommend_eval.py``:
    0.380 → 0.394 mean precision@5). Words shown are the corpus's most common surface forms.
    """
    counts = index.doc_terms(paper_id)
    names = list(counts)
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(names))
    norm = index.k1 * (1 - index.b + index.b * index.doc_length(paper_id) / (index.avgdl or 1.0))
    tf_part = tf * (index.k1 + 1) / (tf + norm)
    # idf · tf part and document frequencies, as the index has them (whole-paper calls, not per term)
    _, ids, weights = index.doc_weights([paper_id])
    term_ids = index.term_ids(names)
    order = np.argsort(ids)
    at = np.searchsorted(ids[order], term_ids)
    weight = weights[order[np.minimum(at, len(ids) - 1)]] if len(ids) else np.zeros(len(names))
    weight[index.doc_freqs(term_ids) < min_df] = 0.0
    best = [i for i in np.argsort(-weight, kind="stable")[:top_k].tolist() if weight[i] > 0]
    unit = _unit_top([(names[i], float(tf_part[i])) for i in best], top_k)
    return PaperVector(weights=unit, words={t: surface_form(t) for t in unit})


def paper_vector(text: str, stats: TermStats, *, top_k: int) -> PaperVector:
    """Top-k terms of `text` by (1 + ln tf) · idf, scaled to unit length (for a paper not indexed)."""
    counts: dict[str, int] = {}
    count_terms(text, into=counts)
    scored = []
    for term, tf in counts.items():
        idf = stats.idf(term)
        if idf > 0:
            scored.append((term, (1.0 + math.log(tf)) * idf))
    weights = _unit_top(scored, top_k)
    forms = surface_words(text)
    return PaperVector(weights=weights, words={t: forms.get(t, t) for t in weights})


class VectorCache:
    """Per-paper distinctive-term vectors, computed once (bounded LRU).

    With ``documents`` (the search index) a paper in the index gets its vector from the index's own
    term counts (:func:`indexed_vector`, no text to read or tokenise); others from their text.
    """

    def __init__(
        self,
        stats: TermStats,
        *,
        top_k: int,
        capacity: int = 50_000,
        documents: DocumentStats | None = None,
    ) -> None:
        self._stats = stats
        self._top_k = top_k
        self._capacity = capacity
        self._documents = documents
        self._cache: OrderedDict[int, PaperVector] = OrderedDict()

    def get(self, paper_id: int) -> PaperVector | None:
        vector = self._cache.get(paper_id)
        if vector is not None:
            self._cache.move_to_end(paper_id)
        return vector

    def missing(self, paper_ids: Iterable[int]) -> list[int]:
        return [pid for pid in paper_ids if pid not in self._cache]

    def add(self, paper_id: int, text: str) -> PaperVector:
        return self._put(paper_id, paper_vector(text, self._stats, top_k=self._top_k))

    def add_indexed(self, paper_ids: Iterable[int]) -> list[int]:
        """Vectors of those papers the index holds; returns the ids it does not hold."""
        documents = self._documents
        if documents is None:
            return list(paper_ids)
        rest: list[int] = []
        for paper_id in paper_ids:
            try:
                vector = indexed_vector(paper_id, documents, top_k=self._top_k)
            except KeyError:  # not in the index (removed, or the index is still being built)
                rest.append(paper_id)
            else:
                self._put(paper_id, vector)
        return rest

    def _put(self, paper_id: int, vector: PaperVector) -> PaperVector:
        self._cache[paper_id] = vector
        if len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
        return vector

    def clear(self) -> None:
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)


# -- profiles ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """One rated paper's part in the profile (for reasons: "like: <title>")."""

    paper_id: int
    signal: Signal
    weight: float  # decayed, before β/γ
    vector: PaperVector


@dataclass(frozen=True, slots=True)
class Profile:
    topics: tuple[str, ...]
    topic_terms: Mapping[str, float]  # index term → weight
    learned: Mapping[str, float]  # index term → signed weight learned from feedback
    sources: tuple[Source, ...]  # liked / saved / disliked papers that shaped `learned`
    words: Mapping[str, str]  # index term → a word to show
    query_terms: int = 80

    @property
    def empty(self) -> bool:
        return not self.topic_terms and not any(w > 0 for w in self.learned.values())

    def query(self) -> dict[str, float]:
        """The weighted BM25 query: topics plus learned terms, strongest `query_terms` kept."""
        combined: dict[str, float] = dict(self.topic_terms)
        for term, weight in self.learned.items():
            if term in self.topic_terms:
                # A dislike never argues against what the user asked for in words.
                weight = max(weight, 0.0)
            combined[term] = combined.get(term, 0.0) + weight
        ranked = sorted(combined.items(), key=lambda item: (-abs(item[1]), item[0]))
        # Topic terms always stay: they are what the user asked for.
        kept = {t: w for t, w in ranked[: self.query_terms] if abs(w) > 1e-9}
        for term in self.topic_terms:
            kept.setdefault(term, combined[term])
        return kept

    def word(self, term: str) -> str:
        return self.words.get(term, term)

    def top_learned(self, n: int, *, positive: bool = True) -> list[tuple[str, float]]:
        items = [(t, w) for t, w in self.learned.items() if (w > 0 if positive else w < 0)]
        items.sort(key=lambda item: (-abs(item[1]), item[0]))
        return items[:n]


def decay(created_at: str, now: datetime, half_life_days: float) -> float:
    """0.5 ** (age / half-life): 1.0 for a signal given now, 0.5 after one half-life."""
    try:
        moment = datetime.fromisoformat(created_at)
    except ValueError:
        return 1.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    age_days = max(0.0, (now - moment).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def topic_terms(topics: Sequence[str], weight: float) -> tuple[dict[str, float], dict[str, str]]:
    """Index terms of the topics (each topic's terms at `weight`), and the words the user typed."""
    terms: dict[str, float] = {}
    shown: dict[str, str] = {}
    for topic in topics:
        for word, term in display_terms(topic):
            terms[term] = max(terms.get(term, 0.0), weight)
            shown.setdefault(term, word)
    return terms, shown


def build_profile(
    topics: Sequence[str],
    feedback: Sequence[FeedbackRow],
    vectors: Mapping[int, PaperVector],
    *,
    now: datetime,
    params: RankingParams = DEFAULT_PARAMS,
) -> Profile:
    """Combine topics and decayed feedback into a profile (pure)."""
    t_terms, shown = topic_terms(topics, params.topic_weight)
    signals: dict[int, set[Signal]] = {}
    times: dict[int, str] = {}
    for row in feedback:
        signals.setdefault(row.paper_id, set()).add(row.signal)
        times[row.paper_id] = max(times.get(row.paper_id, row.created_at), row.created_at)
    sources: list[Source] = []
    for paper_id, kinds in signals.items():
        vector = vectors.get(paper_id)
        if vector is None or not vector.weights:
            continue
        weight = decay(times[paper_id], now, params.half_life_days)
        # A liked-and-saved paper counts once, as a like.
        if "like" in kinds:
            sources.append(Source(paper_id, "like", weight, vector))
        elif "dislike" in kinds:
            sources.append(Source(paper_id, "dislike", weight, vector))
        elif "save" in kinds:
            sources.append(Source(paper_id, "save", weight, vector))

    learned: dict[str, float] = {}
    words: dict[str, str] = {}
    for positive, scale in ((True, params.like_weight), (False, -params.dislike_weight)):
        group = [s for s in sources if (s.signal != "dislike") == positive]
        total = sum(s.weight for s in group)
        if not group or total <= 0:
            continue
        factor = scale / math.sqrt(max(total, 1.0))
        for source in group:
            for term, w in source.vector.weights.items():
                learned[term] = learned.get(term, 0.0) + factor * source.weight * w
                words.setdefault(term, source.vector.words.get(term, term))
    words.update(shown)
    return Profile(
        topics=tuple(topics),
        topic_terms=t_terms,
        learned={t: w for t, w in learned.items() if abs(w) > 1e-6},
        sources=tuple(sources),
        words=words,
        query_terms=params.query_terms,
    )


# -- the /paper interests service ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProfileSummary:
    """What `/paper interests show` renders."""

    topics: tuple[str, ...]
    liked_terms: tuple[tuple[str, float], ...]  # (word, weight), strongest first
    disliked_terms: tuple[tuple[str, float], ...]
    counts: FeedbackCounts
    paused: bool
    recent_likes: tuple[str, ...] = field(default=())  # titles
    #: authors followed: (name, what told the group picked apart, or None for every paper under it)
    followed: tuple[tuple[str, str | None], ...] = field(default=())


WeightedWords = tuple[tuple[str, float], ...]
ModelWords = Callable[[int, int, datetime], Awaitable[tuple[WeightedWords, WeightedWords]]]

_SPACES = re.compile(r"\s+")


def clean_topic(topic: str) -> str:
    """Trim and collapse whitespace; reject what cannot be searched."""
    cleaned = _SPACES.sub(" ", topic).strip()
    if not cleaned:
        raise UserFacingError("Give a topic, for example `kv cache quantization`.")
    if len(cleaned) > MAX_TOPIC_CHARS:
        raise UserFacingError(f"Keep a topic under {MAX_TOPIC_CHARS} characters.")
    if not tokenize(cleaned):
        raise UserFacingError(
            f"“{echo(cleaned)}” has no searchable words (only very common words); try something more specific."
        )
    return cleaned


class ProfileService:
    """Topics, learned terms and the learning switch: everything `/paper interests` does."""

    def __init__(
        self,
        db: Database,
        stats: TermStats,
        *,
        params: RankingParams = DEFAULT_PARAMS,
        clock: Callable[[], datetime] | None = None,
        vectors: VectorCache | None = None,
    ) -> None:
        self.users = UserRepository(db)
        self.feedback = FeedbackRepository(db)
        self.papers = PaperRepository(db)
        self.follows = FollowRepository(db)
        self.params = params
        # (not `vectors or …`: an empty cache is falsy)
        self.vectors = vectors if vectors is not None else VectorCache(stats, top_k=params.terms_per_paper)
        self._clock = clock or (lambda: datetime.now(UTC))
        #: set by the recommender: (user id, how many, now) → the learned model's words for and against
        self.model_words: ModelWords | None = None

    async def load_vectors(self, paper_ids: Iterable[int]) -> dict[int, PaperVector]:
        """Vectors of these papers: cached, else from the index, else from their texts (one batch read)."""
        ids = list(dict.fromkeys(paper_ids))
        missing = self.vectors.missing(ids)
        if missing:
            missing = self.vectors.add_indexed(missing)
        if missing:
            papers = await self.papers.get_many(missing)
            for paper_id in missing:
                paper = papers.get(paper_id)
                if paper is not None:
                    self.vectors.add(paper_id, paper_text(paper))
        found: dict[int, PaperVector] = {}
        for paper_id in ids:
            vector = self.vectors.get(paper_id)
            if vector is not None:
                found[paper_id] = vector
        return found

    async def profile(
        self, user_id: int | None, *, extra_topics: Sequence[str] = (), now: datetime | None = None
    ) -> Profile:
        """The user's profile (or, for None, a profile made of `extra_topics` only)."""
        topics: list[str] = []
        feedback: list[FeedbackRow] = []
        if user_id is not None:
            # Both reads queue on the connection's thread at once (one hand-over instead of two).
            topics, feedback = await asyncio.gather(
                self.users.topics(user_id), self.feedback.signals_for(user_id)
            )
        return await self.from_rows(topics, feedback, extra_topics=extra_topics, now=now)

    async def from_rows(
        self,
        topics: Sequence[str],
        feedback: Sequence[FeedbackRow],
        *,
        extra_topics: Sequence[str] = (),
        now: datetime | None = None,
    ) -> Profile:
        """The profile made of these topics and signals (already read) plus `extra_topics`."""
        now = now or self._clock()
        merged = list(dict.fromkeys([*topics, *(t for t in extra_topics if t.strip())]))
        vectors = await self.load_vectors(row.paper_id for row in feedback)
        return build_profile(merged, feedback, vectors, now=now, params=self.params)

    async def summary(self, user_id: int, *, terms: int = 12, now: datetime | None = None) -> ProfileSummary:
        profile = await self.profile(user_id, now=now)
        counts = await self.feedback.counts(user_id)
        paused = await self.users.learning_paused(user_id)
        if self.model_words is not None:
            # the words of the model that ranks for this person (the recommender's)
            liked, disliked = await self.model_words(user_id, terms, now or self._clock())
        else:
            liked = tuple((profile.word(t), round(w, 2)) for t, w in profile.top_learned(terms))
            disliked = tuple(
                (profile.word(t), round(w, 2)) for t, w in profile.top_learned(terms // 2, positive=False)
            )
        likes = [s.paper_id for s in sorted(profile.sources, key=lambda s: -s.weight) if s.signal == "like"][
            :3
        ]
        papers = await self.papers.get_many(likes) if likes else {}
        titles = tuple(papers[pid].title for pid in likes if pid in papers)
        followed = tuple((f.name, f.detail) for f in await self.follows.follows(user_id))
        return ProfileSummary(
            topics=profile.topics,
            liked_terms=liked,
            disliked_terms=disliked,
            counts=counts,
            paused=paused,
            recent_likes=titles,
            followed=followed,
        )

    async def add_topic(self, user_id: int, topic: str) -> tuple[str, bool]:
        """Add a topic; returns (the topic as stored, whether it was new)."""
        cleaned = clean_topic(topic)
        existing = await self.users.topics(user_id)
        for current in existing:
            if current.casefold() == cleaned.casefold():
                return current, False
        if len(existing) >= MAX_TOPICS:
            raise UserFacingError(
                f"You already follow {MAX_TOPICS} topics; remove one with `/paper interests remove` first."
            )
        added = await self.users.add_topic(user_id, cleaned)
        return cleaned, added

    async def narrow_topic(self, user_id: int, broad: str, narrower: str) -> tuple[str, str | None]:
        """Follow ``narrower`` in place of ``broad`` (case-insensitive); returns (the narrower topic as
        stored, the broad one it replaced, or None when it was no longer followed and the narrower one
        was only added)."""
        cleaned = clean_topic(narrower)
        existing = await self.users.topics(user_id)
        # already followed, perhaps written otherwise: it stays as it is
        kept = next((t for t in existing if t.casefold() == cleaned.casefold()), cleaned)
        for current in existing:
            if current.casefold() == broad.casefold() and await self.users.replace_topic(
                user_id, current, kept
            ):
                return kept, current
        stored, _ = await self.add_topic(user_id, cleaned)
        return stored, None

    async def remove_topic(self, user_id: int, topic: str) -> str:
        """Remove a topic (case-insensitive); raises with the user's topics when it is not one."""
        wanted = _SPACES.sub(" ", topic).strip().casefold()
        existing = await self.users.topics(user_id)
        for current in existing:
            if current.casefold() == wanted:
                await self.users.remove_topic(user_id, current)
                return current
        if not existing:
            raise UserFacingError("You have no topics yet. Add one with `/paper interests add`.")
        listed = ", ".join(f"“{echo(t)}”" for t in existing[:10])
        raise UserFacingError(f"“{echo(topic)}” is not one of your topics ({listed}).")

    async def topics(self, user_id: int) -> list[str]:
        return await self.users.topics(user_id)

    async def reset(self, user_id: int) -> FeedbackCounts:
        """Forget what reactions taught (likes and dislikes); topics and bookmarks stay."""
        removed = await self.feedback.clear_learned(user_id)
        log.info("user %d reset learning (%d likes, %d dislikes)", user_id, removed.likes, removed.dislikes)
        return removed

    async def set_paused(self, user_id: int, paused: bool | None = None) -> bool:
        """Pause or resume learning (None toggles); returns the new state."""
        if paused is None:
            paused = not await self.users.learning_paused(user_id)
        await self.users.set_learning_paused(user_id, paused)
        return paused
