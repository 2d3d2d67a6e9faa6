"""Each person's DM channel with the bot: kept once known, reused for every digest, opened only when unknown.

A DM's channel id never changes, but discord.py keeps only 128 DM channels in memory and knows a
person's only after fetching them (a call) and opening the DM (another), and Discord answers a burst
of opens with 403 40003 "You are opening direct messages too fast". So the id is stored
(``users.dm_channel_id``) the first time it is known — opened here, or seen on a command someone used
in their DM — and a digest posts straight to it: no user fetch, no open.

Opens go one at a time, at most one per ``open_interval``. A 40003 pauses every open for a cooldown
that doubles while Discord keeps refusing (up to ``max_cooldown``) and resets after an open succeeds,
so a rush of people whose DM is not known yet becomes a queue, never a storm of refused opens.

An id learnt while opening a DM is stored only if the person did not ask to be forgotten since what
needed it began (`/paper forget-me` during their digest must not bring their row back).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import discord

from storage.db import PersonForgottenError, StoreBusyError, utcnow_precise
from storage.repositories.users import UserRepository

log = logging.getLogger(__name__)

#: Discord's code for "You are opening direct messages too fast".
DM_OPENS_TOO_FAST = 40003


class DMOpensRefusedError(Exception):
    """Discord kept refusing to open this DM (40003) through every attempt; try the digest later."""


class DMChannels:
    def __init__(
        self,
        client: discord.Client,
        users: UserRepository,
        *,
        open_interval: float = 1.0,
        cooldown: float = 10.0,
        max_cooldown: float = 300.0,
        attempts: int = 6,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.users = users
        self.open_interval = open_interval
        self.base_cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.attempts = attempts
        self._sleep = sleep
        self._monotonic = monotonic
        self._known: dict[int, int] = {}
        self._open_lock = asyncio.Lock()
        self._next_open = 0.0
        #: how long every open pauses after the next 40003
        self.cooldown = cooldown

    async def channel_id(self, user_id: int, *, since: str | None = None) -> int:
        """The user's DM channel id: remembered, stored, or (once) opened. Discord's refusals other than
        40003 (e.g. 50007, an unknown user) are raised as discord.py raises them. ``since``: when what
        needs it began (a digest), else now: an opened DM is not kept if the user asked to be forgotten
        since."""
        if (known := self._known.get(user_id)) is not None:
            return known
        stored = await self.users.dm_channel(user_id)
        if stored is not None:
            self._known[user_id] = stored
            return stored
        return await self._open(user_id, since or utcnow_precise())

    def messageable(self, channel_id: int) -> discord.PartialMessageable:
        """Something to send to, without a call: the DM by its id."""
        return self.client.get_partial_messageable(channel_id, type=discord.ChannelType.private)

    async def remember(self, user_id: int, channel_id: int, *, since: str | None = None) -> None:
        """Keep a DM channel id (a write only when it is new). A busy store keeps it in memory only:
        the digest goes out now, and the id is stored the next time. ``since``: when it was looked up
        (nothing is kept of a person who asked to be forgotten since)."""
        if self._known.get(user_id) == channel_id:
            return
        self._known[user_id] = channel_id
        try:
            if await self.users.dm_channel(user_id) != channel_id:
                await self.users.set_dm_channel(user_id, channel_id, since=since)
        except PersonForgottenError:
            self._known.pop(user_id, None)
            log.info("user %s asked to be forgotten while their DM was opened: it is not kept", user_id)
        except StoreBusyError:
            self._known.pop(user_id, None)
            log.warning(
                "store busy: the DM channel of user %s serves this digest and is stored another time", user_id
            )

    async def learn(self, user_id: int, *, seen_in: int | None = None) -> None:
        """Know a subscriber's DM before their first digest: ``seen_in`` is the DM a command came from;
        otherwise open it now (paced like every open), so a rush finds it stored. Never raises: the
        first digest tries again."""
        try:
            if seen_in is not None:
                await self.remember(user_id, seen_in)
            else:
                await self.channel_id(user_id)
        except (discord.HTTPException, DMOpensRefusedError) as error:
            log.info("could not open the DM of user %s ahead of their digest: %s", user_id, error)

    async def forget(self, user_id: int) -> None:
        """Discord no longer knows the stored channel: the next digest opens the DM again."""
        self._known.pop(user_id, None)
        await self.users.set_dm_channel(user_id, None)

    async def _open(self, user_id: int, since: str) -> int:
        for attempt in range(1, self.attempts + 1):
            async with self._open_lock:
                delay = self._next_open - self._monotonic()
                if delay > 0:
                    await self._sleep(delay)
                try:
                    channel = await self.client.create_dm(discord.Object(user_id))
                except discord.HTTPException as error:
                    if error.code != DM_OPENS_TOO_FAST:
                        self._next_open = self._monotonic() + self.open_interval
                        raise
                    self._next_open = self._monotonic() + self.cooldown
                    log.warning(
                        "Discord refused to open a DM (40003, opening DMs too fast): every open pauses %g s "
                        "(attempt %d of %d for user %s)",
                        self.cooldown,
                        attempt,
                        self.attempts,
                        user_id,
                    )
                    self.cooldown = min(self.max_cooldown, self.cooldown * 2)
                    continue
                self._next_open = self._monotonic() + self.open_interval
                self.cooldown = self.base_cooldown
            await self.remember(user_id, channel.id, since=since)
            return channel.id
        raise DMOpensRefusedError(
            f"Discord refused to open the DM with user {user_id} {self.attempts} times (40003)"
        )
