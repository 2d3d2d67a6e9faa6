"""`paperbot digest --user ID --dry-run`: prints the digest the bot would send; sends and records nothing."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.digest import run_digest_dry_run
from bot.runtime import open_services
from bot.settings import Settings
from storage.store import StoreLocation

USER = 4242

RECORDING_TABLES = ("digest_runs", "digest_items", "digest_sent", "posted_messages", "recommendations_shown")


async def _counts(settings: Settings) -> dict[str, int]:
    async with open_services(settings) as services:
        return {t: int(await services.db.fetchval(f"SELECT COUNT(*) FROM {t}")) for t in RECORDING_TABLES}


async def test_dry_run_prints_the_digest_and_records_nothing(tmp_path: Path) -> None:
    """The dry run shows the subscription, the next delivery and each paper with its reason."""
    settings = Settings(store=StoreLocation.parse(tmp_path / "cli.db"))
    async with open_services(settings) as services:
        await services.digests.subscriptions.subscribe(
            USER, topics="quantization, language models", time="07:30", timezone="Asia/Tokyo", count=3
        )
    out = io.StringIO()
    assert await run_digest_dry_run(settings, user_id=USER, out=out) == 0
    text = out.getvalue()
    assert "dry run: nothing sent, nothing recorded" in text
    assert "daily at 07:30 Asia/Tokyo, 3 papers on quantization, language models" in text
    assert "Next delivery:" in text
    assert text.count("why: ") == 3
    assert " 1. " in text
    assert "**" not in text  # Discord markdown is stripped for the terminal
    # Twice in a row gives the same digest: nothing was marked as sent or shown.
    again = io.StringIO()
    await run_digest_dry_run(settings, user_id=USER, out=again)
    assert again.getvalue() == text
    assert await _counts(settings) == dict.fromkeys(RECORDING_TABLES, 0)


async def test_dry_run_for_a_person_paperbot_does_not_know_says_so_and_exits_1(tmp_path: Path) -> None:
    """A mistyped id is not a person with nothing new: it says the person is unknown, shows no digest."""
    settings = Settings(store=StoreLocation.parse(tmp_path / "cli.db"))
    async with open_services(settings) as services:
        await services.digests.subscriptions.subscribe(USER, topics="quantization")
    out, err = io.StringIO(), io.StringIO()
    assert await run_digest_dry_run(settings, user_id=42, out=out, err=err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == (
        "paperbot digest: user 42 is not known to paperbot (no subscription, topics, reactions or anything "
        "else stored): check the id; nothing was sent\n"
    )


async def test_dry_run_for_a_person_without_a_subscription_shows_their_digest(tmp_path: Path) -> None:
    """Someone known (here: a topic of theirs) without a subscription: the digest /paper digest sends."""
    settings = Settings(store=StoreLocation.parse(tmp_path / "cli.db"))
    async with open_services(settings) as services:
        await services.profiles.add_topic(99, "quantization")
    out = io.StringIO()
    assert await run_digest_dry_run(settings, user_id=99, out=out) == 0
    assert "Subscription: none" in out.getvalue()


def test_sending_without_a_token_names_the_setting_and_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sending needs the bot token: without it the command says so in one line and records nothing."""
    settings = Settings(store=StoreLocation.parse(tmp_path / "cli.db"))
    asyncio.run(_subscribe(settings, USER))
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "cli.db"))
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["digest", "--user", str(USER)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("paperbot: DISCORD_TOKEN is not set")
    assert err.count("\n") == 1
    assert asyncio.run(_counts(settings)) == dict.fromkeys(RECORDING_TABLES, 0)


def test_a_digest_of_a_store_that_does_not_exist_is_refused_and_nothing_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "papperbot.db"))  # misspelt
    monkeypatch.chdir(tmp_path)
    assert main(["digest", "--user", str(USER), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"paperbot: no paperbot store at {tmp_path / 'papperbot.db'}: check PAPERBOT_DB")
    assert not (tmp_path / "papperbot.db").exists()


def test_cli_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`paperbot digest --user ID --dry-run` runs end to end through the real argument parser; an id
    paperbot does not know exits 1."""
    asyncio.run(_subscribe(Settings(store=StoreLocation.parse(tmp_path / "entry.db")), 7))
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "entry.db"))
    monkeypatch.chdir(tmp_path)
    assert main(["digest", "--user", "7", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "Digest for user 7" in captured.out
    assert main(["digest", "--user", "42", "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "user 42 is not known to paperbot" in captured.err


async def _subscribe(settings: Settings, user_id: int) -> None:
    async with open_services(settings) as services:
        await services.digests.subscriptions.subscribe(user_id, topics="quantization")
