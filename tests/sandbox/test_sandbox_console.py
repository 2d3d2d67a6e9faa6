"""`paperbot sandbox --script`: the shipped demo runs, and a bad line fails the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.sandbox.console import DEMO_SCRIPT, ConsoleError, parse_options, run_console
from bot.settings import Settings

pytestmark = pytest.mark.timeout(120)


def test_parse_options_like_discord() -> None:
    assert parse_options(["/paper", "search", "query:kv cache", "limit:3"]) == (
        ["paper", "search"],
        {"query": "kv cache", "limit": "3"},
    )
    # a value runs over several words until the next name:value, and may itself hold a colon
    assert parse_options(["/paper", "subscribe", "topics:kv", "cache", "time:09:00"]) == (
        ["paper", "subscribe"],
        {"topics": "kv cache", "time": "09:00"},
    )
    with pytest.raises(ConsoleError, match="given twice"):
        parse_options(["/paper", "search", "query:a", "query:b"])
    with pytest.raises(ConsoleError, match="no command"):
        parse_options(["/"])


async def test_the_shipped_demo_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert DEMO_SCRIPT.is_file()
    code = await run_console(Settings(), db_path=None, script=DEMO_SCRIPT)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "alice@#papers> /paper search" in out
    assert "[1] 👍 1" in out  # numbered buttons
    assert "updated #1" in out  # paging edited the results message
    assert "alice reacted 👍 on #" in out
    assert "(only alice sees this)" in out  # /paper interests show is ephemeral
    assert "📬 new message (DM for bob)" in out  # the digest arrived as it came
    assert "added **4**" in out  # a file beside the script, attached by its name
    assert "*by Ada Lovelace, whom you follow*" in out  # her new paper in bob's digest
    assert "*for your interest in kv cache" in out  # the digest's topics are his interests
    assert "Paused “quantization”" in out
    assert "error (line" not in out


async def test_a_script_stops_at_the_first_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "session.txt"
    script.write_text("/paper search query:quantization limit:1\nfrobnicate\n/paper search query:never run\n")
    code = await run_console(Settings(), db_path=tmp_path / "kept.db", script=script)
    out = capsys.readouterr().out
    assert code == 1
    assert "error (line 2): unknown command 'frobnicate'" in out
    assert "never run" not in out
    assert (tmp_path / "kept.db").exists()  # --db keeps the database


async def test_a_refused_or_failed_interaction_fails_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "session.txt"
    script.write_text("/paper nosuchthing\n")
    assert await run_console(Settings(), db_path=None, script=script) == 1
    assert "/paper has no subcommand 'nosuchthing'" in capsys.readouterr().out
    assert await run_console(Settings(), db_path=None, script=tmp_path / "missing.txt") == 2
