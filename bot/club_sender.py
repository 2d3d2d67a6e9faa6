"""The Discord side of reading groups (``bot.services.club``): the poll, its end and results, the
announcement, the thread started from it, the paper in the thread (with 👍 👎 🔖 as reactions, which
teach the person who reacts) and the reminder.

Every post carries the nonce the service derived for it (discord.py sends it with ``enforce_nonce``,
so a repeat after a lost answer or a restart returns the message already created), waits for room
in its channel's message bucket and on the shared pacer, like digests. Ending a poll that is over
already (Discord's 520001) reads the results from the message; a thread already started from the
announcement (160004) is the one wanted: a thread started from a message has the message's id.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import discord

from bot.digest_sender import HISTORY_LOOKBACK, SEND_TIMEOUT, Sending, add_ratings
from bot.services.club import Outcome, PollPlan
from bot.services.digests.fairness import SHARED_LANE
from bot.ui import club as ui
from storage.models import Paper

log = logging.getLogger(__name__)

POLL_EXPIRED = 520001
THREAD_EXISTS = 160004
#: a week's thread stays open without activity for as long as Discord allows (7 days)
THREAD_ARCHIVE_MINUTES = 10080


class DiscordClubSender:
    def __init__(self, bot: discord.Client, sending: Sending) -> None:
        self.bot = bot
        self.sending = sending
        self._posted: dict[int, discord.Message] = {}

    async def _channel(self, channel_id: int) -> discord.abc.Messageable:
        channel = self.bot.get_channel(channel_id)
        if channel is None:
            await self.sending.pacer.wait(SHARED_LANE)
            channel = await self.bot.fetch_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            raise TypeError(f"channel {channel_id} cannot hold messages")
        return channel

    async def _send(self, channel_id: int, *, nonce: str, **fields: object) -> discord.Message:
        target = await self._channel(channel_id)
        async with self.sending.messages.slot(channel_id):
            await self.sending.pacer.wait(SHARED_LANE)
            async with asyncio.timeout(SEND_TIMEOUT):
                message: discord.Message = await target.send(nonce=nonce, **fields)  # type: ignore[call-overload]
        return message

    async def post_poll(self, channel_id: int, plan: PollPlan, *, nonce: str) -> tuple[int, bool]:
        """A Discord poll; where the bot may not post one (no Send Polls), a button per paper."""
        channel = await self._channel(channel_id)
        guild = getattr(channel, "guild", None)
        me = guild.me if guild is not None else None
        if me is not None and not channel.permissions_for(me).send_polls:  # type: ignore[attr-defined]
            text, view = ui.button_poll(plan)
            message = await self._send(channel_id, nonce=nonce, content=text, view=view)
            view.stop()  # dynamic items: answered without keeping the view in memory
            return message.id, True
        poll, text = ui.poll_message(plan)
        return (await self._send(channel_id, nonce=nonce, content=text, poll=poll)).id, False

    async def find_poll(self, channel_id: int, plan: PollPlan) -> tuple[int, bool] | None:
        question = ui.poll_question(plan)
        buttons = f"pbclub:{plan.channel_id}:{plan.week}:"
        for message in await self._mine(channel_id):
            if message.poll is not None and message.poll.question == question:
                return message.id, False
            if any(custom_id.startswith(buttons) for custom_id in _custom_ids(message)):
                return message.id, True
        return None

    async def find_posted(self, channel_id: int, kind: str, *, after: int | None) -> int | None:
        for message in await self._mine(channel_id, after=after):
            if (
                (kind == "announce" and message.content.startswith(ui.ANNOUNCEMENT_MARK))
                or (kind == "remind" and message.content.startswith(ui.REMINDER_MARK))
                or (kind == "paper" and message.embeds)
            ):
                return message.id
        return None

    async def _mine(self, channel_id: int, *, after: int | None = None) -> list[discord.Message]:
        """The bot's own posts (not answers to commands) among the channel's latest messages."""
        channel = await self._channel(channel_id)
        assert self.bot.user is not None
        await self.sending.pacer.wait(SHARED_LANE)
        found = []
        since = discord.Object(after) if after is not None else None
        async for message in channel.history(limit=HISTORY_LOOKBACK, after=since):
            if message.author.id == self.bot.user.id and message.interaction_metadata is None:
                found.append(message)
        return found

    async def close_buttons(self, channel_id: int, message_id: int) -> None:
        """A button poll's buttons come off once the winner is known (the votes are counted already)."""
        channel = await self._channel(channel_id)
        message = channel.get_partial_message(message_id)  # type: ignore[attr-defined]
        await self.sending.pacer.wait(SHARED_LANE)
        try:
            await message.edit(view=None)
        except discord.HTTPException as error:  # a deleted poll message: the votes still count
            log.warning("club %s: could not take the buttons off the poll: %s", channel_id, error)

    async def end_poll(self, channel_id: int, message_id: int, answers: int) -> tuple[int, ...]:
        channel = await self._channel(channel_id)
        message = channel.get_partial_message(message_id)  # type: ignore[attr-defined]
        await self.sending.pacer.wait(SHARED_LANE)
        try:
            ended: discord.Message = await message.end_poll()
        except discord.HTTPException as error:
            if error.code != POLL_EXPIRED:
                raise
            ended = await message.fetch()
        counts = {answer.id: answer.vote_count for answer in (ended.poll.answers if ended.poll else [])}
        return tuple(counts.get(answer_id, 0) for answer_id in range(1, answers + 1))

    async def announce(self, channel_id: int, outcome: Outcome, *, nonce: str) -> int:
        return (await self._send(channel_id, nonce=nonce, content=ui.announcement(outcome))).id

    async def start_thread(self, channel_id: int, message_id: int, paper: Paper) -> int:
        channel = await self._channel(channel_id)
        message = channel.get_partial_message(message_id)  # type: ignore[attr-defined]
        await self.sending.pacer.wait(SHARED_LANE)
        try:
            thread = await message.create_thread(
                name=ui.thread_name(paper), auto_archive_duration=THREAD_ARCHIVE_MINUTES
            )
        except discord.HTTPException as error:
            if error.code != THREAD_EXISTS:
                raise
            return message_id  # started before the answer was lost: a thread has its message's id
        return int(thread.id)

    async def post_paper(self, thread_id: int, outcome: Outcome, *, nonce: str) -> int:
        shown = ui.thread_paper(outcome)
        message = await self._send(thread_id, nonce=nonce, embed=shown.embed, view=shown.view)
        self._posted[message.id] = message
        return message.id

    async def finish_paper(self, thread_id: int, message_id: int) -> None:
        message = self._posted.pop(message_id, None)
        if message is not None:
            await add_ratings(self.bot, message, self.sending, paced=True)

    async def remind(
        self, thread_id: int, paper: Paper, meeting_at: datetime, zone: str, *, nonce: str
    ) -> int:
        return (await self._send(thread_id, nonce=nonce, content=ui.reminder(paper, meeting_at, zone))).id


def _custom_ids(message: discord.Message) -> list[str]:
    return [
        str(item.custom_id)
        for row in message.components
        for item in getattr(row, "children", ())
        if getattr(item, "custom_id", None)
    ]
