"""Each person's DM channel: stored once known (never for someone forgotten meanwhile), opened only when
unknown, 40003 waited out in one queue."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from bot.dm_channels import DMChannels, DMOpensRefusedError
from storage.db import Database, utcnow_precise
from storage.repositories.users import UserRepository, forget_user


class FakeClient:
    """create_dm answers 40003 for the first `refusals` calls, then opens DM 9000 + user id."""

    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.calls: list[int] = []

    async def create_dm(self, user: Any) -> Any:
        self.calls.append(user.id)
        if self.refusals:
            self.refusals -= 1
            response = SimpleNamespace(status=403, reason="Forbidden")
            raise discord.Forbidden(
                response, {"code": 40003, "message": "You are opening direct messages too fast."}
            )  # type: ignore[arg-type]
        return SimpleNamespace(id=9000 + user.id)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds
        await asyncio.sleep(0)


def channels(db: Database, client: FakeClient, clock: FakeTime, **options: Any) -> DMChannels:
    return DMChannels(
        client,
        UserRepository(db),
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        **options,  # type: ignore[arg-type]
    )


async def test_a_stored_channel_is_used_without_opening(db: Database) -> None:
    client, clock = FakeClient(), FakeTime()
    await UserRepository(db).set_dm_channel(5, 777)
    assert await channels(db, client, clock).channel_id(5) == 777
    assert client.calls == []


async def test_an_unknown_channel_is_opened_once_and_kept(db: Database) -> None:
    client, clock = FakeClient(), FakeTime()
    dm = channels(db, client, clock)
    assert await dm.channel_id(5) == 9005
    assert await dm.channel_id(5) == 9005
    assert client.calls == [5]
    assert await UserRepository(db).dm_channel(5) == 9005
    assert await channels(db, FakeClient(), clock).channel_id(5) == 9005  # another process reads it


async def test_opens_are_spaced_and_40003_pauses_every_open_longer_each_time(db: Database) -> None:
    client, clock = FakeClient(refusals=2), FakeTime()
    dm = channels(db, client, clock, open_interval=1.0, cooldown=10.0)
    found = await asyncio.gather(*(dm.channel_id(user) for user in (1, 2, 3)))
    assert found == [9001, 9002, 9003]
    assert len(client.calls) == 5  # two refused opens, then each person's DM once
    assert clock.slept == [10.0, 20.0, 1.0, 1.0]  # paused 10 s, then 20 s, then paced again
    assert dm.cooldown == 10.0, "a successful open resets the pause"


async def test_a_dm_discord_keeps_refusing_fails_after_the_attempts(db: Database) -> None:
    client, clock = FakeClient(refusals=99), FakeTime()
    dm = channels(db, client, clock, attempts=3, cooldown=1.0, max_cooldown=2.0)
    with pytest.raises(DMOpensRefusedError):
        await dm.channel_id(1)
    assert len(client.calls) == 3
    assert clock.slept == [1.0, 2.0]


async def test_a_dm_seen_on_a_command_is_kept_and_a_gone_one_forgotten(db: Database) -> None:
    client, clock = FakeClient(), FakeTime()
    dm = channels(db, client, clock)
    await dm.learn(5, seen_in=4242)
    assert await dm.channel_id(5) == 4242
    await dm.forget(5)
    assert await UserRepository(db).dm_channel(5) is None
    assert await dm.channel_id(5) == 9005


async def test_a_dm_opened_for_a_digest_of_someone_forgotten_since_it_began_is_not_kept(db: Database) -> None:
    """The digest began, the person asked to be forgotten, then the digest opened their DM: the id
    serves the open (Discord has the channel) but nothing about them is stored."""
    began = utcnow_precise()
    await forget_user(db, 5)
    dm = channels(db, FakeClient(), FakeTime())
    assert await dm.channel_id(5, since=began) == 9005
    assert await UserRepository(db).get(5) is None
    assert await dm.channel_id(6) == 9006  # someone else's is kept as ever
    assert await UserRepository(db).dm_channel(6) == 9006
