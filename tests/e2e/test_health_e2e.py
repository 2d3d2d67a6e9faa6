"""The heartbeat `paperbot health` reads (bot/health.py), written by the real bot against the sandbox:
healthy once connected, "not connected" while Discord has dropped its session, healthy again once it
is back, and gone when the bot stops — so a health check never takes a stopped bot for a running one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from paperbot_e2e import E2E

from bot.health import judge
from bot.sandbox import SandboxServer

StartBot = Callable[..., contextlib.AbstractAsyncContextManager[E2E]]


async def test_the_heartbeat_follows_the_gateway_and_goes_with_the_bot(
    start_paperbot: StartBot, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.app.HEARTBEAT_SECONDS", 0.2)
    async with start_paperbot() as e2e:
        path = e2e.settings.local_file(".health")
        assert path is not None
        await sandbox.eventually(lambda: judge(path)[0], what="a healthy heartbeat")
        assert judge(path)[1].startswith("healthy: all (pid ")
        assert "leading the background work" in judge(path)[1]

        await sandbox.invalidate_session()  # not resumable: discord.py waits, then IDENTIFYs afresh
        await sandbox.eventually(
            lambda: "gateway shards 0 not connected" in judge(path)[1],
            what="the beat saying the shard is down",
        )
        assert not judge(path)[0]
        await sandbox.eventually(lambda: judge(path)[0], timeout=15, what="healthy again once reconnected")
        result = await sandbox.run_command("bob", "paper search", query="speculative decoding", limit=1)
        assert "ecoding" in result.text
    assert not path.exists()
    assert judge(path)[1].startswith("no heartbeat at ")
