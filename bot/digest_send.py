"""`paperbot digest --user ID`: send one user's digest by DM now, from the terminal.

It goes through the bot's own pipeline — `DigestService.deliver_now` with the `DiscordDigestSender`
that `/paper digest` uses — so the messages, their 👍 👎 🔖, the records of what was sent (a paper never
goes to the same person twice) and the DM index that lets the running bot learn from reactions on them
are exactly those of `/paper digest`. Sending needs only Discord's REST API, so this logs in with the bot
token without opening a gateway connection and can run beside the running bot: the database decides
what is sent, whichever process sends it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TextIO

import discord

from bot.app import point_discord_at
from bot.exts._digests import DiscordDigestSender
from bot.runtime import open_services
from bot.scheduling import RequestPacer
from bot.services.digest import DeliveryOutcome, RecipientUnreachableError
from bot.settings import Settings

#: Exit statuses of `paperbot digest --user ID` (README.md lists them).
SENT = 0
NOT_SENT = 1
USAGE = 2


@contextlib.asynccontextmanager
async def discord_rest_client(settings: Settings) -> AsyncIterator[discord.Client]:
    """A discord.py client logged in over REST only (no gateway): enough to open a DM and post in it."""
    token = settings.require_token()
    point_discord_at(settings)
    intents = discord.Intents.none()
    intents.guilds = True  # never connected: only so discord.py does not warn that its cache is off
    client = discord.Client(intents=intents, allowed_mentions=discord.AllowedMentions.none())
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
    async with open_services(settings) as services, discord_rest_client(settings) as client:
        sender = DiscordDigestSender(client, user_id=user_id, pacer=RequestPacer())
        try:
            outcome = await services.digest.deliver_now(user_id, sender)
        except RecipientUnreachableError as error:
            outcome = DeliveryOutcome("unreachable", detail=str(error))
    return _report(user_id, outcome, out, err)


def _report(user_id: int, outcome: DeliveryOutcome, out: TextIO, err: TextIO) -> int:
    if outcome.status == "sent":
        papers = f"{outcome.sent} paper{'s' if outcome.sent != 1 else ''}"
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
