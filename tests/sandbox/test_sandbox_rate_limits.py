"""The sandbox refuses what Discord's rate limits refuse (``SandboxOptions.rates``, ``DISCORD_RATES``).

Raw HTTP shows each answer as Discord gives it; the unmodified discord.py client shows what a bot
lives with: headers it can follow (messages), headers it cannot (reactions), the global limit, 40003
on a burst of DM opens, and the ban after too many invalid requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest

from bot.sandbox import DISCORD_RATES, RateRules, SandboxServer
from bot.sandbox.harness import running_client

pytestmark = pytest.mark.timeout(60)

DISCORD = dataclasses.asdict(DISCORD_RATES)


def rules(**changes: Any) -> RateRules:
    """Discord's limits with some changed (smaller figures keep a test fast, the rule is the same)."""
    return RateRules(**{**DISCORD, **changes})


@pytest.fixture
async def api() -> AsyncIterator[Any]:
    """``api(server)``: an aiohttp session with the bot token, for raw requests."""
    sessions: list[aiohttp.ClientSession] = []

    def open_for(server: SandboxServer) -> aiohttp.ClientSession:
        session = aiohttp.ClientSession(
            base_url=server.api_base + "/", headers={"Authorization": f"Bot {server.token}"}
        )
        sessions.append(session)
        return session

    yield open_for
    for session in sessions:
        await session.close()


def client() -> discord.Client:
    return discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.1)


async def put_reaction(session: aiohttp.ClientSession, channel_id: int, message_id: int, emoji: str) -> Any:
    return await session.put(f"channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me")


async def test_the_global_limit_counts_every_route_but_interactions(api: Any) -> None:
    async with SandboxServer(rate_limit=(1000, 1.0), rates=rules()) as server:
        session = api(server)
        statuses = []
        for _ in range(52):
            async with session.get("users/@me") as response:
                statuses.append(response.status)
                if response.status == 429:
                    body = await response.json()
                    headers = response.headers
        assert statuses[:50] == [200] * 50
        assert statuses[50:] == [429, 429]
        assert body["global"] is True
        assert 0 < body["retry_after"] <= 1.0
        assert headers["X-RateLimit-Global"] == "true"
        assert headers["X-RateLimit-Scope"] == "global"
        # interaction endpoints are not bound to the global limit: this one answers for itself (404)
        async with session.post("interactions/1/token/callback", json={"type": 1}) as response:
            assert response.status != 429
        server.clock.advance(1.0)
        async with session.get("users/@me") as response:
            assert response.status == 200
        assert [r.scope for r in server.requests if r.status == 429] == ["global", "global"]


async def test_discord_py_waits_out_the_global_limit() -> None:
    async with SandboxServer(rate_limit=(1000, 1.0), rates=rules(global_limit=(10, 0.5))) as server:
        bot = client()
        async with running_client(bot, server):
            channels = [server.add_channel(f"room-{n}") for n in range(12)]
            started = time.monotonic()
            await asyncio.gather(
                *(bot.http.send_message(channel.id, params=_content("hi")) for channel in channels)
            )
            elapsed = time.monotonic() - started
        sends = server.requests_matching("POST /channels/*/messages")
        assert len([r for r in sends if r.status == 200]) == 12  # every message went out
        assert elapsed >= 0.4


async def test_messages_follow_honest_headers(api: Any) -> None:
    async with SandboxServer(rates=rules()) as server:
        session = api(server)
        channel = server.channel("general").id
        seen = []
        for n in range(6):
            async with session.post(f"channels/{channel}/messages", json={"content": f"m{n}"}) as response:
                seen.append((response.status, response.headers["X-RateLimit-Remaining"]))
        assert seen[:5] == [(200, "4"), (200, "3"), (200, "2"), (200, "1"), (200, "0")]
        assert seen[5][0] == 429
        other = server.channel("papers").id  # another channel, another bucket
        async with session.post(f"channels/{other}/messages", json={"content": "x"}) as response:
            assert response.status == 200
            assert response.headers["X-RateLimit-Limit"] == "5"


async def test_discord_py_follows_the_message_headers_without_a_429() -> None:
    async with SandboxServer(rates=rules(messages=(2, 0.5))) as server:  # a small bucket: a fast test
        bot = client()
        async with running_client(bot, server):
            target = bot.get_channel(server.channel("general").id)
            assert isinstance(target, discord.TextChannel)
            started = time.monotonic()
            for n in range(5):
                await target.send(f"paced {n}")
            elapsed = time.monotonic() - started
        assert [r.status for r in server.requests_matching("POST /channels/*/messages")] == [200] * 5
        assert elapsed >= 1.0


