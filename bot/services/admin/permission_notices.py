"""Telling an admin, once per channel, that the bot may post there but not add reactions.

The paper still goes out, with its 👍 👎 🔖 as buttons instead of reactions; the notice says which
permission to grant for reactions everyone sees. "Once": the first time the bot finds the permission
missing in a channel is kept in ``app_state``, so neither the next paper nor a restart repeats it (a
second process racing for the same channel stores it once: :meth:`StateRepository.claim`).
"""

from __future__ import annotations

import logging

from storage.db import PersonForgottenError, StoreBusyError, utcnow
from storage.repositories.state import StateRepository
from storage.repositories.subscriptions import SubscriptionRepository

log = logging.getLogger(__name__)

#: The permission, as Discord's settings name it.
ADD_REACTIONS = "Add Reactions"


def reactions_missing_notice(channel_id: int) -> str:
    return (
        f"I can post in <#{channel_id}> but not add reactions there (missing **{ADD_REACTIONS}**), so the "
        f"papers I post there get 👍 👎 🔖 buttons instead of reactions. To have reactions everyone there "
        f"can see, give me {ADD_REACTIONS} in that channel (Edit Channel → Permissions)."
    )


class PermissionNotices:
    def __init__(self, state: StateRepository, subscriptions: SubscriptionRepository) -> None:
        self.state = state
        self.subscriptions = subscriptions

    async def reactions_missing(
        self, channel_id: int, *, leave_for: int | None = None, since: str | None = None
    ) -> str | None:
        """The notice for an admin the first time the bot finds it may not add reactions in
        ``channel_id`` (kept for ``leave_for``'s next command when given); None every time after.

        A busy store skips it, and so does not count as told: the next paper there tries again. So
        does an admin who asked to be forgotten since ``since`` (when the digest that found it began).
        """
        key = f"told:missing-permission:{channel_id}:add_reactions"
        notice = reactions_missing_notice(channel_id)
        try:
            if not await self.state.claim(key, utcnow()):
                return None
            if leave_for is not None:
                try:
                    await self.subscriptions.add_notice(leave_for, notice, since=since)
                except (StoreBusyError, PersonForgottenError):
                    await self.state.delete(key)
                    raise
        except PersonForgottenError:
            log.info("the admin to tell of channel %s asked to be forgotten: not told", channel_id)
            return None
        except StoreBusyError:
            log.warning(
                "store busy: the missing Add Reactions in channel %s is told another time", channel_id
            )
            return None
        log.info(
            "no Add Reactions permission in channel %s: papers there get buttons; an admin is told",
            channel_id,
        )
        return notice
