"""What paperbot keeps about people, and for how long.

* `/paper forget-me` deletes everything stored about one user, in one transaction.
* Stored search listings (which hold the query, so their paging buttons work after a restart) are
  deleted after ``PAPERBOT_SEARCH_RETENTION_DAYS``: at start and then daily.
* Out of reach of both: backups already taken. The daily backup that `deploy/` sets up
  (``paperbot-backup.service``) deletes copies more than :data:`BACKUP_RETENTION_DAYS` days old.
* Logs at INFO name ids but never people's content (topics, queries, which paper they rated);
  that is logged at DEBUG only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from storage.db import Database
from storage.repositories.searches import SearchRepository
from storage.repositories.users import ForgetCounts, forget_user

log = logging.getLogger(__name__)

#: Days the shipped daily backup keeps a copy (``find … -mtime +14 -delete`` in
#: deploy/paperbot-backup.service; a test keeps the two in step).
BACKUP_RETENTION_DAYS = 14

DEFAULT_SEARCH_RETENTION_DAYS = 30


class PrivacyService:
    def __init__(
        self,
        db: Database,
        *,
        search_retention_days: int = DEFAULT_SEARCH_RETENTION_DAYS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._db = db
        self.search_retention = timedelta(days=search_retention_days)
        self._clock = clock

    async def forget(self, user_id: int) -> ForgetCounts:
        """Delete the user's topics, reactions, bookmarks, history, subscription, DMs index and
        search listings, and the user row itself. All or nothing."""
        counts = await forget_user(self._db, user_id)
        log.info("forgot user %d: %d rows deleted", user_id, counts.total)
        return counts

    async def prune_searches(self) -> int:
        """Delete search listings older than the retention; returns how many. Never raises (it runs
        from the scheduler and at start): a failure is logged and the next run tries again."""
        cutoff = (self._clock() - self.search_retention).astimezone(UTC).isoformat(timespec="seconds")
        try:
            pruned = await SearchRepository(self._db).delete_older_than(cutoff)
        except Exception:
            log.exception("could not delete search listings older than %s", cutoff)
            return 0
        if pruned:
            log.info("deleted %d search listings older than %d days", pruned, self.search_retention.days)
        return pruned
