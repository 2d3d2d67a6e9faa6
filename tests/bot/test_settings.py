"""Settings: every variable's default, parsing and one-line error; the token never shows up anywhere."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.errors import SettingsError
from bot.log import OneLineFormatter, context_ids, setup_logging
from bot.services.papers.ingest.runner import MAX_DECOMPRESSED_BYTES
from bot.settings import Settings, declarations, load_settings
from storage.store import StoreLocation

REPO = Path(__file__).resolve().parents[2]
TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.secret-token-value-0123456789"


def load(**environ: str) -> Settings:
    return load_settings(environ=environ, env_file=None)


def settings_read_by_code() -> set[str]:
    return {declaration.variable for _, declaration in declarations()}


# name -> (a valid value, what it becomes) ; name -> invalid values
VALID: dict[str, tuple[str, str, object]] = {
    "DISCORD_TOKEN": (TOKEN, "discord_token", TOKEN),
    "PAPERBOT_DB": (
        "/var/lib/paperbot/paperbot.db",
        "store",
        StoreLocation(path=Path("/var/lib/paperbot/paperbot.db")),
    ),
    "PAPERBOT_STATE_DIR": ("/var/lib/paperbot", "state_dir", Path("/var/lib/paperbot")),
    "PAPERBOT_SHARDS": ("0-2, 5", "shard_ids", (0, 1, 2, 5)),
    "PAPERBOT_SHARD_COUNT": ("8", "shard_count", 8),
    "PAPERBOT_ROLE": ("Worker", "role", "worker"),
    "PAPERBOT_TAKEOVER_SECONDS": ("10", "takeover_seconds", 10),
    "PAPERBOT_DEV_GUILD": ("123456789012345678", "dev_guild_id", 123456789012345678),
    "DISCORD_API_BASE": ("http://127.0.0.1:8080/api/v10/", "api_base", "http://127.0.0.1:8080/api/v10"),
    "DISCORD_GATEWAY_URL": ("ws://127.0.0.1:8080/gateway", "gateway_url", "ws://127.0.0.1:8080/gateway"),
    "PAPERBOT_LOG_LEVEL": ("debug", "log_level", "DEBUG"),
    "PAPERBOT_DIGEST_GRACE_HOURS": ("1.5", "digest_grace_hours", 1.5),
    "PAPERBOT_DIGEST_SPREAD_MINUTES": ("0", "digest_spread_minutes", 0),
    "PAPERBOT_ARXIV_CATEGORIES": ("cs.LG, cs.CL  stat.ML", "arxiv_categories", ("cs.LG", "cs.CL", "stat.ML")),
    "PAPERBOT_ARXIV_FETCH_TIME": ("23:05", "arxiv_fetch_time", "23:05"),
    "PAPERBOT_SOURCES": (
        "rss:https://www.nature.com/neuro.rss  BIORXIV:Cell_Biology medrxiv openreview:ICLR.cc/2025/Conference",
        "sources",
        (
            "rss:https://www.nature.com/neuro.rss",
            "biorxiv:cell_biology",
            "medrxiv",
            "openreview:ICLR.cc/2025/Conference",
        ),
    ),
    "PAPERBOT_MAX_INGEST_MB": ("3", "max_ingest_bytes", 3 * 1024 * 1024),
    "PAPERBOT_MAX_DECOMPRESSED_MB": ("40", "max_decompressed_bytes", 40 * 1024 * 1024),
    "PAPERBOT_SEARCH_RETENTION_DAYS": ("7", "search_retention_days", 7),
    "PAPERBOT_PERSON_LIMITS": ("OFF", "person_limits", False),
    "PAPERBOT_DIGEST_HISTORY_DAYS": ("30", "digest_history_days", 30),
    "PAPERBOT_FEEDS_PER_SERVER": ("5", "feeds_per_server", 5),
    "PAPERBOT_ARXIV_LOOKUP": ("off", "arxiv_lookup_url", ""),
    "PAPERBOT_OPERATORS": (
        "123456789012345678, 223456789012345678  42",
        "operator_ids",
        frozenset({123456789012345678, 223456789012345678, 42}),
    ),
}

INVALID: dict[str, list[str]] = {
    "DISCORD_TOKEN": ["short", "has a space in the middle of it 123456"],
    "PAPERBOT_DB": ["mysql://paperbot@db/paperbot", "postgresql:///paperbot"],
    "PAPERBOT_SHARDS": ["all", "3-1", "-1", "0..3", "1;2"],
    "PAPERBOT_SHARD_COUNT": ["0", "two", "-2", "1.5"],
    "PAPERBOT_ROLE": ["leader", "both"],
    "PAPERBOT_TAKEOVER_SECONDS": ["2", "301", "ten", "5.5"],
    "PAPERBOT_DEV_GUILD": ["my-server", "-5", "12.5"],
    "DISCORD_API_BASE": ["discord.com/api/v10", "ftp://example.org/api", "http://"],
    "DISCORD_GATEWAY_URL": ["https://gateway.discord.gg/", "gateway.discord.gg"],
    "PAPERBOT_LOG_LEVEL": ["LOUD", "20"],
    "PAPERBOT_DIGEST_GRACE_HOURS": ["-1", "49", "six", "nan"],
    "PAPERBOT_DIGEST_SPREAD_MINUTES": ["-1", "121", "2.5", "ten"],
    "PAPERBOT_ARXIV_FETCH_TIME": ["6am", "24:00", "06:60", "6:5", "0600"],
    "PAPERBOT_SOURCES": ["rss", "rss:ftp://x.org/feed", "pubmed:cancer", "openreview:ICLR", "arxiv:notacat"],
    "PAPERBOT_MAX_INGEST_MB": ["0", "1.5", "-3", "lots"],
    "PAPERBOT_MAX_DECOMPRESSED_MB": ["0", "0.5", "-1", "unlimited"],
    "PAPERBOT_SEARCH_RETENTION_DAYS": ["0", "3651", "30.5", "-1", "forever"],
    "PAPERBOT_PERSON_LIMITS": ["yes", "0", "false"],
    "PAPERBOT_DIGEST_HISTORY_DAYS": ["13", "3651", "90.5", "forever"],
    "PAPERBOT_ARXIV_LOOKUP": ["ftp://mirror.example/api", "export.arxiv.org", "no"],
    "PAPERBOT_FEEDS_PER_SERVER": ["0", "1001", "2.5", "many"],
    "PAPERBOT_OPERATORS": ["alice", "123;456", "-5", "12.5", "<@123456789012345678>", "0"],
}

# Settings with no invalid value (any path is a path; any word list is a category list).
ALWAYS_VALID = {"PAPERBOT_STATE_DIR", "PAPERBOT_ARXIV_CATEGORIES"}


def test_every_setting_the_code_reads_is_covered_here() -> None:
    read = settings_read_by_code()
    assert read == set(VALID), (
        f"add to VALID: {sorted(read - set(VALID))}; stale: {sorted(set(VALID) - read)}"
    )
    assert read == set(INVALID) | ALWAYS_VALID


def test_defaults_with_an_empty_environment() -> None:
    settings = load()
    assert settings == Settings()
    assert settings.discord_token is None
    assert settings.store.path == Path("paperbot.db")
    assert settings.dev_guild_id is None
    assert settings.api_base == "https://discord.com/api/v10"
    assert settings.gateway_url == "wss://gateway.discord.gg/"
    assert settings.log_level == "INFO"
    assert settings.digest_grace_hours == 6.0
    assert settings.arxiv_categories == ()
    assert settings.arxiv_fetch_time == "06:00"
    assert settings.max_ingest_bytes == 25 * 1024 * 1024
    assert settings.max_decompressed_bytes == 256 * 1024 * 1024 == MAX_DECOMPRESSED_BYTES
    assert settings.search_retention_days == 30
    assert settings.operator_ids == frozenset()


#: Settings only valid with another one set too.
COMPANIONS = {"PAPERBOT_SHARDS": {"PAPERBOT_SHARD_COUNT": "8"}}


@pytest.mark.parametrize("name", sorted(VALID))
def test_each_setting_is_read_and_parsed(name: str) -> None:
    raw, attribute, expected = VALID[name]
    assert getattr(load(**{name: raw}, **COMPANIONS.get(name, {})), attribute) == expected


def test_shards_need_their_count_and_fit_in_it() -> None:
    with pytest.raises(SettingsError, match="PAPERBOT_SHARDS needs PAPERBOT_SHARD_COUNT"):
        load(PAPERBOT_SHARDS="0-1")
    with pytest.raises(SettingsError, match="names shard 4, but shards are numbered 0 to 3"):
        load(PAPERBOT_SHARDS="2-4", PAPERBOT_SHARD_COUNT="4")
    settings = load(PAPERBOT_SHARDS="1", PAPERBOT_SHARD_COUNT="2", PAPERBOT_ROLE="gateway")
    assert (settings.shard_ids, settings.shard_count) == ((1,), 2)
    assert settings.connects_gateway
    assert not settings.does_background_work
    worker = load(PAPERBOT_ROLE="worker")
    assert not worker.connects_gateway
    assert worker.does_background_work


@pytest.mark.parametrize("name", sorted(VALID))
def test_a_blank_value_means_the_default(name: str) -> None:
    assert load(**{name: "   "}) == Settings()


@pytest.mark.parametrize(("name", "bad"), [(name, bad) for name, values in INVALID.items() for bad in values])
def test_an_invalid_value_is_one_line_naming_the_variable(name: str, bad: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load(**{name: bad})
    message = str(caught.value)
    assert name in message
    assert "\n" not in message
    assert len(message) < 200


def test_the_environment_wins_over_the_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("PAPERBOT_LOG_LEVEL=DEBUG\nPAPERBOT_DB=from-file.db\n", "utf-8")
    settings = load_settings(environ={"PAPERBOT_LOG_LEVEL": "ERROR"}, env_file=env_file)
    assert settings.log_level == "ERROR"
    assert settings.store.path == Path("from-file.db")


def test_a_missing_env_file_is_fine(tmp_path: Path) -> None:
    assert load_settings(environ={}, env_file=tmp_path / "absent.env") == Settings()


def test_an_invalid_value_in_the_env_file_is_reported_too(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("PAPERBOT_MAX_INGEST_MB=huge\n", "utf-8")
    with pytest.raises(SettingsError, match="PAPERBOT_MAX_INGEST_MB"):
        load_settings(environ={}, env_file=env_file)


def test_settings_are_immutable() -> None:
    with pytest.raises(AttributeError):
        load().log_level = "DEBUG"  # type: ignore[misc]


def test_require_token_names_the_variable_when_it_is_missing() -> None:
    with pytest.raises(SettingsError, match="DISCORD_TOKEN"):
        load().require_token()
    assert load(DISCORD_TOKEN=TOKEN).require_token() == TOKEN


def test_settings_are_not_read_at_import_time() -> None:
    """Importing the application with a broken environment must work (tests and CI need no secrets)."""
    env = {"PATH": "/usr/bin:/bin", "PAPERBOT_LOG_LEVEL": "LOUD", "DISCORD_TOKEN": "x"}
    result = subprocess.run(
        [sys.executable, "-c", "import bot.settings, bot.cli, bot.log, bot.app, bot.runner"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# --- the CLI's one-line error ------------------------------------------------------------------------


def test_the_cli_prints_one_line_naming_the_bad_setting_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PAPERBOT_DIGEST_GRACE_HOURS", "forever")
    assert main(["stats"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("paperbot: PAPERBOT_DIGEST_GRACE_HOURS")


def test_the_cli_never_echoes_a_malformed_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISCORD_TOKEN", "secret with spaces 0123456789")
    assert main(["stats"]) == 2
    captured = capsys.readouterr()
    assert "DISCORD_TOKEN" in captured.err
    assert "secret" not in captured.err + captured.out


def test_run_without_a_token_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "paperbot.db"))
    try:
        assert main(["run"]) == 2
    finally:
        logging.getLogger().handlers.clear()
    err = capsys.readouterr().err
    assert err.startswith("paperbot: DISCORD_TOKEN is not set")
    assert err.count("\n") == 1
    assert not (tmp_path / "paperbot.db").exists(), "nothing should be created before the token is checked"


# --- the token never reaches a log line --------------------------------------------------------------


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_settings_repr_hides_the_token() -> None:
    settings = load(DISCORD_TOKEN=TOKEN)
    assert TOKEN not in repr(settings)
    assert TOKEN not in str(settings)
    assert TOKEN not in f"{settings}"


@pytest.mark.usefixtures("restore_logging")
def test_the_token_is_redacted_from_messages_arguments_and_tracebacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup_logging("DEBUG", token=TOKEN)
    log = logging.getLogger("paperbot.test")
    log.info("logging in with %s", TOKEN)
    log.warning(f"inline {TOKEN}")  # noqa: G004 - the point is that even this is caught
    try:
        raise RuntimeError(f"401 Unauthorized for token {TOKEN}")
    except RuntimeError:
        log.exception("login failed")
    logging.getLogger("discord.client").info("Bot %s", TOKEN)
    err = capsys.readouterr().err
    assert TOKEN not in err
    assert err.count("[token]") == 4


#: a PostgreSQL store URL with its password in the user part, and in a parameter
PASSWORD = "hunter2-pw"
PASSWORD_URLS = (
    f"postgresql://paperbot:{PASSWORD}@db.internal:5432/paperbot",
    f"postgresql://paperbot@db.internal/paperbot?sslmode=require&password={PASSWORD}",
)


@pytest.mark.parametrize("url", PASSWORD_URLS)
def test_settings_repr_hides_the_store_password(url: str) -> None:
    settings = load(PAPERBOT_DB=url)
    assert settings.store.url == url, "the store is still opened with it"
    for shown in (repr(settings), str(settings), repr(settings.store), str(settings.store)):
        assert PASSWORD not in shown
        assert "***" in shown


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("url", PASSWORD_URLS)
def test_a_store_password_is_redacted_from_messages_arguments_and_tracebacks(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("DEBUG")
    log = logging.getLogger("paperbot.test")
    log.info("opening %s", url)
    log.warning(f"inline {url}")  # noqa: G004 - the point is that even this is caught
    try:
        raise ConnectionError(f"cannot reach {url!r}")
    except ConnectionError:
        log.exception("store unreachable")
    err = capsys.readouterr().err
    assert PASSWORD not in err
    assert err.count("***") == 3
    assert err.count("db.internal") == 3, "the rest of the URL stays readable"


@pytest.mark.usefixtures("restore_logging")
def test_one_line_per_event_with_level_and_logger(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("INFO")
    log = logging.getLogger("bot.exts.admin")
    try:
        raise ValueError("bad\nfile")
    except ValueError:
        log.exception(
            "ingest failed (%s)", context_ids(guild=1, channel=2, user=3, command="paperadmin ingest")
        )
    log.info("two\nlines")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert (
        " ERROR   bot.exts.admin: ingest failed (guild=1 channel=2 user=3 command=/paperadmin ingest)"
        in lines[0]
    )
    assert "Traceback" in lines[0]
    assert "ValueError: bad\\nfile" in lines[0]
    assert lines[1].endswith("INFO    bot.exts.admin: two\\nlines")


@pytest.mark.usefixtures("restore_logging")
def test_noisy_loggers_are_quietened(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("DEBUG")
    assert logging.getLogger("discord.http").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("discord").getEffectiveLevel() == logging.INFO
    logging.getLogger("discord.http").info("PUT /applications/1/commands")
    logging.getLogger("bot.app").debug("debug shows at DEBUG")
    err = capsys.readouterr().err
    assert "PUT /applications" not in err
    assert "debug shows at DEBUG" in err


def test_formatter_without_a_token_changes_nothing_but_newlines() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "a %s", ("b",), None)
    assert OneLineFormatter(None).format(record).endswith("INFO    x: a b")
