"""How broad a typed topic is in this library, and narrower topics inside it.

A topic whose words a large share of the papers have ("deep learning" in a machine-learning library)
leaves the first picks to chance: the person's own corner of it need not be where its words are
densest, and until a 👍 says which corner it is, nothing else can (bench/README.md, "What limits the
broader start"). So when such a topic is added, the bot says how broad it is and offers narrower
topics: the two-word title phrases (the search index's phrase terms) that are most over-represented
among the papers with the topic's words, shown as the titles write them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from paperindex.tokenizer import PHRASE_JOIN, phrase_spans, tokenize

IntArray = npt.NDArray[np.int64]

BROAD_SHARE: Final = 0.05  # a topic whose words this share of the papers have is broad
MIN_BROAD_MATCHES: Final = 50  # …and at least this many papers (a small library has no broad topics)
SAMPLE: Final = 2000  # matching papers whose titles are read for phrases
MIN_PHRASE_SHARE: Final = 0.02  # a narrower topic is in at least this share of the sample's titles
MIN_PHRASE_PAPERS: Final = 3
NARROWER: Final = 5
_HYPHENED_BEFORE: Final = re.compile(r"\b\w+-$")
_HYPHENED_AFTER: Final = re.compile(r"-\w+\b")


class BreadthIndex(Protocol):
    """What is read of the search index (``paperindex.index.BM25Index``)."""

    @property
    def alive(self) -> npt.NDArray[np.bool_]: ...

    @property
    def slot_ids(self) -> IntArray: ...

    def score_array(self, query: dict[str, float]) -> npt.NDArray[np.float64]: ...

    def doc_terms(self, doc_id: int, *, phrases: bool = False) -> dict[str, int]: ...

    def term_ids(self, terms: Iterable[str]) -> IntArray: ...

    def doc_freqs(self, term_ids: IntArray) -> IntArray: ...


class TitledIndex(Protocol):
    """The search engine (``paperindex.engine.SearchEngine``): its index and its papers' titles."""

    @property
    def index(self) -> BreadthIndex: ...

    def title(self, paper_id: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Breadth:
    """A broad topic: how many papers have all its words, of how many, and narrower topics in it."""

    matches: int
    papers: int
    narrower: tuple[str, ...]


def breadth(engine: TitledIndex, topic: str) -> Breadth | None:
    """The topic's breadth when it is broad (:data:`BROAD_SHARE`), else None."""
    index = engine.index
    words = list(dict.fromkeys(tokenize(topic)))
    alive = index.alive
    if not words or not alive.any():
        return None
    slots = np.flatnonzero(with_every_word(index, words, alive))
    matches, papers = len(slots), int(alive.sum())
    if matches < max(MIN_BROAD_MATCHES, BROAD_SHARE * papers):
        return None
    if matches > SAMPLE:  # evenly spread, so the same topic always gets the same answer
        slots = slots[np.linspace(0, matches - 1, SAMPLE).astype(np.int64)]
    ids = [int(i) for i in index.slot_ids[slots]]
    return Breadth(matches, papers, _narrower(engine, ids, set(words), papers))


def with_every_word(
    index: BreadthIndex, words: Iterable[str], alive: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Which papers of ``alive`` (by slot, read once: papers indexed after it, as ingest goes on
    beside, are left out) have every one of these index terms."""
    having = alive.copy()
    for word in words:
        scores = index.score_array({word: 1.0})[: len(having)]
        having[: len(scores)] &= scores > 0
        having[len(scores) :] = False
    return having


def _narrower(engine: TitledIndex, ids: Sequence[int], words: set[str], papers: int) -> tuple[str, ...]:
    """The title phrases most over-represented among these papers (not two words of the topic),
    each weighted by how many of them have it times the log of how much more often they do than the
    library does."""
    index = engine.index
    counts: Counter[str] = Counter()
    for paper_id in ids:
        try:
            counts.update(t for t in index.doc_terms(paper_id, phrases=True) if PHRASE_JOIN in t)
        except KeyError:  # merged into another paper since
            continue
    least = max(MIN_PHRASE_PAPERS, MIN_PHRASE_SHARE * len(ids))
    phrases = [p for p, c in counts.items() if c >= least and not set(p.split(PHRASE_JOIN)) <= words]
    if not phrases:
        return ()
    library = index.doc_freqs(index.term_ids(phrases))
    ranked = []
    for phrase, freq in zip(phrases, library.tolist(), strict=True):
        lift = (counts[phrase] / len(ids)) / (max(freq, 1) / papers)
        if lift > 1.0:
            ranked.append((-counts[phrase] * math.log(lift), phrase))
    chosen = [phrase for _, phrase in sorted(ranked)[:NARROWER]]
    return tuple(_as_written(engine, ids, chosen))


def _as_written(engine: TitledIndex, ids: Sequence[int], phrases: Sequence[str]) -> list[str]:
    """Each phrase as the titles most often write it ("multi agent" → "multi-agent"), in lower case
    but for acronyms, with the word most titles put before or after it when most do ("deep
    reinforcement" → "deep reinforcement learning"); one that repeats an earlier one is left out."""
    written: dict[str, Counter[str]] = {p: Counter() for p in phrases}
    before: dict[str, Counter[str]] = {p: Counter() for p in phrases}  # "multi-", "deep "
    after: dict[str, Counter[str]] = {p: Counter() for p in phrases}  # " learning"
    for paper_id in ids:
        try:
            title = unicodedata.normalize("NFKC", engine.title(paper_id))
        except KeyError:
            continue
        spans = phrase_spans(title)
        for at, (first, second, start, end) in enumerate(spans):
            phrase = first + PHRASE_JOIN + second
            if phrase not in written:
                continue
            # a word hyphened to the phrase is part of how it is written ("in-context learning")
            start -= len(m.group()) if (m := _HYPHENED_BEFORE.search(title, 0, start)) else 0
            end += len(m.group()) if (m := _HYPHENED_AFTER.match(title, end)) else 0
            written[phrase][_lower(title[start:end])] += 1
            if at and spans[at - 1][3] > start:  # three adjacent words: the pair before shares the first
                before[phrase][_lower(title[spans[at - 1][2] : start])] += 1
            if at + 1 < len(spans) and spans[at + 1][2] < end:
                after[phrase][_lower(title[end : spans[at + 1][3]])] += 1
    shown: list[str] = []
    for phrase in phrases:
        if not written[phrase]:
            continue
        times = sum(written[phrase].values())
        form = min(written[phrase], key=lambda f: (-written[phrase][f], f))
        for word, count in before[phrase].most_common(1):
            form = word + form if count > times / 2 else form
        for word, count in after[phrase].most_common(1):
            form = form + word if count > times / 2 else form
        if not any(f" {form} " in f" {other} " or f" {other} " in f" {form} " for other in shown):
            shown.append(form)
    return shown


def _lower(text: str) -> str:
    """Lower case, keeping words written all in capitals (GNN, KV)."""
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in text.split(" "))
