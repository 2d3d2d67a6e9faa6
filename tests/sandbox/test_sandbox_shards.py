"""The sandbox's sharded gateway, as Discord documents it (docs/events/gateway.mdx, "Sharding"): IDENTIFY
with `shard: [shard_id, num_shards]`, guild events and interactions routed by
`(guild_id >> 22) % num_shards`, DMs on shard 0 only, 4010 for an invalid shard, 4011 when a session
would hold more guilds than a shard may, and GET /gateway/bot's recommended shard count and session
start limit. Checked with raw websockets and with two discord.py AutoShardedBots standing for two
processes, one shard each."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from bot.sandbox import SandboxServer
from bot.sandbox.harness import running_client


async def _identify(sandbox: SandboxServer, shard: Any) -> int | None:
    """Open a raw gateway connection, IDENTIFY with `shard`; the close code (None: READY came)."""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{sandbox.gateway_url}?v=10&encoding=json") as ws,
    ):
        hello = json.loads((await ws.receive()).data)
        assert hello["op"] == 10
        data: dict[str, Any] = {"token": sandbox.token, "intents": 1, "properties": {}}
        if shard is not None:
            data["shard"] = shard
        await ws.send_str(json.dumps({"op": 2, "d": data}))
        message = await ws.receive(timeout=5)
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
            return ws.close_code
        payload = json.loads(message.data)
        assert payload["t"] == "READY", payload
        return None


@pytest.mark.parametrize("shard", [[1, 1], [2, 2], [0, 0], [-1, 2], ["0", 2], [0], [True, 2], "0,1"])
async def test_an_invalid_shard_closes_with_4010(sandbox: SandboxServer, shard: Any) -> None:
    assert await _identify(sandbox, shard) == 4010


async def test_a_shard_holding_too_many_guilds_closes_with_4011_until_the_bot_shards(
    sandbox: SandboxServer,
) -> None:
    sandbox.options.max_guilds_per_shard = 1  # Discord: 2500
    sandbox.add_guild("Second Lab", shard=(1, 2))
    assert await _identify(sandbox, None) == 4011  # one session for two guilds: "sharding required"
    assert await _identify(sandbox, [0, 1]) == 4011
    assert await _identify(sandbox, [0, 2]) is None  # one guild each
    assert await _identify(sandbox, [1, 2]) is None


async def test_get_gateway_bot_recommends_a_shard_per_thousand_guilds_and_counts_session_starts(
    sandbox: SandboxServer,
) -> None:
    sandbox.options.max_concurrency = 16
    for n in range(1000):
        sandbox.world.add_guild(f"Lab {n}")  # 1001 guilds with the seeded one
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{sandbox.api_base}/gateway/bot", headers={"Authorization": f"Bot {sandbox.token}"}
        ) as response,
    ):
        before = await response.json()
    assert before["shards"] == 2
    assert before["session_start_limit"]["max_concurrency"] == 16
    assert await _identify(sandbox, [0, 2]) is None
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{sandbox.api_base}/gateway/bot", headers={"Authorization": f"Bot {sandbox.token}"}
        ) as response,
    ):
        after = await response.json()
    assert after["session_start_limit"]["remaining"] == before["session_start_limit"]["remaining"] - 1


class ShardBot(commands.AutoShardedBot):
    """One process's share of the shards, answering /whichshard with the shards it runs."""

    def __init__(self, shard_id: int, shard_count: int) -> None:
        intents = discord.Intents.none()
        intents.guilds = intents.guild_reactions = intents.dm_reactions = True
        super().__init__(
            command_prefix="!",
            intents=intents,
            shard_ids=[shard_id],
            shard_count=shard_count,
            guild_ready_timeout=0.1,
        )
        self.reactions: list[discord.RawReactionActionEvent] = []

        @app_commands.command(name="whichshard", description="Which shard answers")
        async def whichshard(interaction: discord.Interaction) -> None:
            await interaction.response.send_message(f"shard {shard_id}")

        self.tree.add_command(whichshard)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        self.reactions.append(payload)


@contextlib.asynccontextmanager
async def two_processes(sandbox: SandboxServer) -> AsyncIterator[tuple[ShardBot, ShardBot]]:
    first, second = ShardBot(0, 2), ShardBot(1, 2)
    async with running_client(first, sandbox), running_client(second, sandbox):
        await first.tree.sync()  # global commands: offered in every guild and in DMs
        yield first, second


async def test_two_processes_one_shard_each_get_their_own_guilds_interactions_and_dms(
    sandbox: SandboxServer,
) -> None:
    second_lab = sandbox.add_guild("Second Lab", members={"bob": False}, shard=(1, 2))
    assert (sandbox.guild.id >> 22) % 2 == 0
    async with two_processes(sandbox) as (first, second):
        assert [g.id for g in first.guilds] == [sandbox.guild.id]
        assert [g.id for g in second.guilds] == [second_lab.id]

        here = await sandbox.run_command("bob", "whichshard", where="general")
        there = await sandbox.run_command(
            "bob", "whichshard", where=sandbox.guild_channel(second_lab, "general")
        )
        in_dm = await sandbox.run_command("bob", "whichshard", where="dm")
        assert (here.content, there.content, in_dm.content) == ("shard 0", "shard 1", "shard 0")

        posted = await sandbox.send_message("bob", sandbox.guild_channel(second_lab, "general"), "a paper")
        await sandbox.react("bob", posted, "👍")
        dm = await sandbox.send_message("bob", "dm", "hello")
        await sandbox.react("bob", dm, "🔖")
        await sandbox.eventually(lambda: first.reactions and second.reactions, what="both reactions")
        assert [r.guild_id for r in second.reactions] == [second_lab.id]
        assert [(r.guild_id, str(r.emoji)) for r in first.reactions] == [(None, "🔖")]  # DMs: shard 0 only

        third_lab = sandbox.add_guild("Third Lab", shard=(1, 2))  # joined meanwhile: its shard hears it
        await sandbox.eventually(lambda: second.get_guild(third_lab.id), what="GUILD_CREATE on shard 1")
        assert first.get_guild(third_lab.id) is None
