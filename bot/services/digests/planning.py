"""What a digest holds: the papers chosen for a subscription (or a person), their reasons, and its texts.

A person's digest brings the new papers of the authors they follow first (``FollowedLike``), then the
recommender's picks, up to the digest's count. Planning writes nothing: the recommender is asked with ``mark_shown=False`` and the papers already sent
to the recipient are left out, so ``paperbot digest --dry-run`` and the delivery see the same digest.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.clock import Clock
from bot.services.digests.subscriptions import recipient_of, subscription_schedule
from bot.services.digests.timing import Schedule, format_local, next_delivery
from bot.services.search.snippets import one_line
from storage.models import Paper, Subscription
from storage.repositories.digests import DigestRepository, Recipient

REASON_MAX = 200


class RecommendationLike(Protocol):
    @property
    def paper_id(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def interest_id(self) -> int | None: ...


class RecommenderLike(Protocol):
    """``bot.services.recommend.recommender.Recommender``: ranks unseen papers for a profile and/or topics."""

    async def recommend(
        self,
        user_id: int | None,
        *,
        count: int,
        topics: Sequence[str] = (),
        exclude: Collection[int] = (),
        now: datetime | None = None,
        mark_shown: bool = True,
    ) -> Sequence[RecommendationLike]: ...

    async def interest_names(self, user_id: int) -> Mapping[int, str]: ...


class FollowedPaperLike(Protocol):
    @property
    def paper_id(self) -> int: ...
    @property
    def reason(self) -> str: ...


class FollowedLike(Protocol):
    """``bot.services.people.follows.FollowService``: new papers by the authors a person follows."""

    async def new_papers(
        self, user_id: int, *, exclude: Collection[int] = (), limit: int
    ) -> Sequence[FollowedPaperLike]: ...


class MutesLike(Protocol):
    """``bot.services.people.mutes.MuteService``: the papers a person's or a channel feed's mutes hide."""

    async def muted(self, user_id: int) -> frozenset[int]: ...

    async def hidden(self, phrases: Iterable[str]) -> frozenset[int]: ...


class PaperLookup(Protocol):
    """``storage.repositories.papers.PaperRepository``."""

    async def get_many(self, ids: Sequence[int]) -> dict[int, Paper]: ...


@dataclass(frozen=True, slots=True)
class Pick:
    """One paper chosen for a digest (before it is read for sending)."""

    paper_id: int
    reason: str
    score: float
    interest_id: int | None = None  # the person's interest that brought it


@dataclass(frozen=True, slots=True)
class PlannedPaper:
    paper: Paper
    reason: str
    score: float
    interest_id: int | None = None


@dataclass(frozen=True, slots=True)
class DigestPlan:
    """A built digest: what would be sent now (building writes nothing)."""

    recipient: Recipient
    subscription: Subscription | None
    papers: tuple[PlannedPaper, ...]
    header: str
    nothing_text: str


@dataclass(frozen=True, slots=True)
class DigestTexts:
    """The first message of a digest of papers, and the one line sent instead when none is new."""

    header: str
    nothing_text: str


#: Interests a digest's header names at most (the rest are counted).
HEADER_INTERESTS = 4


def _topic_list(topics: Sequence[str]) -> str:
    return ", ".join(topics)


class DigestPlanner:
    def __init__(
        self,
        digests: DigestRepository,
        *,
        papers: PaperLookup,
        recommender: RecommenderLike,
        clock: Clock,
        min_score: float = 0.0,
        followed: FollowedLike | None = None,
        mutes: MutesLike | None = None,
    ) -> None:
        self.digests = digests
        self.papers = papers
        self.recommender = recommender
        self.clock = clock
        self.min_score = min_score
        self.followed = followed
        self.mutes = mutes

    async def _followed(self, user_id: int, sent: Collection[int], count: int) -> Sequence[FollowedPaperLike]:
        """New papers by the authors the person follows, none they muted (the recommender leaves their
        muted papers out of its own picks: the mutes are read here only when a followed paper came)."""
        assert self.followed is not None
        followed = await self.followed.new_papers(user_id, exclude=sent, limit=count)
        if not followed or self.mutes is None:
            return followed
        muted = await self.mutes.muted(user_id)
        if not muted.isdisjoint(paper.paper_id for paper in followed):
            followed = await self.followed.new_papers(user_id, exclude={*sent, *muted}, limit=count)
        return followed

    async def choose(
        self,
        sub: Subscription | None,
        *,
        user_id: int | None = None,
        now: datetime | None = None,
        sent: Collection[int] | None = None,
    ) -> list[Pick]:
        """The papers a digest would send now, best first, each with its one-line reason; writes nothing.

        This is the per-digest work the scheduler does before sending (the papers themselves are read
        when their messages go out). ``sub`` None chooses for ``user_id``'s profile alone (default
        count). ``sent`` may pass the recipient's already-sent paper ids (saves a query when choosing
        for many recipients at once).
        """
        now = now or self.clock()
        if sub is not None:
            recipient = recipient_of(sub)
            topics, count = sub.topics, sub.count
        elif user_id is not None:
            recipient = Recipient(user_id=user_id)
            topics, count = (), Schedule().count
        else:
            raise ValueError("choose needs a subscription or a user id")
        if sent is None:
            sent = await self.digests.sent_paper_ids(recipient)
        if sub is not None and sub.is_channel and sub.mutes and self.mutes is not None:
            muted = await self.mutes.hidden(sub.mutes)  # a feed's muted papers are never posted
            if muted:
                sent = {*sent, *muted}
        first: list[Pick] = []
        if recipient.user_id is not None and self.followed is not None:
            followed = await self._followed(recipient.user_id, sent, count)
            first = [Pick(paper.paper_id, one_line(paper.reason, REASON_MAX), 0.0) for paper in followed][
                :count
            ]
        if len(first) >= count:
            return first
        taken = {pick.paper_id for pick in first}
        recommended = await self.recommender.recommend(
            recipient.user_id,
            count=count - len(first),
            topics=topics,
            exclude={*sent, *taken} if taken else sent,
            now=now,
            mark_shown=False,
        )
        rest = [
            Pick(pick.paper_id, one_line(pick.reason, REASON_MAX), float(pick.score), pick.interest_id)
            for pick in recommended
            if pick.score > self.min_score and pick.paper_id not in sent and pick.paper_id not in taken
        ]
        return [*first, *rest][:count]

    async def build(
        self,
        sub: Subscription | None,
        *,
        user_id: int | None = None,
        now: datetime | None = None,
        sent: Collection[int] | None = None,
        manual: bool = False,
    ) -> DigestPlan:
        """The whole digest as it would be sent now — papers and texts — without sending or recording it
        (``paperbot digest --dry-run``, an on-demand digest without a subscription)."""
        now = now or self.clock()
        picks = await self.choose(sub, user_id=user_id, now=now, sent=sent)
        found = await self.papers.get_many([pick.paper_id for pick in picks]) if picks else {}
        papers = tuple(
            PlannedPaper(found[pick.paper_id], pick.reason, pick.score, pick.interest_id)
            for pick in picks
            if pick.paper_id in found
        )
        named = await self.interest_names(sub, [paper.interest_id for paper in papers])
        texts = self.texts(sub, len(papers), manual=manual, now=now, interests=named)
        return DigestPlan(
            recipient=recipient_of(sub) if sub is not None else Recipient(user_id=user_id),
            subscription=sub,
            papers=papers,
            header=texts.header,
            nothing_text=texts.nothing_text,
        )

    async def interest_names(self, sub: Subscription | None, brought: Sequence[int | None]) -> list[str]:
        """The names of the person's interests that brought a digest's papers (``brought``: each
        paper's interest id), oldest interest first; none for a channel's feed, whose topics say it."""
        user_id = None if sub is None or sub.is_channel else sub.user_id
        wanted = {i for i in brought if i is not None}
        if user_id is None or not wanted:
            return []
        named = await self.recommender.interest_names(user_id)
        return [name for i, name in named.items() if i in wanted]

    def texts(
        self,
        sub: Subscription | None,
        n: int,
        *,
        manual: bool,
        now: datetime | None = None,
        interests: Sequence[str] = (),
    ) -> DigestTexts:
        """The header of a digest of ``n`` papers (``interests``: the names of the person's interests
        that brought them, else the subscription's topics are named), and its nothing-new line."""
        now = now or self.clock()
        schedule = subscription_schedule(sub) if sub is not None else None
        return DigestTexts(
            header=_header(sub, schedule, now, n, manual=manual, interests=interests),
            nothing_text=_nothing_text(sub, schedule, now),
        )


def _header(
    sub: Subscription | None,
    schedule: Schedule | None,
    now: datetime,
    n: int,
    *,
    manual: bool,
    interests: Sequence[str] = (),
) -> str:
    zone = schedule.timezone if schedule else "UTC"
    local = now.astimezone(schedule.zone) if schedule else now
    day = f"{local:%A} {local.day} {local:%B}"
    what = "Paper feed" if sub is not None and sub.is_channel else "Your paper digest"
    if manual:
        what += " (on demand)"
    # a person's digest serves every interest, not only the topics they subscribed with
    topics = list(interests) or list(sub.topics if sub is not None else ())
    if len(interests) > HEADER_INTERESTS:  # (a person may have dozens: the header stays one line)
        shown = HEADER_INTERESTS - 1
        topics = [*topics[:shown], f"{len(topics) - shown} more of your interests"]
    about = f" on *{_topic_list(topics)}*" if topics else ""
    plural = "paper" if n == 1 else "papers"
    return (
        f"📚 **{what}** · {day} ({zone}) · {n} new {plural}{about}. "
        "React 👍 👎 🔖 on a paper to tune the next one."
    )


def _nothing_text(sub: Subscription | None, schedule: Schedule | None, now: datetime) -> str:
    about = f" for *{_topic_list(sub.topics)}*" if sub is not None and sub.topics else ""
    text = f"📭 Nothing new above the bar{about} today"
    if sub is not None and schedule is not None:
        upcoming = next_delivery(schedule, now)
        text += f"; I'll look again {format_local(upcoming.due_at, schedule.timezone)}"
    hint = (
        "change the feed's topics with /paperadmin feed set."
        if sub is not None and sub.is_channel
        else "add topics with /paper subscribe topics:… or react to papers to widen it."
    )
    return f"{text}. To get more, {hint}"
