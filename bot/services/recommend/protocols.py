"""What the recommender reads of the search engine and its index (``paperindex``), as Protocols."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bot.services.recommend.person_models import IndexedPapers
from paperindex.vocabulary import Vocabulary

IntArray = npt.NDArray[np.int64]


class Hit(Protocol):
    @property
    def paper_id(self) -> int: ...

    @property
    def score(self) -> float: ...


class WeightedSearch(Protocol):
    """What ranking by a topic's words asks of the search engine (``paperindex.engine.SearchEngine``)."""

    def weighted(
        self,
        query: Mapping[str, float],
        *,
        limit: int,
        exclude: Collection[int] = (),
        allowed: Collection[int] | None = None,
        matched: bool = True,
    ) -> Sequence[Hit]: ...


class RecommendationEngine(WeightedSearch, Protocol):
    """What the recommender needs from the search engine: weighted search, titles, and the word shown
    for each index term."""

    def title(self, paper_id: int) -> str: ...

    @property
    def vocabulary(self) -> Vocabulary: ...


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

    def df(self, term: str) -> int: ...

    def doc_terms(self, doc_id: int) -> Mapping[str, int]: ...

    def doc_length(self, doc_id: int) -> int: ...

    def term_ids(self, terms: Iterable[str]) -> IntArray: ...

    def matched_terms(self, doc_id: int, terms: Iterable[str]) -> list[str]: ...
