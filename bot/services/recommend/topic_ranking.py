"""An interest ranked by its words alone: a typed topic nobody has reacted to yet, a channel feed's
topic, or any interest while the paper space of a large corpus is still being computed after a start.

The interest's words are a weighted BM25 query (:class:`bot.services.recommend.profile.Profile`): its
strongest terms pick a pool of candidates through the search engine's fast top-k, which must match
enough of the query (``min_coverage``: "nothing good" otherwise); newer papers are nudged up.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bot.services.recommend.candidates import Candidate, Pool, WeightedPapers
from bot.services.recommend.paper_facts import PaperFacts
from bot.services.recommend.profile import Profile, RankingParams
from bot.services.recommend.protocols import WeightedSearch

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
REASON_TERMS = 3


class QueryIndex(WeightedPapers, Protocol):
    def __contains__(self, doc_id: object) -> bool: ...

    def term_ids(self, terms: Sequence[str]) -> IntArray: ...


class TermTable:
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


def reason_words(
    profile: Profile, matched: Sequence[str], weight: Mapping[str, float], generic: Collection[str] = ()
) -> tuple[str, ...]:
    """The matched query words a reason names: the weightiest first, each word once, none that most
    papers hold (``generic``: "learning")."""
    words: list[str] = []
    for term in sorted(matched, key=lambda t: (-weight.get(t, 0.0), t)):
        if term in generic:
            continue
        word = profile.word(term)
        if word.casefold() not in {w.casefold() for w in words}:
            words.append(word)
        if len(words) == REASON_TERMS:
            break
    return tuple(words)


class TopicRanker:
    def __init__(
        self, engine: WeightedSearch, index: QueryIndex, facts: PaperFacts, params: RankingParams
    ) -> None:
        self.engine = engine
        self.index = index
        self.facts = facts
        self.params = params
        self._table = TermTable()

    async def rank(
        self,
        profile: Profile,
        *,
        limit: int,
        exclude: Collection[int],
        now: datetime,
        fetch: int | None = None,
    ) -> list[Candidate]:
        """Up to ``limit`` unseen papers for the words of ``profile``, best first (no writes).
        ``fetch``: candidates fetched (``RankingParams.pool``; fewer for a small share of the picks)."""
        params, facts = self.params, self.facts
        query = profile.query()
        positive = {t: w for t, w in query.items() if w > 0}
        if not positive:
            return []
        # Stage 1: the strongest terms pick a pool of candidates (fast top-k on the index); the pool is
        # then scored with the whole query from its own term arrays.
        probe = positive
        if len(positive) > params.probe_terms:
            strongest = sorted(positive, key=lambda t: (-positive[t] * facts.idf(t), t))
            probe = {t: positive[t] for t in strongest[: params.probe_terms]}
        size = max(2 * limit, params.pool if fetch is None else fetch)
        hits = [
            h for h in self.engine.weighted(probe, limit=size, exclude=exclude, matched=False) if h.score > 0
        ]
        hits = [h for h in hits if h.paper_id in self.index]  # (a paper may have left the index since)
        if not hits:
            return []
        pool = Pool.of(self.index, [h.paper_id for h in hits])
        n = len(hits)

        # Stage 2, on the pool's term arrays: the bar (coverage of the query) and the score.
        terms = list(query)
        q_weight = np.fromiter(query.values(), dtype=np.float64, count=len(terms))
        q_idf = np.fromiter(map(facts.idf, terms), dtype=np.float64, count=len(terms))
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
        score = np.asarray(
            np.bincount(rows, weights=q_weight[where] * weights, minlength=n), dtype=np.float64
        )
        keep = np.flatnonzero((coverage >= params.min_coverage) & (score > 0))
        if not len(keep):
            return []
        await facts.sync()
        ids = np.asarray(pool.ids, dtype=np.int64)[keep]
        final = score[keep] * facts.recency(ids, now.astimezone(UTC).date().toordinal())
        order = np.lexsort((ids, -final))[:limit]

        found_rows, found_terms = rows[is_positive], where[is_positive]
        weight = {
            t: float(q_weight[k] * q_idf[k]) * (2.0 if t in profile.topic_terms else 1.0)
            for k, t in enumerate(terms)
        }
        generic = facts.generic(terms)
        picked_rows = keep[order]
        starts = np.searchsorted(found_rows, picked_rows).tolist()
        ends = np.searchsorted(found_rows, picked_rows, "right").tolist()
        return [
            Candidate(
                int(ids[k]),
                round(float(final[k]), 4),
                reason_words(profile, [terms[t] for t in found_terms[lo:hi].tolist()], weight, generic),
            )
            for k, lo, hi in zip(order.tolist(), starts, ends, strict=True)
        ]
