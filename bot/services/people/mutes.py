"""Muted topics: `/paper interests mute|unmute` and `/paperadmin feed mute|unmute`.

A muted phrase hides every paper whose title or abstract says it from the person's digest,
`/paper recommend` and the personal order of their searches (a channel feed's mute: from its posts);
a search still lists those papers and says how many on its page were muted. A phrase matches as the
search engine reads text: its words become index terms (stems, stop words left out, so "reinforced
learning" says "reinforcement learning"), and a paper holds the phrase when those terms stand next to
each other, in that order, in its title or in its abstract, with no sentence or clause punctuation
between them.

:class:`MuteMatcher` finds the papers that hold a phrase: the index says which papers hold all its terms
(fast, for every paper), and the texts of those few are read to check the terms stand together. What
it found is kept per phrase and only papers indexed since are checked again.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from bot.errors import UserFacingError
from bot.services.search.snippets import echo
from paperindex.tokenizer import tokenize
from storage.db import Database
from storage.models import Paper, Subscription
from storage.repositories.interests import InterestRepository
from storage.repositories.mutes import MUTE_LIMIT, MuteLimitError, MuteRepository, MuteRow
from storage.repositories.subscriptions import SubscriptionRepository

MAX_MUTE_CHARS: Final = 100  # what a slash command's option may carry
MAX_MUTE_TERMS: Final = 6  # a muted topic is a short phrase, not a sentence
_CACHED_PHRASES: Final = 4096  # phrases whose papers are kept (least recently used dropped first)
#: What ends a phrase in a paper's text: sentence and clause punctuation (a dot inside a number, "3.5",
#: does not).
_BREAK: Final = re.compile(r"[,;:()\[\]{}!?\"]|\.(?!\d)")


class MuteError(UserFacingError):
    """A mute or an unmute refused, with the reason for the person; nothing was stored."""


def mute_terms(phrase: str) -> tuple[str, ...]:
    """The index terms a muted phrase stands for, in order."""
    return tuple(tokenize(phrase))


def holds_phrase(text: str, terms: Sequence[str]) -> bool:
    """Whether ``text`` says the phrase: its ``terms`` side by side, in order, within one clause."""
    if not text or not terms:
        return False
    wanted = list(terms)
    size = len(wanted)
    for piece in _BREAK.split(text):
        tokens = tokenize(piece)
        for start in range(len(tokens) - size + 1):
            if tokens[start] == wanted[0] and tokens[start : start + size] == wanted:
                return True
    return False


def paper_holds(paper: Paper, terms: Sequence[str]) -> bool:
    return holds_phrase(paper.title, terms) or holds_phrase(paper.abstract or "", terms)


class TermIndex(Protocol):
    """What is read of the search index (``paperindex.index.BM25Index``)."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def n_slots(self) -> int: ...

    @property
    def slot_ids(self) -> npt.NDArray[np.int64]: ...

    def holding(self, terms: Iterable[str], start: int = 0) -> npt.NDArray[np.bool_]: ...


class PaperTexts(Protocol):
    """``storage.repositories.papers.PaperRepository``: the papers' titles and abstracts."""

    async def get_many(self, ids: Sequence[int]) -> dict[int, Paper]: ...


@dataclass(slots=True)
class _Found:
    checked: int = 0  # index slots checked so far
    ids: set[int] = field(default_factory=set)