async def test_reaction_headers_promise_room_the_bucket_does_not_have(api: Any) -> None:
    async with SandboxServer(rates=rules()) as server:
        session = api(server)
        channel = server.channel("general").id
        async with session.post(f"channels/{channel}/messages", json={"content": "vote"}) as response:
            message = (await response.json())["id"]
        async with await put_reaction(session, channel, message, "👍") as first:
            assert first.status == 204
            assert int(first.headers["X-RateLimit-Remaining"]) > 0  # "go ahead"
        async with await put_reaction(session, channel, message, "👎") as second:
            assert second.status == 429  # ... but the bucket is one reaction per 0.25 s per channel
            body = await second.json()
            assert 0 < body["retry_after"] <= 0.25
            assert body["global"] is False
            assert second.headers["X-RateLimit-Scope"] == "user"
        # another channel has its own bucket
        other = server.channel("papers").id
        async with session.post(f"channels/{other}/messages", json={"content": "vote"}) as response:
            elsewhere = (await response.json())["id"]
        async with await put_reaction(session, other, elsewhere, "👍") as response:
            assert response.status == 204
        server.clock.advance(0.25)
        async with await put_reaction(session, channel, message, "👎") as response:
            assert response.status == 204


async def test_discord_py_trusting_the_reaction_headers_collects_429s() -> None:
    async with SandboxServer(rates=rules()) as server:
        bot = client()
        async with running_client(bot, server):
            channel = bot.get_channel(server.channel("general").id)
            assert isinstance(channel, discord.TextChannel)
            message = await channel.send("rate me")
            for emoji in ("👍", "👎", "🔖"):
                await message.add_reaction(emoji)
        puts = server.requests_matching("PUT /channels/*/messages/*/reactions/**")
        assert [r.status for r in puts].count(204) == 3
        assert any(r.status == 429 for r in puts)  # retried after retry_after, each one an invalid request
        assert server.rates.invalid_total == [r.status for r in puts].count(429)


async def test_a_burst_of_dm_opens_is_answered_40003() -> None:
    async with SandboxServer(rates=rules(dm_opens=(3, 10.0))) as server:
        people = [server.add_user(f"reader{n}") for n in range(4)]
        bot = client()
        async with running_client(bot, server):
            for person in people[:3]:
                user = await bot.fetch_user(person.id)
                await user.create_dm()
            with pytest.raises(discord.Forbidden) as refused:
                await (await bot.fetch_user(people[3].id)).create_dm()
            assert refused.value.code == 40003
            assert "opening direct messages too fast" in refused.value.text
            server.clock.advance(10.0)
            channel = await (await bot.fetch_user(people[3].id)).create_dm()
            assert channel.recipient is not None
            assert channel.recipient.id == people[3].id
        opens = server.requests_matching("POST /users/@me/channels")
        assert [r.status for r in opens] == [200, 200, 200, 403, 200]
        assert opens[3].error_code == 40003


async def test_too_many_invalid_requests_ban_every_request(api: Any) -> None:
    async with SandboxServer(rates=rules(invalid_requests=(5, 60.0), ban_seconds=120.0)) as server:
        async with aiohttp.ClientSession(base_url=server.api_base + "/") as anonymous:
            for _ in range(5):
                async with anonymous.get("users/@me") as response:
                    assert response.status == 401
        session = api(server)
        async with session.get("users/@me") as response:  # even with the token
            assert response.status == 429
            assert "temporarily" in (await response.json())["message"]
        assert server.rates.banned
        server.clock.advance(120.0)
        async with session.get("users/@me") as response:
            assert response.status == 200


async def test_without_discord_rates_none_of_it_applies(api: Any) -> None:
    async with SandboxServer() as server:  # the default: only the generous route buckets
        session = api(server)
        channel = server.channel("general").id
        async with session.post(f"channels/{channel}/messages", json={"content": "x"}) as response:
            message = (await response.json())["id"]
        for emoji in ("👍", "👎", "🔖"):
            async with await put_reaction(session, channel, message, emoji) as response:
                assert response.status == 204
        for n in range(25):
            person = server.add_user(f"p{n}")
            async with session.post("users/@me/channels", json={"recipient_id": str(person.id)}) as response:
                assert response.status == 200


def _content(text: str) -> Any:
    return discord.http.handle_message_parameters(content=text)
