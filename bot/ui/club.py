"""A reading group's messages, each within Discord's limits: the weekly poll (question ≤ 300
characters, ≤ 10 answers of ≤ 55), the announcement, the thread's name (≤ 100) and paper, the
reminder, and the answers to the club commands."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import discord

from bot.services.club import WEEKDAYS, Outcome, Pick, PollPlan
from bot.ui.embeds import CONTENT_LIMIT
from bot.ui.format import byline, counted, display_title, links, paper_link, trim
from bot.ui.paper_views import PaperMessage, digest_message
from bot.ui.views import Answered
from storage.models import ClubRow, Paper

QUESTION_LIMIT = 300
ANSWER_LIMIT = 55
ANSWERS_LIMIT = 10
THREAD_NAME_LIMIT = 100
#: how the announcement and the reminder begin (the bot finds its own after a lost answer by them)
ANNOUNCEMENT_MARK = "🏆 **This week's paper:**"
REMINDER_MARK = "⏰ Reminder:"


def local(moment: datetime, zone: str) -> str:
    """ "Monday 14 December, 18:00 (Europe/Berlin)"."""
    at = moment.astimezone(ZoneInfo(zone))
    return f"{at:%A} {at.day} {at:%B}, {at:%H:%M} ({zone})"


def relative(moment: datetime) -> str:
    return f"<t:{int(moment.timestamp())}:R>"


def _linked(paper: Paper) -> str:
    url = paper_link(paper)
    title = display_title(paper)
    return f"[{title}](<{url}>)" if url else f"**{title}**"


def poll_message(plan: PollPlan) -> tuple[discord.Poll, str]:
    """The poll and the message text above it: every candidate, linked, with its authors."""
    question = trim(
        f"📚 Reading group: which paper do we read? (winner {local(plan.announce_at, plan.zone)})",
        QUESTION_LIMIT,
    )
    poll = discord.Poll(question=question, duration=timedelta(hours=plan.duration_hours))
    for number, paper in enumerate(plan.candidates[:ANSWERS_LIMIT], start=1):
        poll.add_answer(text=trim(f"{number}. {display_title(paper)}", ANSWER_LIMIT))
    lines = ["**This week's candidates** (vote in the poll below):"]
    for number, paper in enumerate(plan.candidates[:ANSWERS_LIMIT], start=1):
        lines.append(f"{number}. {_linked(paper)} — {trim(byline(paper), 120)}")
    lines.append("Put a paper forward for next week with `/paper club propose`.")
    return poll, _fit(lines)


def button_poll(plan: PollPlan) -> tuple[str, discord.ui.View]:
    """The poll as buttons (where Discord polls are not allowed): the same list, a numbered button per
    paper (5 to a row, at most 10), each press this member's one vote, pressing again takes it back."""
    _, text = poll_message(plan)
    text = text.replace(
        "(vote in the poll below)", "(vote with the buttons: one vote each, press again to take it back)"
    )
    view = discord.ui.View(timeout=None)
    for number, _paper in enumerate(plan.candidates[:ANSWERS_LIMIT], start=1):
        view.add_item(ClubVoteButton(plan.channel_id, plan.week, number))
    return _fit([f"**{trim(poll_question(plan), QUESTION_LIMIT)}**", text]), view


def poll_question(plan: PollPlan) -> str:
    return trim(
        f"📚 Reading group: which paper do we read? (winner {local(plan.announce_at, plan.zone)})",
        QUESTION_LIMIT,
    )