class MuteMatcher:
    """The papers holding a phrase, found once and followed as papers are indexed."""

    def __init__(self, index: TermIndex, papers: PaperTexts) -> None:
        self._index = index
        self._papers = papers
        self._found: OrderedDict[tuple[str, ...], _Found] = OrderedDict()

    async def papers(self, terms: tuple[str, ...]) -> frozenset[int]:
        """Ids of the indexed papers that hold the phrase of ``terms``."""
        if not terms:
            return frozenset()
        found = self._found.get(terms)
        if found is None:
            found = self._found[terms] = _Found()
            while len(self._found) > _CACHED_PHRASES:
                self._found.popitem(last=False)
        else:
            self._found.move_to_end(terms)
        if found.checked < self._index.n_slots:
            checked, candidates = await asyncio.to_thread(self._holding_all, terms, found.checked)
            if len(terms) > 1 and candidates:  # the index knows the terms, the text their order
                texts = await self._papers.get_many(candidates)
                # thousands of abstracts for a common phrase: tokenised off the event loop
                candidates = await asyncio.to_thread(
                    lambda: [i for i in candidates if i in texts and paper_holds(texts[i], terms)]
                )
            found.ids.update(candidates)
            found.checked = max(found.checked, checked)
        return frozenset(found.ids)

    def _holding_all(self, terms: tuple[str, ...], start: int) -> tuple[int, list[int]]:
        """(slots now indexed, ids of the papers from slot ``start`` on holding every term)."""
        index = self._index
        with index.lock:
            mask = index.holding(terms, start)
            ids = index.slot_ids[start : start + len(mask)][mask]
        return start + len(mask), [int(i) for i in ids]


@dataclass(frozen=True, slots=True)
class MuteAdded:
    phrase: str  # as stored: the one muted before when the same words were (``added`` False)
    terms: tuple[str, ...]
    added: bool
    papers: int  # papers indexed now that the mute hides
    #: the owner's own topics (a person's interests, a feed's topics) that say the muted phrase
    topics: tuple[str, ...] = ()


