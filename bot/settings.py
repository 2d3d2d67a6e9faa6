"""Settings, loaded once at start from the environment and an optional `.env` file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from dotenv import dotenv_values

from bot.errors import SettingsError

DEFAULT_API_BASE = "https://discord.com/api/v10"
DEFAULT_GATEWAY_URL = "wss://gateway.discord.gg/"

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class Settings:
    """Everything paperbot reads from its environment (see the README's table)."""

    discord_token: str | None = field(default=None, repr=False)
    db_path: Path = Path("paperbot.db")
    dev_guild_id: int | None = None
    api_base: str = DEFAULT_API_BASE
    gateway_url: str = DEFAULT_GATEWAY_URL
    log_level: str = "INFO"
    digest_grace_hours: float = 6.0
    arxiv_categories: tuple[str, ...] = ()
    arxiv_fetch_time: str = "06:00"  # UTC, daily, when arxiv_categories is set
    max_ingest_bytes: int = 25 * 1024 * 1024
    #: Discord user ids allowed to change the shared corpus from Discord, besides the application's owners
    operator_ids: frozenset[int] = frozenset()
    #: stored search listings (their queries) are deleted after this many days; their buttons then expire
    search_retention_days: int = 30

    def require_token(self) -> str:
        if not self.discord_token:
            raise SettingsError(
                "DISCORD_TOKEN is not set: put the bot token from the Discord developer portal "
                "in the environment or in .env"
            )
        return self.discord_token


def load_settings(environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")) -> Settings:
    """Read settings; the process environment wins over `.env`. Raises SettingsError (one line)."""
    values: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    values.update(os.environ if environ is None else environ)

    def get(name: str) -> str | None:
        value = values.get(name)
        return value.strip() if value and value.strip() else None

    token = get("DISCORD_TOKEN")
    if token is not None and (len(token) < 20 or any(c.isspace() for c in token)):
        raise SettingsError("DISCORD_TOKEN does not look like a bot token (too short or has spaces)")

    dev_guild: int | None = None
    if (raw := get("PAPERBOT_DEV_GUILD")) is not None:
        if not raw.isdigit():
            raise SettingsError(f"PAPERBOT_DEV_GUILD must be a numeric guild id, got {raw!r}")
        dev_guild = int(raw)

    api_base = (get("DISCORD_API_BASE") or DEFAULT_API_BASE).rstrip("/")
    if urlparse(api_base).scheme not in ("http", "https") or not urlparse(api_base).netloc:
        raise SettingsError(f"DISCORD_API_BASE must be an http(s) URL, got {api_base!r}")
    gateway = get("DISCORD_GATEWAY_URL") or DEFAULT_GATEWAY_URL
    if urlparse(gateway).scheme not in ("ws", "wss") or not urlparse(gateway).netloc:
        raise SettingsError(f"DISCORD_GATEWAY_URL must be a ws:// or wss:// URL, got {gateway!r}")

    level = (get("PAPERBOT_LOG_LEVEL") or "INFO").upper()
    if level not in _LOG_LEVELS:
        raise SettingsError(f"PAPERBOT_LOG_LEVEL must be one of {', '.join(_LOG_LEVELS)}, got {level!r}")

    grace_raw = get("PAPERBOT_DIGEST_GRACE_HOURS") or "6"
    try:
        grace = float(grace_raw)
    except ValueError:
        grace = -1.0
    if not 0 <= grace <= 48:
        raise SettingsError(f"PAPERBOT_DIGEST_GRACE_HOURS must be a number of hours 0-48, got {grace_raw!r}")

    categories = tuple(c for c in (get("PAPERBOT_ARXIV_CATEGORIES") or "").replace(",", " ").split() if c)
    fetch_time = get("PAPERBOT_ARXIV_FETCH_TIME") or "06:00"
    if not _is_hhmm(fetch_time):
        raise SettingsError(f"PAPERBOT_ARXIV_FETCH_TIME must be HH:MM (UTC), got {fetch_time!r}")

    max_mb_raw = get("PAPERBOT_MAX_INGEST_MB") or "25"
    if not max_mb_raw.isdigit() or int(max_mb_raw) < 1:
        raise SettingsError(f"PAPERBOT_MAX_INGEST_MB must be a whole number of megabytes, got {max_mb_raw!r}")

    operators_raw = (get("PAPERBOT_OPERATORS") or "").replace(",", " ").split()
    if not all(part.isdigit() and int(part) > 0 for part in operators_raw):
        raise SettingsError(
            "PAPERBOT_OPERATORS must be Discord user ids separated by spaces or commas, "
            f"got {get('PAPERBOT_OPERATORS')!r}"
        )

    retention_raw = get("PAPERBOT_SEARCH_RETENTION_DAYS") or "30"
    if not retention_raw.isdigit() or not 1 <= int(retention_raw) <= 3650:
        raise SettingsError(
            f"PAPERBOT_SEARCH_RETENTION_DAYS must be a whole number of days 1-3650, got {retention_raw!r}"
        )

    return Settings(
        discord_token=token,
        db_path=Path(get("PAPERBOT_DB") or "paperbot.db"),
        dev_guild_id=dev_guild,
        api_base=api_base,
        gateway_url=gateway,
        log_level=level,
        digest_grace_hours=grace,
        arxiv_categories=categories,
        arxiv_fetch_time=fetch_time,
        max_ingest_bytes=int(max_mb_raw) * 1024 * 1024,
        search_retention_days=int(retention_raw),
        operator_ids=frozenset(int(part) for part in operators_raw),
    )


def _is_hhmm(text: str) -> bool:
    hours, sep, minutes = text.partition(":")
    return (
        bool(sep)
        and hours.isdigit()
        and minutes.isdigit()
        and len(minutes) == 2
        and (0 <= int(hours) <= 23 and 0 <= int(minutes) <= 59)
    )
