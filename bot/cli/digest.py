"""`paperbot digest --user ID [--dry-run]`: one user's digest from the terminal, sent or shown.

Sending goes through the bot's own pipeline — `DigestDelivery.deliver_now` with the
Discord sending adapter `/paper digest` uses (built by `bot.runtime.discord_senders`) — so the messages, their 👍 👎 🔖, the records of what
was sent (a paper never goes to the same person twice) and the DM index that lets the running bot
learn from reactions on them are exactly those of `/paper digest`. Sending needs only Discord's REST
API, so this logs in with the bot token without opening a gateway connection and can run beside the
running bot: the database decides what is sent, whichever process sends it.

The dry run builds the digest exactly as the bot would (same subscription, topics, count, exclusions
and reasons) and prints it; it sends nothing and records nothing (no claimed period, no "shown" or
"sent" marks), so it can be run any number of times.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import AsyncIterator
from typing import TextIO

import discord

from bot.app import point_discord_at
from bot.discord_limits import RequestPacer, global_limit_trace
from bot.runtime import discord_senders, open_services
from bot.services.digests import Digests
from bot.services.digests.delivery import DeliveryOutcome, RecipientUnreachableError
from bot.services.digests.planning import DigestPlan
from bot.services.digests.subscriptions import subscription_schedule
from bot.services.digests.timing import format_local
from bot.services.papers.gist import gist
from bot.settings import Settings
from bot.ui.format import byline, counted, display_title, paper_link
from storage.repositories.users import UserRepository
from storage.store import open_database

#: Exit statuses of `paperbot digest --user ID` (README.md lists them).
SENT = 0
NOT_SENT = 1
USAGE = 2


# ---- sending -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def discord_rest_client(settings: Settings, pacer: RequestPacer) -> AsyncIterator[discord.Client]:
    """A discord.py client logged in over REST only (no gateway): enough to open a DM and post in it.
    A global 429 it gets holds `pacer`."""
    token = settings.require_token()
    point_discord_at(settings)
    intents = discord.Intents.none()
    intents.guilds = True  # never connected: only so discord.py does not warn that its cache is off
    client = discord.Client(
        intents=intents, allowed_mentions=discord.AllowedMentions.none(), http_trace=global_limit_trace(pacer)
    )
    try:
        await client.login(token)
        yield client
    finally:
        await client.close()


async def send_digest_now(
    settings: Settings, *, user_id: int, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Send ``user_id`` their digest now; print what happened; return the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    if user_id <= 0:
        print("paperbot digest: --user must be a Discord user id (a positive number)", file=err)
        return USAGE
    settings.require_token()  # before touching the database: a missing token changes nothing
    if not await _known(settings, user_id, err):
        return NOT_SENT
    pacer = RequestPacer()
    async with open_services(settings) as services, discord_rest_client(settings, pacer) as client:
        sender = discord_senders(client, services, pacer).to_person(user_id)
        try:
            outcome = await services.digests.delivery.deliver_now(user_id, sender)
        except RecipientUnreachableError as error:
            outcome = DeliveryOutcome("unreachable", detail=str(error))
    return _report(user_id, outcome, out, err)


async def _known(settings: Settings, user_id: int, err: TextIO) -> bool:
    """Whether the store knows ``user_id`` (they used paperbot: a subscription, topics, reactions…); if
    not, say so: a digest for someone it knows nothing about is a mistyped id far more often."""
    async with await open_database(settings.store) as db:
        if await UserRepository(db).get(user_id) is not None:
            return True
    print(
        f"paperbot digest: user {user_id} is not known to paperbot (no subscription, topics, reactions or "
        "anything else stored): check the id; nothing was sent",
        file=err,
    )
    return False


def _report(user_id: int, outcome: DeliveryOutcome, out: TextIO, err: TextIO) -> int:
    if outcome.status == "sent":
        papers = counted(outcome.sent, "paper", "papers")
        print(f"sent user {user_id} their digest by DM: {papers}", file=out)
        return SENT
    if outcome.status == "empty":
        print(f"sent user {user_id} the 'nothing new right now' message by DM (no paper was new)", file=out)
        return SENT
    if outcome.status == "unreachable":
        detail = f" ({outcome.detail})" if outcome.detail else ""
        print(
            f"paperbot digest: user {user_id} does not accept DMs from the bot{detail}; nothing was sent. "
            "Their scheduled digest, if any, is paused until they run /paper subscribe again.",
            file=err,
        )
        return NOT_SENT
    print(f"paperbot digest: another digest of user {user_id} is going out right now; nothing sent", file=err)
    return NOT_SENT


# ---- the dry run ---------------------------------------------------------------------------------


async def run_digest_dry_run(
    settings: Settings, *, user_id: int, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if user_id <= 0:
        print("paperbot digest: --user must be a Discord user id (a positive number)", file=err)
        return USAGE
    if not await _known(settings, user_id, err):
        return NOT_SENT
    async with open_services(settings) as services:
        text = await render_dry_run(services.digests, user_id)
    print(text, file=out)
    return SENT


async def render_dry_run(digests: Digests, user_id: int) -> str:
    """The digest ``user_id`` would get now, as plain text (nothing is sent or recorded)."""
    sub = await digests.subscriptions.for_user(user_id)
    lines = [f"Digest for user {user_id} (dry run: nothing sent, nothing recorded)"]
    if sub is None:
        lines.append("Subscription: none (a /paper digest now would use the user's interests and reactions)")
    else:
        schedule = subscription_schedule(sub)
        topics = ", ".join(sub.topics) if sub.topics else "the user's interests and reactions"
        state = "" if sub.active else f" — PAUSED: {sub.paused_reason or 'no reason recorded'}"
        lines.append(
            f"Subscription: {schedule.describe()}, {counted(sub.count, 'paper', 'papers')} on {topics}{state}"
        )
        if sub.active:
            upcoming = digests.subscriptions.next_delivery(sub)
            arrives = await digests.subscriptions.arrival(sub)
            lines.append(f"Next delivery: {format_local(arrives.at, sub.timezone)} (period {upcoming.key})")
    plan = await digests.planner.build(sub, user_id=user_id)
    lines.append("")
    lines.extend(_plan_lines(plan))
    return "\n".join(lines)


def _plain(text: str) -> str:
    """Discord markdown to terminal text."""
    return re.sub(r"[*_`]", "", text)


def _plan_lines(plan: DigestPlan) -> list[str]:
    if not plan.papers:
        return [_plain(plan.nothing_text)]
    lines = [_plain(plan.header), ""]
    for number, planned in enumerate(plan.papers, 1):
        paper = planned.paper
        lines.append(f"{number:2d}. {display_title(paper)}  [paper #{paper.id}]")
        if about := byline(paper):
            lines.append(f"    {about}")
        lines.append(f"    why: {planned.reason}")
        if summary := gist(paper.abstract).text:
            lines.append(f"    gist: {summary}")
        if link := paper_link(paper):
            lines.append(f"    {link}")
    return lines
