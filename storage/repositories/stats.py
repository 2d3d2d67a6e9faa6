"""Counts for `paperbot stats` and `/paperadmin stats`."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Database


@dataclass(frozen=True, slots=True)
class StoreCounts:
    papers: int
    derived_titles: int
    users: int
    subscriptions: int
    channel_feeds: int
    paused_subscriptions: int
    feedback: int
    digests_sent: int


async def store_counts(db: Database) -> StoreCounts:
    row = await db.fetchone(
        """
        SELECT
          (SELECT COUNT(*) FROM papers),
          (SELECT COUNT(*) FROM papers WHERE title_derived = 1),
          (SELECT COUNT(*) FROM users),
          (SELECT COUNT(*) FROM subscriptions WHERE kind = 'user' AND active = 1),
          (SELECT COUNT(*) FROM subscriptions WHERE kind = 'channel' AND active = 1),
          (SELECT COUNT(*) FROM subscriptions WHERE active = 0),
          (SELECT COUNT(*) FROM feedback),
          (SELECT COUNT(*) FROM digest_runs WHERE status = 'sent')
        """
    )
    assert row is not None
    return StoreCounts(*(int(value) for value in row))