class MuteService:
    def __init__(
        self,
        db: Database,
        matcher: MuteMatcher,
        *,
        limit: int = MUTE_LIMIT,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repository = MuteRepository(db)
        self.feeds = SubscriptionRepository(db)
        self.interests = InterestRepository(db)
        self.matcher = matcher
        self.limit = limit
        self._clock = clock

    # -- a person's mutes ---------------------------------------------------------------------------

    async def mute(self, user_id: int, phrase: str) -> MuteAdded:
        """`/paper interests mute topic:`: MuteError with the reason when the phrase cannot be muted."""
        text, terms = _checked(phrase)
        existing = await self.repository.mutes(user_id)
        if not any(m.terms == " ".join(terms) for m in existing) and len(existing) >= self.limit:
            raise self._full(feed=False)
        stamp = self._clock().astimezone(UTC).isoformat(timespec="seconds")
        try:
            row, added = await self.repository.add(user_id, text, " ".join(terms), limit=self.limit, at=stamp)
        except MuteLimitError:
            raise self._full(feed=False) from None
        done = MuteAdded(row.phrase, terms, added, len(await self.matcher.papers(terms)))
        return _naming(done, await self.interests.topics(user_id))

    async def unmute(self, user_id: int, phrase: str) -> str:
        """`/paper interests unmute topic:`: the phrase as it was muted (MuteError when it was not)."""
        text, terms = _checked(phrase)
        removed = await self.repository.remove(user_id, " ".join(terms))
        if removed is not None:
            return removed.phrase
        raise _not_muted(text, [m.phrase for m in await self.repository.mutes(user_id)], feed=False)

    async def mutes(self, user_id: int) -> list[MuteRow]:
        return await self.repository.mutes(user_id)

    async def muted(self, user_id: int) -> frozenset[int]:
        """The candidate filter of the recommender: every paper the person's mutes hide."""
        return await self.hidden(m.phrase for m in await self.repository.mutes(user_id))

    async def count_muted(self, user_id: int, paper_ids: Collection[int]) -> int:
        """How many of these papers (a search's page) the person muted."""
        muted = await self.muted(user_id)
        return sum(1 for paper_id in paper_ids if paper_id in muted)

    async def hidden(self, phrases: Iterable[str]) -> frozenset[int]:
        """Every paper these muted phrases hide (a feed's mutes: its planner leaves them out)."""
        found = [await self.matcher.papers(mute_terms(phrase)) for phrase in phrases]
        return frozenset().union(*found)

    # -- a channel feed's mutes (beside its topics) ---------------------------------------------------

    async def feed_mute(self, guild_id: int, channel_id: int, phrase: str) -> MuteAdded:
        """`/paperadmin feed mute`: the feed's posts never carry a paper that says the phrase."""
        sub = await self._feed(guild_id, channel_id)
        text, terms = _checked(phrase)
        same: list[str] = []

        def add(mutes: tuple[str, ...]) -> tuple[str, ...]:
            same[:] = [m for m in mutes if mute_terms(m) == terms]
            if same:
                return mutes
            if len(mutes) >= self.limit:
                raise self._full(feed=True)
            return (*mutes, text)

        if await self.feeds.change_mutes(sub.id, add) is None:
            raise _no_feed()
        done = MuteAdded(same[0] if same else text, terms, not same, len(await self.matcher.papers(terms)))
        return _naming(done, sub.topics)

    async def feed_unmute(self, guild_id: int, channel_id: int, phrase: str) -> str:
        """`/paperadmin feed unmute`: the phrase as the feed had muted it (MuteError when it had not)."""
        sub = await self._feed(guild_id, channel_id)
        text, terms = _checked(phrase)
        gone: list[str] = []

        def remove(mutes: tuple[str, ...]) -> tuple[str, ...]:
            gone[:] = [m for m in mutes if mute_terms(m) == terms]
            return tuple(m for m in mutes if m not in gone)

        after = await self.feeds.change_mutes(sub.id, remove)
        if after is None:
            raise _no_feed()
        if not gone:
            raise _not_muted(text, list(after), feed=True)
        return gone[0]

    # -- the rules ----------------------------------------------------------------------------------

    def _full(self, *, feed: bool) -> MuteError:
        who, unmute = (
            ("This feed mutes", "/paperadmin feed unmute")
            if feed
            else ("You mute", "/paper interests unmute")
        )
        return MuteError(
            f"{who} {self.limit} topics already, the most allowed: unmute one first (`{unmute}`). "
            "Nothing was added."
        )

    async def _feed(self, guild_id: int, channel_id: int) -> Subscription:
        sub = await self.feeds.for_channel(channel_id)
        if sub is None or sub.guild_id != guild_id or not sub.is_channel:
            raise _no_feed()
        return sub


def _no_feed() -> MuteError:
    return MuteError(
        "That channel has no paper feed to mute a topic in: `/paperadmin feed set` gives it one."
    )


def _not_muted(text: str, mutes: Sequence[str], *, feed: bool) -> MuteError:
    whose, verb, has = ("This feed", "doesn't", "has") if feed else ("You", "don't", "have")
    listed = "; ".join(f"“{_echo(m)}”" for m in mutes)
    rest = f" Muted now: {listed}." if mutes else f" {whose} {has} no muted topics."
    return MuteError(f"{whose} {verb} mute “{_echo(text)}”.{rest}")


def _naming(done: MuteAdded, topics: Sequence[str]) -> MuteAdded:
    """The mute, with the owner's topics that say its phrase (their papers that say it are left out too)."""
    return replace(done, topics=tuple(t for t in dict.fromkeys(topics) if holds_phrase(t, done.terms)))


def _checked(phrase: str) -> tuple[str, tuple[str, ...]]:
    """The phrase as it will be stored, and its terms; MuteError saying what is wrong otherwise."""
    text = " ".join(phrase.split())
    if not text:
        raise MuteError("Give the words to mute, e.g. `topic:reinforcement learning`. Nothing was changed.")
    if len(text) > MAX_MUTE_CHARS:
        raise MuteError(
            f"A muted topic may be at most {MAX_MUTE_CHARS} characters; that one has {len(text)}. "
            "Give a short phrase. Nothing was changed."
        )
    terms = mute_terms(text)
    if not terms:
        raise MuteError(
            f"“{_echo(text)}” has only very common words (like “the” or “of”), single letters or symbols, "
            "which say nothing about a paper: give a more specific word. Nothing was changed."
        )
    if len(terms) > MAX_MUTE_TERMS:
        raise MuteError(
            f"A muted topic is a short phrase of at most {MAX_MUTE_TERMS} words; “{_echo(text)}” has "
            f"{len(terms)}. Mute its key words instead. Nothing was changed."
        )
    return text, terms


def _echo(text: str, limit: int = 80) -> str:
    return echo(text, limit)