class ClubVoteButton(
    Answered,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"pbclub:(?P<channel>\d+):(?P<week>\d+):(?P<answer>\d+)",
):
    """One paper of a reading group's button poll."""

    def __init__(self, channel_id: int, week: int, answer: int) -> None:
        self.channel_id, self.week, self.answer = channel_id, week, answer
        super().__init__(
            discord.ui.Button(
                style=discord.ButtonStyle.secondary,
                label=str(answer),
                custom_id=f"pbclub:{channel_id}:{week}:{answer}",
                row=(answer - 1) // 5,
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ClubVoteButton:
        return cls(int(match["channel"]), int(match["week"]), int(match["answer"]))


def vote_note(outcome: str, answer: int, paper: Paper | None) -> str:
    """What the person who pressed a poll's button is told: their vote, or that it is taken back."""
    title = display_title(paper) if paper is not None else f"paper {answer}"
    if outcome == "voted":
        return f"🗳️ Your vote: **{answer}. {trim(title, 200)}** (press it again to take it back)."
    return f"Your vote for **{answer}. {trim(title, 200)}** is taken back."


def announcement(outcome: Outcome) -> str:
    total = sum(outcome.votes)
    index = next((i for i, p in enumerate(outcome.candidates) if p.id == outcome.winner.id), 0)
    won = outcome.votes[index] if index < len(outcome.votes) else 0
    if total == 0:
        how = "No votes this week, so the first candidate it is."
    elif outcome.tie:
        how = f"A tie at {counted(won, 'vote', 'votes')}: the first listed of the tied papers wins."
    else:
        how = f"{won} of {counted(total, 'vote', 'votes')}."
    lines = [
        f"{ANNOUNCEMENT_MARK} {_linked(outcome.winner)}",
        how,
        f"We meet **{local(outcome.meeting_at, outcome.zone)}** ({relative(outcome.meeting_at)}). "
        "Discussion in the thread below.",
    ]
    return _fit(lines)


def thread_name(paper: Paper) -> str:
    return trim(f"📖 {display_title(paper)}", THREAD_NAME_LIMIT)


def thread_paper(outcome: Outcome) -> PaperMessage:
    reason = f"this week's reading group pick; we meet {local(outcome.meeting_at, outcome.zone)}"
    return digest_message(outcome.winner, reason)


def reminder(paper: Paper, meeting_at: datetime, zone: str) -> str:
    found = " · ".join(f"[{name}](<{url}>)" for name, url in links(paper))
    lines = [
        f"{REMINDER_MARK} we discuss {_linked(paper)} **tomorrow, {local(meeting_at, zone)}** ({relative(meeting_at)}).",
    ]
    if found:
        lines.append(found)
    return _fit(lines)


def club_set(club: ClubRow, first: datetime) -> str:
    topics = (
        f" on *{club.topics}*"
        if club.topics
        else " (candidates from the channel feed's topics and what members 👍 or 🔖 there)"
    )
    return _fit(
        [
            f"✅ Reading group in <#{club.channel_id}>{topics}.",
            f"Each week the poll opens two days before **{WEEKDAYS[club.weekday]} {club.time} ({club.timezone})**, "
            "when the winner is announced with a thread for it; the group meets a week later, with a "
            "reminder in the thread the day before.",
            f"First winner: **{local(first, club.timezone)}** ({relative(first)}). "
            "Members propose papers with `/paper club propose`; `/paperadmin club off` stops it.",
        ]
    )


def proposed(paper: Paper, announce_at: datetime, zone: str) -> str:
    return f"✅ {_linked(paper)} is a candidate in the next poll (winner {local(announce_at, zone)})."


def history(picks: list[Pick], club: ClubRow) -> str:
    if not picks:
        return f"No papers picked in <#{club.channel_id}> yet."
    lines = [f"**Reading group picks in <#{club.channel_id}>**"]
    for pick in picks:
        day = pick.announce_at.astimezone(ZoneInfo(club.timezone))
        thread = f" — <#{pick.thread_id}>" if pick.thread_id else ""
        votes = f" ({counted(pick.votes, 'vote', 'votes')})"
        lines.append(f"• {day.day} {day:%b %Y}: {_linked(pick.paper)}{votes}{thread}")
    return _fit(lines)


def _fit(lines: list[str]) -> str:
    text = "\n".join(lines)
    if len(text) <= CONTENT_LIMIT:
        return text
    kept: list[str] = []
    for line in lines:
        if len("\n".join([*kept, line])) > CONTENT_LIMIT - 2:
            break
        kept.append(line)
    return "\n".join([*kept, "…"])
