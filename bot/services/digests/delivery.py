"""Delivering a digest exactly once, without knowing about Discord.

Delivery goes through a :class:`DigestSender` (the Discord one is ``bot.digest_sender``; tests use a
fake), so every rule here is testable without a gateway:

* a period is claimed in the database before anything is sent (a double fire or a restart finds it
  taken and sends nothing);
* a paper is never sent twice to the same person or channel, whether by a scheduled digest or
  ``/paper digest`` (``digest_sent``); the planner leaves those papers out;
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
  (:data:`NONCE_TRUST`); older ones are never sent again (never twice beats once more), but looked for
  among the recipient's latest messages and recorded when found, so reactions on them count;
* a paper's message is recorded as soon as it is out, before anything else is done to it (a
  channel's 👍 👎 🔖 reactions): whatever happens to those, the paper counts as sent;
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
from datetime import UTC, timedelta
from typing import Protocol

from bot.clock import Clock
from bot.services.digests.leases import Leases
from bot.services.digests.planning import DigestPlanner, DigestTexts, PaperLookup, PlannedPaper
from bot.services.digests.subscriptions import (
    SubscriptionService,
    parse_stamp,
    recipient_of,
    subscription_schedule,
)
from bot.services.digests.timing import Period, latest_due
from storage.models import Paper, Subscription
from storage.repositories.digests import ClaimLostError, DigestItem, DigestRepository, DigestRun, Recipient

log = logging.getLogger(__name__)

MANUAL_PREFIX = "manual:"
#: Discord's Create Message takes a nonce of up to 25 characters.
NONCE_MAX = 25
#: How long after a message was attempted its nonce is trusted to dedupe a repeat. Discord remembers a
#: nonce "in the past few minutes" without saying how many; the digest counts on two.
NONCE_TRUST = timedelta(minutes=2)
#: Pauses before each repeat of a send whose outcome is unknown (same nonce); ~20 s in all, well inside
#: NONCE_TRUST even with discord.py's own retries of a 5xx.
RESEND_DELAYS: tuple[float, ...] = (1.0, 4.0, 15.0)


# ---- what delivery needs from a delivery channel ------------------------------------------------


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
    """Delivery stopped between two papers: this process stopped running the scheduled digests or is
    shutting down (the run is let go of and the process running the digests resumes it with the papers
    not yet sent), or another process took the run over (it sends the rest). ``resumes`` is False for an
    on-demand digest without a subscription: it has no run, so nothing sends the rest."""

    def __init__(self, detail: str, *, resumes: bool = True) -> None:
        super().__init__(detail)
        self.resumes = resumes


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
        """One message for one paper."""
        ...

    async def finish_paper(self, message: SentMessage) -> None:
        """What goes on a paper's message once it is recorded (a channel's 👍 👎 🔖 reactions). The paper
        is out: a failure here is the sender's to log, never raised."""
        ...

    async def find_paper(self, paper_id: int) -> SentMessage | None:
        """The message this sender posted for the paper, if the recipient's latest messages show it."""
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


