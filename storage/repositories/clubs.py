"""Reading groups: a channel's club, its weeks (each step stored before and after the message it
sends) and the papers members propose."""

from __future__ import annotations

from storage.db import Connection, Database, Row, utcnow
from storage.models import ClubRow, ClubWeek
from storage.repositories.users import ensure_user

_CLUB = "channel_id, guild_id, weekday, time, timezone, topics, created_by, active"
_WEEK = (
    "channel_id, announce_at, state, candidates, poll_message_id, votes, winner_paper_id, "
    "announce_message_id, thread_id, paper_message_id, buttons"
)


def _ids(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in (text or "").split(",") if part)


def _club(row: Row) -> ClubRow:
    return ClubRow(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        str(row[3]),
        str(row[4]),
        str(row[5]),
        None if row[6] is None else int(row[6]),
        bool(row[7]),
    )


def _opt(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _week(row: Row) -> ClubWeek:
    return ClubWeek(
        int(row[0]),
        str(row[1]),
        str(row[2]),
        _ids(row[3]),
        _opt(row[4]),
        None if row[5] is None else _ids(row[5]),
        _opt(row[6]),
        _opt(row[7]),
        _opt(row[8]),
        _opt(row[9]),
        bool(row[10]),
    )


class ClubRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- clubs ---------------------------------------------------------------------------------------

    async def save(self, club: ClubRow) -> None:
        """Start the channel's club, or change its day, time, zone and topics (and turn it on)."""
        async with self._db.transaction() as conn:
            await conn.execute(
                f"""
                INSERT INTO clubs ({_CLUB}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)
                ON CONFLICT (channel_id) DO UPDATE SET
                    guild_id = excluded.guild_id, weekday = excluded.weekday, time = excluded.time,
                    timezone = excluded.timezone, topics = excluded.topics,
                    created_by = excluded.created_by, active = 1, updated_at = excluded.updated_at
                """,
                (
                    club.channel_id,
                    club.guild_id,
                    club.weekday,
                    club.time,
                    club.timezone,
                    club.topics,
                    club.created_by,
                    utcnow(),
                ),
            )

    async def turn_off(self, channel_id: int) -> bool:
        """Stop the channel's club (its history stays); False when it had none running."""
        async with self._db.transaction() as conn:
            changed = await conn.execute(
                "UPDATE clubs SET active = 0, updated_at = ? WHERE channel_id = ? AND active = 1",
                (utcnow(), channel_id),
            )
        return changed > 0

    async def get(self, channel_id: int) -> ClubRow | None:
        row = await self._db.fetchone(f"SELECT {_CLUB} FROM clubs WHERE channel_id = ?", (channel_id,))
        return None if row is None else _club(row)

    async def active(self) -> list[ClubRow]:
        rows = await self._db.fetchall(f"SELECT {_CLUB} FROM clubs WHERE active = 1 ORDER BY channel_id")
        return [_club(row) for row in rows]

    async def club_of_thread(self, thread_id: int) -> int | None:
        """The channel whose club opened this thread."""
        value = await self._db.fetchval("SELECT channel_id FROM club_weeks WHERE thread_id = ?", (thread_id,))
        return None if value is None else int(value)

    # -- weeks ---------------------------------------------------------------------------------------

    async def open_week(self, channel_id: int, announce_at: str, candidates: list[int]) -> bool:
        """Store the week's candidates before its poll goes out, and mark the proposals among them as
        taken; False when the week was stored already (another fire, another process)."""
        async with self._db.transaction() as conn:
            added = await conn.execute(
                "INSERT INTO club_weeks (channel_id, announce_at, state, candidates, updated_at) "
                "VALUES (?, ?, 'poll_sending', ?, ?) ON CONFLICT DO NOTHING",
                (channel_id, announce_at, ",".join(map(str, candidates)), utcnow()),
            )
            if added:
                for paper_id in candidates:
                    await conn.execute(
                        "UPDATE club_proposals SET week = ? WHERE channel_id = ? AND paper_id = ? "
                        "AND week IS NULL",
                        (announce_at, channel_id, paper_id),
                    )
        return added > 0

    async def advance(
        self, channel_id: int, announce_at: str, *, frm: str, to: str, **fields: object
    ) -> bool:
        """Move the week from state ``frm`` to ``to``, setting ``fields`` (poll_message_id, votes,
        winner_paper_id, announce_message_id, thread_id, paper_message_id); False if it was not in
        ``frm`` (someone else moved it)."""
        allowed = {
            "poll_message_id",
            "votes",
            "winner_paper_id",
            "announce_message_id",
            "thread_id",
            "paper_message_id",
            "buttons",
        }
        assert set(fields) <= allowed, fields
        values = [",".join(map(str, v)) if isinstance(v, tuple | list) else v for v in fields.values()]
        sets = "".join(f", {name} = ?" for name in fields)
        async with self._db.transaction() as conn:
            changed = await conn.execute(
                f"UPDATE club_weeks SET state = ?, updated_at = ?{sets} "
                "WHERE channel_id = ? AND announce_at = ? AND state = ?",
                (to, utcnow(), *values, channel_id, announce_at, frm),
            )
        return changed > 0

    async def vote(self, channel_id: int, announce_at: str, user_id: int, answer: int) -> str:
        """A member's vote in a week's button poll: ``"voted"`` (their one vote is this answer now),
        ``"removed"`` (the same answer again takes it back), ``"closed"`` (not a button poll taking
        votes), ``"unknown"`` (no such answer)."""
        async with self._db.transaction() as conn:
            row = await conn.fetchone(
                "SELECT state, buttons, candidates FROM club_weeks WHERE channel_id = ? AND announce_at = ?",
                (channel_id, announce_at),
            )
            if row is None or str(row[0]) != "polling" or not int(row[1]):
                return "closed"
            if not 1 <= answer <= len(_ids(row[2])):
                return "unknown"
            earlier = await conn.fetchval(
                "SELECT answer FROM club_votes WHERE channel_id = ? AND announce_at = ? AND user_id = ?",
                (channel_id, announce_at, user_id),
            )
            if earlier is not None and int(earlier) == answer:
                await conn.execute(
                    "DELETE FROM club_votes WHERE channel_id = ? AND announce_at = ? AND user_id = ?",
                    (channel_id, announce_at, user_id),
                )
                return "removed"
            await ensure_user(conn, user_id)
            await conn.execute(
                "INSERT INTO club_votes (channel_id, announce_at, user_id, answer, voted_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (channel_id, announce_at, user_id) DO UPDATE SET answer = excluded.answer, "
                "voted_at = excluded.voted_at",
                (channel_id, announce_at, user_id, answer, utcnow()),
            )
        return "voted"

    async def button_counts(self, channel_id: int, announce_at: str, answers: int) -> tuple[int, ...]:
        rows = await self._db.fetchall(
            "SELECT answer, COUNT(*) FROM club_votes WHERE channel_id = ? AND announce_at = ? GROUP BY answer",
            (channel_id, announce_at),
        )
        counts = {int(row[0]): int(row[1]) for row in rows}
        return tuple(counts.get(answer, 0) for answer in range(1, answers + 1))

    async def week(self, channel_id: int, announce_at: str) -> ClubWeek | None:
        row = await self._db.fetchone(
            f"SELECT {_WEEK} FROM club_weeks WHERE channel_id = ? AND announce_at = ?",
            (channel_id, announce_at),
        )
        return None if row is None else _week(row)

    async def unfinished_weeks(self) -> list[ClubWeek]:
        """Weeks of running clubs not reminded yet, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {', '.join('w.' + c.strip() for c in _WEEK.split(','))} FROM club_weeks w "
            "JOIN clubs c ON c.channel_id = w.channel_id "
            "WHERE c.active = 1 AND w.state <> 'reminded' ORDER BY w.announce_at, w.channel_id"
        )
        return [_week(row) for row in rows]

    async def history(self, channel_id: int, *, limit: int = 20) -> list[ClubWeek]:
        """The club's announced weeks, newest first."""
        rows = await self._db.fetchall(
            f"SELECT {_WEEK} FROM club_weeks WHERE channel_id = ? AND winner_paper_id IS NOT NULL "
            "AND state NOT IN ('poll_sending', 'polling', 'announce_sending') "
            "ORDER BY announce_at DESC LIMIT ?",
            (channel_id, limit),
        )
        return [_week(row) for row in rows]

    async def picked(self, channel_id: int) -> set[int]:
        """Every paper the club picked (or is announcing)."""
        rows = await self._db.fetchall(
            "SELECT winner_paper_id FROM club_weeks WHERE channel_id = ? AND winner_paper_id IS NOT NULL",
            (channel_id,),
        )
        return {int(row[0]) for row in rows}

    # -- proposals -----------------------------------------------------------------------------------

    async def propose(self, channel_id: int, paper_id: int, user_id: int, *, limit: int) -> str:
        """``"added"``, ``"already"`` (waiting or picked before), or ``"full"`` (``limit`` waiting)."""
        async with self._db.transaction() as conn:
            if await self._proposed(conn, channel_id, paper_id):
                return "already"
            waiting = await conn.fetchval(
                "SELECT COUNT(*) FROM club_proposals WHERE channel_id = ? AND week IS NULL", (channel_id,)
            )
            if int(waiting or 0) >= limit:
                return "full"
            await ensure_user(conn, user_id)
            added = await conn.execute(
                "INSERT INTO club_proposals (channel_id, paper_id, user_id, proposed_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (channel_id, paper_id, user_id, utcnow()),
            )
        return "added" if added else "already"

    @staticmethod
    async def _proposed(conn: Connection, channel_id: int, paper_id: int) -> bool:
        row = await conn.fetchone(
            "SELECT 1 FROM club_proposals WHERE channel_id = ? AND paper_id = ?", (channel_id, paper_id)
        )
        return row is not None

    async def waiting_proposals(self, channel_id: int) -> list[int]:
        rows = await self._db.fetchall(
            "SELECT paper_id FROM club_proposals WHERE channel_id = ? AND week IS NULL "
            "ORDER BY proposed_at, paper_id",
            (channel_id,),
        )
        return [int(row[0]) for row in rows]

    async def liked_in_channel(self, channel_ids: list[int], guild_id: int, *, limit: int) -> list[int]:
        """Papers the bot posted in these channels that members of the server 👍'd or 🔖'd, most first."""
        if not channel_ids:
            return []
        marks = ", ".join("?" for _ in channel_ids)
        rows = await self._db.fetchall(
            f"""
            SELECT f.paper_id, COUNT(DISTINCT f.user_id) AS n FROM feedback f
            WHERE f.signal IN ('like', 'save') AND f.guild_id = ?
              AND f.paper_id IN (SELECT p.paper_id FROM posted_messages p WHERE p.channel_id IN ({marks}))
            GROUP BY f.paper_id ORDER BY COUNT(DISTINCT f.user_id) DESC, f.paper_id LIMIT ?
            """,
            (guild_id, *channel_ids, limit),
        )
        return [int(row[0]) for row in rows]

    async def thread_ids(self, channel_id: int) -> list[int]:
        rows = await self._db.fetchall(
            "SELECT thread_id FROM club_weeks WHERE channel_id = ? AND thread_id IS NOT NULL", (channel_id,)
        )
        return [int(row[0]) for row in rows]
