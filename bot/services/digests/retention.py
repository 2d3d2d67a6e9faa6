"""How long digest history is kept: finished runs with their planned papers, and the bot's paper messages.

Both grow with every digest, feed post and `/paper show`, so rows older than the retention
(``PAPERBOT_DIGEST_HISTORY_DAYS``) are deleted daily, by the process running the background work:

* finished runs (``digest_runs``) and their planned papers (``digest_items``); a run still in progress
  is never touched. The retention is at least :data:`MIN_HISTORY_DAYS`, longer than a weekly period
  and the grace after it, so every subscription's latest run stays and a period is never taken for
  missed;
* the bot's paper messages (``posted_messages``): a 👍 👎 🔖 reaction on a message older than the
  retention no longer names a paper and counts for nothing (buttons carry their paper, so a DM
  digest's 👍 👎 🔖 buttons keep working);
* what was sent to whom (``digest_sent``, one small row per paper and recipient) is kept for as long
  as the recipient is: a paper never reaches a person or a channel twice, however old.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, timedelta

from bot.clock import Clock
from storage.repositories.digests import DigestRepository
from storage.repositories.messages import PostedMessageRepository

log = logging.getLogger(__name__)

DEFAULT_HISTORY_DAYS = 180
#: Two weekly periods: the latest run of a weekly subscription, with its grace, is always younger.
MIN_HISTORY_DAYS = 14


@dataclass(frozen=True, slots=True)
class PrunedHistory:
    runs: int = 0
    items: int = 0
    messages: int = 0


class DigestHistory:
    def __init__(
        self,
        digests: DigestRepository,
        messages: PostedMessageRepository,
        *,
        clock: Clock,
        keep: timedelta = timedelta(days=DEFAULT_HISTORY_DAYS),
    ) -> None:
        if keep < timedelta(days=MIN_HISTORY_DAYS):
            raise ValueError(f"digest history is kept at least {MIN_HISTORY_DAYS} days")
        self.digests = digests
        self.messages = messages
        self.clock = clock
        self.keep = keep

    async def prune(self) -> PrunedHistory:
        """Delete the history older than the retention. Never raises (it runs from the scheduler and at
        start): a failure is logged and the next day's run goes on from where this one stopped."""
        cutoff = (self.clock() - self.keep).astimezone(UTC).isoformat(timespec="seconds")
        try:
            runs, items = await self.digests.delete_finished_before(cutoff)
            messages = await self.messages.delete_posted_before(cutoff)
        except Exception:
            log.exception("could not delete digest history older than %s", cutoff)
            return PrunedHistory()
        if runs or messages:
            log.info(
                "deleted digest history older than %d days: %d runs (%d planned papers), %d paper messages",
                self.keep.days,
                runs,
                items,
                messages,
            )
        return PrunedHistory(runs, items, messages)
