"""Single-paper messages the bot posted, so a reaction on any of them names one paper (for as long as
the digest history is kept: :meth:`PostedMessageRepository.delete_posted_before`)."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Database, utcnow
from storage.repositories.users import refuse_forgotten


@dataclass(frozen=True, slots=True)
class PostedMessage:
    message_id: int
    channel_id: int
    guild_id: int | None
    paper_id: int
    recipient_id: int | None
    kind: str
    posted_at: str


class PostedMessageRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self,
        message_id: int,
        channel_id: int,
        guild_id: int | None,
        paper_id: int,
        recipient_id: int | None = None,
        kind: str = "paper",
        *,
        since: str | None = None,
    ) -> None:
        """Remember a posted single-paper message (idempotent: re-recording updates it). ``since``: when
        it was posted, for a note stored later (PersonForgottenError if the person it was sent to asked
        to be forgotten since)."""
        async with self._db.transaction() as conn:
            await refuse_forgotten(conn, recipient_id, since)
            await conn.execute(
                """
                INSERT INTO posted_messages (message_id, channel_id, guild_id, paper_id, recipient_id, kind,
                                             posted_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (message_id) DO UPDATE SET
                    channel_id = excluded.channel_id, guild_id = excluded.guild_id,
                    paper_id = excluded.paper_id, recipient_id = excluded.recipient_id, kind = excluded.kind
                """,
                (message_id, channel_id, guild_id, paper_id, recipient_id, kind, utcnow()),
            )

    async def paper_for(self, message_id: int) -> int | None:
        """The paper a posted message is about, or None when the bot did not post it."""
        value = await self._db.fetchval(
            "SELECT paper_id FROM posted_messages WHERE message_id = ?", (message_id,)
        )
        return None if value is None else int(value)

    async def get(self, message_id: int) -> PostedMessage | None:
        row = await self._db.fetchone(
            "SELECT message_id, channel_id, guild_id, paper_id, recipient_id, kind, posted_at "
            "FROM posted_messages WHERE message_id = ?",
            (message_id,),
        )
        if row is None:
            return None
        return PostedMessage(
            int(row[0]),
            int(row[1]),
            None if row[2] is None else int(row[2]),
            int(row[3]),
            None if row[4] is None else int(row[4]),
            str(row[5]),
            str(row[6]),
        )

    async def forget(self, message_id: int) -> bool:
        """Drop a message (e.g. it was deleted on Discord)."""
        return await self._db.execute("DELETE FROM posted_messages WHERE message_id = ?", (message_id,)) > 0

    async def delete_posted_before(self, cutoff: str, *, batch: int = 5000) -> int:
        """Forget the messages posted before `cutoff` (a reaction on one then counts for nothing),
        `batch` per transaction; returns how many."""
        deleted = 0
        while True:
            count = await self._db.execute(
                "DELETE FROM posted_messages WHERE message_id IN "
                "(SELECT message_id FROM posted_messages WHERE posted_at < ? LIMIT ?)",
                (cutoff, batch),
            )
            deleted += count
            if count < batch:
                return deleted
