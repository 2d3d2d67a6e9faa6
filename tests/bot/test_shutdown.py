"""`paperbot run` as a real process against the local Discord (bot/sandbox), stopped with SIGTERM.

What an operator relies on when Docker or systemd stops the bot: exit status 0, "stopped cleanly" in
the log, the gateway connection closed, the database closed (no write-ahead log left behind) and
consistent, nothing written lost, the token never printed; and on the next start the slash commands
are not synced again.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest
from bot_process import BotProcess

from bot.sandbox import SandboxServer

pytestmark = pytest.mark.slow


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
    from bot.services.papers.ingest.runner import ensure_shipped_corpus
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
