"""Counts for `paperbot stats` (the whole store) and `/paperadmin stats` (one server)."""

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


async def guild_counts(db: Database, guild_id: int) -> StoreCounts:
    """The counts one server's admins may see: papers (shared by every server) and, of that server
    only, its people (who rated papers there or set up their digest there), DM digests set up there,
    its channel feeds, paused ones, reactions and saves given there, and digests sent to them."""
    row = await db.fetchone(
        """
        SELECT
          (SELECT COUNT(*) FROM papers),
          (SELECT COUNT(*) FROM papers WHERE title_derived = 1),
          (SELECT COUNT(*) FROM (
              SELECT user_id FROM feedback WHERE guild_id = ?
              UNION SELECT user_id FROM subscriptions WHERE kind = 'user' AND guild_id = ?) AS people),
          (SELECT COUNT(*) FROM subscriptions WHERE kind = 'user' AND active = 1 AND guild_id = ?),
          (SELECT COUNT(*) FROM subscriptions WHERE kind = 'channel' AND active = 1 AND guild_id = ?),
          (SELECT COUNT(*) FROM subscriptions WHERE active = 0 AND guild_id = ?),
          (SELECT COUNT(*) FROM feedback WHERE guild_id = ?),
          (SELECT COUNT(*) FROM digest_runs JOIN subscriptions ON subscriptions.id = digest_runs.subscription_id
            WHERE digest_runs.status = 'sent' AND subscriptions.guild_id = ?)
        """,
        (guild_id,) * 7,
    )
    assert row is not None
    return StoreCounts(*(int(value) for value in row))
