"""Reading groups: a channel's weekly poll of candidate papers, its winner, a thread and a reminder.

The week of a club runs from its poll to its reminder, on the club's day and time in its zone (the
announcement, ``A``): the poll opens :data:`POLL_OPENS_BEFORE` earlier (48 h) with up to
:data:`CANDIDATES` papers — members' proposals first, then papers posted in the channel that members
👍'd or 🔖'd, then the best matches of its topics (its own, else the channel feed's) — never a paper
picked before. At ``A`` the poll is ended, the winner announced (a tie goes to the first listed, no
vote to the first candidate) and a thread started from the announcement with the paper; the group
meets a week after ``A``, and the thread is reminded the day before (``A`` + 6 days).

Each step is stored before the message it sends and after (``storage.repositories.clubs``), and every
message carries a nonce derived from the week, so a second fire, another process or a restart after a
``kill -9`` sends nothing twice; :meth:`ClubService.run_due` picks up whatever step a week is at.
Nothing here imports discord: the Discord side is a :class:`ClubSender` (``bot.club_sender``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from bot.clock import utc_now
from bot.errors import NotFoundError, UserFacingError
from bot.services.digests.timing import parse_time, parse_timezone, parse_topics
from paperindex.engine import SearchEngine
from storage.models import ClubRow, ClubWeek, Paper
from storage.repositories.clubs import ClubRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.subscriptions import SubscriptionRepository

log = logging.getLogger(__name__)

#: the poll opens this long before the announcement
POLL_OPENS_BEFORE = timedelta(hours=48)
#: the group meets this long after the announcement; the thread is reminded a day before
MEETING_AFTER = timedelta(days=7)
REMINDER_BEFORE_MEETING = timedelta(days=1)
#: papers in a poll (more when members proposed more, up to Discord's 10 answers)
CANDIDATES = 5
MAX_ANSWERS = 10
#: proposals waiting for a club's next poll
MAX_WAITING_PROPOSALS = MAX_ANSWERS
#: a step that keeps failing is logged again this often
FAILURE_LOG_SECONDS = 3600
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class ClubError(UserFacingError):
    """A club that cannot be set, or a proposal that cannot be taken."""


@dataclass(frozen=True)
class PollPlan:
    channel_id: int
    week: int  # the announcement as a Unix time (what a vote button names)
    candidates: list[Paper]
    announce_at: datetime
    duration_hours: int
    zone: str


@dataclass(frozen=True)
class Outcome:
    winner: Paper
    votes: tuple[int, ...]
    candidates: list[Paper]
    tie: bool
    meeting_at: datetime
    zone: str


@dataclass(frozen=True)
class Pick:
    paper: Paper
    announce_at: datetime
    thread_id: int | None
    votes: int


class ClubSender(Protocol):
    """What a club needs of Discord (``bot.club_sender``); each post carries its nonce."""

    async def post_poll(self, channel_id: int, plan: PollPlan, *, nonce: str) -> tuple[int, bool]:
        """The poll's message id, and whether it is buttons (where Discord polls are not allowed)."""
        ...

    async def end_poll(self, channel_id: int, message_id: int, answers: int) -> tuple[int, ...]: ...

    async def close_buttons(self, channel_id: int, message_id: int) -> None: ...

    async def find_poll(self, channel_id: int, plan: PollPlan) -> tuple[int, bool] | None:
        """The week's poll if it went out already (a resend too late for its nonce)."""
        ...

    async def find_posted(self, channel_id: int, kind: str, *, after: int | None) -> int | None:
        """The bot's ``announce``, ``paper`` or ``remind`` message there (after message ``after``), if
        it went out already."""
        ...

    async def announce(self, channel_id: int, outcome: Outcome, *, nonce: str) -> int: ...

    async def start_thread(self, channel_id: int, message_id: int, paper: Paper) -> int: ...

    async def post_paper(self, thread_id: int, outcome: Outcome, *, nonce: str) -> int: ...

    async def finish_paper(self, thread_id: int, message_id: int) -> None: ...

    async def remind(
        self, thread_id: int, paper: Paper, meeting_at: datetime, zone: str, *, nonce: str
    ) -> int: ...


def nonce(channel_id: int, announce_at: str, kind: str) -> str:
    """The nonce of one message of one week (at most 25 characters, as Discord allows)."""
    digest = hashlib.sha256(f"{channel_id}:{announce_at}:{kind}".encode()).hexdigest()[:18]
    return f"club{kind[0]}{digest}"


