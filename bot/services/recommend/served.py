"""A person's interests made ready to serve: what each was taught, its model, its words and its weight.

One read of the person (:meth:`storage.repositories.interests.InterestRepository.inputs`); their
reactions split among their interests (:mod:`bot.services.recommend.attribution`; a 👍 far from every
interest stores a new one first); every interest with reactions of its own gets its model, all fitted
in one worker thread under the index's lock; an interest without any is ranked by its words
(:mod:`bot.services.recommend.topic_ranking`), as is every interest while the paper space of a large
corpus is still being computed after a start (a paper or a group of liked papers then stands for its
first paper's distinctive terms).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

import numpy as np
import numpy.typing as npt

from bot.services.recommend.attribution import JOIN_COSINE, Attribution, Taught, attribute
from bot.services.recommend.interests import Interest, InterestService
from bot.services.recommend.library_words import MAX_LIBRARY_WEIGHT_TEXTS, LibraryWords
from bot.services.recommend.person_models import Fitted, PersonModels
from bot.services.recommend.profile import (
    NO_WORDS,
    Profile,
    RankingParams,
    indexed_vector,
    paper_profile,
    topic_profile,
)
from bot.services.recommend.protocols import TermIndex
from bot.services.recommend.shares import engagement
from storage.repositories.feedback import FeedbackRow
from storage.repositories.interests import (
    InterestLimitError,
    InterestRepository,
    InterestRow,
    PersonInputs,
    paper_key,
)

log = logging.getLogger(__name__)

CENTRE_PAPERS: Final = 20  # a typed topic lies where its best-matching papers lie


@dataclass(frozen=True, slots=True)
class Served:
    """One interest ready to rank: by its model when it has one, else by its words."""

    key: str  # "interest:<id>", or "topic:<words>" for a topic not stored (a channel's)
    interest_id: int | None
    described: str  # how reasons name it
    words: Profile  # its typed words (NO_WORDS for a paper or a group of liked papers)
    fallback: Profile  # the words it is ranked by without a model
    signals: tuple[FeedbackRow, ...]
    fitted: Fitted | None
    weight: float
    #: the paper it is named after (a paper named, or a group of liked papers): its reasons do not cite
    #: that paper again as "like: …"
    named_after: int | None = None


@dataclass(frozen=True, slots=True)
class Person:
    """Everything known of one person (or a channel's topics) for ranking."""

    served: tuple[Served, ...]
    seen: frozenset[int]
    interests: tuple[Interest, ...]  # the stored ones, paused too
    taught: dict[int, Taught]


class PersonPlanner:
    def __init__(
        self,
        models: PersonModels,
        index: TermIndex,
        interests: InterestRepository,
        profiles: InterestService,
        params: RankingParams,
        library: LibraryWords | None = None,
    ) -> None:
        self.models = models
        self.library = library
        self.index = index
        self.interests = interests
        self.profiles = profiles
        self.params = params
        self._centres: dict[str, npt.NDArray[np.float64] | None] = {}
        self._centres_of: tuple[int, int] = (-1, -1)

    async def person(
        self, user_id: int | None, *, topics: Sequence[str] = (), now: datetime, wait: bool = True
    ) -> Person | None:
        """The person's interests ready to serve, their own and ``topics`` (a channel: ``topics``
        only). None when ``wait`` is off and another thread holds the index."""
        inputs = await self.interests.inputs(user_id) if user_id is not None else None
        rows = list(inputs.interests) if inputs is not None else []
        # (a small corpus gets its space on first use: then in a thread, as a fit)
        ready = self.models.space.ready or await asyncio.to_thread(self._space_ready)
        attribution = Attribution({}, ())
        if inputs is not None and ready:
            # every reaction brought by an interest: no place to look up, no thread needed
            known = all(s.paper_id in inputs.brought for s in inputs.signals)
            attribution = (
                self._attribute(inputs, rows)
                if known
                else await asyncio.to_thread(self._attribute, inputs, rows)
            )
            if attribution.new_groups and user_id is not None and not inputs.learning_paused:
                rows = await self._start_groups(user_id, attribution.new_groups, rows)
                attribution = await asyncio.to_thread(self._attribute, inputs, rows)
        named = await self.profiles.named([r for r in rows if r.removed_at is None])
        stored_topics = {i.label.casefold() for i in named if i.row.kind == "topic"}
        plans: list[tuple[Served, dict[str, float], list[int]]] = []
        for interest in named:
            taught = attribution.taught.get(interest.id)
            if interest.paused or (interest.row.kind == "liked" and not (taught and taught.wanted)):
                continue  # (a group of liked papers lasts as long as one of its 👍 does)
            plans.append(self.plan(interest, taught))
        for topic in dict.fromkeys(t for t in topics if t.strip()):
            if topic.casefold() not in stored_topics:
                words = topic_profile([topic], self.params)
                plans.append((Served(f"topic:{topic}", None, topic, words, words, (), None, 1.0), {}, []))
        if user_id is not None and self.library is not None:
            plans.extend(await self._library_plan(user_id))
        shown = tuple(
            i
            for i in named
            if i.row.kind != "liked" or ((t := attribution.taught.get(i.id)) is not None and t.wanted)
        )
        # (a paused interest counts: pausing one leaves what the others learned as it was)
        several = len(shown) + sum(1 for plan, _, _ in plans if plan.interest_id is None) > 1
        grouped = frozenset(i.id for i in named if i.row.kind == "liked")  # (a library's 👎 weigh less)
        narrowed = frozenset(i.id for i in named if i.row.narrowed_by is not None)
        fitted = await self._fit_all(
            plans, ready, now=now, wait=wait, several=several, grouped=grouped, narrowed=narrowed
        )
        if fitted is None:
            return None
        served = tuple(replace(plan, fitted=f) for (plan, _, _), f in zip(plans, fitted, strict=True))
        return Person(served, inputs.seen if inputs else frozenset(), shown, attribution.taught)

    def plan(self, interest: Interest, taught: Taught | None) -> tuple[Served, dict[str, float], list[int]]:
        row = interest.row
        signals = list(taught.signals) if taught is not None else []
        ignored = list(taught.ignored) if taught is not None else []
        if row.kind == "topic":
            words = topic_profile([interest.label], self.params)
            fallback = words
        else:
            words = NO_WORDS
            fallback = self._seed_words(row.paper_id)
            if (
                row.kind == "paper"
                and row.paper_id is not None
                and all(s.paper_id != row.paper_id for s in signals)
            ):
                # the paper named is the interest's first 👍, stored or not
                signals.insert(0, FeedbackRow(row.paper_id, "like", row.added_at))
        wanted = len({s.paper_id for s in signals if s.signal != "dislike"})
        disliked = len({s.paper_id for s in signals if s.signal == "dislike"})
        served = Served(
            f"interest:{row.id}",
            row.id,
            interest.described,
            words,
            fallback,
            tuple(signals),
            None,
            engagement(wanted, disliked, len(ignored)),
            named_after=row.paper_id if row.kind != "topic" else None,
        )
        return served, dict(words.topic_terms), ignored

    async def _library_plan(self, user_id: int) -> list[tuple[Served, dict[str, float], list[int]]]:
        """The library papers the store lacks, served by their words (no model: no reactions of its own)."""
        assert self.library is not None
        words, texts = await self.library.profile(user_id)
        if words.empty:
            return []
        weight = engagement(min(texts, MAX_LIBRARY_WEIGHT_TEXTS), 0, 0)
        described = "papers like those in your library"
        return [(Served("library", None, described, NO_WORDS, words, (), None, weight), {}, [])]

    def _seed_words(self, paper_id: int | None) -> Profile:
        if paper_id is None or paper_id not in self.index:
            return NO_WORDS
        vector = indexed_vector(
            paper_id, self.index, top_k=self.params.terms_per_paper, shown=self.models.shown
        )
        return paper_profile(vector)

    async def _start_groups(
        self, user_id: int, papers: Sequence[int], rows: list[InterestRow]
    ) -> list[InterestRow]:
        """Store a new interest for each 👍 far from every interest (a group of liked papers)."""
        for paper_id in papers:
            try:
                await self.interests.add(
                    user_id, "liked", paper_key(paper_id), paper_id=paper_id, origin="reaction"
                )
            except InterestLimitError:
                log.info(
                    "user %d has as many interests as allowed: no new one for paper %d", user_id, paper_id
                )
                break
        return list(await self.interests.interests(user_id, removed=True))

    def closest(self, paper_id: int, rows: Sequence[InterestRow]) -> InterestRow | None:
        """The interest among ``rows`` that a 👍 on the paper would teach (the closest within
        ``JOIN_COSINE``), or None: far from all of them (or no place yet to tell)."""
        with self.index.lock:
            if not self.models.space_ready():
                return None
            coords = self.models.space.coords
            slot = self.models.slot(paper_id, len(coords))
            if slot is None:
                return None
            point = coords[slot].astype(np.float64)
            best, best_cos = None, JOIN_COSINE
            for row in rows:
                if row.kind == "topic" and row.topic is not None:
                    centre = self._centre(row.topic)
                else:
                    seed = self.models.slot(row.paper_id, len(coords)) if row.paper_id is not None else None
                    centre = None if seed is None else coords[seed].astype(np.float64)
                if centre is not None and (cos := float(centre @ point)) >= best_cos:
                    best, best_cos = row, cos
            return best

    def _space_ready(self) -> bool:
        with self.index.lock:
            return self.models.space_ready()

    def _attribute(self, inputs: PersonInputs, rows: Sequence[InterestRow]) -> Attribution:
        with self.index.lock:
            coords = self.models.space.coords
            n = len(coords)

            def coords_of(paper_id: int) -> npt.NDArray[np.float32] | None:
                slot = self.models.slot(paper_id, n)
                return None if slot is None else coords[slot]

            return attribute(
                rows,
                inputs.signals,
                inputs.seen,
                inputs.brought,
                coords_of=coords_of,
                topic_centre=self._centre,
            )

    def _centre(self, topic: str) -> npt.NDArray[np.float64] | None:
        """Where a typed topic lies: the unit mean place of its best-matching papers (kept until the
        index or the space moves)."""
        generation = (self.models.space.placed, self.index.n_slots)
        if generation != self._centres_of:
            self._centres.clear()
            self._centres_of = generation
        key = topic.casefold()
        if key not in self._centres:
            coords = self.models.space.coords
            scores = self.index.score_array(dict(topic_profile([topic], self.params).topic_terms))[
                : len(coords)
            ]
            top = np.argsort(-scores)[:CENTRE_PAPERS]
            top = top[scores[top] > 0]
            if not len(top):
                self._centres[key] = None
            else:
                centre = coords[top].astype(np.float64).sum(axis=0)
                norm = float(np.linalg.norm(centre))
                self._centres[key] = centre / norm if norm > 0 else None
        return self._centres[key]

    async def _fit_all(
        self,
        plans: Sequence[tuple[Served, dict[str, float], list[int]]],
        ready: bool,
        *,
        now: datetime,
        wait: bool,
        several: bool,
        grouped: frozenset[int] = frozenset(),
        narrowed: frozenset[int] = frozenset(),
    ) -> list[Fitted | None] | None:
        """Each interest's model (None where it has no reactions to learn from, or no space yet),
        fitted in one worker thread: a fit reads the whole corpus, which nobody else's answer should
        wait for. It holds the index's lock, so an ingest never changes the index under it; without
        ``wait``, None while another thread holds it. ``several``: the person has more than one
        interest (:func:`bot.services.recommend.learner.fit`); ``grouped``: the interests that are groups
        of liked papers, ``narrowed`` the topics a named paper narrowed (:meth:`PersonModels.fit`)."""
        if not ready or not any(plan.signals for plan, _, _ in plans):
            return [None] * len(plans)

        def fit() -> list[Fitted | None] | None:
            if not self.index.lock.acquire(blocking=wait):
                return None
            try:
                return [
                    self.models.fit(
                        query,
                        plan.signals,
                        ignored,
                        now=now,
                        several=several,
                        grouped=plan.interest_id in grouped,
                        narrowed=plan.interest_id in narrowed,
                    )
                    if plan.signals
                    else None
                    for plan, query, ignored in plans
                ]
            finally:
                self.index.lock.release()

        return await asyncio.to_thread(fit)
