"""The Discord side of digests: a DigestSender that posts by DM or to a channel, paced under Discord's limit.

Every paper goes out as its own message (so a reaction names exactly one paper) with 👍 👎 🔖 added;
the digest service records each message in ``posted_messages``. Each message carries the nonce the
service derived for it; discord.py (2.5+) sends it with ``enforce_nonce: true``, so Discord answers a
repeat with the message it already created. Discord errors that need a person to fix something
become the service's ``DMsClosedError`` / ``ChannelGoneError``; a send whose outcome is unknown (no
answer within :data:`SEND_TIMEOUT`, a dropped connection, a 5xx) becomes ``SendOutcomeUnknownError``
(the service sends it again with the same nonce); anything else propagates so the run stays open and
is retried. Every request waits on the shared :class:`RequestPacer`, so a 09:00 rush stays under
Discord's global limit. The bot, `/paper digest` and `paperbot digest --user` all send through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator

import aiohttp
import discord

from bot.services.digests.delivery import (
    ChannelGoneError,
    DMsClosedError,
    SendOutcomeUnknownError,
    SentMessage,
    SentThenDeletedError,
)
from bot.ui.embeds import REACTIONS
from bot.ui.paper_views import digest_message
from storage.models import Paper, Subscription

log = logging.getLogger(__name__)


class RequestPacer:
    """A token bucket shared by every digest delivery: at most ``rate`` requests a second on average.

    Discord allows a bot 50 requests a second globally; digests stay below that (default 40/s), so
    interactive commands keep headroom and a 09:00 rush queues here instead of collecting 429s.
    discord.py still honours per-route limits and any 429 on top of this.
    """

    def __init__(
        self, rate: float = 40.0, burst: int = 10, *, monotonic: Callable[[], float] = time.monotonic
    ):
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = rate
        self.burst = burst
        self._monotonic = monotonic
        self._tokens = float(burst)
        self._updated = monotonic()
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            while True:
                now = self._monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
                self._updated = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self.rate)


#: Discord error codes meaning "this recipient cannot get messages until someone changes something".
DM_CLOSED_CODES = frozenset({50007, 50001, 50013, 10003, 10013})
CHANNEL_GONE_CODES = frozenset({10003, 50001, 50013})
#: Discord's answer to a repeated nonce whose message was deleted since (the message went out).
UNKNOWN_MESSAGE = 10008
#: Longest wait for Discord to answer one message (aiohttp's own default is 5 minutes, longer than
#: Discord remembers a nonce); a repeat after this still falls inside the dedupe window.
SEND_TIMEOUT = 30.0


class DiscordDigestSender:
    """Posts one digest by DM (``user_id``) or in a channel (``channel_id``)."""

    def __init__(
        self,
        bot: discord.Client,
        *,
        user_id: int | None = None,
        channel_id: int | None = None,
        pacer: RequestPacer | None = None,
        send_timeout: float = SEND_TIMEOUT,
    ) -> None:
        if (user_id is None) == (channel_id is None):
            raise ValueError("a digest goes to a user or to a channel")
        self.bot = bot
        self.user_id = user_id
        self.channel_id = channel_id
        self.pacer = pacer
        self.send_timeout = send_timeout
        self._destination: discord.abc.Messageable | None = None

    @classmethod
    def for_subscription(
        cls, bot: discord.Client, sub: Subscription, pacer: RequestPacer | None = None
    ) -> DiscordDigestSender:
        if sub.is_channel:
            return cls(bot, channel_id=sub.channel_id, pacer=pacer)
        return cls(bot, user_id=sub.user_id, pacer=pacer)

    @property
    def is_dm(self) -> bool:
        return self.user_id is not None

    async def _pace(self) -> None:
        if self.pacer is not None:
            await self.pacer.wait()

    @contextlib.contextmanager
    def _unreachable_translated(self) -> Iterator[None]:
        """Discord errors meaning the recipient cannot get messages become DMsClosedError (a DM) or
        ChannelGoneError (a channel); other errors pass through."""
        try:
            yield
        except discord.HTTPException as error:
            detail = f"{error.text or error} (Discord {error.code})"
            if self.is_dm and error.code in DM_CLOSED_CODES:
                raise DMsClosedError(detail, code=error.code) from error
            if not self.is_dm and error.code in CHANNEL_GONE_CODES:
                raise ChannelGoneError(detail, code=error.code) from error
            raise

    async def destination(self) -> discord.abc.Messageable:
        if self._destination is not None:
            return self._destination
        with self._unreachable_translated():
            if self.user_id is not None:
                user = self.bot.get_user(self.user_id)
                if user is None:
                    await self._pace()
                    user = await self.bot.fetch_user(self.user_id)
                if user.dm_channel is None:
                    await self._pace()
                self._destination = user.dm_channel or await user.create_dm()
            else:
                assert self.channel_id is not None
                channel = self.bot.get_channel(self.channel_id)
                if channel is None:
                    await self._pace()
                    channel = await self.bot.fetch_channel(self.channel_id)
                if not isinstance(channel, discord.abc.Messageable):
                    raise ChannelGoneError(f"channel {self.channel_id} cannot hold messages", code=None)
                self._destination = channel
        return self._destination

    @staticmethod
    @contextlib.contextmanager
    def _unknown_outcome_translated() -> Iterator[None]:
        """Failures after which the message may exist become SendOutcomeUnknownError; a refusal that
        proves it was never created (or a connection that was never made) passes through."""
        try:
            yield
        except aiohttp.ClientConnectorError:
            raise  # never reached Discord
        except discord.DiscordServerError as error:
            raise SendOutcomeUnknownError(f"Discord answered {error.status}") from error
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise SendOutcomeUnknownError(f"no answer from Discord ({error!r})") from error

    async def _send(self, *, nonce: str, **kwargs: object) -> discord.Message:
        target = await self.destination()
        await self._pace()
        with self._unknown_outcome_translated(), self._unreachable_translated():
            try:
                async with asyncio.timeout(self.send_timeout):
                    return await target.send(nonce=nonce, **kwargs)  # type: ignore[call-overload, no-any-return]
            except discord.NotFound as error:
                if error.code == UNKNOWN_MESSAGE:
                    raise SentThenDeletedError(f"nonce {nonce}: {error.text}") from error
                raise

    async def send_header(self, text: str, *, nonce: str) -> SentMessage:
        return _sent(await self._send(content=text[:2000], nonce=nonce))

    async def send_nothing_today(self, text: str, *, nonce: str) -> SentMessage:
        return _sent(await self._send(content=text[:2000], nonce=nonce))

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        shown = digest_message(paper, reason)
        message = await self._send(embed=shown.embed, view=shown.view, nonce=nonce)
        for emoji in REACTIONS:
            await self._pace()
            try:
                await message.add_reaction(emoji)
            except discord.HTTPException as error:
                # The paper is out; a missing reaction is worth a log line, not a resend.
                log.warning(
                    "could not add %s to message %s in channel %s: %s",
                    emoji,
                    message.id,
                    message.channel.id,
                    error,
                )
                if error.code in CHANNEL_GONE_CODES:
                    break
        return _sent(message)


def _sent(message: discord.Message) -> SentMessage:
    guild_id = message.guild.id if message.guild is not None else None
    return SentMessage(message_id=message.id, channel_id=message.channel.id, guild_id=guild_id)
