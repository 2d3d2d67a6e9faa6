"""`paperbot sandbox --script`: the shipped demo runs, and a bad line fails the run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.sandbox.console import DEMO_SCRIPT, ConsoleError, parse_options, run_console, without_comment
from bot.sandbox.render import readable_mentions, readable_times
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
    code = await run_console(Settings(), store=None, script=DEMO_SCRIPT)
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
    assert "🔖 Saved “TreeDraft: Speculative Decoding with Verified Branches”" in out  # Apps → Save paper
    assert "Paused “quantization”" in out
    assert "🔇 Muted “reinforcement learning”" in out
    assert "error (line" not in out


async def test_a_script_stops_at_the_first_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "session.txt"
    script.write_text("/paper search query:quantization limit:1\nfrobnicate\n/paper search query:never run\n")
    code = await run_console(Settings(), store=tmp_path / "kept.db", script=script)
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
    assert await run_console(Settings(), store=None, script=script) == 1
    assert "/paper has no subcommand 'nosuchthing'" in capsys.readouterr().out
    assert await run_console(Settings(), store=None, script=tmp_path / "missing.txt") == 2


def readme_sandbox_block() -> str:
    """README's "Try it in the sandbox" block, exactly as printed."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Try it in the sandbox") :]
    return section.split("```text\n", 1)[1].split("```", 1)[0]


async def test_the_readme_sandbox_block_runs_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a newcomer copies from the README into a file and runs with --script: every step does what
    its comment says, waiting for what it needs (a reaction stored before /paper saved)."""
    script = tmp_path / "try.txt"
    script.write_text(readme_sandbox_block(), encoding="utf-8")
    code = await run_console(Settings(), store=None, script=script)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "error (line" not in out, out
    steps = out.split("alice@#papers> ")
    assert "👍 Noted" in steps[2]  # click 2: 👍 on result 2
    assert "Medusa" in steps[3]
    assert "alice reacted 🔖 on #" in steps[4]
    assert "Your saved papers (1)" in steps[5]  # the 🔖 was stored before the next line ran
    assert "paperbot-saved.ris" in steps[6]  # click RIS found the button of /paper saved
    assert "Papers like “Medusa" in steps[8]  # More like this: the single-paper message's button
    assert "🔇 Muted “reinforcement learning”" in steps[10]
    assert "You follow **Ada Lovelace**" in out
    assert "Papers by Ada Lovelace" in out  # an author's name as the query
    assert "Showing results for *kv cache quantization*" in out  # a slip, searched corrected
    assert "✅ Subscribed" in out
    assert "<t:" not in out  # Discord's timestamps read as times ("in 14 hours")
    assert "📬 new message (DM for alice)" in out
    assert "paperbot: find, follow and rate papers" in out  # /paper help, then quit ends the script


def test_a_comment_may_follow_a_line() -> None:
    assert without_comment("click 2   # press button 2") == "click 2"
    assert without_comment("# a whole line") == ""
    assert without_comment("click 2 #5") == "click 2 #5"  # a message number
    assert without_comment("in #papers") == "in #papers"  # a channel
    assert without_comment('/paper search query:"c # sharp" limit:3  # quoted') == (
        '/paper search query:"c # sharp" limit:3'
    )
    assert without_comment("react 🔖 #") == "react 🔖"


async def test_quit_ends_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "session.txt"
    script.write_text("/paper search query:quantization limit:1   # first\nquit   # done\nfrobnicate\n")
    assert await run_console(Settings(), store=None, script=script) == 0
    out = capsys.readouterr().out
    assert "unknown command" not in out
    assert "frobnicate" not in out


async def test_slash_commands_work_in_a_dm_and_again_on_a_kept_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands are synced as on Discord (globally): `/paper` works in the DM with the bot, and a
    second run on the same store (`--db`), whose local Discord starts without them, syncs them again."""
    script = tmp_path / "session.txt"
    script.write_text("in dm\n/paper recommend\n/paper search query:quantization limit:1\n")
    for _ in range(2):
        assert await run_console(Settings(), store=tmp_path / "kept.db", script=script) == 0
        out = capsys.readouterr().out
        assert "paperbot in DM with alice (only alice sees this)" in out
        assert "I don't know your interests yet" in out
        assert "Results for “quantization”" in out


def test_discord_timestamps_read_as_times() -> None:
    now = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
    berlin = timezone(timedelta(hours=1))
    text = "Next digest (<t:1796457970:R>), at <t:1796457970:t> on <t:1796457970:D>; <t:1796457970>"
    assert readable_times(text, now=now, zone=berlin) == (
        "Next digest (in 14 hours), at 09:06 on 5 December 2026; 5 December 2026 09:06"
    )
    assert readable_times("<t:1796400000:R>", now=now) == "2 hours ago"
    assert readable_times("<t:1796457970:F>", zone=berlin) == "Saturday, 5 December 2026 09:06"
    assert readable_times("<t:99999999999999999:R>") == "<t:99999999999999999:R>"  # no such time


def test_a_message_command_is_listed_with_how_to_use_it() -> None:
    """Discord gives a message command no description: `commands` says where it is and how to use it."""
    from bot.sandbox.console import _command_lines

    assert list(_command_lines({"name": "Save paper", "type": 3})) == [
        'Apps → Save paper  — on a message: apps "Save paper" [#message]'
    ]
    assert list(
        _command_lines({"name": "digest", "type": 1, "description": "Send me my digest"}, "paper ")
    ) == ["/paper digest  — Send me my digest"]


def test_channel_and_member_mentions_read_as_names() -> None:
    """Discord shows <#id> as the channel's name and <@id> as the member's; the console did not."""
    names = {1191168914227200007: "papers", 1191168914227200009: "bob"}
    text = "Feed for <#1191168914227200007>, set by <@1191168914227200009> (<@!1191168914227200009>)"
    assert readable_mentions(text, names) == "Feed for #papers, set by @bob (@bob)"
    assert readable_mentions("<#1191168914227200001>", names) == "<#1191168914227200001>"  # unknown


async def test_say_posts_the_message_as_typed_apostrophes_and_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`say here's …` failed with "No closing quotation": a message is not split into options."""
    script = tmp_path / "say.txt"
    script.write_text("say here's the paper: arXiv:2505.10001   # a comment\nquit\n", encoding="utf-8")
    code = await run_console(Settings(), store=None, script=script)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "  here's the paper: arXiv:2505.10001\n" in out
    assert "a comment" not in out.split("alice@#papers>")[1].split("\n", 1)[1]
