"""`paperbot digest --user ID --dry-run`: prints the digest the bot would send; sends and records nothing."""

from __future__ import annotations

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


async def test_dry_run_for_an_unknown_user_says_nothing_new(tmp_path: Path) -> None:
    """A user with no subscription and no profile gets the plain "nothing new" line, not an error."""
    settings = Settings(store=StoreLocation.parse(tmp_path / "cli.db"))
    out = io.StringIO()
    assert await run_digest_dry_run(settings, user_id=99, out=out) == 0
    assert "Subscription: none" in out.getvalue()
    assert "Nothing new" in out.getvalue()


def test_sending_without_a_token_names_the_setting_and_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sending needs the bot token: without it the command says so in one line and creates no database."""
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "cli.db"))
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["digest", "--user", str(USER)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("paperbot: DISCORD_TOKEN is not set")
    assert err.count("\n") == 1
    assert not (tmp_path / "cli.db").exists()


def test_cli_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`paperbot digest --user ID --dry-run` runs end to end through the real argument parser."""
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "entry.db"))
    monkeypatch.chdir(tmp_path)
    assert main(["digest", "--user", "7", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "Digest for user 7" in captured.out
