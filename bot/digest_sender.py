"""The Discord side of digests: a DigestSender that posts by DM or to a channel, within Discord's limits.

Every paper goes out as its own message, so a rating names exactly one paper; the digest service
records each message in ``posted_messages``. In a DM the paper's own 👍 👎 🔖 are buttons sent with
the message — one call per paper — and the message goes straight to the person's stored DM channel
(``bot.dm_channels``): no user fetch, no DM open. In a channel the bot adds 👍 👎 🔖 as reactions,
which everyone there sees, spaced by the channel's reaction bucket — once the service recorded the
message (:meth:`DiscordDigestSender.finish_paper`), so whatever happens to the reactions, the paper is
out and a reaction on it counts. A reaction whose answer was lost is added again (adding it twice is
harmless); one Discord refuses is left off.

Each message carries the nonce the service derived for it; discord.py (2.5+) sends it with
``enforce_nonce: true``, so Discord answers a repeat with the message it already created. Discord
errors that need a person to fix something become the service's ``DMsClosedError`` /
``ChannelGoneError``; a send whose outcome is unknown (no answer within :data:`SEND_TIMEOUT`, a
dropped connection, a 5xx) becomes ``SendOutcomeUnknownError`` (the service sends it again with the
same nonce); anything else propagates so the run stays open and is retried. A paper that went out
without an answer too long ago for its nonce to dedupe is looked for among the channel's latest
messages (:meth:`DiscordDigestSender.find_paper`), to be recorded, never posted twice. Every message
waits for room in its channel's message bucket (:class:`~bot.discord_limits.ChannelWindow`), then on
the shared :class:`~bot.discord_limits.RequestPacer`, in its recipient's turn (a feed's server, a
person). The bot, `/paper digest` and `paperbot digest --user` all send through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

import aiohttp
import discord

from bot.discord_limits import ChannelSpacer, ChannelWindow, RequestPacer
from bot.dm_channels import DMChannels
from bot.services.admin.permission_notices import PermissionNotices
from bot.services.digests.delivery import (
    ChannelGoneError,
    DMsClosedError,
    SendOutcomeUnknownError,
    SentMessage,
    SentThenDeletedError,
)
from bot.services.digests.fairness import SHARED_LANE, lane_of
from bot.ui.embeds import CONTENT_LIMIT
from bot.ui.format import trim_markdown
from bot.ui.paper_views import digest_message
from bot.ui.views import paper_buttons
from storage.db import utcnow_precise
from storage.models import REACTIONS, Paper, Subscription

log = logging.getLogger(__name__)

#: Discord error codes meaning "this recipient cannot get messages until someone changes something".
DM_CLOSED_CODES = frozenset({50007, 50001, 50013, 10003, 10013})
#: ... and for a channel feed (50083: a thread locked by a moderator takes no post)
CHANNEL_GONE_CODES = frozenset({10003, 50001, 50013, 50083})
UNKNOWN_CHANNEL = 10003
#: Discord's answer to a repeated nonce whose message was deleted since (the message went out).
UNKNOWN_MESSAGE = 10008
#: Longest wait for Discord to answer one message (aiohttp's own default is 5 minutes, longer than
#: Discord remembers a nonce); a repeat after this still falls inside the dedupe window.
SEND_TIMEOUT = 30.0
#: Tries at one reaction whose answer was lost (the connection dropped, a timeout, a 5xx).
REACTION_ATTEMPTS = 3
#: How many of a channel's latest messages are searched for a paper posted without an answer.
HISTORY_LOOKBACK = 100


@dataclass(frozen=True)
class Sending:
    """What every digest and feed post of one client shares: the DM channels, the pacer, the reaction
    spacing and the message window per channel, and the notice an admin gets (once) where the bot may
    not add reactions."""

    dm_channels: DMChannels
    pacer: RequestPacer
    reactions: ChannelSpacer
    notices: PermissionNotices
    messages: ChannelWindow = field(default_factory=ChannelWindow)


@dataclass(frozen=True)
class DiscordSenders:
    """The Discord sending adapter of one client (built by the composition root, `bot.runtime`): a
    sender for a subscription (what the digest jobs call) or for one person (`/paper digest`,
    `paperbot digest --user`), all sharing `sending`."""

    client: discord.Client
    sending: Sending

    def __call__(self, sub: Subscription) -> DiscordDigestSender:
        return DiscordDigestSender.for_subscription(self.client, self.sending, sub)

    def to_person(self, user_id: int) -> DiscordDigestSender:
        return DiscordDigestSender(self.client, self.sending, user_id=user_id)


class DiscordDigestSender:
    """Posts one digest by DM (``user_id``) or in a channel (``channel_id``)."""

    def __init__(
        self,
        bot: discord.Client,
        sending: Sending,
        *,
        user_id: int | None = None,
        channel_id: int | None = None,
        admin_id: int | None = None,
        send_timeout: float = SEND_TIMEOUT,
        lane: Hashable | None = None,
    ) -> None:
        if (user_id is None) == (channel_id is None):
            raise ValueError("a digest goes to a user or to a channel")
        #: whose turn its requests take at the pacer (a feed's server, a person)
        self.lane = lane or (("person", user_id) if user_id is not None else ("channel", channel_id))
        self.bot = bot
        self.sending = sending
        self.user_id = user_id
        self.channel_id = channel_id
        #: who hears of a missing permission in the channel (the feed's creator; else the server's owner)
        self.admin_id = admin_id
        self.send_timeout = send_timeout
        #: when this digest began: nothing about a person who asked to be forgotten since is stored
        self.started = utcnow_precise()
        self._destination: discord.abc.Messageable | None = None
        self._may_react: bool | None = None
        self._to_rate: dict[int, discord.Message] = {}  # posted, their reactions not added yet

    @classmethod
    def for_subscription(
        cls, bot: discord.Client, sending: Sending, sub: Subscription
    ) -> DiscordDigestSender:
        if sub.is_channel:
            return cls(bot, sending, channel_id=sub.channel_id, admin_id=sub.created_by, lane=lane_of(sub))
        return cls(bot, sending, user_id=sub.user_id, lane=lane_of(sub))

    @property
    def is_dm(self) -> bool:
        return self.user_id is not None

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
                dm = self.sending.dm_channels
                self._destination = dm.messageable(await dm.channel_id(self.user_id, since=self.started))
            else:
                assert self.channel_id is not None
                channel = self.bot.get_channel(self.channel_id)
                if channel is None:
                    await self.sending.pacer.wait(self.lane)
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

    async def _send(
        self, *, nonce: str, view: discord.ui.View | None = None, **kwargs: object
    ) -> discord.Message:
        with self._unknown_outcome_translated(), self._unreachable_translated():
            try:
                try:
                    return await self._post(nonce, view, kwargs)
                except discord.NotFound as error:
                    if error.code != UNKNOWN_CHANNEL or self.user_id is None:
                        raise
                    # The stored DM channel is unknown to Discord now: open the DM afresh, once.
                    await self.sending.dm_channels.forget(self.user_id)
                    self._destination = None
                    return await self._post(nonce, view, kwargs)
            except discord.NotFound as error:
                if error.code == UNKNOWN_MESSAGE:
                    raise SentThenDeletedError(f"nonce {nonce}: {error.text}") from error
                raise

    async def _post(
        self, nonce: str, view: discord.ui.View | None, fields: dict[str, object]
    ) -> discord.Message:
        target = await self.destination()
        # The channel's message bucket first, then the pacer: the request goes out when the pacer says.
        async with self.sending.messages.slot(target.id):  # type: ignore[attr-defined]
            await self.sending.pacer.wait(self.lane)
            async with asyncio.timeout(self.send_timeout):
                message: discord.Message = await target.send(nonce=nonce, view=view, **fields)  # type: ignore[call-overload]
        if view is not None:
            view.stop()  # its buttons are dynamic items: answered without keeping the view in memory
        return message

    async def send_header(self, text: str, *, nonce: str) -> SentMessage:
        return _sent(await self._send(content=trim_markdown(text, CONTENT_LIMIT), nonce=nonce))

    async def send_nothing_today(self, text: str, *, nonce: str) -> SentMessage:
        return _sent(await self._send(content=trim_markdown(text, CONTENT_LIMIT), nonce=nonce))

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        shown = digest_message(paper, reason)
        if self.is_dm or not await self.may_react():
            view = paper_buttons(paper.id, shown.view)
            return _sent(await self._send(embed=shown.embed, view=view, nonce=nonce))
        message = await self._send(embed=shown.embed, view=shown.view, nonce=nonce)
        self._to_rate[message.id] = message
        return _sent(message)

    async def finish_paper(self, sent: SentMessage) -> None:
        """The paper's message is recorded: in a channel, add its 👍 👎 🔖 now (never raises for them)."""
        message = self._to_rate.pop(sent.message_id, None)
        if message is not None:
            await add_ratings(self.bot, message, self.sending, paced=True, lane=self.lane)

    async def find_paper(self, paper_id: int) -> SentMessage | None:
        """The message this bot posted for the paper (not an answer to a command), if it is among the
        channel's latest :data:`HISTORY_LOOKBACK` messages: a post whose answer never came, looked for
        once Discord may have forgotten its nonce."""
        target = await self.destination()
        assert self.bot.user is not None
        wanted = f"pb:more:{paper_id}"
        await self.sending.pacer.wait(self.lane)
        with self._unreachable_translated():
            async for message in target.history(limit=HISTORY_LOOKBACK):
                mine = message.author.id == self.bot.user.id and message.interaction_metadata is None
                if mine and wanted in _custom_ids(message):
                    return _sent(message)
        return None

    async def may_react(self) -> bool:
        """Whether the bot may add reactions in the channel (as far as its cache knows). The first time
        it finds it may not, an admin is told once (``bot.services.admin.permission_notices``)."""
        if self._may_react is None:
            channel = await self.destination()
            guild = getattr(channel, "guild", None)
            me = guild.me if guild is not None else None
            self._may_react = me is None or channel.permissions_for(me).add_reactions  # type: ignore[attr-defined]
            if not self._may_react and guild is not None:
                admin = self.admin_id or guild.owner_id
                await self.sending.notices.reactions_missing(channel.id, leave_for=admin, since=self.started)  # type: ignore[attr-defined]
        return self._may_react


