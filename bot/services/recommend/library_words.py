"""The papers of a person's library that the store lacks, as the words of one interest of theirs.

`/paper interests add file:` keeps such a paper's own title and abstract for that person alone
(``storage.repositories.library_texts``: no paper of the store, so never searched, shown or sent to
anyone). Each text stands for its distinctive terms, weighted as :func:`bot.services.recommend.profile.
indexed_vector` weighs an indexed paper's (the BM25 tf part, the terms chosen by idf · tf part among
terms at least two indexed papers have), and the library for the mean of its texts' unit vectors: an
interest ranked by its words, so the person's picks lean to what their library is about before they
react to anything.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.services.recommend.profile import NO_WORDS, Profile
from paperindex.engine import document_terms
from storage.repositories.library_texts import LibraryText

LIBRARY_TERMS: Final = 60  # terms the library's interest keeps (a text keeps TEXT_TERMS)
TEXT_TERMS: Final = 40
MAX_LIBRARY_WEIGHT_TEXTS: Final = 5  # its share of the picks grows with its texts up to this many
_CACHED: Final = 1024


class TermStats(Protocol):
    """What is read of the index (``paperindex.index.BM25Index``)."""

    k1: float
    b: float

    @property
    def avgdl(self) -> float: ...

    def idf(self, term: str) -> float: ...

    def term_ids(self, terms: Iterable[str]) -> npt.NDArray[np.int64]: ...

    def doc_freqs(self, term_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...


class LibraryTexts(Protocol):
    """``storage.repositories.library_texts.LibraryTextRepository``."""

    async def texts(self, user_id: int) -> list[LibraryText]: ...


def text_vector(text: LibraryText, index: TermStats, *, top_k: int = TEXT_TERMS) -> dict[str, float]:
    """A text's distinctive terms, unit length (empty when none of its terms is in two indexed papers)."""
    counts = document_terms(text.title, text.abstract or "")
    names = [t for t in counts if " " not in t]  # (the title's phrase terms are the index's own extra)
    if not names:
        return {}
    tf = np.fromiter((counts[t] for t in names), dtype=np.float64, count=len(names))
    norm = index.k1 * (1 - index.b + index.b * tf.sum() / (index.avgdl or 1.0))
    tf_part = tf * (index.k1 + 1) / (tf + norm)
    ids = index.term_ids(names)
    known = ids >= 0
    df = np.zeros(len(names), dtype=np.int64)
    df[known] = index.doc_freqs(ids[known])
    idf = np.array([index.idf(t) if k else 0.0 for t, k in zip(names, known, strict=True)])
    # (a term in half the papers or more has an idf of 0 or below: it stays, behind every other)
    weight = np.where(df >= 2, np.maximum(idf, 1e-6) * tf_part, 0.0)
    best = [i for i in np.argsort(-weight, kind="stable")[:top_k].tolist() if weight[i] > 0]
    total = math.sqrt(sum(float(tf_part[i]) ** 2 for i in best)) or 1.0
    return {names[i]: float(tf_part[i]) / total for i in best}


def library_profile(
    texts: Sequence[LibraryText],
    index: TermStats,
    *,
    top_k: int = LIBRARY_TERMS,
    shown: Callable[[str], str] = str,
) -> Profile:
    """The library's words: the mean of its texts' unit vectors, its ``top_k`` strongest terms, each
    shown as ``shown`` writes it (the engine's ``vocabulary.form``)."""
    summed: dict[str, float] = {}
    for text in texts:
        for term, weight in text_vector(text, index).items():
            summed[term] = summed.get(term, 0.0) + weight
    if not summed:
        return NO_WORDS
    top = sorted(summed.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    norm = math.sqrt(sum(w * w for _, w in top)) or 1.0
    weights = {term: w / norm for term, w in top}
    return Profile((), weights, {t: shown(t) for t in weights})


class LibraryWords:
    """Each person's library profile, made again only when their texts change."""

    def __init__(self, texts: LibraryTexts, index: TermStats, shown: Callable[[str], str] = str) -> None:
        self._texts = texts
        self._index = index
        self._shown = shown
        self._made: OrderedDict[int, tuple[tuple[str, ...], Profile]] = OrderedDict()

    async def profile(self, user_id: int) -> tuple[Profile, int]:
        """The person's library words, and how many texts they come from."""
        texts = await self._texts.texts(user_id)
        if not texts:
            self._made.pop(user_id, None)
            return NO_WORDS, 0
        keys = tuple(t.key for t in texts)
        made = self._made.get(user_id)
        if made is None or made[0] != keys:
            # (hundreds of texts tokenised: a worker thread, as a model's fit)
            made = (keys, await asyncio.to_thread(library_profile, texts, self._index, shown=self._shown))
            self._made[user_id] = made
            while len(self._made) > _CACHED:
                self._made.popitem(last=False)
        self._made.move_to_end(user_id)
        return made[1], len(texts)
