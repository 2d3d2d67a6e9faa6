"""What paperbot keeps about people, and for how long.

* `/paper forget-me` deletes everything stored about one user, in one transaction, and notes when
  they asked (`forgotten_users`: their id and that time, nothing else), so that nothing they did
  before it is stored afterwards by a process that had not stored it yet (an outbox, a digest in
  flight). The note is deleted after ``FORGOTTEN_KEEP`` (90 days), daily; a write about a person that
  took longer than that to reach the store is refused. Someone who uses the bot again after
  forgetting starts afresh: what they do from then on is stored.
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
from storage.repositories.users import FORGOTTEN_KEEP, ForgetCounts, forget_user, prune_forgotten

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
        search listings, and the user row itself, and note when they asked. All or nothing."""
        counts = await forget_user(self._db, user_id, at=self._stamp(self._clock()))
        log.info("forgot user %d: %d rows deleted", user_id, counts.total)
        return counts

    @staticmethod
    def _stamp(moment: datetime) -> str:
        return moment.astimezone(UTC).isoformat(timespec="microseconds")

    async def prune(self) -> None:
        """The daily job (and at start): `prune_searches` and `prune_forgotten`."""
        await self.prune_searches()
        await self.prune_forgotten()

    async def prune_forgotten(self) -> int:
        """Delete the notes of forgettings older than `FORGOTTEN_KEEP`; returns how many. Never raises."""
        try:
            pruned = await prune_forgotten(self._db, self._stamp(self._clock() - FORGOTTEN_KEEP))
        except Exception:
            log.exception("could not delete the notes of forgettings older than %d days", FORGOTTEN_KEEP.days)
            return 0
        if pruned:
            log.info("deleted %d notes of forgettings older than %d days", pruned, FORGOTTEN_KEEP.days)
        return pruned

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