async def add_ratings(
    client: discord.Client,
    message: discord.Message,
    sending: Sending,
    *,
    paced: bool,
    lane: Hashable = SHARED_LANE,
) -> None:
    """👍 👎 🔖 on a paper the bot posted in a channel, one per reaction bucket of the channel (and, when
    ``paced``, under the bulk pacer in ``lane``'s turn). The paper is out already, so nothing here
    raises: a reaction whose answer was lost is added again (Discord keeps one per person and emoji),
    one Discord refuses is logged and left off, and a shutdown stops the rest quietly."""
    for emoji in REACTIONS:
        for attempt in range(1, REACTION_ATTEMPTS + 1):
            await sending.reactions.wait(message.channel.id)
            if paced:
                await sending.pacer.wait(lane)
            if client.is_closed():
                return
            try:
                async with asyncio.timeout(SEND_TIMEOUT):
                    await message.add_reaction(emoji)
                break
            except (discord.DiscordServerError, TimeoutError, aiohttp.ClientError, OSError) as error:
                if attempt == REACTION_ATTEMPTS:
                    _left_off(emoji, message, error)
            except discord.HTTPException as error:
                _left_off(emoji, message, error)
                if error.code in CHANNEL_GONE_CODES:
                    return
                break
            except RuntimeError as error:
                if not client.is_closed():  # else the HTTP session closed under it (a shutdown)
                    _left_off(emoji, message, error)
                return


def _left_off(emoji: str, message: discord.Message, error: Exception) -> None:
    log.warning(
        "could not add %s to message %s in channel %s: %r", emoji, message.id, message.channel.id, error
    )


def _custom_ids(message: discord.Message) -> set[str]:
    return {
        item.custom_id
        for row in message.components
        for item in getattr(row, "children", ())
        if getattr(item, "custom_id", None)
    }


def _sent(message: discord.Message) -> SentMessage:
    guild_id = message.guild.id if message.guild is not None else None
    return SentMessage(message_id=message.id, channel_id=message.channel.id, guild_id=guild_id)