class DigestDelivery:
    def __init__(
        self,
        digests: DigestRepository,
        *,
        subscriptions: SubscriptionService,
        planner: DigestPlanner,
        papers: PaperLookup,
        clock: Clock,
        leases: Leases,
        resend_delays: Sequence[float] = RESEND_DELAYS,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.digests = digests
        self.subscriptions = subscriptions
        self.planner = planner
        self.papers = papers
        self.clock = clock
        self.leases = leases
        self.resend_delays = tuple(resend_delays)
        self._sleep = sleep
        self._stopping = False  # the scheduled digests stop here (another process leads, or a stop)

    def request_stop(self) -> None:
        """This process stops running the scheduled digests (another one leads now, or it stops): they
        stop at the next paper boundary, for the process that runs them next to resume. A person's
        ``/paper digest`` goes on: it is answered by whichever process got the command."""
        self._stopping = True

    def resume_work(self) -> None:
        """Scheduled deliveries may go ahead again (the process runs the digests again)."""
        self._stopping = False

    def _background_stopping(self) -> bool:
        return self._stopping

    def _stamp(self) -> str:
        """Now as stored in the database (ISO-8601 UTC, seconds), from the injected clock."""
        return self.clock().astimezone(UTC).isoformat(timespec="seconds")

    async def deliver_period(
        self, subscription_id: int, sender: DigestSender, *, period: Period | None = None
    ) -> DeliveryOutcome:
        """Deliver a scheduled period (default: the most recent one due) unless it was claimed before."""
        sub = await self.subscriptions.get(subscription_id)
        if sub is None or not sub.active:
            return DeliveryOutcome("inactive", detail="subscription paused or removed")
        if period is None:
            period = latest_due(subscription_schedule(sub), self.clock())
        run = await self._claim(sub.id, period.key)
        if run is None:
            log.info("subscription %s period %s already claimed: not sending again", sub.id, period.key)
            return DeliveryOutcome("already", period_key=period.key)
        return await self._deliver(run, sub, sender)

    async def deliver_now(
        self, user_id: int, sender: DigestSender, *, stopping: Callable[[], bool] = lambda: False
    ) -> DeliveryOutcome:
        """``/paper digest``: a digest right now through the same pipeline (not a scheduled period).

        With a subscription it is a run of its own (``manual:<time>``), so it resumes after a crash and
        never repeats papers; without one it uses the user's profile and the default count. Only
        ``stopping`` (the process shutting down) stops it between papers: not running the scheduled
        digests does not.
        """
        began = self.clock().astimezone(UTC).isoformat(timespec="microseconds")
        sub = await self.subscriptions.for_user(user_id)
        if sub is None:
            plan = await self.planner.build(None, user_id=user_id, manual=True)
            texts = DigestTexts(plan.header, plan.nothing_text)
            return await self._send_plan(
                None, plan.recipient, None, texts, plan.papers, sender, stopping=stopping, since=began
            )
        now = self.clock()
        run = None
        for attempt in range(5):
            key = f"{MANUAL_PREFIX}{(now + timedelta(microseconds=attempt)).isoformat()}"
            run = await self._claim(sub.id, key)
            if run is not None:
                break
        if run is None:  # pragma: no cover - five claims in the same microsecond
            return DeliveryOutcome("already", detail="another digest is being sent right now")
        return await self._deliver(run, sub, sender, manual=True, stopping=stopping)

    async def resume(self, run: DigestRun, sender: DigestSender) -> DeliveryOutcome:
        """Finish a run that was claimed but not finished (the process stopped mid-digest)."""
        sub = await self.subscriptions.get(run.subscription_id)
        if sub is None or not sub.active:
            await self.digests.finish_run(
                run.id, "skipped", "subscription paused or removed before resume", at=self._stamp()
            )
            return DeliveryOutcome("inactive", period_key=run.period_key)
        if not await self.leases.take_over(run.id):
            return DeliveryOutcome("already", period_key=run.period_key)  # finished, or another has it
        log.info("resuming digest run %s (subscription %s, period %s)", run.id, sub.id, run.period_key)
        return await self._deliver(run, sub, sender, manual=run.period_key.startswith(MANUAL_PREFIX))

    async def _claim(self, subscription_id: int, period_key: str) -> DigestRun | None:
        return await self.digests.claim_run(
            subscription_id,
            period_key,
            at=self._stamp(),
            owner=self.leases.owner,
            lease_until=self.leases.until(),
        )

    async def _deliver(
        self,
        run: DigestRun,
        sub: Subscription,
        sender: DigestSender,
        *,
        manual: bool = False,
        stopping: Callable[[], bool] | None = None,
    ) -> DeliveryOutcome:
        """Deliver a run this process holds, renewing its lease meanwhile. A clean stop lets go of the
        run (resumed at once by the process running the digests); another process having taken it over
        stops this one. ``stopping``: someone's ``/paper digest``, which stops when that says so (the
        scheduled digests stop when this process stops running them); it is let go of when it fails
        too: nothing here retries it, the process running the digests does."""
        on_demand = stopping is not None
        async with self.leases.holding(run.id):
            try:
                return await self._deliver_held(
                    run, sub, sender, manual=manual, stopping=stopping or self._background_stopping
                )
            except ClaimLostError as lost:
                raise DigestInterruptedError(f"another process took over: {lost}") from lost
            except Exception as error:
                if (
                    on_demand or isinstance(error, DigestInterruptedError)
                ) and run.id not in self.leases.lost:
                    await self.leases.release(run.id)
                raise

    async def _deliver_held(
        self,
        run: DigestRun,
        sub: Subscription,
        sender: DigestSender,
        *,
        manual: bool,
        stopping: Callable[[], bool],
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
            picks = await self.planner.choose(sub)
            items = await self.digests.plan_items(
                run.id,
                [(pick.paper_id, pick.reason) for pick in picks],
                brought={pick.paper_id: pick.interest_id for pick in picks},
            )
        named = await self.planner.interest_names(sub, [item.interest_id for item in items])
        texts = self.planner.texts(sub, len(items), manual=manual, interests=named)
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
            lost = await self._look_for(run, sub, lost, sender)
        pending = [item for item in items if item.sent_at is None or item.paper_id in resend]
        if items and not pending:
            await self.digests.finish_run(run.id, "sent", "nothing left to send", at=self._stamp())
            return DeliveryOutcome("sent", period_key=run.period_key, in_doubt=len(lost))
        found = await self.papers.get_many([item.paper_id for item in pending]) if pending else {}
        to_send = tuple(
            PlannedPaper(found[item.paper_id], item.reason, 0.0) for item in pending if item.paper_id in found
        )
        try:
            outcome = await self._send_plan(
                run,
                recipient_of(sub),
                sub,
                texts,
                to_send,
                sender,
                opening=opening,
                resend=resend,
                stopping=stopping,
            )
        except RecipientUnreachableError as error:
            await self.subscriptions.pause_unreachable(sub, error)
            await self.digests.finish_run(run.id, "failed", f"unreachable: {error}", at=self._stamp())
            return DeliveryOutcome("unreachable", period_key=run.period_key, detail=str(error))
        return DeliveryOutcome(
            outcome.status,
            sent=outcome.sent,
            period_key=run.period_key,
            in_doubt=len(lost),
            paper_ids=outcome.paper_ids,
        )

    async def _look_for(
        self, run: DigestRun, sub: Subscription, lost: list[DigestItem], sender: DigestSender
    ) -> list[DigestItem]:
        """Papers attempted without an answer too long ago to send again: those found among the
        recipient's latest messages are recorded (a reaction on them counts); returns the others, never
        sent again."""
        missing = []
        for item in lost:
            try:
                message = await sender.find_paper(item.paper_id)
            except Exception:  # Discord away or the channel gone: the sends that follow will say
                log.warning("run %s: could not look for paper %s", run.id, item.paper_id, exc_info=True)
                message = None
            if message is None:
                missing.append(item)
                continue
            log.info(
                "run %s: paper %s went out without an answer; found it, recording it", run.id, item.paper_id
            )
            await self._record(run.id, item.paper_id, message, recipient_of(sub), sub)
        if missing:
            log.warning(
                "run %s: %d paper(s) may or may not have reached %s, too long ago to send again safely and "
                "not among its latest messages; not sending them again",
                run.id,
                len(missing),
                recipient_of(sub),
            )
        return missing

    async def _record(
        self,
        run_id: int | None,
        paper_id: int,
        message: SentMessage,
        recipient: Recipient,
        sub: Subscription | None,
        *,
        since: str | None = None,
    ) -> None:
        await self.digests.record_message(
            run_id,
            paper_id,
            message_id=message.message_id,
            channel_id=message.channel_id,
            guild_id=message.guild_id,
            recipient_id=recipient.user_id,
            kind="feed" if sub is not None and sub.is_channel else "digest",
            at=self._stamp(),
            since=since,
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
        return attempted_at is not None and self.clock() - parse_stamp(attempted_at) <= NONCE_TRUST

    async def _send_plan(
        self,
        run: DigestRun | None,
        recipient: Recipient,
        sub: Subscription | None,
        texts: DigestTexts,
        papers: Sequence[PlannedPaper],
        sender: DigestSender,
        *,
        opening: str = "send",
        resend: Collection[int] = (),
        stopping: Callable[[], bool] | None = None,
        since: str | None = None,
    ) -> DeliveryOutcome:
        """Send the header and papers (or the nothing-new line); each paper reserved before it goes out.

        ``opening`` says what to do with the header (see :meth:`_opening`); ``resend`` are papers already
        reserved and attempted without an answer, sent again with their nonce; ``stopping`` says when to
        stop between papers (default: when this process stops running the scheduled digests). Raises
        RecipientUnreachableError untouched (the caller pauses); any other error leaves the run claimed
        so it can be resumed. ``since``: when the digest began (default: now; a run's rows go with a
        forgotten person's subscription): the store refuses the rest of it for a person who asked to
        be forgotten since.
        """
        since = since or self.clock().astimezone(UTC).isoformat(timespec="microseconds")
        run_id = run.id if run else None
        if run is not None:
            nonce = functools.partial(message_nonce, recipient, run.subscription_id, run.period_key)
        else:
            nonce = functools.partial(
                message_nonce, recipient, None, f"{MANUAL_PREFIX}{self.clock().isoformat()}"
            )
        stopping = stopping or self._background_stopping
        self._check_stop(run, stopping)
        if not papers and opening != "done":
            await self._send_opening(
                run,
                opening,
                functools.partial(sender.send_nothing_today, texts.nothing_text, nonce=nonce("header")),
            )
            if run is not None:
                await self.digests.finish_run(run.id, "empty", at=self._stamp())
            return DeliveryOutcome("empty")
        if opening != "done":
            await self._send_opening(
                run, opening, functools.partial(sender.send_header, texts.header, nonce=nonce("header"))
            )
        sent: list[int] = []
        for planned in papers:
            self._check_stop(run, stopping)
            paper_id = planned.paper.id
            again = paper_id in resend
            if not again and not await self.digests.reserve_item(
                run_id,
                paper_id,
                recipient,
                at=self._stamp(),
                owner=self.leases.owner,
                since=since,
                interest_id=planned.interest_id,
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
            await self._record(run_id, paper_id, message, recipient, sub, since=since)
            sent.append(paper_id)
            try:
                await sender.finish_paper(message)
            except Exception:  # the paper is out and recorded: its reactions are not worth failing for
                log.warning("%s: could not finish its message", what, exc_info=True)
        if run is not None:
            await self.digests.finish_run(run.id, "sent", f"{len(sent)} papers", at=self._stamp())
        return DeliveryOutcome("sent", sent=len(sent), paper_ids=tuple(sent))

    async def _send_opening(
        self, run: DigestRun | None, opening: str, send: Callable[[], Awaitable[SentMessage]]
    ) -> None:
        """The header or "nothing new" line: reserved on the run, sent (again, while its outcome is
        unknown), confirmed with its message id."""
        if run is not None and opening == "send":
            await self.digests.reserve_header(run.id, at=self._stamp(), owner=self.leases.owner)
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

    def _check_stop(self, run: DigestRun | None, stopping: Callable[[], bool]) -> None:
        if run is not None and run.id in self.leases.lost:
            raise DigestInterruptedError(f"another process took over run {run.id}: it sends the rest")
        if stopping():
            if run is None:
                raise DigestInterruptedError("stopping: an on-demand digest stops here", resumes=False)
            raise DigestInterruptedError(
                f"stopping: run {run.id} stops here, for the process running the digests to resume"
            )
