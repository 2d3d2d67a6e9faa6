"""`/paper forget-me`: delete everything stored about one user, in one transaction."""

from __future__ import annotations

import logging

from storage.db import Database
from storage.repositories.users import ForgetCounts, forget_user

log = logging.getLogger(__name__)


class PrivacyService:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def forget(self, user_id: int) -> ForgetCounts:
        """Delete the user's topics, reactions, bookmarks, history, subscription, DMs index and
        search listings, and the user row itself. All or nothing."""
        counts = await forget_user(self._db, user_id)
        log.info("forgot user %d: %d rows deleted", user_id, counts.total)
        return counts
