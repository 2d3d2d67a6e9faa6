"""Digests: subscribe, build, claim, plan and deliver — exactly once, without knowing about Discord.

Delivery goes through a :class:`DigestSender` (the Discord one lives in ``bot/exts/_digests.py``;
tests use a fake), so every rule here is testable without a gateway:

* a period is claimed in the database before anything is sent (a double fire or a restart finds it
  taken and sends nothing);
* a paper is never sent twice to the same person or channel, whether by a scheduled digest or
  ``/paper digest`` (``digest_sent``); the recommender is asked to leave those papers out;
* a digest with nothing new says so in one short message, never silence;
* every message of a digest carries a nonce derived from (subscription, recipient, period, paper or
  header) and the same on every attempt: Discord, asked with ``enforce_nonce``, answers a repeat
  within a few minutes with the message it already created. So a send whose answer was lost (a
  timeout, a dropped connection, a 5xx) is sent again at once with the same nonce and yields one
  message, never two;
* the header is reserved and confirmed on the run like each paper, so a retry or a resume never
  sends it twice;
* a crash mid-digest leaves the run ``claimed``; resuming it sends the papers not yet attempted, and
  those attempted without an answer only while Discord still remembers their nonce
  (:data:`NONCE_TRUST`); older ones are never sent again (never twice beats once more);
* closed DMs (Discord 50007) or a gone channel pause the subscription and leave a notice that the
  user sees at their next command.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.errors import InvalidScheduleError, NotFoundError
from bot.services.schedule import (
    Clock,
    Period,
    Schedule,
    due_within,
    format_local,
    latest_due,
    make_schedule,
    next_delivery,
    parse_topics,
    utc_now,
)
from bot.services.snippets import one_line
from storage.db import Database
from storage.models import Paper
from storage.repositories.digests import DigestItem, DigestRepository, DigestRun, Recipient
from storage.repositories.subscriptions import ScheduleFields, Subscription, SubscriptionRepository

log = logging.getLogger(__name__)

MANUAL_PREFIX = "manual:"
DEFAULT_GRACE = timedelta(hours=6)
REASON_MAX = 200
#: Discord's Create Message takes a nonce of up to 25 characters.
NONCE_MAX = 25
#: How long after a message was attempted its nonce is trusted to dedupe a repeat. Discord remembers a
#: nonce "in the past few minutes" without saying how many; the digest counts on two.
NONCE_TRUST = timedelta(minutes=2)
#: Pauses before each repeat of a send whose outcome is unknown (same nonce); ~20 s in all, well inside
#: NONCE_TRUST even with discord.py's own retries of a 5xx.
RESEND_DELAYS: tuple[float, ...] = (1.0, 4.0, 15.0)


# ---- what the service needs from others --------------------------------------------------------


class RecommendationLike(Protocol):
    @property
    def paper_id(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def reason(self) -> str: ...


class RecommenderLike(Protocol):
    """``bot.services.recommender.Recommender``: ranks unseen papers for a profile and/or topics."""

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


class PaperLookup(Protocol):
    """``storage.repositories.papers.PaperRepository``."""

    async def get_many(self, ids: Sequence[int]) -> dict[int, Paper]: ...


# ---- what the service needs from a delivery channel --------------------------------------------


class RecipientUnreachableError(Exception):
    """The recipient cannot receive digests until a person fixes something (not worth retrying)."""

    code: int | None = None

    def __init__(self, detail: str, *, code: int | None = None) -> None:
        super().__init__(detail)
        self.code = code


class DMsClosedError(RecipientUnreachableError):
    """Discord 50007: the user does not accept direct messages from the bot."""


class ChannelGoneError(RecipientUnreachableError):
    """Discord 10003 (unknown channel), 50001 (missing access) or 50013 (missing permissions)."""


class SendOutcomeUnknownError(Exception):
    """The message may or may not have been posted (a timeout, a dropped connection, a 5xx answer):
    only sending it again with the same nonce can tell."""


class SentThenDeletedError(Exception):
    """Discord knows this nonce for a message that was deleted since: it went out; do not send it again."""


class DigestInterruptedError(Exception):
    """Delivery stopped between two papers because the process is shutting down; the run stays claimed
    and resumes with the papers not yet sent at the next start."""


@dataclass(frozen=True, slots=True)
class SentMessage:
    message_id: int
    channel_id: int
    guild_id: int | None = None


class DigestSender(Protocol):
    """Posts one digest's messages, each with the given Create Message ``nonce`` (and ``enforce_nonce``).

    Raise DMsClosedError / ChannelGoneError for unreachable recipients, SendOutcomeUnknownError when the
    message may have been posted without an answer, SentThenDeletedError when Discord says its nonce
    names a message deleted since.
    """

    async def send_header(self, text: str, *, nonce: str) -> SentMessage: ...

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        """One message for one paper, with 👍 👎 🔖 already added."""
        ...

    async def send_nothing_today(self, text: str, *, nonce: str) -> SentMessage: ...


def message_nonce(recipient: Recipient, subscription_id: int | None, period_key: str, part: str) -> str:
    """The nonce of one digest message (``part``: "header" or "paper:<id>"): the same on every attempt at
    it, and different for every other message (Discord dedupes per sender, whatever the channel)."""
    who = f"u{recipient.user_id}" if recipient.user_id is not None else f"c{recipient.channel_id}"
    key = f"{subscription_id}\x1f{who}\x1f{period_key}\x1f{part}".encode()
    nonce = "d" + hashlib.blake2b(key, digest_size=12).hexdigest()
    assert len(nonce) <= NONCE_MAX
    return nonce


@dataclass(slots=True)
class _Attempts:
    """Whether any attempt at one message may have posted it (then a failure never releases it)."""

    maybe_posted: bool = False


# ---- results -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pick:
    """One paper chosen for a digest (before it is read for sending)."""

    paper_id: int
    reason: str
    score: float


@dataclass(frozen=True, slots=True)
class PlannedPaper:
    paper: Paper
    reason: str
    score: float


@dataclass(frozen=True, slots=True)
class DigestPlan:
    """A built digest: what would be sent now (building writes nothing)."""

    recipient: Recipient
    subscription: Subscription | None
    papers: tuple[PlannedPaper, ...]
    header: str
    nothing_text: str


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """What one delivery attempt did.

    status: ``sent`` (papers went out), ``empty`` (the "nothing new" message went out), ``already``
    (the period was claimed before: nothing sent), ``inactive`` (subscription paused or gone),
    ``unreachable`` (DMs closed / channel gone: now paused), ``skipped`` (missed beyond the grace).
    """

    status: str
    sent: int = 0
    period_key: str | None = None
    detail: str | None = None
    in_doubt: int = 0
    paper_ids: tuple[int, ...] = field(default=())


# ---- the service -------------------------------------------------------------------------------


def subscription_schedule(sub: Subscription) -> Schedule:
    return Schedule(
        time_local=sub.time_local,
        timezone=sub.timezone,
        frequency=sub.frequency,
        weekday=sub.weekday,
        count=sub.count,
    )


def recipient_of(sub: Subscription) -> Recipient:
    if sub.kind == "channel":
        return Recipient(channel_id=sub.channel_id)
    return Recipient(user_id=sub.user_id)


def _parse_stamp(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _topic_list(topics: Sequence[str]) -> str:
    return ", ".join(topics)


class DigestService:
    def __init__(
        self,
        db: Database,
        *,
        papers: PaperLookup,
        recommender: RecommenderLike,
        clock: Clock | None = None,
        grace: timedelta = DEFAULT_GRACE,
        min_score: float = 0.0,
        subscriptions: SubscriptionRepository | None = None,
        digests: DigestRepository | None = None,
        resend_delays: Sequence[float] = RESEND_DELAYS,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.db = db
        self.papers = papers
        self.recommender = recommender
        self.clock: Clock = clock if clock is not None else utc_now
        self.grace = grace
        self.min_score = min_score
        self.subscriptions = subscriptions or SubscriptionRepository(db)
        self.digests = digests or DigestRepository(db)
        self.resend_delays = tuple(resend_delays)
        self._sleep = sleep
        self._stopping = False

    def request_stop(self) -> None:
        """The process is shutting down: deliveries stop at the next paper boundary (and resume at start)."""
        self._stopping = True

    def now(self) -> datetime:
        return self.clock()

    def _stamp(self) -> str:
        """Now as stored in the database (ISO-8601 UTC, seconds), from the injected clock."""
        return self.clock().astimezone(UTC).isoformat(timespec="seconds")

    # ---- subscriptions ---------------------------------------------------------------------------

    async def subscribe(
        self,
        user_id: int,
        *,
        topics: str | Sequence[str] | None = None,
        time: str | None = None,
        timezone: str | None = None,
        frequency: str | None = None,
        count: int | None = None,
        weekday: str | int | None = None,
        guild_id: int | None = None,
    ) -> Subscription:
        """Create or change a user's DM digest. Options not given keep their current value (or default).

        Also resumes a paused digest. Raises InvalidScheduleError (nothing stored) on bad input.
        ``guild_id`` is the server it was set up from (its admins' stats count it; None from DMs keeps
        the server it was set up from before).
        """
        existing = await self.subscriptions.for_user(user_id)
        base = subscription_schedule(existing) if existing else None
        schedule = make_schedule(
            time_local=time, timezone=timezone, frequency=frequency, count=count, weekday=weekday, base=base
        )
        new_topics = parse_topics(topics) if topics is not None else (existing.topics if existing else ())
        sub = await self.subscriptions.upsert_user(
            user_id, _fields(schedule, new_topics), guild_id=guild_id, at=self._stamp()
        )
        log.info("user %s subscribed (subscription %s)", user_id, sub.id)
        log.debug("subscription %s: %s, topics=%s", sub.id, schedule.describe(), list(new_topics))
        return sub

    async def unsubscribe(self, user_id: int) -> Subscription | None:
        """Stop a user's digest; returns what was removed (None when there was none)."""
        sub = await self.subscriptions.for_user(user_id)
        if sub is None:
            return None
        await self.subscriptions.delete(sub.id)
        log.info("user %s unsubscribed (subscription %s)", user_id, sub.id)
        return sub

    async def set_feed(
        self,
        guild_id: int,
        channel_id: int,
        *,
        created_by: int,
        topics: str | Sequence[str] | None = None,
        time: str | None = None,
        timezone: str | None = None,
        frequency: str | None = None,
        count: int | None = None,
        weekday: str | int | None = None,
    ) -> Subscription:
        """Create or change a channel's topic feed (a feed ranks by its topics only, so it needs some)."""
        existing = await self.subscriptions.for_channel(channel_id)
        if existing is not None and existing.guild_id not in (None, guild_id):
            raise NotFoundError("That channel belongs to another server.")
        base = subscription_schedule(existing) if existing else None
        schedule = make_schedule(
            time_local=time, timezone=timezone, frequency=frequency, count=count, weekday=weekday, base=base
        )
        new_topics = parse_topics(topics) if topics is not None else (existing.topics if existing else ())
        if not new_topics:
            raise InvalidScheduleError(
                "A channel feed needs topics to pick papers by, e.g. topics: llm efficiency, kv cache."
            )
        sub = await self.subscriptions.upsert_channel(
            channel_id, guild_id, _fields(schedule, new_topics), created_by=created_by, at=self._stamp()
        )
        log.info(
            "feed set for channel %s (guild %s) by %s: %s",
            channel_id,
            guild_id,
            created_by,
            schedule.describe(),
        )
        return sub

    async def clear_feed(self, guild_id: int, channel_id: int) -> Subscription | None:
        sub = await self.subscriptions.for_channel(channel_id)
        if sub is None or sub.guild_id != guild_id:
            return None
        await self.subscriptions.delete(sub.id)
        log.info("feed cleared for channel %s (guild %s)", channel_id, guild_id)
        return sub

    async def list_feeds(self, guild_id: int) -> list[Subscription]:
        return await self.subscriptions.channel_feeds(guild_id)

    async def take_notice(self, user_id: int) -> str | None:
        """What to tell a user at their next command (a paused digest or feed), cleared once read."""
        return await self.subscriptions.take_notice(user_id)

    def next_delivery(self, sub: Subscription, now: datetime | None = None) -> Period:
        return next_delivery(subscription_schedule(sub), now or self.now())

    # ---- building --------------------------------------------------------------------------------

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
        now = now or self.now()
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
        recommended = await self.recommender.recommend(
            recipient.user_id, count=count, topics=topics, exclude=sent, now=now, mark_shown=False
        )
        return [
            Pick(pick.paper_id, one_line(pick.reason, REASON_MAX), float(pick.score))
            for pick in recommended
            if pick.score > self.min_score and pick.paper_id not in sent
        ][:count]

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
        now = now or self.now()
        picks = await self.choose(sub, user_id=user_id, now=now, sent=sent)
        found = await self.papers.get_many([pick.paper_id for pick in picks]) if picks else {}
        papers = tuple(
            PlannedPaper(found[pick.paper_id], pick.reason, pick.score)
            for pick in picks
            if pick.paper_id in found
        )
        schedule = subscription_schedule(sub) if sub is not None else None
        return DigestPlan(
            recipient=recipient_of(sub) if sub is not None else Recipient(user_id=user_id),
            subscription=sub,
            papers=papers,
            header=self._header(sub, schedule, now, len(papers), manual=manual),
            nothing_text=self._nothing_text(sub, schedule, now),
        )

    def _header(
        self, sub: Subscription | None, schedule: Schedule | None, now: datetime, n: int, *, manual: bool
    ) -> str:
        zone = schedule.timezone if schedule else "UTC"
        local = now.astimezone(schedule.zone) if schedule else now
        day = f"{local:%A} {local.day} {local:%B}"
        what = "Paper feed" if sub is not None and sub.is_channel else "Your paper digest"
        if manual:
            what += " (on demand)"
        about = f" on *{_topic_list(sub.topics)}*" if sub is not None and sub.topics else ""
        plural = "paper" if n == 1 else "papers"
        return (
            f"📚 **{what}** · {day} ({zone}) · {n} new {plural}{about}. "
            "React 👍 👎 🔖 on a paper to tune the next one."
        )

    def _nothing_text(self, sub: Subscription | None, schedule: Schedule | None, now: datetime) -> str:
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

    # ---- delivering ------------------------------------------------------------------------------

    async def deliver_period(
        self, subscription_id: int, sender: DigestSender, *, period: Period | None = None
    ) -> DeliveryOutcome:
        """Deliver a scheduled period (default: the most recent one due) unless it was claimed before."""
        sub = await self.subscriptions.get(subscription_id)
        if sub is None or not sub.active:
            return DeliveryOutcome("inactive", detail="subscription paused or removed")
        if period is None:
            period = latest_due(subscription_schedule(sub), self.now())
        run = await self.digests.claim_run(sub.id, period.key, at=self._stamp())
        if run is None:
            log.info("subscription %s period %s already claimed: not sending again", sub.id, period.key)
            return DeliveryOutcome("already", period_key=period.key)
        return await self._deliver(run, sub, sender)

    async def deliver_now(self, user_id: int, sender: DigestSender) -> DeliveryOutcome:
        """``/paper digest``: a digest right now through the same pipeline (not a scheduled period).

        With a subscription it is a run of its own (``manual:<time>``), so it resumes after a crash and
        never repeats papers; without one it uses the user's profile and the default count.
        """
        sub = await self.subscriptions.for_user(user_id)
        if sub is None:
            plan = await self.build(None, user_id=user_id, manual=True)
            return await self._send_plan(None, plan, plan.papers, sender)
        now = self.now()
        run = None
        for attempt in range(5):
            key = f"{MANUAL_PREFIX}{(now + timedelta(microseconds=attempt)).isoformat()}"
            run = await self.digests.claim_run(sub.id, key, at=self._stamp())
            if run is not None:
                break
        if run is None:  # pragma: no cover - five claims in the same microsecond
            return DeliveryOutcome("already", detail="another digest is being sent right now")
        return await self._deliver(run, sub, sender, manual=True)

    async def resume(self, run: DigestRun, sender: DigestSender) -> DeliveryOutcome:
        """Finish a run that was claimed but not finished (the process stopped mid-digest)."""
        sub = await self.subscriptions.get(run.subscription_id)
        if sub is None or not sub.active:
            await self.digests.finish_run(
                run.id, "skipped", "subscription paused or removed before resume", at=self._stamp()
            )
            return DeliveryOutcome("inactive", period_key=run.period_key)
        current = await self.digests.get_run(run.id)
        if current is None or current.status != "claimed":
            return DeliveryOutcome("already", period_key=run.period_key)
        log.info("resuming digest run %s (subscription %s, period %s)", run.id, sub.id, run.period_key)
        return await self._deliver(run, sub, sender, manual=run.period_key.startswith(MANUAL_PREFIX))

    async def _deliver(
        self, run: DigestRun, sub: Subscription, sender: DigestSender, *, manual: bool = False
    ) -> DeliveryOutcome:
        run = await self.digests.get_run(run.id) or run  # the header's state as stored now
        opening = self._opening(run, sub)
        items = await self.digests.items(run.id)
        if not items and opening != "send":
            # The "nothing new" line was attempted: say it again only while its nonce dedupes.
            if opening == "done":
                await self.digests.finish_run(run.id, "empty", at=self._stamp())
                return DeliveryOutcome("empty", period_key=run.period_key)
        elif not items:
            picks = await self.choose(sub)
            items = await self.digests.plan_items(run.id, [(pick.paper_id, pick.reason) for pick in picks])
        plan = self._texts(sub, len(items), manual=manual)
        in_doubt = [item for item in items if item.in_doubt]
        resend = {item.paper_id for item in in_doubt if self._nonce_trusted(item.sent_at)}
        lost = [item for item in in_doubt if item.paper_id not in resend]
        if resend:
            log.info(
                "run %s: %d paper(s) went out without an answer; sending them again with the same nonce "
                "(Discord answers with the message if it was posted)",
                run.id,
                len(resend),
            )
        if lost:
            log.warning(
                "run %s: %d paper(s) may or may not have reached %s, too long ago to send again safely; "
                "not sending them again",
                run.id,
                len(lost),
                recipient_of(sub),
            )
        pending = [item for item in items if item.sent_at is None or item.paper_id in resend]
        if items and not pending:
            await self.digests.finish_run(run.id, "sent", "nothing left to send", at=self._stamp())
            return DeliveryOutcome("sent", period_key=run.period_key, in_doubt=len(lost))
        found = await self.papers.get_many([item.paper_id for item in pending]) if pending else {}
        to_send = tuple(
            PlannedPaper(found[item.paper_id], item.reason, 0.0) for item in pending if item.paper_id in found
        )
        try:
            outcome = await self._send_plan(run, plan, to_send, sender, opening=opening, resend=resend)
        except RecipientUnreachableError as error:
            await self._pause_unreachable(sub, error)
            await self.digests.finish_run(run.id, "failed", f"unreachable: {error}", at=self._stamp())
            return DeliveryOutcome("unreachable", period_key=run.period_key, detail=str(error))
        return DeliveryOutcome(
            outcome.status,
            sent=outcome.sent,
            period_key=run.period_key,
            in_doubt=len(lost),
            paper_ids=outcome.paper_ids,
        )

    def _opening(self, run: DigestRun, sub: Subscription) -> str:
        """What to do with the run's header (or "nothing new" line): ``send`` it (never attempted),
        ``resend`` it with its nonce (attempted without an answer, recently), or it is ``done``."""
        if run.header_message_id is not None:
            return "done"
        if run.header_sent_at is None:
            return "send"
        if self._nonce_trusted(run.header_sent_at):
            return "resend"
        log.warning(
            "run %s: the header may or may not have reached %s, too long ago to send again safely",
            run.id,
            recipient_of(sub),
        )
        return "done"

    def _nonce_trusted(self, attempted_at: str | None) -> bool:
        """Whether Discord still dedupes the nonce of a message first attempted at ``attempted_at``."""
        return attempted_at is not None and self.now() - _parse_stamp(attempted_at) <= NONCE_TRUST

    def _texts(self, sub: Subscription, n: int, *, manual: bool) -> DigestPlan:
        """Header and nothing-new texts of a digest of ``n`` planned papers (papers themselves not set)."""
        schedule = subscription_schedule(sub)
        now = self.now()
        return DigestPlan(
            recipient=recipient_of(sub),
            subscription=sub,
            papers=(),
            header=self._header(sub, schedule, now, n, manual=manual),
            nothing_text=self._nothing_text(sub, schedule, now),
        )

    async def _send_plan(
        self,
        run: DigestRun | None,
        plan: DigestPlan,
        papers: Sequence[PlannedPaper],
        sender: DigestSender,
        *,
        opening: str = "send",
        resend: Collection[int] = (),
    ) -> DeliveryOutcome:
        """Send the header and papers (or the nothing-new line); each paper reserved before it goes out.

        ``opening`` says what to do with the header (see :meth:`_opening`); ``resend`` are papers already
        reserved and attempted without an answer, sent again with their nonce. Raises
        RecipientUnreachableError untouched (the caller pauses); any other error leaves the run claimed
        so it can be resumed.
        """
        recipient = plan.recipient
        run_id = run.id if run else None
        if run is not None:
            nonce = functools.partial(message_nonce, recipient, run.subscription_id, run.period_key)
        else:
            nonce = functools.partial(
                message_nonce, recipient, None, f"{MANUAL_PREFIX}{self.now().isoformat()}"
            )
        self._check_stop(run)
        if not papers and opening != "done":
            await self._send_opening(
                run,
                opening,
                functools.partial(sender.send_nothing_today, plan.nothing_text, nonce=nonce("header")),
            )
            if run is not None:
                await self.digests.finish_run(run.id, "empty", at=self._stamp())
            return DeliveryOutcome("empty")
        if opening != "done":
            await self._send_opening(
                run, opening, functools.partial(sender.send_header, plan.header, nonce=nonce("header"))
            )
        sent: list[int] = []
        sub = plan.subscription
        for planned in papers:
            self._check_stop(run)
            paper_id = planned.paper.id
            again = paper_id in resend
            if not again and not await self.digests.reserve_item(
                run_id, paper_id, recipient, at=self._stamp()
            ):
                log.debug("paper %s already went to %s: skipped", paper_id, recipient)
                continue
            attempts = _Attempts(maybe_posted=again)
            send = functools.partial(
                sender.send_paper, planned.paper, planned.reason, nonce=nonce(f"paper:{paper_id}")
            )
            what = (
                f"paper {paper_id} of run {run_id}"
                if run_id is not None
                else "a paper of an on-demand digest"
            )
            try:
                message = await self._send_retrying(what, attempts, send)
            except SentThenDeletedError:
                log.info("%s went out and was deleted since: not sending it again", what)
                continue
            except Exception:
                # A send that failed with a known error did not post: the paper may go out later. One that
                # may have posted (or cancellation, a crash) stays reserved, to be sent again with its
                # nonce while Discord dedupes it.
                if not attempts.maybe_posted:
                    await self.digests.release_item(run_id, paper_id, recipient)
                raise
            await self.digests.record_message(
                run_id,
                paper_id,
                message_id=message.message_id,
                channel_id=message.channel_id,
                guild_id=message.guild_id,
                recipient_id=recipient.user_id,
                kind="feed" if sub is not None and sub.is_channel else "digest",
                at=self._stamp(),
            )
            sent.append(paper_id)
        if run is not None:
            await self.digests.finish_run(run.id, "sent", f"{len(sent)} papers", at=self._stamp())
        return DeliveryOutcome("sent", sent=len(sent), paper_ids=tuple(sent))

    async def _send_opening(
        self, run: DigestRun | None, opening: str, send: Callable[[], Awaitable[SentMessage]]
    ) -> None:
        """The header or "nothing new" line: reserved on the run, sent (again, while its outcome is
        unknown), confirmed with its message id."""
        if run is not None and opening == "send":
            await self.digests.reserve_header(run.id, at=self._stamp())
        what = f"the header of run {run.id}" if run is not None else "the header of an on-demand digest"
        attempts = _Attempts(maybe_posted=opening == "resend")
        try:
            message = await self._send_retrying(what, attempts, send)
        except SentThenDeletedError:
            log.info("%s went out and was deleted since: not sending it again", what)
            return
        except Exception:
            if run is not None and not attempts.maybe_posted:
                await self.digests.release_header(run.id)
            raise
        if run is not None:
            await self.digests.record_header(run.id, message.message_id, at=self._stamp())

    async def _send_retrying(
        self, what: str, attempts: _Attempts, send: Callable[[], Awaitable[SentMessage]]
    ) -> SentMessage:
        """``send``, and again (same nonce) while its outcome is unknown: Discord answers a repeat with
        the message it created, so the message goes out once. Raises the last error."""
        delays = list(self.resend_delays)
        while True:
            try:
                return await send()
            except SendOutcomeUnknownError as error:
                attempts.maybe_posted = True
                if not delays:
                    raise
                delay = delays.pop(0)
                log.warning("%s: %s; sending it again with the same nonce in %g s", what, error, delay)
                await self._sleep(delay)

    def _check_stop(self, run: DigestRun | None) -> None:
        if self._stopping:
            where = f"run {run.id}" if run is not None else "an on-demand digest"
            raise DigestInterruptedError(f"shutting down: {where} stops here and resumes at the next start")

    async def _pause_unreachable(self, sub: Subscription, error: RecipientUnreachableError) -> None:
        if sub.is_channel:
            reason = f"channel unreachable: {error}"
            notice = (
                f"The paper feed for <#{sub.channel_id}> is paused: I cannot post there any more (the channel "
                "is gone or I lost permission to send messages, embed links or add reactions). Fix that and "
                "run /paperadmin feed set for the channel to resume it."
            )
            notify = sub.created_by
        else:
            reason = f"DMs closed: {error}"
            notice = (
                "Your paper digest is paused: I could not send it because your direct messages are closed to "
                "me. To fix it, allow direct messages from this server's members (right-click the server → "
                "Privacy Settings → Direct Messages), then run /paper subscribe to resume it."
            )
            notify = sub.user_id
        await self.subscriptions.pause(sub.id, reason, notify_user=notify, notice=notice, at=self._stamp())
        log.warning("subscription %s paused (%s)", sub.id, reason)

    # ---- start-up: resume and catch up ---------------------------------------------------------

    async def runs_to_resume(self) -> list[DigestRun]:
        """Runs left ``claimed`` by a stopped process: those within the grace window are returned to be
        resumed; older ones are closed as failed (too late to be useful), with a log line."""
        now = self.now()
        resumable: list[DigestRun] = []
        for run in await self.digests.open_runs():
            if now - _parse_stamp(run.claimed_at) <= self.grace:
                resumable.append(run)
            else:
                log.warning(
                    "digest run %s (subscription %s, period %s) was interrupted too long ago: giving up",
                    run.id,
                    run.subscription_id,
                    run.period_key,
                )
                await self.digests.finish_run(
                    run.id, "failed", "interrupted; beyond the grace window", at=self._stamp()
                )
        return resumable

    async def missed_periods(self) -> list[tuple[Subscription, Period]]:
        """Periods that fell due while the bot was down and were never claimed.

        Within the grace window they are returned (deliver them once now); older ones are recorded as
        ``skipped`` and logged, so they are neither sent late nor reported again.
        """
        now = self.now()
        missed: list[tuple[Subscription, Period]] = []
        for sub in await self.subscriptions.active():
            schedule = subscription_schedule(sub)
            period = latest_due(schedule, now)
            if period.due_utc < _parse_stamp(sub.updated_at):
                continue  # due before the subscription was set up in this form
            if await self.digests.run_for(sub.id, period.key) is not None:
                continue
            if due_within(schedule, now, self.grace) is not None:
                missed.append((sub, period))
                continue
            late = now - period.due_utc
            if await self.digests.claim_run(
                sub.id, period.key, status="skipped", detail="missed; beyond grace", at=self._stamp()
            ):
                log.warning(
                    "subscription %s missed its %s digest (due %s, %.1f h ago > %.1f h grace): skipped",
                    sub.id,
                    period.key,
                    period.due_utc.isoformat(),
                    late.total_seconds() / 3600,
                    self.grace.total_seconds() / 3600,
                )
        return missed


def _fields(schedule: Schedule, topics: tuple[str, ...]) -> ScheduleFields:
    return ScheduleFields(
        topics=topics,
        time_local=schedule.time_local,
        timezone=schedule.timezone,
        frequency=schedule.frequency,
        weekday=schedule.weekday,
        count=schedule.count,
    )


__all__ = [
    "ChannelGoneError",
    "DMsClosedError",
    "DeliveryOutcome",
    "DigestInterruptedError",
    "DigestItem",
    "DigestPlan",
    "DigestSender",
    "DigestService",
    "Pick",
    "PlannedPaper",
    "RecipientUnreachableError",
    "SendOutcomeUnknownError",
    "SentMessage",
    "SentThenDeletedError",
    "message_nonce",
]
