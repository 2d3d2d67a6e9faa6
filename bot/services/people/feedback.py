"""Feedback capture: 👍 like, 👎 not for me, 🔖 save — from reactions and from rating buttons.

Rules:

* like and dislike exclude each other; save is independent;
* every write is idempotent (a repeated event changes nothing), and removing a reaction takes the
  signal back;
* while a user's learning is paused, new likes and dislikes are not recorded (saves still are:
  a bookmark is not learning), but taking a signal back always works.
"""

from __future__ import annotations

from collections.abc import MutableSet, Sequence
from dataclasses import dataclass

from bot.errors import NotFoundError, UserFacingError
from bot.services.search.snippets import one_line
from storage.db import Database
from storage.models import OPPOSITE, SIGNAL_EMOJI, Paper, Signal, as_signal
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.users import UserRepository

TITLE_IN_NOTE = 90


def parse_signal(value: str) -> Signal:
    signal = as_signal(value)
    if signal is None:
        raise UserFacingError(f"Unknown rating {value!r}: use like, dislike or save.")
    return signal


class FeedbackService:
    def __init__(self, db: Database) -> None:
        self.feedback = FeedbackRepository(db)
        self.users = UserRepository(db)
        self.papers = PaperRepository(db)

    async def saved_papers(self, user_id: int) -> list[Paper]:
        """The user's bookmarks, newest first."""
        ids = await self.feedback.saved(user_id)
        papers = await self.papers.get_many(ids)
        return [papers[pid] for pid in ids if pid in papers]

    async def plan_button(
        self,
        *,
        user_id: int,
        paper_id: int,
        signal: str,
        pending: Sequence[tuple[bool, Signal]] = (),
    ) -> ButtonPress:
        """What a rating button does, from reads only: set the signal, or take it back when the user
        already gave it, and the one-line confirmation.

        `pending`: this user's (added, signal) changes on this paper that were accepted but are not in
        the store yet, oldest first; they count as done (pressing twice quickly takes it back).
        """
        parsed = parse_signal(signal)
        title, given = await self._given(user_id, paper_id, pending)
        emoji = SIGNAL_EMOJI[parsed]
        if parsed in given:
            return ButtonPress(parsed, added=False, note=f"Removed your {emoji} on “{title}”.")
        if parsed != "save" and await self.users.learning_paused(user_id):
            return ButtonPress(
                parsed,
                added=None,
                note=(
                    f"Learning is paused, so I did not record your {emoji} on “{title}”. "
                    "Turn it back on with `/paper interests pause`."
                ),
            )
        return ButtonPress(parsed, added=True, note=confirmation(parsed, title))

    async def plan_seed(
        self, *, user_id: int, paper_id: int, pending: Sequence[tuple[bool, Signal]] = ()
    ) -> ButtonPress:
        """A paper someone starts from (`/paper interests add paper:`): it counts as their 👍, stored
        as one, so every ranking that learns from 👍 learns from it. Reads only, like `plan_button`;
        ``added`` is None when it already counts or learning is paused."""
        title, given = await self._given(user_id, paper_id, pending)
        if "like" in given:
            return ButtonPress(
                "like", added=None, note=f"You already like “{title}”: it counts for your picks."
            )
        if await self.users.learning_paused(user_id):
            return ButtonPress(
                "like",
                added=None,
                note=(
                    f"Learning is paused, so “{title}” does not count yet. "
                    "Turn it back on with `/paper interests pause`, then add it again."
                ),
            )
        return ButtonPress(
            "like",
            added=True,
            note=f"👍 “{title}” now counts as a paper you like: `/paper recommend` and your digest start from it.",
        )

    async def _given(
        self, user_id: int, paper_id: int, pending: Sequence[tuple[bool, Signal]]
    ) -> tuple[str, MutableSet[Signal]]:
        """The paper's short title and the signals the user gave it, counting ``pending`` changes
        (accepted, not stored yet; oldest first) as done."""
        paper = await self.papers.get(paper_id)
        if paper is None:
            raise NotFoundError("That paper is no longer in the library.")
        given = await self.feedback.signals_on(user_id, paper_id)
        for added, earlier in pending:
            if added:
                if earlier in OPPOSITE:
                    given.discard(OPPOSITE[earlier])  # a like takes a dislike back, and the other way
                given.add(earlier)
            else:
                given.discard(earlier)
        return one_line(paper.title, TITLE_IN_NOTE), given


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """What pressing a rating button does: set the signal (added True), take it back (False), or
    nothing (None: learning is paused); and what to tell the person."""

    signal: Signal
    added: bool | None
    note: str


def confirmation(signal: Signal, title: str) -> str:
    if signal == "like":
        return f"👍 Noted — I'll show you more like “{title}”."
    if signal == "dislike":
        return f"👎 Noted — I'll show you fewer papers like “{title}”."
    return f"🔖 Saved “{title}”. See your bookmarks with `/paper saved`."
