"""`paperbot run` as a real process against the local Discord (bot/sandbox), stopped with SIGTERM.

What an operator relies on when Docker or systemd stops the bot: exit status 0, "stopped cleanly" in
the log, the gateway connection closed, the database closed (no write-ahead log left behind) and
consistent, nothing written lost, the token never printed; and on the next start the slash commands
are not synced again.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from bot.sandbox import SandboxServer

pytestmark = pytest.mark.slow

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


class BotProcess:
    """`python -m bot run` in a subprocess, its stderr collected line by line as it comes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.stdout = ""
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, server: SandboxServer, db_path: Path, cwd: Path) -> BotProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
        env.update(
            DISCORD_TOKEN=server.token,
            DISCORD_API_BASE=server.api_base,
            DISCORD_GATEWAY_URL=server.gateway_url,
            PAPERBOT_DB=str(db_path),
            PAPERBOT_LOG_LEVEL="INFO",
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))
            self._changed.set()
        assert self.process.stdout is not None
        self.stdout = (await self.process.stdout.read()).decode("utf-8", "replace")
        self._changed.set()

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    async def wait_for(self, pattern: str, timeout: float = READY_TIMEOUT) -> str:  # noqa: ASYNC109
        """The first log line matching `pattern`; fails with the log if it does not come."""
        regex = re.compile(pattern)

        async def find() -> str:
            while True:
                for line in self.lines:
                    if regex.search(line):
                        return line
                if self._reader.done():
                    raise AssertionError(f"paperbot exited before logging {pattern!r}:\n{self.log}")
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), timeout)
        except TimeoutError:
            raise AssertionError(f"no {pattern!r} within {timeout:.0f} s:\n{self.log}") from None

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        try:
            code = await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"paperbot did not stop within {STOP_TIMEOUT:.0f} s:\n{self.log}") from None
        await self._reader
        return code

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self._reader


def check_database(path: Path) -> sqlite3.Connection:
    assert not Path(f"{path}-wal").exists(), (
        "the database was not closed (its write-ahead log is still there)"
    )
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    return conn


def assert_clean_log(bot: BotProcess, token: str) -> None:
    assert token not in bot.log
    assert token not in bot.stdout
    problems = [
        line for line in bot.lines if " ERROR " in line or " CRITICAL " in line or "Traceback" in line
    ]
    assert problems == [], "\n".join(problems)
    assert bot.lines[-1].endswith("stopped cleanly"), f"last line: {bot.lines[-1]!r}"


async def test_sigterm_stops_the_bot_cleanly_and_a_restart_does_not_resync(tmp_path: Path) -> None:
    db_path = tmp_path / "data" / "paperbot.db"
    async with SandboxServer() as server:
        bot = await BotProcess.start(server, db_path, tmp_path)
        try:
            await bot.wait_for(r"ready as ")
            assert server.gateway.connected
            result = await server.run_command(server.alice, "paper search", query="language models", limit=3)
            assert result.ok, result.failure
            code = await bot.stop(signal.SIGTERM)
        finally:
            await bot.kill()

        assert code == 0, bot.log
        assert "shutting down (signal received)" in bot.log
        assert_clean_log(bot, server.token)
        assert not server.gateway.connected, "the gateway connection was left open"
        assert not server.gateway.live_sessions, "the session was not ended with a normal (1000) close"
        syncs = server.requests_matching(f"PUT /applications/{server.application_id}/commands")
        assert len(syncs) == 1, "the first start syncs the global commands once"
        assert "synced" in bot.log

        conn = check_database(db_path)
        try:
            papers = conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0]
            searches = conn.execute("SELECT COUNT(*) FROM searches").fetchone()[0]
        finally:
            conn.close()
        assert papers > 0, "the shipped corpus was loaded"
        assert searches >= 1, "the search the user ran was stored"

        # Start again on the same database: same commands, so no global sync; the data is all there.
        again = await BotProcess.start(server, db_path, tmp_path)
        try:
            await again.wait_for(r"ready as ")
            await again.wait_for(r"command definitions unchanged")
            result = await server.run_command(server.bob, "paper search", query="reinforcement learning")
            assert result.ok, result.failure
            code = await again.stop(signal.SIGTERM)
        finally:
            await again.kill()
        assert code == 0, again.log
        assert_clean_log(again, server.token)
        assert len(server.requests_matching(f"PUT /applications/{server.application_id}/commands")) == 1
        conn = check_database(db_path)
        try:
            assert conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0] == papers
            assert conn.execute("SELECT COUNT(*) FROM searches").fetchone()[0] >= searches + 1
        finally:
            conn.close()


async def test_sigterm_during_start_up_is_clean_too(tmp_path: Path) -> None:
    """A stop while the shipped corpus loads: exit 0 once the load is done, and the corpus is whole
    (a fresh database gets the corpus only once, so a half-loaded one would stay half-loaded)."""
    db_path = tmp_path / "paperbot.db"
    async with SandboxServer() as server:
        bot = await BotProcess.start(server, db_path, tmp_path)
        try:
            await bot.wait_for(r"applied migration")
            code = await bot.stop(signal.SIGTERM)
        finally:
            await bot.kill()
    assert code == 0, bot.log
    assert_clean_log(bot, server.token)
    assert not any("ready as" in line for line in bot.lines), "it should stop before connecting"
    conn = check_database(db_path)
    try:
        count = conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0]
    finally:
        conn.close()
    assert count == await shipped_corpus_size(tmp_path / "reference.db")


async def shipped_corpus_size(path: Path) -> int:
    from bot.services.ingest.runner import ensure_shipped_corpus
    from storage.store import open_database

    async with await open_database(path) as db:
        await ensure_shipped_corpus(db)
        return int(await db.fetchval("SELECT COUNT(*) FROM papers"))


async def test_sigint_stops_it_the_same_way(tmp_path: Path) -> None:
    """Ctrl-C in a terminal (SIGINT) is a clean stop too."""
    db_path = tmp_path / "paperbot.db"
    async with SandboxServer() as server:
        bot = await BotProcess.start(server, db_path, tmp_path)
        try:
            await bot.wait_for(r"ready as ")
            code = await bot.stop(signal.SIGINT)
        finally:
            await bot.kill()
    assert code == 0, bot.log
    assert_clean_log(bot, server.token)
    check_database(db_path).close()