def next_announcement(club: ClubRow, after: datetime) -> datetime:
    """The club's first announcement strictly after ``after`` (UTC), at its local day and time."""
    zone = ZoneInfo(club.timezone)
    hour, minute = (int(part) for part in club.time.split(":"))
    local = after.astimezone(zone)
    day = local.date() + timedelta(days=(club.weekday - local.weekday()) % 7)
    while True:
        candidate = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone).astimezone(UTC)
        if candidate > after:
            return candidate
        day += timedelta(days=7)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def parse_stamp(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def winner_of(votes: Sequence[int]) -> tuple[int, bool]:
    """The index of the answer with most votes (the first listed on a tie) and whether it was a tie."""
    best = max(votes, default=0)
    index = list(votes).index(best) if votes else 0
    return index, best > 0 and list(votes).count(best) > 1


class ClubService:
    def __init__(
        self,
        clubs: ClubRepository,
        *,
        papers: PaperRepository,
        messages: PostedMessageRepository,
        feeds: SubscriptionRepository,
        search: Callable[[], SearchEngine],
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.clubs = clubs
        self.papers = papers
        self.messages = messages
        self.feeds = feeds
        self._search = search
        self.clock = clock or utc_now
        #: steps failing since (monotonic time of the last full log), so a step that keeps failing
        #: is not logged in full every run
        self._failing: dict[tuple[int, str], float] = {}

    # -- what admins and members do -----------------------------------------------------------------

    async def set_club(
        self,
        *,
        channel_id: int,
        guild_id: int,
        weekday: int,
        time: str,
        timezone: str,
        topics: str | None,
        by: int,
    ) -> tuple[ClubRow, datetime]:
        """Start or change the channel's club; returns it and its first announcement."""
        if not 0 <= weekday <= 6:
            raise ClubError("The day must be one of Monday to Sunday.")
        club = ClubRow(
            channel_id=channel_id,
            guild_id=guild_id,
            weekday=weekday,
            time=parse_time(time),
            timezone=parse_timezone(timezone),
            topics=", ".join(parse_topics(topics)) if topics else "",
            created_by=by,
            active=True,
        )
        await self.clubs.save(club)
        return club, self.first_announcement(club)

    def first_announcement(self, club: ClubRow) -> datetime:
        """The next announcement whose poll can still run at least an hour (Discord's shortest poll)."""
        now = self.clock()
        announce = next_announcement(club, now)
        if announce - now < timedelta(hours=1):
            announce = next_announcement(club, announce)
        return announce

    async def turn_off(self, channel_id: int) -> bool:
        return await self.clubs.turn_off(channel_id)

    async def club_for(self, channel_id: int, parent_id: int | None = None) -> ClubRow:
        """The club of a channel (or of the channel a thread is in, or whose week the thread is)."""
        for candidate in (channel_id, parent_id):
            if candidate is None:
                continue
            club = await self.clubs.get(candidate)
            if club is None:
                owner = await self.clubs.club_of_thread(candidate)
                club = await self.clubs.get(owner) if owner is not None else None
            if club is not None:
                return club
        raise NotFoundError(
            "This channel has no reading group: an admin starts one with `/paperadmin club set`."
        )

    @staticmethod
    def check_open(club: ClubRow) -> None:
        """ClubError when the club is off (it takes no proposals)."""
        if not club.active:
            raise ClubError(
                "This channel's reading group is off: an admin turns it on with `/paperadmin club set`."
            )

    async def propose(self, club: ClubRow, paper_id: int, user_id: int) -> tuple[Paper, datetime]:
        """Put a paper forward for the club's next poll; returns it and that poll's announcement."""
        self.check_open(club)
        paper = await self.papers.get(paper_id)
        if paper is None:
            raise NotFoundError("That paper is not stored here.")
        if paper_id in await self.clubs.picked(club.channel_id):
            raise ClubError(f"“{paper.title}” was read by this group already (`/paper club history`).")
        outcome = await self.clubs.propose(club.channel_id, paper_id, user_id, limit=MAX_WAITING_PROPOSALS)
        if outcome == "already":
            raise ClubError(f"“{paper.title}” was proposed already.")
        if outcome == "full":
            raise ClubError(
                f"{MAX_WAITING_PROPOSALS} papers wait for the next poll already, as many as a poll holds."
            )
        return paper, await self.next_poll_announcement(club)

    async def vote(self, channel_id: int, week: int, user_id: int, answer: int) -> tuple[str, Paper | None]:
        """A vote button pressed (where polls are buttons): ``"voted"`` or ``"removed"`` and the paper."""
        key = stamp(datetime.fromtimestamp(week, UTC))
        outcome = await self.clubs.vote(channel_id, key, user_id, answer)
        if outcome == "closed":
            raise ClubError("This poll is closed: the winner is announced in the channel.")
        if outcome == "unknown":
            raise ClubError("That is not one of this poll's papers.")
        stored = await self.clubs.week(channel_id, key)
        paper_id = stored.candidates[answer - 1] if stored is not None else 0
        return outcome, await self.papers.get(paper_id)

    async def next_poll_announcement(self, club: ClubRow) -> datetime:
        """The announcement of the next poll not opened yet."""
        announce = self.first_announcement(club)
        while await self.clubs.week(club.channel_id, stamp(announce)) is not None:
            announce = next_announcement(club, announce)
        return announce

    async def history(self, club: ClubRow) -> list[Pick]:
        weeks = await self.clubs.history(club.channel_id)
        papers = await self.papers.get_many(w.winner_paper_id for w in weeks if w.winner_paper_id)
        picks = []
        for week in weeks:
            paper = papers.get(week.winner_paper_id or 0)
            if paper is None:
                continue
            index = week.candidates.index(paper.id) if paper.id in week.candidates else -1
            votes = week.votes[index] if week.votes and 0 <= index < len(week.votes) else 0
            picks.append(Pick(paper, parse_stamp(week.announce_at), week.thread_id, votes))
        return picks

    # -- the weekly steps ---------------------------------------------------------------------------

    async def candidates(self, club: ClubRow) -> list[int]:
        picked = await self.clubs.picked(club.channel_id)
        chosen: list[int] = []

        def take(ids: Sequence[int], up_to: int) -> None:
            for paper_id in ids:
                if len(chosen) >= up_to:
                    return
                if paper_id not in picked and paper_id not in chosen:
                    chosen.append(paper_id)

        take(await self.clubs.waiting_proposals(club.channel_id), MAX_ANSWERS)
        channels = [club.channel_id, *await self.clubs.thread_ids(club.channel_id)]
        take(await self.clubs.liked_in_channel(channels, club.guild_id, limit=50), CANDIDATES)
        topics: Sequence[str] = parse_topics(club.topics) if club.topics else ()
        if not topics:
            feed = await self.feeds.for_channel(club.channel_id)
            topics = feed.topics if feed is not None else ()
        engine = self._search()

        def matches(topic: str, limit: int) -> list[int]:
            try:
                return [
                    hit.paper_id
                    for hit in engine.search(topic, limit=limit, exclude=picked | set(chosen)).hits
                ]
            except Exception:  # a topic the engine cannot search: the others still count
                log.warning("club %s: could not search one of its topics", club.channel_id)
                return []

        for topic in topics:  # the two best of each topic first, then the rest
            take(matches(topic, CANDIDATES)[:2], CANDIDATES)
        for topic in topics:
            take(matches(topic, CANDIDATES * 2), CANDIDATES)
        return chosen

    async def run_due(self, sender: ClubSender) -> int:
        """Every step that fell due, for every running club; returns how many steps were taken. A step
        that fails is logged (in full the first time, then a line an hour) and tried again at the next
        run (the week stays where it was)."""
        now = self.clock()
        steps = 0
        tried: set[tuple[int, str]] = set()
        for club in await self.clubs.active():
            try:
                steps += await self._open_poll(club, now, sender, tried)
                self._failing.pop((club.channel_id, "open"), None)
            except Exception as error:
                self._failed(
                    (club.channel_id, "open"), error, f"club {club.channel_id}: could not open the poll"
                )
        for week in await self.clubs.unfinished_weeks():
            owner = await self.clubs.get(week.channel_id)
            if owner is None or (week.channel_id, week.announce_at) in tried:
                continue  # (a week whose poll was just opened, or failed to be, waits for the next run)
            try:
                steps += await self._advance(owner, week, now, sender)
                self._failing.pop((week.channel_id, week.announce_at), None)
            except Exception as error:
                self._failed(
                    (week.channel_id, week.announce_at),
                    error,
                    f"club {week.channel_id}: the week of {week.announce_at} is stuck at {week.state}",
                )
        return steps

    def _failed(self, key: tuple[int, str], error: Exception, what: str) -> None:
        """The first failure of a step in full; the same one again a line an hour (it may need a person:
        a permission taken away, a channel deleted)."""
        last = self._failing.get(key)
        wall = time.monotonic()
        if last is None:
            self._failing[key] = wall
            log.error("%s; trying again shortly", what, exc_info=error)
        elif wall - last >= FAILURE_LOG_SECONDS:
            self._failing[key] = wall
            log.warning("%s, still: %r", what, error)

    async def _open_poll(
        self, club: ClubRow, now: datetime, sender: ClubSender, tried: set[tuple[int, str]]
    ) -> int:
        announce = next_announcement(club, now)
        if now < announce - POLL_OPENS_BEFORE or announce - now < timedelta(hours=1):
            return 0
        key = stamp(announce)
        if await self.clubs.week(club.channel_id, key) is not None:
            return 0
        ids = await self.candidates(club)
        if not ids:
            log.info("club %s: no candidate papers this week (no topics, proposals or 👍)", club.channel_id)
            return 0
        if not await self.clubs.open_week(club.channel_id, key, ids):
            return 0
        tried.add((club.channel_id, key))
        week = await self.clubs.week(club.channel_id, key)
        assert week is not None
        return await self._advance(club, week, now, sender, resumed=False)

    async def _advance(
        self, club: ClubRow, week: ClubWeek, now: datetime, sender: ClubSender, *, resumed: bool = True
    ) -> int:
        """Take every step of the week that is due now, in order. ``resumed``: the week was left in its
        state by an earlier run (perhaps a process that died after a send and before storing it): its
        message is looked for before it is sent again, in case Discord no longer knows its nonce."""
        steps = 0
        again = week.state if resumed else None
        channel, key = week.channel_id, week.announce_at
        announce = parse_stamp(key)
        papers = await self.papers.get_many(week.candidates)
        candidates = [papers[i] for i in week.candidates if i in papers]
        if week.state == "poll_sending":
            hours = max(1, min(768, math.ceil((announce - now).total_seconds() / 3600)))
            plan = PollPlan(channel, int(announce.timestamp()), candidates, announce, hours, club.timezone)
            found = await sender.find_poll(channel, plan) if again == "poll_sending" else None
            message_id, buttons = found or await sender.post_poll(
                channel, plan, nonce=nonce(channel, key, "poll")
            )
            await self.clubs.advance(
                channel,
                key,
                frm="poll_sending",
                to="polling",
                poll_message_id=message_id,
                buttons=int(buttons),
            )
            steps += 1
        elif week.state == "polling" and now >= announce:
            assert week.poll_message_id is not None
            if week.buttons:
                await sender.close_buttons(channel, week.poll_message_id)
                votes = await self.clubs.button_counts(channel, key, len(week.candidates))
            else:
                votes = await sender.end_poll(channel, week.poll_message_id, len(week.candidates))
            index, _ = winner_of(votes)
            winner = week.candidates[index]
            await self.clubs.advance(
                channel, key, frm="polling", to="announce_sending", votes=tuple(votes), winner_paper_id=winner
            )
            steps += 1
        else:
            steps += 0
        week = await self.clubs.week(channel, key) or week
        if week.state in ("announce_sending", "announced", "threaded", "open"):
            outcome = self._outcome(club, week, candidates, papers)
            if outcome is None:
                return steps
            if week.state == "announce_sending":
                sent = None
                if again == "announce_sending":
                    sent = await sender.find_posted(channel, "announce", after=week.poll_message_id)
                message_id = sent or await sender.announce(
                    channel, outcome, nonce=nonce(channel, key, "announce")
                )
                await self.clubs.advance(
                    channel, key, frm="announce_sending", to="announced", announce_message_id=message_id
                )
                week = await self.clubs.week(channel, key) or week
                steps += 1
            if week.state == "announced":
                assert week.announce_message_id is not None
                thread_id = await sender.start_thread(channel, week.announce_message_id, outcome.winner)
                await self.clubs.advance(channel, key, frm="announced", to="threaded", thread_id=thread_id)
                week = await self.clubs.week(channel, key) or week
                steps += 1
            if week.state == "threaded":
                assert week.thread_id is not None
                sent = (
                    await sender.find_posted(week.thread_id, "paper", after=None)
                    if again == "threaded"
                    else None
                )
                message_id = sent or await sender.post_paper(
                    week.thread_id, outcome, nonce=nonce(channel, key, "paper")
                )
                await self.messages.record(message_id, week.thread_id, club.guild_id, outcome.winner.id)
                await self.clubs.advance(channel, key, frm="threaded", to="open", paper_message_id=message_id)
                await sender.finish_paper(week.thread_id, message_id)
                week = await self.clubs.week(channel, key) or week
                steps += 1
            if week.state == "open" and now >= outcome.meeting_at - REMINDER_BEFORE_MEETING:
                assert week.thread_id is not None
                sent = (
                    await sender.find_posted(week.thread_id, "remind", after=None)
                    if again == "open"
                    else None
                )
                await sender.remind(
                    week.thread_id,
                    outcome.winner,
                    outcome.meeting_at,
                    club.timezone,
                    nonce=nonce(channel, key, "remind"),
                ) if sent is None else None
                await self.clubs.advance(channel, key, frm="open", to="reminded")
                steps += 1
        return steps

    @staticmethod
    def _outcome(
        club: ClubRow, week: ClubWeek, candidates: list[Paper], papers: dict[int, Paper]
    ) -> Outcome | None:
        winner = papers.get(week.winner_paper_id or 0)
        if winner is None:
            log.warning(
                "club %s: the paper picked on %s is no longer stored", week.channel_id, week.announce_at
            )
            return None
        votes = week.votes or ()
        _, tie = winner_of(votes)
        return Outcome(
            winner=winner,
            votes=tuple(votes),
            candidates=candidates,
            tie=tie,
            meeting_at=parse_stamp(week.announce_at) + MEETING_AFTER,
            zone=club.timezone,
        )
