"""An interest ranked by its own model (:mod:`bot.services.recommend.learner`), fitted on the reactions
it was taught (:mod:`bot.services.recommend.attribution`) over the whole corpus.

Every paper's place and topic match is scored at once, the words on the best of those; newer papers
are nudged up among near-equals; the picks explore until the interest's first 👍
(:func:`bot.services.recommend.learner.choose`), keeping away from what it was 👎'd.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import numpy as np
import numpy.typing as npt

from bot.services.recommend.candidates import Candidate
from bot.services.recommend.learner import LearningParams, choose
from bot.services.recommend.paper_facts import PaperFacts
from bot.services.recommend.person_models import Fitted, PersonModels, wanted
from bot.services.recommend.profile import Profile
from bot.services.recommend.protocols import TermIndex
from bot.services.recommend.topic_ranking import reason_words
from storage.repositories.feedback import FeedbackRow

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MIN_LIKE_COSINE: Final = 0.05  # a liked paper closer than this (in the paper space) is named as the reason


def best_of(candidates: IntArray, scores: FloatArray, k: int) -> IntArray:
    """The ``k`` candidates with the best scores (all of them if there are no more), in no order."""
    if len(candidates) <= k:
        return candidates
    return candidates[np.argpartition(-scores[candidates], k)[:k]]


class LearnedRanker:
    def __init__(
        self, models: PersonModels, index: TermIndex, facts: PaperFacts, learning: LearningParams
    ) -> None:
        self.models = models
        self.index = index
        self.facts = facts
        self.learning = learning

    async def rank(
        self,
        fitted: Fitted,
        signals: Sequence[FeedbackRow],
        profile: Profile,
        *,
        open_: BoolArray,
        limit: int,
        now: datetime,
        pool: int | None = None,
    ) -> list[Candidate]:
        """Up to ``limit`` of the papers open to the person (``open_``, by slot), best first for this
        model, each with the typed words it matches and the liked paper it lies closest to. ``pool``:
        how many papers, best by place and topics, get their words scored (``LearningParams.pool``;
        an interest with a small share of the picks needs fewer)."""
        learning = self.learning
        coords = self.models.space.coords
        n = len(coords)
        size = learning.candidates if fitted.liked else learning.candidates_unliked
        bound = learning.liked_match if fitted.liked else learning.unliked_match
        if fitted.liked and fitted.narrowed:  # a paper named for the topic says which part of it
            bound = learning.liked_match_narrowed
        candidates = np.zeros(0, dtype=np.int64)
        if profile.topic_terms and bound:
            # an interest stays about its typed words (exploring a broad field stays inside it)
            candidates = np.flatnonzero(open_[:n] & (fitted.topic_match >= bound))
            if len(candidates) > learning.place_pool:  # the papers that match its words best
                top = np.argpartition(-fitted.topic_match[candidates], learning.place_pool - 1)
                candidates = np.sort(candidates[top[: learning.place_pool]])
        if len(candidates) < limit:
            candidates = np.flatnonzero(open_[:n])
        if not len(candidates):
            return []
        scores = np.zeros(n)
        if 2 * len(candidates) < n:  # (the place of the few inside the bound only)
            scores[candidates] = fitted.model.place_scores(coords[candidates], fitted.topic_match[candidates])
        else:
            scores = fitted.model.place_scores(coords, fitted.topic_match)
        # the words, on the papers best by their place and topic match
        candidates = best_of(candidates, scores, max(size, learning.pool if pool is None else pool))
        scores[candidates] += self.models.word_scores(fitted.model, candidates)
        candidates = best_of(candidates, scores, size)
        await self.facts.sync()
        ids = self.models.index.slot_ids[candidates]
        # newer papers first among near-equals: the recency factor's log (0 to −0.16) as a nudge, in
        # units of the candidates' spread (a model of one 👍 tells its candidates apart by hundredths)
        spread = float(np.std(scores[candidates])) if len(candidates) > 1 else 0.0
        scores[candidates] += spread * np.log(self.facts.recency(ids, now.astimezone(UTC).date().toordinal()))
        exploration = learning.exploration if fitted.liked else learning.exploration_unliked
        disliked = {s.paper_id for s in signals if s.signal == "dislike"}
        avoid = coords[[slot for paper_id in disliked if (slot := self.models.slot(paper_id, n)) is not None]]
        order = choose(scores, coords, candidates.tolist(), limit, exploration, avoid)

        # Reasons: the topic words a pick matches, and the liked paper it lies closest to.
        liked = [
            (paper_id, signal, at)
            for paper_id, signal in wanted(signals)
            if (at := self.models.slot(paper_id, n)) is not None
        ]
        topic_query = dict(profile.topic_terms)
        weight = {t: self.facts.idf(t) for t in topic_query}
        generic = self.facts.generic(topic_query)
        picks: list[Candidate] = []
        for slot in order:
            paper_id = int(self.models.index.slot_ids[slot])
            like, like_signal = None, "like"
            if liked:
                sims = coords[[at for *_, at in liked]] @ coords[slot]
                best = int(np.argmax(sims))
                if sims[best] >= MIN_LIKE_COSINE:
                    like, like_signal = liked[best][0], liked[best][1]
            matched = self.index.matched_terms(paper_id, topic_query) if topic_query else []
            words = reason_words(profile, matched, weight, generic)
            picks.append(Candidate(paper_id, round(float(scores[slot]), 4), words, like, like_signal))
        return picks

    def order(self, fitted: Fitted, slots: IntArray) -> tuple[FloatArray, BoolArray]:
        """Scores of these slots by the model (placed ones: place and topics; the best ``pool`` of
        them: the words too) and which got their words scored (those lead a whole ranking)."""
        coords = self.models.space.coords
        scores = np.full(len(slots), -np.inf)
        first = np.zeros(len(slots), dtype=bool)
        placed = np.flatnonzero(slots < len(coords))
        at = slots[placed]
        scores[placed] = fitted.model.place_scores(coords[at], fitted.topic_match[at])
        best = placed[np.argsort(-scores[placed], kind="stable")[: self.learning.pool]]
        scores[best] += self.models.word_scores(fitted.model, slots[best])
        first[best] = True
        return scores, first
