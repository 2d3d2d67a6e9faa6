"""A person's interests, and everything `/paper interests` does with them.

An interest is a typed topic (`/paper interests add topic:`, or a topic of their `/paper subscribe`), a
paper they named (`/paper interests add paper:`), or a group of liked papers far from every other
interest (the recommender starts one when such a 👍 comes: :mod:`bot.services.recommend.attribution`).
Each is served and learned on its own (:mod:`bot.services.recommend.recommender`); each can be paused
or removed. Learning as a whole can be paused too (the person's reactions are then not learned).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Final

from bot.errors import NotFoundError, UserFacingError
from bot.services.recommend.paper_facts import short_title
from bot.services.search.snippets import echo
from paperindex.tokenizer import tokenize
from storage.db import Database
from storage.repositories.feedback import FeedbackCounts, FeedbackRepository
from storage.repositories.interests import (
    INTEREST_LIMIT,
    InterestRepository,
    InterestRow,
    Origin,
    paper_key,
    topic_key,
)
from storage.repositories.papers import PaperRepository
from storage.repositories.users import UserRepository

log = logging.getLogger(__name__)

MAX_TOPICS: Final = INTEREST_LIMIT  # interests of every kind, at once
MAX_TOPIC_CHARS: Final = 100
_SPACES = re.compile(r"\s+")

WeightedWords = tuple[tuple[str, float], ...]


def typed_topic(rows: Sequence[InterestRow], topic: str) -> InterestRow | None:
    """The typed topic among ``rows`` that reads ``topic`` (case-insensitive), if any."""
    wanted = topic.casefold()
    return next((r for r in rows if r.topic is not None and r.topic.casefold() == wanted), None)


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


@dataclass(frozen=True, slots=True)
class Interest:
    """An interest as the person sees it: its row and the name it goes by."""

    row: InterestRow
    label: str  # the topic's words, or the paper's short title
    narrowed_to: str | None = None  # a topic's: the short title of the paper named as the part meant

    @property
    def id(self) -> int:
        return self.row.id

    @property
    def paused(self) -> bool:
        return self.row.paused_at is not None

    @property
    def described(self) -> str:
        """How a reason names it: the topic's words, or “a paper's title”."""
        return self.label if self.row.kind == "topic" else f"“{self.label}”"


@dataclass(frozen=True, slots=True)
class InterestSummary:
    """One interest in `/paper interests show`: what it learned and how its picks fared."""

    interest: Interest
    liked_words: WeightedWords  # (word, weight), strongest first
    disliked_words: WeightedWords
    picks: int  # papers it brought (shown or sent)
    liked: int  # of those, 👍'd or 🔖'd
    wanted: int = 0  # papers it learns from as wanted (👍 or 🔖, its picks' or any other's it was given)
    disliked: int = 0  # papers it learns from as unwanted (👎)


@dataclass(frozen=True, slots=True)
class ProfileSummary:
    """What `/paper interests show` renders."""

    interests: tuple[InterestSummary, ...]
    counts: FeedbackCounts
    paused: bool  # learning as a whole
    #: authors followed: (name, what told the group picked apart, or None for every paper under it)
    followed: tuple[tuple[str, str | None], ...] = field(default=())

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(s.interest.label for s in self.interests if s.interest.row.kind == "topic")


class InterestService:
    """Interests, and the learning switch: everything `/paper interests` does but show what a model
    learned (the recommender knows that)."""

    def __init__(self, db: Database, *, clock: Callable[[], datetime] | None = None) -> None:
        self.repository = InterestRepository(db)
        self.users = UserRepository(db)
        self.feedback = FeedbackRepository(db)
        self.papers = PaperRepository(db)
        self._clock = clock or (lambda: datetime.now(UTC))

    def _stamp(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="seconds")

    async def interests(self, user_id: int) -> list[Interest]:
        """The person's interests (paused ones too), oldest first, with their names."""
        return await self.named(await self.repository.interests(user_id))

    async def named(self, rows: Sequence[InterestRow]) -> list[Interest]:
        titles = await self._titles(
            [r.paper_id for r in rows if r.kind != "topic" and r.paper_id is not None]
            + [r.narrowed_by for r in rows if r.narrowed_by is not None]
        )
        named: list[Interest] = []
        for row in rows:
            if row.kind == "topic" and row.topic is not None:
                narrowed = titles.get(row.narrowed_by) if row.narrowed_by is not None else None
                named.append(Interest(row, row.topic, narrowed))
            elif row.paper_id is not None and row.paper_id in titles:
                named.append(Interest(row, titles[row.paper_id]))
        return named

    async def _titles(self, paper_ids: Sequence[int]) -> dict[int, str]:
        if not paper_ids:
            return {}
        papers = await self.papers.get_many(paper_ids)
        return {pid: short_title(paper.title) for pid, paper in papers.items()}

    async def topics(self, user_id: int) -> list[str]:
        """The person's typed topics (paused ones too), oldest first."""
        return await self.repository.topics(user_id)

    async def add_topic(self, user_id: int, topic: str, *, origin: Origin = "interests") -> tuple[str, bool]:
        """Add a topic as an interest; returns (the topic as stored, whether it was new)."""
        cleaned = clean_topic(topic)
        existing = await self.repository.interests(user_id)
        for row in existing:
            if row.kind == "topic" and row.topic is not None and row.topic.casefold() == cleaned.casefold():
                return row.topic, False
        self._check_room(existing)
        _, added = await self.repository.add(
            user_id, "topic", topic_key(cleaned), topic=cleaned, origin=origin, at=self._stamp()
        )
        return cleaned, added

    async def add_paper(self, user_id: int, paper_id: int) -> tuple[Interest, bool]:
        """Follow the papers like ``paper_id`` as an interest of their own (its first 👍 is that paper,
        whether or not the person's 👍 on it is stored yet); returns it and whether it was new."""
        papers = await self.papers.get_many([paper_id])
        if paper_id not in papers:
            raise NotFoundError("That paper is not in the library (any more).")
        existing = await self.repository.interests(user_id)
        for row in existing:
            if row.kind != "topic" and row.paper_id == paper_id:
                return (await self.named([row]))[0], False
        self._check_room(existing)
        row, added = await self.repository.add(
            user_id, "paper", paper_key(paper_id), paper_id=paper_id, at=self._stamp()
        )
        return Interest(row, short_title(papers[paper_id].title)), added

    async def narrow_by(self, user_id: int, row: InterestRow, paper_id: int) -> InterestRow:
        """A paper named for the typed topic ``row`` says which part of it the person means: from now
        on the paper and their reactions lead its picks, and its words no longer bind them. Returns the
        row as it now is."""
        changed = row.kind == "topic" and row.narrowed_by != paper_id
        if changed and await self.repository.narrow_by(user_id, row.id, paper_id):
            return replace(row, narrowed_by=paper_id)
        return row

    async def give_paper(self, user_id: int, topic: str, paper_id: int) -> InterestRow:
        """The person says a paper they named is what they mean by ``topic`` (its button under the
        answer, when the paper went elsewhere): the topic is narrowed by it, and the paper leaves the
        interest it had started, or the topic it had narrowed. Returns the topic's row as it now is."""
        rows = [r for r in await self.repository.interests(user_id) if r.active]
        target = typed_topic(rows, topic)
        if target is None or not await self.repository.give_paper(
            user_id, target.id, paper_id, at=self._stamp()
        ):
            raise NotFoundError(f"You no longer follow “{topic}”.")
        return replace(target, narrowed_by=paper_id)

    def _check_room(self, existing: Sequence[InterestRow]) -> None:
        if len(existing) >= MAX_TOPICS:
            raise UserFacingError(
                f"You already follow {MAX_TOPICS} interests; remove one with `/paper interests remove` first."
            )

    async def narrow_topic(self, user_id: int, broad: str, narrower: str) -> tuple[str, str | None]:
        """Follow ``narrower`` in place of ``broad`` (case-insensitive): the same interest, its words
        narrowed (what its picks taught stays). Returns (the narrower topic as stored, the broad one
        it replaced, or None when that was no longer followed and the narrower one was only added)."""
        cleaned = clean_topic(narrower)
        existing = [r for r in await self.repository.interests(user_id) if r.kind == "topic" and r.topic]
        already = typed_topic(existing, cleaned)
        for row in existing:
            if row.topic is not None and row.topic.casefold() == broad.casefold():
                if already is not None:  # followed already, perhaps written otherwise: the broad one goes
                    await self.repository.remove(user_id, row.id, at=self._stamp())
                    return already.topic or cleaned, row.topic
                if await self.repository.retopic(user_id, row.id, cleaned):
                    return cleaned, row.topic
        stored, _ = await self.add_topic(user_id, cleaned)
        return stored, None

    async def find(self, user_id: int, name: str) -> Interest:
        """The person's interest going by ``name`` (its words or its paper's title, case-insensitive;
        a title may be given as it is shown, cut short); raises with their interests otherwise."""
        wanted = _SPACES.sub(" ", name).strip().strip('“”"').casefold()
        interests = await self.interests(user_id)
        for interest in interests:
            if interest.label.casefold() == wanted:
                return interest
        for interest in interests:
            if (
                interest.row.kind != "topic"
                and wanted
                and interest.label.casefold().startswith(wanted.rstrip("…"))
            ):
                return interest
        if not interests:
            raise UserFacingError("You have no interests yet. Add one with `/paper interests add`.")
        listed = ", ".join(f"“{echo(i.label)}”" for i in interests[:10])
        raise UserFacingError(f"“{echo(name.strip())}” is not one of your interests ({listed}).")

    async def remove(self, user_id: int, name: str) -> str:
        """Stop following an interest; returns its name."""
        interest = await self.find(user_id, name)
        await self.repository.remove(user_id, interest.id, at=self._stamp())
        return interest.label

    async def pause(self, user_id: int, name: str, paused: bool | None = None) -> tuple[str, bool]:
        """Pause or resume one interest (None switches): a paused one brings no picks and learns
        nothing until resumed. Returns its name and whether it is paused now."""
        interest = await self.find(user_id, name)
        now_paused = not interest.paused if paused is None else paused
        await self.repository.set_paused(user_id, interest.id, now_paused, at=self._stamp())
        return interest.label, now_paused

    async def reset(self, user_id: int) -> FeedbackCounts:
        """Forget what reactions taught (likes and dislikes); interests and bookmarks stay."""
        removed = await self.feedback.clear_learned(user_id)
        log.info("user %d reset learning (%d likes, %d dislikes)", user_id, removed.likes, removed.dislikes)
        return removed

    async def set_paused(self, user_id: int, paused: bool | None = None) -> bool:
        """Pause or resume learning from reactions as a whole (None toggles); returns the new state."""
        if paused is None:
            paused = not await self.users.learning_paused(user_id)
        await self.users.set_learning_paused(user_id, paused)
        return paused
