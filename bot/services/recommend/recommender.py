"""Personal recommendations: every interest of a person served, each by what it learned.

:meth:`Recommender.recommend` (`/paper recommend`, digests) makes the person's interests ready
(:mod:`bot.services.recommend.served`), ranks each — by its own model (:mod:`bot.services.recommend.
learned_ranking`) or, with no reactions of its own yet, by its words (:mod:`bot.services.recommend.
topic_ranking`) — gives each its share of the count (:mod:`bot.services.recommend.shares`: at least one
pick each while the count allows, the rest by how much the person engages with each), and interleaves
them, never a paper twice nor a near-copy of one already picked. Each pick names the interest that
brought it, the typed words it matches and the liked paper it lies closest to: "for your interest in
offline RL · matched: offline, policy · like: <title>"; the interest is noted with the pick, so the
reactions to it teach that interest.

A channel's feed serves each of its topics as an interest, without learning (reactions there teach
the person who reacts). :meth:`Recommender.personal_order` lets the person's models reorder a search's
close matches; :meth:`Recommender.summary` says what each interest learned, in words.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

import numpy as np
import numpy.typing as npt

from bot.services.recommend.candidates import Candidate, MutedPapers, NearCopyGuard, Pool
from bot.services.recommend.interests import (
    Interest,
    InterestService,
    InterestSummary,
    ProfileSummary,
    typed_topic,
)
from bot.services.recommend.learned_ranking import LearnedRanker
from bot.services.recommend.learner import DEFAULT_LEARNING, LearningParams
from bot.services.recommend.library_words import LibraryTexts, LibraryWords
from bot.services.recommend.paper_facts import PaperFacts, word_cut
from bot.services.recommend.paper_space import PaperSpace
from bot.services.recommend.person_models import PersonModels
from bot.services.recommend.profile import DEFAULT_PARAMS, RankingParams
from bot.services.recommend.protocols import RecommendationEngine, TermIndex
from bot.services.recommend.served import Person, PersonPlanner, Served
from bot.services.recommend.shares import allocate, interleave
from bot.services.recommend.topic_ranking import TopicRanker
from paperindex.tokenizer import tokenize
from storage.db import Database
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.follows import FollowRepository
from storage.repositories.interests import InterestRepository
from storage.repositories.papers import PaperRepository

log = logging.getLogger(__name__)

REASON_CHARS: Final = 200  # a reason is one line of a digest's message or a listing
SEARCH_CLOSE: Final = 0.7  # search results scoring this share of the best are reordered by the person's model
SHOWN_WORDS: Final = 8  # words for and against each interest in `/paper interests show`
NEAR_PAPERS: Final = 200  # the papers an interest's shown words must be over-represented among (at most)
NEAR_SHARE: Final = 20  # …and at most this share of the corpus (one in 20), at least MIN_NEAR
MIN_NEAR: Final = 10

BoolArray = npt.NDArray[np.bool_]
WeightedWords = tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Recommendation:
    paper_id: int
    score: float  # > 0; higher is better within one interest
    reason: str  # "for your interest in kv cache · matched: quantization · like: <short title>"
    interest_id: int | None = None  # the stored interest that brought it


@dataclass(frozen=True, slots=True)
class PopularPaper:
    paper_id: int
    votes: int  # likes + saves − dislikes


@dataclass(frozen=True, slots=True)
class PersonalPicks:
    """What `/paper recommend` shows: personal picks, or a start for someone without interests.

    status: "picks" (personal picks), "popular" (no interests yet: the server's most liked papers),
    "no_profile" (no interests and nothing popular), "nothing_new" (interests, but nothing unseen
    clears the bar).
    """

    status: str
    picks: tuple[Recommendation, ...] = ()
    popular: tuple[PopularPaper, ...] = ()


def reason(
    described: str, candidate: Candidate, like_title: str | None, generic: Collection[str] = ()
) -> str:
    """ "for your interest in X · matched: a, b · like: <title>", within ``REASON_CHARS``, never cut
    inside a word (the interest's name and the title are shortened first). ``generic``: the terms
    most papers hold, never named (nor needed to repeat the name)."""
    head = f"for your interest in {word_cut(described, 80)}"
    parts = [head]
    matched = {w.casefold() for w in candidate.words}
    named = {w.casefold() for w in described.split() if not set(tokenize(w)) <= set(generic)}
    if candidate.words and not named <= matched:
        # (words that only repeat the interest's whole name say nothing more)
        parts.append(f"matched: {', '.join(candidate.words)}")
    if like_title is not None:
        label = "like" if candidate.like_signal == "like" else "saved"
        parts.append(f"{label}: {like_title}")
    text = " · ".join(parts)
    while len(text) > REASON_CHARS and len(parts) > 1:
        parts.pop(1)  # the matched words go before the liked paper
        text = " · ".join(parts)
    return word_cut(text, REASON_CHARS)


def _positive(score: float) -> float:
    """A score above zero (digests keep picks scoring above zero): a model's logit as its probability."""
    return max(1e-4, round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, score)))), 4))


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
        profiles: InterestService | None = None,
        space: PaperSpace | None = None,
        mutes: MutedPapers | None = None,
        library: LibraryTexts | None = None,
    ) -> None:
        self.engine = engine
        self.index = index
        self.params = params
        self.learning = learning
        self.space = space or PaperSpace(index)
        self.models = PersonModels(index, self.space, learning, shown=engine.vocabulary.form)
        self.feedback = FeedbackRepository(db)
        self.interests = InterestRepository(db)
        self.follows = FollowRepository(db)
        self._clock = clock or (lambda: datetime.now(UTC))
        # the /paper interests service: the runtime hands in the one it built (a bench may not)
        self.profiles = profiles if profiles is not None else InterestService(db, clock=self._clock)
        self.facts = PaperFacts(index, PaperRepository(db), engine, params)
        self.by_words = TopicRanker(engine, index, self.facts, params)
        self.by_model = LearnedRanker(self.models, index, self.facts, learning)
        words = LibraryWords(library, index, engine.vocabulary.form) if library is not None else None
        self.planner = PersonPlanner(self.models, index, self.interests, self.profiles, params, words)
        self.mutes = mutes

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
        """Up to `count` unseen papers for the user (or, with None, for a channel's `topics`), each
        interest with its share. Returns fewer — possibly none — when nothing clears the bar; the
        caller says so. A user with no interests and no reactions gets nothing (see :meth:`popular`)."""
        if count <= 0:
            return []
        now = now or self._clock()
        person = await self.planner.person(user_id, topics=topics, now=now)
        assert person is not None  # (it waits for the index)
        if not person.served:
            return []
        skip = person.seen | frozenset(exclude) | await self.muted(user_id)
        picks = await self._pick(person.served, count=count, exclude=skip, now=now)
        if mark_shown and user_id is not None and picks:
            await self.feedback.mark_shown(
                user_id,
                [p.paper_id for p in picks],
                at=now.astimezone(UTC).isoformat(timespec="seconds"),
                brought={p.paper_id: p.interest_id for p in picks},
            )
        return picks

    async def personal(
        self, user_id: int, *, guild_id: int | None, count: int, mark_shown: bool = True
    ) -> PersonalPicks:
        """`/paper recommend`: personal picks, else the server's popular papers, else why not. Without
        ``mark_shown`` the picks stay unseen until :meth:`mark_shown` (once the answer went out)."""
        picks = await self.recommend(user_id, count=count, mark_shown=mark_shown)
        if picks:
            return PersonalPicks("picks", picks=tuple(picks))
        library = self.planner.library
        if await self.interests.interests(user_id) or (
            library is not None and (await library.profile(user_id))[1]
        ):
            return PersonalPicks("nothing_new")
        popular = await self.popular(guild_id=guild_id, count=count, user_id=user_id)
        if popular:
            return PersonalPicks("popular", popular=tuple(popular))
        return PersonalPicks("no_profile")

    async def add_paper(
        self, user_id: int, paper_id: int, *, for_topic: str | None = None
    ) -> tuple[Interest, bool]:
        """`/paper interests add paper:`: the paper named is a 👍 (the caller stores it) and starts an
        interest of its own when it lies far from every interest the person follows; close to one
        (a broad topic it answers, say), it teaches that one instead, and a typed topic's words no longer
        bind its picks (:meth:`InterestService.narrow_by`). ``for_topic``: a typed topic the person
        named the paper for (in the same command), which it narrows wherever it lies. Returns the
        interest it counts for and whether it is new."""
        rows = [r for r in await self.interests.interests(user_id) if r.active]
        named_for = typed_topic(rows, for_topic) if for_topic is not None else None
        near = named_for or await asyncio.to_thread(self.planner.closest, paper_id, rows)
        if near is not None:  # a topic it answers is narrowed to the part the paper shows
            near = await self.profiles.narrow_by(user_id, near, paper_id)
            return (await self.profiles.named([near]))[0], False
        return await self.profiles.add_paper(user_id, paper_id)

    async def narrow_with(self, user_id: int, topic: str, paper_id: int) -> Interest:
        """:meth:`InterestService.give_paper`, the topic as the person sees it."""
        return (await self.profiles.named([await self.profiles.give_paper(user_id, topic, paper_id)]))[0]

    async def mark_shown(
        self, user_id: int, paper_ids: Sequence[int], *, brought: Mapping[int, int | None] | None = None
    ) -> None:
        """The person saw these picks (``brought``: the interest that brought each): they are not
        recommended again, and their reactions to them teach those interests."""
        stamp = self._clock().astimezone(UTC).isoformat(timespec="seconds")
        await self.feedback.mark_shown(user_id, paper_ids, at=stamp, brought=brought)

    async def popular(
        self, *, guild_id: int | None, count: int, user_id: int | None = None
    ) -> list[PopularPaper]:
        """The papers people here liked and saved most (a start for someone with no interests)."""
        skip = (
            await self.feedback.seen_ids(user_id) | await self.muted(user_id)
            if user_id is not None
            else set()
        )
        rows = await self.feedback.popular(guild_id=guild_id, limit=count, exclude=skip)
        return [PopularPaper(paper_id, votes) for paper_id, votes in rows]

    async def ranking(self, user_id: int, *, now: datetime) -> list[int]:
        """Every unseen indexed paper's id, in the order the person's interests together rank them
        (best first): each interest's own ranking, interleaved by its share as the picks are — a
        paper comes at its best place in any of them relative to that interest's weight."""
        person = await self.planner.person(user_id, now=now)
        assert person is not None
        slots = np.flatnonzero(self.index.alive[: self.index.n_slots])
        ids = self.index.slot_ids[slots]
        if person.seen:
            keep = ~np.isin(ids, np.fromiter(person.seen, dtype=np.int64, count=len(person.seen)))
            slots, ids = slots[keep], ids[keep]
        if not person.served or not len(slots):
            return [int(i) for i in np.sort(ids)]
        total = sum(s.weight for s in person.served)
        place = np.full(len(slots), np.inf)
        for served in person.served:
            if served.fitted is not None:
                scores, first = self.by_model.order(served.fitted, slots)
                order = np.lexsort((ids, -scores, ~first))
            else:
                scores = self.index.score_array(dict(served.fallback.query()))[slots]
                order = np.lexsort((ids, -scores))
                order = order[scores[order] > 0]  # papers without its words have no place in it
            rank = np.full(len(slots), np.inf)
            rank[order] = np.arange(len(order))
            place = np.minimum(place, (rank + 0.5) / (served.weight / total))
        return [int(i) for i in ids[np.lexsort((ids, place))]]

    async def muted(self, user_id: int | None) -> frozenset[int]:
        """The candidate filter: the papers the person muted (a channel feed's planner excludes its own)."""
        if user_id is None or self.mutes is None:
            return frozenset()
        return await self.mutes.muted(user_id)

    # -- picks ----------------------------------------------------------------------------------

    async def _pick(
        self, served: Sequence[Served], *, count: int, exclude: frozenset[int], now: datetime
    ) -> list[Recommendation]:
        shares = allocate(count, {s.key: s.weight for s in served})
        open_ = self._open(exclude) if any(entry.fitted is not None for entry in served) else None
        rankings: dict[str, list[Candidate]] = {}
        for entry in served:
            share = shares[entry.key]
            # each interest ranks enough for its share and some to spare (for near-copies, and for
            # another interest that runs out)
            limit = min(2 * count, 2 * share + 2)
            if entry.fitted is not None and open_ is not None:
                rankings[entry.key] = await self.by_model.rank(
                    entry.fitted,
                    entry.signals,
                    entry.words,
                    open_=open_,
                    limit=limit,
                    now=now,
                    pool=None if share >= count else max(100, self.learning.pool * max(share, 1) // count),
                )
            elif not entry.fallback.empty:
                rankings[entry.key] = await self.by_words.rank(
                    entry.fallback,
                    limit=limit,
                    exclude=exclude,
                    now=now,
                    fetch=self.params.pool * max(share, 1) // count,
                )
        ids = list(dict.fromkeys(c.paper_id for ranking in rankings.values() for c in ranking))
        if not ids:
            return []
        await self.facts.sync()
        guard = NearCopyGuard(
            Pool.of(self.index, ids),
            self.facts.title_hashes(np.asarray(ids, dtype=np.int64)).tolist(),
            self.params.duplicate_jaccard,
        )
        taken: set[int] = set()

        def admit(_: str, candidate: Candidate) -> bool:
            if candidate.paper_id in taken or not guard.admit(candidate.paper_id):
                return False
            taken.add(candidate.paper_id)
            return True

        chosen = interleave(rankings, shares, count, admit)
        by_key = {s.key: s for s in served}
        # the liked paper each reason names: not the one its interest is named after ("“X” · saved: X")
        likes = [None if c.like == by_key[key].named_after else c.like for key, c in chosen]
        titles = await self.facts.short_titles([like for like in likes if like is not None])
        generic = self.facts.generic({t for s in served for t in tokenize(s.described)})
        return [
            Recommendation(
                c.paper_id,
                c.score if by_key[key].fitted is None else _positive(c.score),
                reason(by_key[key].described, c, titles.get(like) if like is not None else None, generic),
                by_key[key].interest_id,
            )
            for (key, c), like in zip(chosen, likes, strict=True)
        ]

    def _open(self, exclude: frozenset[int]) -> BoolArray:
        """By slot: the papers that may be picked (indexed, not seen nor excluded)."""
        n = len(self.space.coords)
        open_ = self.index.alive[:n].copy()
        if exclude:
            slots = [slot for paper_id in exclude if (slot := self.models.slot(paper_id, n)) is not None]
            open_[slots] = False
        return open_

    # -- search order and what was learned -------------------------------------------------------

    async def personal_order(
        self, user_id: int, paper_ids: Sequence[int], scores: Sequence[float]
    ) -> list[int] | None:
        """Search results reordered for the person: the close matches (BM25 within ``SEARCH_CLOSE``
        of the best) by the interest that wants each most, best first; the rest keep their place.
        None — today's order — when learning is paused, the person has no reactions, or another
        thread holds the index (a search must answer within Discord's 3 s)."""
        if len(paper_ids) < 2 or self._index_busy() or not await self.feedback.learns_from_reactions(user_id):
            return None
        person = await self.planner.person(user_id, now=self._clock(), wait=False)
        fitted = [s.fitted for s in person.served if s.fitted is not None] if person is not None else []
        if not fitted:
            return None
        n = len(self.space.coords)
        slots = [self.models.slot(paper_id, n) for paper_id in paper_ids]
        best = max(scores)
        muted = await self.muted(user_id)  # a muted paper keeps its place: the person's model never lifts it
        close = [
            i
            for i, score in enumerate(scores)
            if score >= SEARCH_CLOSE * best and slots[i] is not None and paper_ids[i] not in muted
        ]
        if len(close) < 2:
            return None
        at = np.array([slots[i] for i in close], dtype=np.int64)
        taste = np.max([self.models.scores(f, at) for f in fitted], axis=0)
        reordered = [close[k] for k in np.lexsort((np.arange(len(close)), -taste)).tolist()]
        order = list(range(len(paper_ids)))
        for place, index in zip(sorted(close), reordered, strict=True):
            order[place] = index
        return [paper_ids[i] for i in order]

    async def interest_names(self, user_id: int) -> dict[int, str]:
        """Each of the person's interests by id → how a reason names it (a digest's header names the
        interests its papers came from)."""
        return {interest.id: interest.described for interest in await self.profiles.interests(user_id)}

    async def summary(self, user_id: int, *, now: datetime | None = None) -> ProfileSummary:
        """What `/paper interests show` lists: each interest with the words it learned for and
        against, and how many of its picks were liked; reactions, the learning switch, follows."""
        now = now or self._clock()
        person = await self.planner.person(user_id, now=now)
        assert person is not None
        served = {s.interest_id: s for s in person.served if s.interest_id is not None}
        counts = await self.interests.pick_counts(user_id)
        words = await asyncio.to_thread(self._locked_words, served)
        entries = []
        for interest in person.interests:
            liked, disliked = words.get(interest.id, ((), ()))
            if interest.paused and interest.id in person.taught:
                liked, disliked = await self._paused_words(person, interest.id, now)
            picks = counts.get(interest.id)
            taught = person.taught.get(interest.id)
            entries.append(
                InterestSummary(
                    interest,
                    liked,
                    disliked,
                    picks.picks if picks else 0,
                    picks.liked if picks else 0,
                    taught.wanted if taught else 0,
                    taught.disliked if taught else 0,
                )
            )
        reactions = await self.feedback.counts(user_id)
        paused = await self.profiles.users.learning_paused(user_id)
        followed = tuple((f.name, f.detail) for f in await self.follows.follows(user_id))
        return ProfileSummary(tuple(entries), reactions, paused, followed)

    async def _paused_words(
        self, person: Person, interest_id: int, now: datetime
    ) -> tuple[WeightedWords, WeightedWords]:
        """A paused interest's words, as it learned them before the pause (it is not served)."""
        interest = next(i for i in person.interests if i.id == interest_id)
        plan, query, ignored = self.planner.plan(interest, person.taught.get(interest_id))
        if not plan.signals:
            return (), ()

        def fit() -> tuple[WeightedWords, WeightedWords]:
            with self.index.lock:
                several = len(person.interests) > 1
                grouped = interest.row.kind == "liked"
                fitted = self.models.fit(
                    query, plan.signals, ignored, now=now, several=several, grouped=grouped
                )
                if fitted is None:
                    return (), ()
                return self._words({interest_id: replace(plan, fitted=fitted)})[interest_id]

        return await asyncio.to_thread(fit)

    def _locked_words(self, served: Mapping[int, Served]) -> dict[int, tuple[WeightedWords, WeightedWords]]:
        with self.index.lock:
            return self._words(served)

    def _words(self, served: Mapping[int, Served]) -> dict[int, tuple[WeightedWords, WeightedWords]]:
        """Each fitted interest's strongest words for and against, among words of its field: those
        over-represented among the papers its model ranks best (for), or among the papers closest to
        what it was 👎'd (against)."""
        out: dict[int, tuple[WeightedWords, WeightedWords]] = {}
        coords = self.space.coords
        n = len(coords)
        near_size = max(MIN_NEAR, min(NEAR_PAPERS, n // NEAR_SHARE))
        for interest_id, entry in served.items():
            fitted = entry.fitted
            if fitted is None:
                continue
            place = fitted.model.place_scores(coords, fitted.topic_match)
            near = np.argsort(-place)[:near_size]
            rated = [slot for s in entry.signals if (slot := self.models.slot(s.paper_id, n)) is not None]
            liked, _ = self.models.words(fitted.model, SHOWN_WORDS, near, rated=rated)
            disliked_at = [
                slot
                for s in entry.signals
                if s.signal == "dislike" and (slot := self.models.slot(s.paper_id, n)) is not None
            ]
            against: WeightedWords = ()
            if disliked_at:
                centre = coords[disliked_at].astype(np.float64).sum(axis=0)
                away = np.argsort(-(coords @ centre.astype(np.float32)))[:near_size]
                _, against = self.models.words(fitted.model, SHOWN_WORDS // 2, away, rated=rated)
            out[interest_id] = (liked, against)
        return out

    def _index_busy(self) -> bool:
        """Another thread (an ingest adding a batch) holds the index right now."""
        if not self.index.lock.acquire(blocking=False):
            return True
        self.index.lock.release()
        return False
