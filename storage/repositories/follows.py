"""Authors people follow: a name (as shown and folded), or one group of the papers under a name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from storage.db import Connection, Database, Row, utcnow
from storage.repositories.users import ensure_user

#: What `FollowRepository.add` did: stored it, found it stored already, or found the person at the cap.
AddResult = Literal["added", "already", "full"]

_COLUMNS = "name, name_key, group_paper_id, detail, followed_at, after_paper_id"


@dataclass(frozen=True, slots=True)
class FollowRow:
    """One author a person follows. ``group_paper_id`` None: every paper under the name; else the group
    of papers under it that holds that paper. ``detail``: what told that group apart when picked.
    ``after_paper_id``: papers with a larger id are new to the follow (the store sets it: the largest
    paper id when the person first followed the name)."""

    name: str
    name_key: str
    group_paper_id: int | None
    detail: str | None
    followed_at: str
    after_paper_id: int = 0


def _row(row: Row) -> FollowRow:
    group = row[2]
    return FollowRow(
        str(row[0]), str(row[1]), None if group is None else int(group), row[3], str(row[4]), int(row[5] or 0)
    )


def _same_group(group_paper_id: int | None) -> tuple[str, tuple[int, ...]]:
    """The SQL condition (and its parameters) for one group column value, NULL included."""
    if group_paper_id is None:
        return "group_paper_id IS NULL", ()
    return "group_paper_id = ?", (group_paper_id,)


class FollowRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def follows(self, user_id: int) -> list[FollowRow]:
        """The authors the person follows, in the order they followed them."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM author_follows WHERE user_id = ? ORDER BY followed_at, rowid", (user_id,)
        )
        return [_row(row) for row in rows]

    async def count(self, user_id: int) -> int:
        return int(
            await self._db.fetchval("SELECT COUNT(*) FROM author_follows WHERE user_id = ?", (user_id,))
        )

    async def add(self, user_id: int, follow: FollowRow, *, limit: int) -> AddResult:
        """Store a follow unless the person has it already or follows ``limit`` authors."""
        async with self._db.transaction() as conn:
            await _lock_person(conn, user_id, follow.followed_at)
            same, params = _same_group(follow.group_paper_id)
            if await conn.fetchone(
                f"SELECT 1 FROM author_follows WHERE user_id = ? AND name_key = ? AND {same}",
                (user_id, follow.name_key, *params),
            ):
                return "already"
            if await _held(conn, user_id) >= limit:
                return "full"
            after = int(await conn.fetchval("SELECT COALESCE(MAX(id), 0) FROM papers"))
            return "added" if await _insert(conn, user_id, follow, after) else "already"

    async def replace_name(
        self, user_id: int, name_key: str, follows: Sequence[FollowRow], *, limit: int
    ) -> Literal["replaced", "full"]:
        """The person's follows of one name (every paper under it, or groups under it) become
        ``follows``, unless that would make more than ``limit``. One transaction: all or nothing. The
        new follows keep the earliest start of the ones they replace, so papers that were new to
        those stay new."""
        async with self._db.transaction() as conn:
            await _lock_person(conn, user_id, follows[0].followed_at if follows else None)
            mine = int(
                await conn.fetchval(
                    "SELECT COUNT(*) FROM author_follows WHERE user_id = ? AND name_key = ?",
                    (user_id, name_key),
                )
            )
            if await _held(conn, user_id) - mine + len(follows) > limit:
                return "full"
            after = await conn.fetchval(
                "SELECT MIN(after_paper_id) FROM author_follows WHERE user_id = ? AND name_key = ?",
                (user_id, name_key),
            )
            if after is None:
                after = await conn.fetchval("SELECT COALESCE(MAX(id), 0) FROM papers")
            await conn.execute(
                "DELETE FROM author_follows WHERE user_id = ? AND name_key = ?", (user_id, name_key)
            )
            for follow in follows:
                await _insert(conn, user_id, follow, int(after))
            return "replaced"

    async def remove(self, user_id: int, name_key: str, group_paper_id: int | None) -> bool:
        """Stop one follow; False when the person did not have it."""
        same, params = _same_group(group_paper_id)
        removed = await self._db.execute(
            f"DELETE FROM author_follows WHERE user_id = ? AND name_key = ? AND {same}",
            (user_id, name_key, *params),
        )
        return removed > 0


async def _lock_person(conn: Connection, user_id: int, at: str | None) -> None:
    await ensure_user(conn, user_id, at)
    if conn.dialect == "postgresql":
        # one change to a person's follows at a time, so two at once cannot both pass the cap
        await conn.execute("SELECT 1 FROM users WHERE id = ? FOR UPDATE", (user_id,))


async def _held(conn: Connection, user_id: int) -> int:
    return int(await conn.fetchval("SELECT COUNT(*) FROM author_follows WHERE user_id = ?", (user_id,)))


async def _insert(conn: Connection, user_id: int, follow: FollowRow, after_paper_id: int) -> bool:
    added = await conn.execute(
        f"INSERT INTO author_follows ({_COLUMNS}, user_id) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            follow.name,
            follow.name_key,
            follow.group_paper_id,
            follow.detail,
            follow.followed_at or utcnow(),
            after_paper_id,
            user_id,
        ),
    )
    return added > 0
