"""Digest runs, their planned papers, and what each recipient was already sent (exactly-once delivery).

The life of one period of one subscription:

1. :meth:`DigestRepository.claim_run` inserts ``(subscription_id, period_key)``; the UNIQUE constraint
   makes the insert a lock — a double fire, a second process or a restart finds it taken.
2. :meth:`plan_items` stores the chosen papers (in order, with their reasons).
3. For each paper, :meth:`reserve_item` marks it attempted *and* records it in ``digest_sent`` in one
   transaction before the message goes out; :meth:`record_message` then stores the message id and the
   ``posted_messages`` row (so reactions on it map to the paper) in one transaction. A send that fails
   with a known error is undone by :meth:`release_item`. A crash between reserve and record leaves the
   paper "in doubt": it is never sent again (a paper is never sent twice), only logged.
4. The header (or the "nothing new" line of an empty digest) is reserved and confirmed the same way
   on the run itself (:meth:`reserve_header`, :meth:`record_header`, :meth:`release_header`).
5. :meth:`finish_run` sets the final status. Runs still ``claimed`` after a crash are resumed with
   their unreserved items (:meth:`open_runs`, :meth:`unsent_items`).

Several processes share the store, so a claimed run is held by one process at a time (its ``owner``,
any string naming the process) for a lease it renews while it sends (:meth:`renew`). Another process
takes the run over (:meth:`take_over`: a row lock decides between processes trying at once) only
when the lease ran out — its owner died — or was let go (:meth:`release`, at a clean stop). Every
reservation (:meth:`reserve_item`, :meth:`reserve_header`) checks, under a row lock on the run, that
the reserving process still holds it, and raises :class:`ClaimLostError` otherwise: a process that
lost its run sends nothing more of it, and the one that took it over sees everything reserved before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.db import Connection, Database, Row, utcnow
from storage.repositories.users import ensure_user, forgotten_since

RUN_STATUSES = ("claimed", "sent", "empty", "failed", "skipped")

_RUN_COLUMNS = (
    "id, subscription_id, period_key, status, detail, claimed_at, finished_at, header_sent_at, "
    "header_message_id, claimed_by, lease_until"
)


class ClaimLostError(Exception):
    """Another process holds the run now (this one's lease ran out): send nothing more of it."""


_ITEM_COLUMNS = "run_id, paper_id, position, reason, message_id, sent_at, interest_id"


@dataclass(frozen=True, slots=True)
class DigestRun:
    id: int
    subscription_id: int
    period_key: str
    status: str
    detail: str | None
    claimed_at: str
    finished_at: str | None
    #: when the header (or "nothing new" line) was first attempted, and its message once confirmed
    header_sent_at: str | None = None
    header_message_id: int | None = None
    #: the process sending it and until when its lease holds (None: any process may take it over)
    claimed_by: str | None = None
    lease_until: str | None = None


@dataclass(frozen=True, slots=True)
class DigestItem:
    run_id: int
    paper_id: int
    position: int
    reason: str
    message_id: int | None
    sent_at: str | None
    interest_id: int | None = None  # the recipient's interest that brought it

    @property
    def delivered(self) -> bool:
        return self.message_id is not None

    @property
    def in_doubt(self) -> bool:
        """Reserved but never confirmed: the process died while sending it."""
        return self.sent_at is not None and self.message_id is None


@dataclass(frozen=True, slots=True)
class Recipient:
    """Who a digest goes to: a user (by DM) or a channel. Exactly one is set."""

    user_id: int | None = None
    channel_id: int | None = None

    def __post_init__(self) -> None:
        if (self.user_id is None) == (self.channel_id is None):
            raise ValueError("a recipient is either a user or a channel")


def _run(row: Row | Sequence[Any]) -> DigestRun:
    return DigestRun(
        int(row[0]),
        int(row[1]),
        str(row[2]),
        str(row[3]),
        row[4],
        str(row[5]),
        row[6],
        row[7],
        None if row[8] is None else int(row[8]),
        row[9],
        row[10],
    )


def _item(row: Row | Sequence[Any]) -> DigestItem:
    return DigestItem(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        str(row[3]),
        None if row[4] is None else int(row[4]),
        row[5],
        None if row[6] is None else int(row[6]),
    )


async def _still_held(conn: Connection, run_id: int, owner: str | None) -> None:
    """ClaimLostError unless `owner` (None: no check) holds the run. On PostgreSQL the run's row stays
    share-locked until the reservation commits, so a takeover waits for it and then sees it."""
    if owner is None:
        return
    lock = " FOR SHARE" if conn.dialect == "postgresql" else ""
    holder = await conn.fetchone(f"SELECT claimed_by FROM digest_runs WHERE id = ?{lock}", (run_id,))
    if holder is not None and holder[0] != owner:
        raise ClaimLostError(f"digest run {run_id} is held by {holder[0] or 'no one'} now, not {owner}")


class DigestRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # ---- runs ---------------------------------------------------------------------------------

    async def claim_run(
        self,
        subscription_id: int,
        period_key: str,
        *,
        status: str = "claimed",
        detail: str | None = None,
        at: str | None = None,
        owner: str | None = None,
        lease_until: str | None = None,
    ) -> DigestRun | None:
        """Claim one period (for `owner`, its lease until `lease_until`); None when it was already
        claimed (by anyone, at any time)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        now = at or utcnow()
        finished = None if status == "claimed" else now
        async with self._db.transaction() as conn:
            row = await conn.fetchone(
                f"""
                INSERT INTO digest_runs (subscription_id, period_key, status, detail, claimed_at, finished_at,
                                         claimed_by, lease_until)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (subscription_id, period_key) DO NOTHING
                RETURNING {_RUN_COLUMNS}
                """,
                (subscription_id, period_key, status, detail, now, finished, owner, lease_until),
            )
        return None if row is None else _run(row)

    async def get_run(self, run_id: int) -> DigestRun | None:
        row = await self._db.fetchone(f"SELECT {_RUN_COLUMNS} FROM digest_runs WHERE id = ?", (run_id,))
        return None if row is None else _run(row)

    async def run_for(self, subscription_id: int, period_key: str) -> DigestRun | None:
        row = await self._db.fetchone(
            f"SELECT {_RUN_COLUMNS} FROM digest_runs WHERE subscription_id = ? AND period_key = ?",
            (subscription_id, period_key),
        )
        return None if row is None else _run(row)

    async def runs(self, subscription_id: int) -> list[DigestRun]:
        rows = await self._db.fetchall(
            f"SELECT {_RUN_COLUMNS} FROM digest_runs WHERE subscription_id = ? ORDER BY id",
            (subscription_id,),
        )
        return [_run(row) for row in rows]

    async def open_runs(self, *, takeable_by: str | None = None, now: str | None = None) -> list[DigestRun]:
        """Runs still in progress (a process stopped mid-digest), oldest first. With `takeable_by`
        (and `now`, a lease time): only those another process held whose lease ran out or was let go."""
        if takeable_by is None:
            rows = await self._db.fetchall(
                f"SELECT {_RUN_COLUMNS} FROM digest_runs WHERE status = 'claimed' ORDER BY id"
            )
        else:
            rows = await self._db.fetchall(
                f"SELECT {_RUN_COLUMNS} FROM digest_runs WHERE status = 'claimed' "
                "AND (claimed_by IS NULL OR (claimed_by <> ? AND (lease_until IS NULL OR lease_until < ?))) "
                "ORDER BY id",
                (takeable_by, now or utcnow()),
            )
        return [_run(row) for row in rows]

    async def take_over(self, run_id: int, owner: str, *, now: str, lease_until: str) -> bool:
        """Hold a claimed run for `owner` when no other process does (its lease ran out, or was let
        go); False when another still holds it, or it is finished. The row lock of the UPDATE makes
        one of several processes trying at once win."""
        changed = await self._db.execute(
            "UPDATE digest_runs SET claimed_by = ?, lease_until = ? WHERE id = ? AND status = 'claimed' "
            "AND (claimed_by IS NULL OR claimed_by = ? OR lease_until IS NULL OR lease_until < ?)",
            (owner, lease_until, run_id, owner, now),
        )
        return changed > 0

    async def renew(self, run_id: int, owner: str, *, lease_until: str) -> bool:
        """Extend `owner`'s lease; False when it lost the run (or the run is finished or gone)."""
        changed = await self._db.execute(
            "UPDATE digest_runs SET lease_until = ? WHERE id = ? AND claimed_by = ? AND status = 'claimed'",
            (lease_until, run_id, owner),
        )
        return changed > 0

    async def release(self, run_id: int, owner: str) -> None:
        """Let go of a run `owner` holds (a clean stop mid-digest): the next process resumes it at once."""
        await self._db.execute(
            "UPDATE digest_runs SET claimed_by = NULL, lease_until = NULL WHERE id = ? AND claimed_by = ?",
            (run_id, owner),
        )

    async def finish_run(
        self, run_id: int, status: str, detail: str | None = None, *, at: str | None = None
    ) -> None:
        if status not in RUN_STATUSES or status == "claimed":
            raise ValueError(f"cannot finish a run as {status!r}")
        await self._db.execute(
            "UPDATE digest_runs SET status = ?, detail = ?, finished_at = ? WHERE id = ?",
            (status, detail, at or utcnow(), run_id),
        )

    async def reserve_header(self, run_id: int, *, at: str | None = None, owner: str | None = None) -> bool:
        """Mark the run's header as going out (before sending). False: it was attempted before.
        ClaimLostError when `owner` no longer holds the run."""
        async with self._db.transaction() as conn:
            await _still_held(conn, run_id, owner)
            changed = await conn.execute(
                "UPDATE digest_runs SET header_sent_at = ? WHERE id = ? AND header_sent_at IS NULL",
                (at or utcnow(), run_id),
            )
        return changed > 0

    async def record_header(self, run_id: int, message_id: int, *, at: str | None = None) -> None:
        """The header is out: keep its message id (it is never sent again)."""
        await self._db.execute(
            "UPDATE digest_runs SET header_message_id = ?, header_sent_at = COALESCE(header_sent_at, ?) "
            "WHERE id = ?",
            (message_id, at or utcnow(), run_id),
        )

    async def release_header(self, run_id: int) -> None:
        """Undo :meth:`reserve_header` after a send that is known to have failed."""
        await self._db.execute(
            "UPDATE digest_runs SET header_sent_at = NULL WHERE id = ? AND header_message_id IS NULL",
            (run_id,),
        )

    # ---- items --------------------------------------------------------------------------------

    async def plan_items(
        self,
        run_id: int,
        planned: Sequence[tuple[int, str]],
        *,
        brought: Mapping[int, int | None] | None = None,
    ) -> list[DigestItem]:
        """Store the chosen ``(paper_id, reason)`` pairs in order (once: a re-plan keeps the first), and
        the interest that brought each (``brought``: paper id → interest id), for the paper's sending."""
        brought = brought or {}
        async with self._db.transaction() as conn:
            await conn.executemany(
                "INSERT INTO digest_items (run_id, paper_id, position, reason, interest_id) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [
                    (run_id, paper_id, position, reason, brought.get(paper_id))
                    for position, (paper_id, reason) in enumerate(planned)
                ],
            )
        return await self.items(run_id)

    async def items(self, run_id: int) -> list[DigestItem]:
        rows = await self._db.fetchall(
            f"SELECT {_ITEM_COLUMNS} FROM digest_items WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return [_item(row) for row in rows]

    async def unsent_items(self, run_id: int) -> list[DigestItem]:
        """Planned papers not yet attempted (what a resumed run still sends)."""
        return [item for item in await self.items(run_id) if item.sent_at is None]

    async def reserve_item(
        self,
        run_id: int | None,
        paper_id: int,
        recipient: Recipient,
        *,
        at: str | None = None,
        owner: str | None = None,
        since: str | None = None,
        interest_id: int | None = None,
    ) -> bool:
        """Mark a paper as going out to ``recipient`` (before sending), with the interest that brought
        it (``interest_id``, else the one its run's plan noted). False: it already went to them,
        or (``since``: when the digest began) the person asked to be forgotten since. ClaimLostError
        when `owner` no longer holds the run.

        ``run_id`` None is a delivery outside any run (an on-demand digest without a subscription).
        """
        now = at or utcnow()
        async with self._db.transaction() as conn:
            # (first: a forgetting takes the person's lock before the run's rows)
            if await forgotten_since(conn, recipient.user_id, since):
                return False
            if run_id is not None:
                await _still_held(conn, run_id, owner)
                if not await conn.execute(
                    "UPDATE digest_items SET sent_at = ? WHERE run_id = ? AND paper_id = ? AND sent_at IS NULL",
                    (now, run_id, paper_id),
                ):
                    # The run is gone (unsubscribed, forget-me) or the paper was already attempted.
                    return False
            elif recipient.user_id is not None:
                await ensure_user(conn, recipient.user_id, now)
            fresh = (
                await conn.execute(
                    "INSERT INTO digest_sent (user_id, channel_id, paper_id, sent_at, interest_id) "
                    "VALUES (?, ?, ?, ?, COALESCE(?, (SELECT interest_id FROM digest_items "
                    "WHERE run_id = ? AND paper_id = ?))) ON CONFLICT DO NOTHING",
                    (recipient.user_id, recipient.channel_id, paper_id, now, interest_id, run_id, paper_id),
                )
                > 0
            )
            if run_id is not None and not fresh:
                # Sent to them by another digest meanwhile: drop it from this one.
                await conn.execute(
                    "DELETE FROM digest_items WHERE run_id = ? AND paper_id = ?", (run_id, paper_id)
                )
        return fresh

    async def release_item(self, run_id: int | None, paper_id: int, recipient: Recipient) -> None:
        """Undo :meth:`reserve_item` after a send that is known to have failed."""
        async with self._db.transaction() as conn:
            if recipient.user_id is not None:
                await conn.execute(
                    "DELETE FROM digest_sent WHERE paper_id = ? AND user_id = ?",
                    (paper_id, recipient.user_id),
                )
            else:
                await conn.execute(
                    "DELETE FROM digest_sent WHERE paper_id = ? AND channel_id = ?",
                    (paper_id, recipient.channel_id),
                )
            if run_id is not None:
                await conn.execute(
                    "UPDATE digest_items SET sent_at = NULL WHERE run_id = ? AND paper_id = ? AND message_id IS NULL",
                    (run_id, paper_id),
                )

    async def record_message(
        self,
        run_id: int | None,
        paper_id: int,
        *,
        message_id: int,
        channel_id: int,
        guild_id: int | None,
        recipient_id: int | None,
        kind: str,
        at: str | None = None,
        since: str | None = None,
    ) -> None:
        """The message is out: store its id on the item and in ``posted_messages`` (reactions map to it);
        nothing when (``since``: when the digest began) the person asked to be forgotten since."""
        now = at or utcnow()
        async with self._db.transaction() as conn:
            if await forgotten_since(conn, recipient_id, since):
                return
            if run_id is not None and not await conn.execute(
                "UPDATE digest_items SET message_id = ?, sent_at = COALESCE(sent_at, ?) "
                "WHERE run_id = ? AND paper_id = ?",
                (message_id, now, run_id, paper_id),
            ):
                return  # the subscription was removed meanwhile (forget-me): keep nothing
            await conn.execute(
                """
                INSERT INTO posted_messages (message_id, channel_id, guild_id, paper_id, recipient_id, kind,
                                             posted_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (message_id) DO NOTHING
                """,
                (message_id, channel_id, guild_id, paper_id, recipient_id, kind, now),
            )

    # ---- history ------------------------------------------------------------------------------

    async def delete_finished_before(self, cutoff: str, *, batch: int = 1000) -> tuple[int, int]:
        """Delete the runs finished before `cutoff` (never one still in progress) with their planned
        papers, `batch` runs per transaction so writers in between never wait long; returns (runs,
        items). What was sent to whom (``digest_sent``) stays: a paper still never goes out twice."""
        runs = items = 0
        while True:
            async with self._db.transaction() as conn:
                rows = await conn.fetchall(
                    "SELECT id FROM digest_runs WHERE finished_at < ? AND status <> 'claimed' ORDER BY id "
                    "LIMIT ?",
                    (cutoff, batch),
                )
                ids = [int(row[0]) for row in rows]
                if ids:
                    marks = ",".join("?" * len(ids))
                    items += await conn.execute(f"DELETE FROM digest_items WHERE run_id IN ({marks})", ids)
                    runs += await conn.execute(f"DELETE FROM digest_runs WHERE id IN ({marks})", ids)
            if len(ids) < batch:
                return runs, items

    async def sent_paper_ids(self, recipient: Recipient) -> set[int]:
        """Every paper any digest ever sent (or is sending) to this recipient."""
        if recipient.user_id is not None:
            rows = await self._db.fetchall(
                "SELECT paper_id FROM digest_sent WHERE user_id = ?", (recipient.user_id,)
            )
        else:
            rows = await self._db.fetchall(
                "SELECT paper_id FROM digest_sent WHERE channel_id = ?", (recipient.channel_id,)
            )
        return {int(row[0]) for row in rows}

    async def all_sent_paper_ids(self) -> dict[Recipient, set[int]]:
        """Sent papers of every recipient at once (for building thousands of digests in one go)."""
        sent: dict[Recipient, set[int]] = {}
        for row in await self._db.fetchall("SELECT user_id, channel_id, paper_id FROM digest_sent"):
            key = Recipient(user_id=row[0]) if row[0] is not None else Recipient(channel_id=row[1])
            sent.setdefault(key, set()).add(int(row[2]))
        return sent
