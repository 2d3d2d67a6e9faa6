"""Reading groups on each engine: a club set and turned off, a week moving forward one state at a
time (never twice), proposals once each under a cap and taken by a poll, and the history."""

from __future__ import annotations

from storage.db import Database
from storage.models import ClubRow, PaperRecord
from storage.repositories.clubs import ClubRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.users import forget_user

CHANNEL = 1_191_168_914_227_200_101
GUILD = 1_191_168_914_227_200_001
ALICE = 1_191_168_914_227_200_009
WEEK = "2026-12-07T17:00:00+00:00"


def _club(**changes: object) -> ClubRow:
    values: dict[str, object] = {
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "weekday": 0,
        "time": "18:00",
        "timezone": "Europe/Berlin",
        "topics": "quantization",
        "created_by": ALICE,
        "active": True,
    }
    values.update(changes)
    return ClubRow(**values)  # type: ignore[arg-type]


async def _papers(db: Database, n: int) -> list[int]:
    records = [PaperRecord(title=f"Paper {k}", abstract=f"Abstract {k} about topic {k}.") for k in range(n)]
    await PaperRepository(db).upsert_many(records)
    return [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")]


async def test_a_club_is_set_changed_and_turned_off(db: Database) -> None:
    clubs = ClubRepository(db)
    await clubs.save(_club())
    await clubs.save(_club(weekday=3, time="09:30"))
    assert await clubs.get(CHANNEL) == _club(weekday=3, time="09:30")
    assert [c.channel_id for c in await clubs.active()] == [CHANNEL]
    assert await clubs.turn_off(CHANNEL) is True
    assert await clubs.turn_off(CHANNEL) is False
    assert await clubs.active() == []
    await clubs.save(_club())
    assert (await clubs.get(CHANNEL)).active  # type: ignore[union-attr]


async def test_a_week_moves_forward_once_per_step(db: Database) -> None:
    clubs = ClubRepository(db)
    ids = await _papers(db, 3)
    await clubs.save(_club())
    assert await clubs.open_week(CHANNEL, WEEK, ids) is True
    assert await clubs.open_week(CHANNEL, WEEK, ids[:1]) is False  # a second fire stores nothing
    assert await clubs.advance(CHANNEL, WEEK, frm="poll_sending", to="polling", poll_message_id=55)
    assert not await clubs.advance(CHANNEL, WEEK, frm="poll_sending", to="polling", poll_message_id=56)
    assert await clubs.advance(
        CHANNEL, WEEK, frm="polling", to="announce_sending", votes=(1, 2, 0), winner_paper_id=ids[1]
    )
    week = await clubs.week(CHANNEL, WEEK)
    assert week is not None
    assert (week.state, week.candidates, week.poll_message_id, week.votes, week.winner_paper_id) == (
        "announce_sending",
        tuple(ids),
        55,
        (1, 2, 0),
        ids[1],
    )
    assert await clubs.history(CHANNEL) == []  # not announced yet
    await clubs.advance(CHANNEL, WEEK, frm="announce_sending", to="announced", announce_message_id=77)
    await clubs.advance(CHANNEL, WEEK, frm="announced", to="threaded", thread_id=77)
    assert await clubs.club_of_thread(77) == CHANNEL
    assert [w.winner_paper_id for w in await clubs.history(CHANNEL)] == [ids[1]]
    assert await clubs.picked(CHANNEL) == {ids[1]}
    assert [w.announce_at for w in await clubs.unfinished_weeks()] == [WEEK]
    await clubs.turn_off(CHANNEL)
    assert await clubs.unfinished_weeks() == []  # an off club posts nothing more


async def test_proposals_once_each_under_a_cap_then_taken_and_forgotten(db: Database) -> None:
    clubs = ClubRepository(db)
    ids = await _papers(db, 4)
    await clubs.save(_club())
    assert await clubs.propose(CHANNEL, ids[0], ALICE, limit=2) == "added"
    assert await clubs.propose(CHANNEL, ids[0], ALICE, limit=2) == "already"
    assert await clubs.propose(CHANNEL, ids[1], ALICE, limit=2) == "added"
    assert await clubs.propose(CHANNEL, ids[2], ALICE, limit=2) == "full"
    assert await clubs.waiting_proposals(CHANNEL) == ids[:2]
    await clubs.open_week(CHANNEL, WEEK, [ids[1], ids[3]])
    assert await clubs.waiting_proposals(CHANNEL) == [ids[0]]
    await forget_user(db, ALICE)
    assert await clubs.waiting_proposals(CHANNEL) == []


async def test_button_votes_one_each_taken_back_and_closed_with_the_poll(db: Database) -> None:
    clubs = ClubRepository(db)
    ids = await _papers(db, 3)
    await clubs.save(_club())
    await clubs.open_week(CHANNEL, WEEK, ids)
    assert await clubs.vote(CHANNEL, WEEK, ALICE, 1) == "closed"  # not polling yet
    await clubs.advance(CHANNEL, WEEK, frm="poll_sending", to="polling", poll_message_id=5, buttons=1)
    assert (await clubs.week(CHANNEL, WEEK)).buttons  # type: ignore[union-attr]
    assert await clubs.vote(CHANNEL, WEEK, ALICE, 4) == "unknown"
    assert await clubs.vote(CHANNEL, WEEK, ALICE, 1) == "voted"
    assert await clubs.vote(CHANNEL, WEEK, ALICE, 2) == "voted"  # one vote each: moved
    assert await clubs.vote(CHANNEL, WEEK, ALICE + 1, 2) == "voted"
    assert await clubs.button_counts(CHANNEL, WEEK, 3) == (0, 2, 0)
    assert await clubs.vote(CHANNEL, WEEK, ALICE + 1, 2) == "removed"
    assert await clubs.button_counts(CHANNEL, WEEK, 3) == (0, 1, 0)
    await clubs.advance(
        CHANNEL, WEEK, frm="polling", to="announce_sending", votes=(0, 1, 0), winner_paper_id=ids[1]
    )
    assert await clubs.vote(CHANNEL, WEEK, ALICE, 3) == "closed"


async def test_candidates_members_liked_or_saved_in_the_channel_most_first(db: Database) -> None:
    from storage.repositories.feedback import FeedbackRepository
    from storage.repositories.messages import PostedMessageRepository

    clubs, feedback, posted = ClubRepository(db), FeedbackRepository(db), PostedMessageRepository(db)
    ids = await _papers(db, 4)
    elsewhere = CHANNEL + 1
    for n, paper_id in enumerate(ids):
        await posted.record(900 + n, CHANNEL if n < 3 else elsewhere, GUILD, paper_id)
    await feedback.set_signal(ALICE, ids[0], "like", guild_id=GUILD)
    await feedback.set_signal(ALICE, ids[1], "save", guild_id=GUILD)
    await feedback.set_signal(ALICE + 1, ids[1], "like", guild_id=GUILD)
    await feedback.set_signal(ALICE, ids[2], "dislike", guild_id=GUILD)  # not a candidate
    await feedback.set_signal(ALICE, ids[3], "like", guild_id=GUILD)  # posted in another channel
    await feedback.set_signal(ALICE + 2, ids[0], "like", guild_id=GUILD + 1)  # another server
    assert await clubs.liked_in_channel([CHANNEL], GUILD, limit=10) == [ids[1], ids[0]]
    assert await clubs.liked_in_channel([CHANNEL, elsewhere], GUILD, limit=1) == [ids[1]]
    assert await clubs.liked_in_channel([], GUILD, limit=10) == []
