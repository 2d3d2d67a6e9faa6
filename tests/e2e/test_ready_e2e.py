"""How soon the real bot calls itself ready once Discord has sent its guilds: discord.py waits its
``guild_ready_timeout`` after the last GUILD_CREATE of the stream that follows READY (2 s unless told);
paperbot waits ``GUILD_READY_TIMEOUT``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.app import GUILD_READY_TIMEOUT
from bot.sandbox import SandboxServer
from bot.sandbox.harness import running_paperbot, sandbox_settings


async def test_the_bot_is_ready_soon_after_its_guilds_arrive_not_two_seconds_later(
    sandbox: SandboxServer, tmp_path: Path
) -> None:
    settings = sandbox_settings(sandbox, tmp_path / "paperbot.db")
    async with running_paperbot(sandbox, settings, client_options={}) as running:  # the bot's own options
        ready_at = asyncio.get_running_loop().time()
        last_guild = max(record.at for record in sandbox.dispatched("GUILD_CREATE"))
        waited = ready_at - last_guild
        # discord.py's default would wait 2 s after the last guild, whatever the load
        assert GUILD_READY_TIMEOUT <= waited < 2.0, f"ready {waited:.2f} s after the last guild"
        result = await sandbox.run_command("bob", "paper search", query="speculative decoding", limit=1)
        assert running.bot.is_ready()
        assert "ecoding" in result.text


async def test_a_command_tells_the_background_work_that_someone_is_being_answered(
    sandbox: SandboxServer, tmp_path: Path
) -> None:
    """The digest jobs' rebuild after a start steps aside while a command is answered: every interaction
    the bot receives marks its foreground busy, which the rebuild asks before each slice."""
    settings = sandbox_settings(sandbox, tmp_path / "paperbot.db")
    async with running_paperbot(sandbox, settings) as running:
        foreground = running.bot.foreground
        foreground.quiet = 60.0  # (busy for a minute after each interaction: no race with the machine's load)
        assert foreground.busy_for() == 0.0
        await sandbox.run_command("bob", "paper search", query="speculative decoding", limit=1)
        assert foreground.busy_for() > 50
        assert running.bot.digest_jobs.busy_for == foreground.busy_for
