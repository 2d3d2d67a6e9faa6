"""Where a 👍 👎 🔖 enters, however it was given: a reaction on a paper the bot posted, a rating button
under a paper, a "Like paper" / "Save paper" message command, a paper named in `/paper interests add`
or found in a person's library. The Discord layer turns what it got into
plain ids and a signal (`storage.models` holds the vocabulary) and calls :meth:`Ratings.rate`; it is
kept in the outbox at once and stored behind the answer (`bot.services.write_behind`), so a busy
store never delays or loses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.services.people.feedback import ButtonPress, FeedbackService
from bot.services.write_behind import WriteBehind
from storage.models import Signal


@dataclass(frozen=True, slots=True)
class OnMessage:
    """A rating given on a message (a reaction): the store says which paper the message shows."""

    message_id: int
    #: Discord says the bot wrote the message (it does on an addition); None when it does not say (a
    #: removal): then it counts only if the bot knows the message
    ours: bool | None


class Ratings:
    """The one entry point of a rating."""

    def __init__(self, feedback: FeedbackService, writes: WriteBehind) -> None:
        self.feedback = feedback
        self.writes = writes

    async def on_message(
        self, user_id: int, signal: Signal, message: OnMessage, *, added: bool, guild_id: int | None
    ) -> bool:
        """A reaction added (``added``) or removed: False when it was not kept (not the bot's message)."""
        return await self.writes.reaction(
            user_id=user_id,
            message_id=message.message_id,
            signal=signal,
            guild_id=guild_id,
            added=added,
            on_our_message=message.ours,
        )

    async def on_paper(
        self, user_id: int, signal: Signal, paper_id: int, *, guild_id: int | None, takes_back: bool = True
    ) -> ButtonPress:
        """A rating of a paper (a button, a message command): given, or taken back when the person had
        given it already (unless ``takes_back`` is False: then nothing changes); what to tell them."""
        press = await self.feedback.plan_button(
            user_id=user_id,
            paper_id=paper_id,
            signal=signal,
            pending=self.writes.pending_ratings(user_id, paper_id),
        )
        if press.added is None or (press.added is False and not takes_back):
            return press
        await self.writes.rating(
            user_id=user_id, paper_id=paper_id, signal=press.signal, added=press.added, guild_id=guild_id
        )
        return press

    async def on_seed(self, user_id: int, paper_id: int, *, guild_id: int | None) -> ButtonPress:
        """A paper someone says they like (`/paper interests add paper:`, a paper of their library): it
        counts as their 👍, stored as one (unless it counts already or learning is paused), never taken
        back; what to tell them."""
        press = await self.feedback.plan_seed(
            user_id=user_id, paper_id=paper_id, pending=self.writes.pending_ratings(user_id, paper_id)
        )
        if press.added:
            await self.writes.rating(
                user_id=user_id, paper_id=paper_id, signal="like", added=True, guild_id=guild_id
            )
        return press
