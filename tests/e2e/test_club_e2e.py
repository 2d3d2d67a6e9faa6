"""A reading group's week through the real discord.py client and the local Discord server, on a fake
clock: an admin sets the club, a member proposes a paper, the poll opens two days before the
announcement, two members vote, the winner is announced with a thread holding the paper (whose 👍
teaches the person who reacts), the thread is reminded the day before the meeting, the next week's
poll gets no vote, and the history lists the picks. The club's steps are fired through APScheduler,
on the leading process, as at their time; firing twice posts nothing twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, JobExecutionEvent
from builders import Clock

from bot.sandbox.emulator.recorder import ClientRefused
from bot.sandbox.emulator.state import Permissions
from bot.scheduler import CLUB_JOB_ID

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

StartBot = Callable[..., AbstractAsyncContextManager["E2E"]]

MONDAY = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
#: the club announces on Wednesdays at 18:00 in Berlin: 17:00 UTC
FIRST_WINNER = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    """The clock every bot started in the test reads."""
    return Clock(MONDAY)


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: StartBot) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:
        yield running


async def fire(e2e: E2E) -> None:
    """APScheduler runs the club job now, as at its next tick; returns once that run is over."""
    scheduler = e2e.bot.scheduler.jobs
    job = scheduler.get_job(CLUB_JOB_ID)
    assert job is not None, "the leading process has no club job"
    over = asyncio.Event()

    def seen(event: JobExecutionEvent) -> None:
        if event.job_id == CLUB_JOB_ID:
            over.set()

    scheduler.add_listener(seen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    try:
        job.modify(next_run_time=datetime.now(UTC))
        scheduler.wakeup()
        await asyncio.wait_for(over.wait(), 30)
    finally:
        scheduler.remove_listener(seen)
    await e2e.server.wait_quiet()


def polls(e2e: E2E) -> list[SandboxMessage]:
    return [m for m in e2e.server.messages_in("papers") if m.poll is not None]


@pytest.mark.both_engines
async def test_a_reading_group_week(e2e: E2E, clock: Clock) -> None:
    server = e2e.server
    set_up = await server.run_command(
        server.alice,
        "paperadmin club set",
        channel="papers",
        day="wednesday",
        time="18:00",
        timezone="Europe/Berlin",
        topics="speculative decoding",
        where="papers",
    )
    assert set_up.ephemeral
    assert "Wednesday 2 December, 18:00 (Europe/Berlin)" in set_up.text
    medusa = await e2e.services.search_service.resolve_paper("Medusa")
    proposed = await server.run_command(
        server.bob, "paper club propose", paper=str(medusa.id), where="papers"
    )
    assert medusa.title[:30] in proposed.text
    assert "candidate in the next poll" in proposed.text
    again = await server.run_command(server.carol, "paper club propose", paper=str(medusa.id), where="papers")
    assert "proposed already" in again.text
    assert again.ephemeral

    await fire(e2e)  # Monday 07:00: the poll opens Monday 17:00 UTC, 48 h before the winner
    assert polls(e2e) == []

    clock.now = FIRST_WINNER - timedelta(hours=47)
    await fire(e2e)
    await fire(e2e)  # a second fire (another tick, another process) posts nothing twice
    (poll,) = polls(e2e)
    assert poll.poll is not None
    answers = [a["poll_media"]["text"] for a in poll.poll["answers"]]
    assert 2 <= len(answers) <= 5
    assert answers[0].startswith("1. " + medusa.title[:20])  # the member's proposal first
    assert all(len(text) <= 55 for text in answers)
    assert "Medusa" in poll.content
    assert poll.poll["expiry"] == FIRST_WINNER or poll.poll["expiry"] > server.clock.now()

    server.vote(server.alice, poll, 1)
    server.vote(server.bob, poll, 2)
    server.vote(server.carol, poll, 2)
    with pytest.raises(ClientRefused):
        server.vote(server.carol, poll, 1)  # one answer each

    clock.now = FIRST_WINNER + timedelta(seconds=30)
    await fire(e2e)
    winner_title = answers[1].split(". ", 1)[1].rstrip("…")
    announcements = [m for m in server.messages_in("papers") if "This week's paper" in m.content]
    assert len(announcements) == 1
    announced = announcements[0]
    assert winner_title in announced.content
    assert "2 of 3 votes" in announced.content
    assert "Wednesday 9 December, 18:00 (Europe/Berlin)" in announced.content  # the meeting
    assert poll.poll["ended"]
    thread = server.channel(announced.id)  # a thread started from the announcement has its id
    assert thread.thread is not None
    assert winner_title[:20] in (thread.name or "")
    (in_thread,) = server.messages_in(thread)
    assert winner_title[:20] in in_thread.text
    await server.eventually(
        lambda: all(server.bot_user.id in in_thread.reactions.get(e, []) for e in ("👍", "👎", "🔖")),
        what="the paper's 👍 👎 🔖 in the thread",
    )
    await server.react(server.bob, in_thread, "👍")
    winner_id = await e2e.services.messages.paper_for(in_thread.id)
    assert winner_id is not None

    async def bob_liked() -> bool:
        row = await e2e.db.fetchone(
            "SELECT 1 FROM feedback WHERE user_id = ? AND paper_id = ? AND signal = 'like'",
            (server.bob.id, winner_id),
        )
        return row is not None

    await server.eventually(bob_liked, what="bob's 👍 in the thread stored as his")

    await fire(e2e)  # nothing more is due: no second announcement, no second thread post
    assert len(server.messages_in(thread)) == 1

    clock.now = FIRST_WINNER + timedelta(days=6, minutes=1)  # the day before the meeting
    await fire(e2e)
    reminders = [m for m in server.messages_in(thread) if "Reminder" in m.content]
    assert len(reminders) == 1
    assert "tomorrow" in reminders[0].content
    second_poll = [p for p in polls(e2e) if p is not poll]
    assert len(second_poll) == 1  # next week's poll opened two days before its winner
    assert medusa.title[:20] in second_poll[0].poll["answers"][0]["poll_media"]["text"]  # type: ignore[index]

    clock.now = FIRST_WINNER + timedelta(days=7, seconds=30)  # nobody voted
    await fire(e2e)
    assert any("No votes this week" in m.content for m in server.messages_in("papers"))

    history = await server.run_command(server.carol, "paper club history", where=thread)
    assert history.ephemeral
    assert winner_title[:20] in history.text
    assert medusa.title[:20] in history.text  # the no-vote week's first candidate, the proposal
    picked = await server.run_command(
        server.carol, "paper club propose", paper=str(winner_id), where="papers"
    )
    assert "read by this group already" in picked.text

    off = await server.run_command(server.alice, "paperadmin club off", channel="papers", where="papers")
    assert "stopped" in off.text
    after_off = await server.run_command(
        server.bob, "paper club propose", paper="FlashAttention", where="papers"
    )
    assert "reading group is off" in after_off.text
    assert after_off.ephemeral
    before = len(server.messages_in("papers"))
    clock.now = FIRST_WINNER + timedelta(days=13)
    await fire(e2e)
    assert len(server.messages_in("papers")) == before


async def test_what_a_club_refuses(e2e: E2E) -> None:
    server = e2e.server
    nowhere = await server.run_command(server.bob, "paper club propose", paper="Medusa", where="general")
    assert "no reading group" in nowhere.text
    assert nowhere.ephemeral
    bad_time = await server.run_command(
        server.alice,
        "paperadmin club set",
        channel="papers",
        day="monday",
        time="25:00",
        timezone="Europe/Berlin",
        where="papers",
    )
    assert "not a time" in bad_time.text
    bad_zone = await server.run_command(
        server.alice,
        "paperadmin club set",
        channel="papers",
        day="monday",
        time="18:00",
        timezone="Mars/Olympus",
        where="papers",
    )
    assert "not a timezone" in bad_zone.text
    with pytest.raises(ClientRefused):  # hidden from members without Manage Server
        await server.run_command(
            server.bob, "paperadmin club set", channel="papers", day="monday", time="18:00", timezone="UTC"
        )
    assert await e2e.services.club.clubs.active() == []


@pytest.mark.both_engines
async def test_a_lost_answer_and_a_restart_mid_week_post_nothing_twice(
    clock: Clock, start_paperbot: StartBot
) -> None:
    """The poll goes out but its answer is lost (as when the process dies right after sending): the
    next tick sends it again under the same nonce and Discord answers with the poll already there; a
    new process on the same store then announces the winner of that poll (a tie: the first listed of
    the tied papers) once, even when that answer too is lost and Discord has forgotten its nonce."""
    async with start_paperbot() as first:
        server = first.server
        await server.run_command(
            server.alice,
            "paperadmin club set",
            channel="papers",
            day="wednesday",
            time="18:00",
            timezone="Europe/Berlin",
            topics="speculative decoding",
            where="papers",
        )
        clock.now = FIRST_WINNER - timedelta(hours=47)
        first.allow_error("could not open the poll")
        lost = server.faults.add("POST /channels/*/messages", "drop_response", times=None)
        await fire(first)  # (discord.py tries again at once, under the same nonce: still lost)
        server.faults.remove(lost)
        assert len(polls(first)) == 1  # it went out; the bot never heard
        week = (await first.services.club.clubs.unfinished_weeks())[0]
        assert week.state == "poll_sending"
        await fire(first)
        (poll,) = polls(first)
        week = (await first.services.club.clubs.unfinished_weeks())[0]
        assert (week.state, week.poll_message_id) == ("polling", poll.id)
        server.vote(server.bob, poll, 2)
        server.vote(server.carol, poll, 1)
    async with start_paperbot() as second:  # the same store, a new process
        server = second.server
        clock.now = FIRST_WINNER + timedelta(seconds=5)
        # the announcement goes out, its answer is lost, and the process is gone longer than Discord
        # remembers a nonce: the next run finds it in the channel instead of posting it again
        second.allow_error("is stuck at polling")
        lost = server.faults.add(
            "POST /channels/*/messages",
            "drop_response",
            times=None,
            when=lambda method, path, body: "This week's paper" in str((body or {}).get("content", "")),
        )
        await fire(second)
        server.faults.remove(lost)
        week = (await second.services.club.clubs.unfinished_weeks())[0]
        assert week.state == "announce_sending"
        server.clock.advance(3600)  # the nonce is forgotten
        await fire(second)
        (poll,) = polls(second)
        announced = [m for m in server.messages_in("papers") if "This week's paper" in m.content]
        assert len(announced) == 1
        assert "A tie at 1 vote: the first listed of the tied papers wins." in announced[0].content
        winner = (await second.services.club.clubs.history(server.channel("papers").id))[0]
        assert winner.winner_paper_id == winner.candidates[0]
        assert winner.thread_id == announced[0].id
        assert len(server.messages_in(server.channel(announced[0].id))) == 1


async def test_where_polls_are_not_allowed_the_poll_is_buttons(e2e: E2E, clock: Clock) -> None:
    server = e2e.server
    server.set_permissions(server.channel("papers"), server.bot_user, deny=Permissions.SEND_POLLS)
    set_up = await server.run_command(
        server.alice,
        "paperadmin club set",
        channel="papers",
        day="wednesday",
        time="18:00",
        timezone="Europe/Berlin",
        topics="speculative decoding",
        where="papers",
    )
    assert "the poll will be buttons" in set_up.text
    clock.now = FIRST_WINNER - timedelta(hours=47)
    await fire(e2e)
    assert polls(e2e) == []
    (poll,) = [m for m in server.messages_in("papers") if m.buttons]
    assert [b["label"] for b in poll.buttons] == [str(n) for n in range(1, len(poll.buttons) + 1)]
    assert 2 <= len(poll.buttons) <= 10
    first = await server.click(server.bob, poll, "1")
    assert first.ephemeral
    assert "Your vote: **1." in first.text
    await server.click(server.bob, poll, "2")  # one vote each: now 2
    await server.click(server.carol, poll, "2")
    await server.click(server.alice, poll, "1")
    back = await server.click(server.alice, poll, "1")
    assert "taken back" in back.text
    clock.now = FIRST_WINNER + timedelta(seconds=30)
    await fire(e2e)
    (announced,) = [m for m in server.messages_in("papers") if "This week's paper" in m.content]
    assert "2 of 2 votes" in announced.content
    assert poll.buttons == []  # the buttons come off once the winner is known
    late = (
        await server.click(server.carol, poll.history[-1] and poll, "1", check=False)
        if poll.buttons
        else None
    )
    assert late is None
