"""Settings, loaded once at start from the environment and an optional `.env` file.

Each setting is declared once, as a field of :class:`Settings` made by :func:`setting`: its variable,
its default (as it would be written in the environment), the parser that turns text into the value
(and says what is wrong with bad text), and its meaning — the README's table and `.env.example` are
checked against these declarations (tests/deploy/test_deploy.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from dotenv import dotenv_values

from bot.errors import SettingsError
from storage.store import StoreLocation

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


# ---- parsers: text → value, or ValueError saying what is wrong (the variable's name goes before it) ----


def _token(raw: str) -> str:
    if len(raw) < 20 or any(c.isspace() for c in raw):
        raise ValueError("does not look like a bot token (too short or has spaces)")
    return raw


def _guild_id(raw: str) -> int:
    if not raw.isdigit():
        raise ValueError(f"must be a numeric guild id, got {raw!r}")
    return int(raw)


def _api_base(raw: str) -> str:
    url = raw.rstrip("/")
    if urlparse(url).scheme not in ("http", "https") or not urlparse(url).netloc:
        raise ValueError(f"must be an http(s) URL, got {url!r}")
    return url


def _lookup_url(raw: str) -> str:
    return "" if raw.lower() == "off" else _api_base(raw)


def _gateway_url(raw: str) -> str:
    if urlparse(raw).scheme not in ("ws", "wss") or not urlparse(raw).netloc:
        raise ValueError(f"must be a ws:// or wss:// URL, got {raw!r}")
    return raw


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in _LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(_LOG_LEVELS)}, got {level!r}")
    return level


def _grace_hours(raw: str) -> float:
    try:
        hours = float(raw)
    except ValueError:
        hours = -1.0
    if not 0 <= hours <= 48:
        raise ValueError(f"must be a number of hours 0-48, got {raw!r}")
    return hours


def _words(raw: str) -> tuple[str, ...]:
    return tuple(word for word in raw.replace(",", " ").split() if word)


def _sources(raw: str) -> tuple[str, ...]:
    """Whitespace-separated `KIND:ARGUMENT` sources, each checked (`bot.services.papers.sources.specs`)."""
    from bot.services.papers.sources.base import SourceError
    from bot.services.papers.sources.specs import parse_specs

    try:
        return tuple(str(spec) for spec in parse_specs(raw))
    except SourceError as error:
        raise ValueError(str(error)) from None


def _utc_time(raw: str) -> str:
    hours, sep, minutes = raw.partition(":")
    if not (
        sep
        and hours.isdigit()
        and minutes.isdigit()
        and len(minutes) == 2
        and 0 <= int(hours) <= 23
        and 0 <= int(minutes) <= 59
    ):
        raise ValueError(f"must be HH:MM (UTC), got {raw!r}")
    return raw


def _spread_minutes(raw: str) -> int:
    if not raw.isdigit() or not 0 <= int(raw) <= 120:
        raise ValueError(f"must be a whole number of minutes 0-120, got {raw!r}")
    return int(raw)


def _megabytes(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"must be a whole number of megabytes, got {raw!r}")
    return int(raw) * 1024 * 1024


def _user_ids(raw: str) -> frozenset[int]:
    parts = raw.replace(",", " ").split()
    if not all(part.isdigit() and int(part) > 0 for part in parts):
        raise ValueError(f"must be Discord user ids separated by spaces or commas, got {raw!r}")
    return frozenset(int(part) for part in parts)


def _retention_days(raw: str) -> int:
    if not raw.isdigit() or not 1 <= int(raw) <= 3650:
        raise ValueError(f"must be a whole number of days 1-3650, got {raw!r}")
    return int(raw)


def _history_days(raw: str) -> int:
    if not raw.isdigit() or not 14 <= int(raw) <= 3650:
        raise ValueError(f"must be a whole number of days 14-3650, got {raw!r}")
    return int(raw)


def _feeds_per_server(raw: str) -> int:
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise ValueError(f"must be a whole number of feeds 1-1000, got {raw!r}")
    return int(raw)


def _shard_ids(raw: str) -> tuple[int, ...]:
    """ "0-3", "0,2" or "5": the shard ids, each once, in order."""
    ids: set[int] = set()
    for part in raw.replace(" ", "").split(","):
        first, dash, last = part.partition("-")
        if not (first.isdigit() and (not dash or last.isdigit())) or (dash and int(last) < int(first)):
            raise ValueError(f"must be shard ids like 0-3 or 0,2 (ranges low-high), got {raw!r}")
        ids.update(range(int(first), int(last if dash else first) + 1))
    return tuple(sorted(ids))


def _shard_count(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"must be a whole number of shards, at least 1, got {raw!r}")
    return int(raw)


def _takeover_seconds(raw: str) -> int:
    if not raw.isdigit() or not 3 <= int(raw) <= 300:
        raise ValueError(f"must be a whole number of seconds 3-300, got {raw!r}")
    return int(raw)


ROLES = ("all", "gateway", "worker")


def _on_off(raw: str) -> bool:
    if raw.lower() not in ("on", "off"):
        raise ValueError(f"must be on or off, got {raw!r}")
    return raw.lower() == "on"


def _role(raw: str) -> str:
    role = raw.lower()
    if role not in ROLES:
        raise ValueError(f"must be one of {', '.join(ROLES)}, got {raw!r}")
    return role


# ---- the declarations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Declaration:
    """One setting: the variable, its default as text ("" when it has none), its parser, its meaning."""

    variable: str
    default: str
    parse: Callable[[str], Any]
    meaning: str

    def read(self, raw: str | None) -> Any:
        """The value for ``raw`` (None or blank: the default); SettingsError names the variable."""
        text = raw.strip() if raw and raw.strip() else self.default
        if not text:
            return None
        try:
            return self.parse(text)
        except ValueError as error:
            raise SettingsError(f"{self.variable} {error}") from None


def setting(
    variable: str,
    default: str,
    parse: Callable[[str], Any],
    meaning: str,
    *,
    empty: Any = None,
    repr: bool = True,
) -> Any:
    """A field of :class:`Settings`, declared with everything about it (``empty``: the value when there
    is no default, for settings that are lists)."""
    declaration = Declaration(variable, default, parse, meaning)
    value = parse(default) if default else empty
    return dataclasses.field(default=value, repr=repr, metadata={"setting": declaration})


@dataclass(frozen=True)
class Settings:
    """Everything paperbot reads from its environment (README.md, "Settings", lists them)."""

    discord_token: str | None = setting(
        "DISCORD_TOKEN", "", _token, "the bot token (required by `paperbot run`)", repr=False
    )
    store: StoreLocation = setting(  # noqa: RUF009 - setting() is a dataclasses.field
        "PAPERBOT_DB",
        "./paperbot.db",
        StoreLocation.parse,
        "the store, also the one `paperbot sandbox` and `paperbot start` without a token open when it is "
        "set: the SQLite database file (WAL files, the search-index snapshot, the paper space and "
        "`paperbot.db.pending`, the "
        "outbox of reactions and clicks not stored yet, live beside it), or a `postgresql://USER@HOST/DB` "
        "URL of a PostgreSQL database several processes share",
    )
    state_dir: Path | None = setting(  # noqa: RUF009 - setting() is a dataclasses.field
        "PAPERBOT_STATE_DIR",
        "",
        Path,
        "the folder where this process keeps its own files (`*.pending`, the outbox of reactions and "
        "clicks not stored yet; `*.search-index`, `*.paper-space`); empty: beside a SQLite database, or the working "
        "directory for PostgreSQL. Give each process of a bot its own",
    )
    dev_guild_id: int | None = setting(
        "PAPERBOT_DEV_GUILD",
        "",
        _guild_id,
        "sync slash commands to this one guild (instant) while developing",
    )
    api_base: str = setting(
        "DISCORD_API_BASE",
        "https://discord.com/api/v10",
        _api_base,
        "REST base: a rate-limit proxy, or the local sandbox",
    )
    gateway_url: str = setting(
        "DISCORD_GATEWAY_URL", "wss://gateway.discord.gg/", _gateway_url, "gateway websocket URL"
    )
    log_level: str = setting("PAPERBOT_LOG_LEVEL", "INFO", _log_level, "`DEBUG`, `INFO`, `WARNING`, `ERROR`")
    digest_grace_hours: float = setting(
        "PAPERBOT_DIGEST_GRACE_HOURS",
        "6",
        _grace_hours,
        "a digest missed while the bot was down is sent on start-up if this recent",
    )
    digest_spread_minutes: int = setting(
        "PAPERBOT_DIGEST_SPREAD_MINUTES",
        "60",
        _spread_minutes,
        "a digest goes out at the minute chosen unless more are due in that minute than Discord's limits "
        "let go out in it (some 2,700 requests: 450 five-paper DM digests); those set up last then move to "
        "the next minutes, at most this many (0-120; 0: none moves, all start at their minute and queue). "
        "Their confirmation says so",
    )
    digest_history_days: int = setting(
        "PAPERBOT_DIGEST_HISTORY_DAYS",
        "180",
        _history_days,
        "finished digest runs and the bot's paper messages are deleted after this many days (14–3650), "
        "daily; a 👍 👎 🔖 reaction on an older paper message then counts for nothing (buttons keep "
        "working), and what was sent to whom is kept, so no paper is sent twice",
    )
    feeds_per_server: int = setting(
        "PAPERBOT_FEEDS_PER_SERVER",
        "25",
        _feeds_per_server,
        "channel feeds one server may have (1–1000; a channel, thread or forum post each); "
        "`/paperadmin feed set` for one more says so and stores nothing",
    )
    arxiv_categories: tuple[str, ...] = setting(
        "PAPERBOT_ARXIV_CATEGORIES",
        "",
        _words,
        "e.g. `cs.LG cs.CL`: fetch these from arXiv daily; the sandbox (no `DISCORD_TOKEN`) starts on the "
        "first one's newest papers",
        empty=(),
    )
    arxiv_fetch_time: str = setting(
        "PAPERBOT_ARXIV_FETCH_TIME",
        "06:00",
        _utc_time,
        "when the daily fetch runs (UTC): the arXiv categories, then `PAPERBOT_SOURCES`",
    )
    sources: tuple[str, ...] = setting(
        "PAPERBOT_SOURCES",
        "",
        _sources,
        "more sources fetched daily, space separated, none needing a key: `rss:URL` (any RSS or Atom feed, "
        "e.g. a journal's table of contents), `biorxiv` or `biorxiv:CATEGORY`, `medrxiv[:CATEGORY]` "
        "(underscores for spaces: `cell_biology`), `openreview:VENUE_ID` (e.g. "
        "`openreview:ICLR.cc/2025/Conference`), `arxiv:CATEGORY`; each resumes where its last fetch ended, "
        "and the same paper from two of them is kept once",
        empty=(),
    )
    #: where a paper someone links to and the store lacks is fetched from ("": never fetched)
    arxiv_lookup_url: str = setting(
        "PAPERBOT_ARXIV_LOOKUP",
        "https://export.arxiv.org/api/query",
        _lookup_url,
        "where an arXiv paper someone links to (the “Save paper” and “Like paper” message commands, "
        "`/paper show paper:<link>`) is fetched from when the store lacks it: arXiv's API, a mirror, "
        "or `off` to answer that it is not here",
    )
    max_ingest_bytes: int = setting(
        "PAPERBOT_MAX_INGEST_MB", "25", _megabytes, "largest file `/paperadmin ingest` accepts"
    )
    max_decompressed_bytes: int = setting(
        "PAPERBOT_MAX_DECOMPRESSED_MB",
        "256",
        _megabytes,
        "the most one file may hold once decompressed, for `/paperadmin ingest` and `paperbot ingest` "
        "(a `.gz` file, or one read as is): a file past it is refused, and nothing of it stored",
    )
    #: Discord user ids allowed to change the shared corpus from Discord, besides the application's owners
    operator_ids: frozenset[int] = setting(
        "PAPERBOT_OPERATORS",
        "",
        _user_ids,
        "user ids (space or comma separated) who may use `/paperadmin ingest`, besides the application's "
        "owner or its team's admins and developers",
        empty=frozenset(),
    )
    #: stored search listings (their queries) are deleted after this many days; their buttons then expire
    search_retention_days: int = setting(
        "PAPERBOT_SEARCH_RETENTION_DAYS",
        "30",
        _retention_days,
        "stored searches (with their query text) are deleted after this many days (1–3650), at start and "
        "daily; their paging buttons then say the list expired",
    )
    #: each person's limits on the costly commands (bot.services.people.limits); off for load tests
    person_limits: bool = setting(
        "PAPERBOT_PERSON_LIMITS",
        "on",
        _on_off,
        "`on`: each person may run the costly commands only so often (see “Limits for each person”); "
        "`off` lifts the limits, for load tests",
    )

    #: the gateway shards this process connects (None: all of them), of `shard_count` in all
    shard_ids: tuple[int, ...] | None = setting(
        "PAPERBOT_SHARDS",
        "",
        _shard_ids,
        "the gateway shards this process connects, e.g. `0-1` or `2,3` (needs `PAPERBOT_SHARD_COUNT`); "
        "empty: all of them",
    )
    shard_count: int | None = setting(
        "PAPERBOT_SHARD_COUNT",
        "",
        _shard_count,
        "how many gateway shards the bot has, across all its processes (Discord requires one per 2,500 "
        "servers); empty: as many as Discord recommends",
    )
    role: str = setting(
        "PAPERBOT_ROLE",
        "all",
        _role,
        "what this process does: `all`, `gateway` (answers Discord: commands, buttons, reactions) or "
        "`worker` (the background work: digests, the arXiv fetch, pruning; over Discord's REST API, "
        "with no gateway connection)",
    )

    takeover_seconds: int = setting(
        "PAPERBOT_TAKEOVER_SECONDS",
        "30",
        _takeover_seconds,
        "how soon another process takes over the background work and the half-sent digests of one that "
        "died (3–300 s; the dead process's digests resume within about 4/3 of this)",
    )

    def __post_init__(self) -> None:
        if self.shard_ids is not None:
            if self.shard_count is None:
                raise SettingsError(
                    "PAPERBOT_SHARDS needs PAPERBOT_SHARD_COUNT (the shards of all processes)"
                )
            if self.shard_ids[-1] >= self.shard_count:
                raise SettingsError(
                    f"PAPERBOT_SHARDS names shard {self.shard_ids[-1]}, but shards are numbered 0 to "
                    f"{self.shard_count - 1} (PAPERBOT_SHARD_COUNT={self.shard_count})"
                )

    @property
    def connects_gateway(self) -> bool:
        return self.role != "worker"

    @property
    def does_background_work(self) -> bool:
        return self.role != "gateway"

    def local_file(self, suffix: str) -> Path | None:
        """Where this process keeps its file `suffix` (".pending", ".search-index"); None when the
        store is an in-memory database."""
        return self.store.local_file(suffix, self.state_dir)

    def require_token(self) -> str:
        if not self.discord_token:
            raise SettingsError(
                "DISCORD_TOKEN is not set: put the bot token from the Discord developer portal "
                "in the environment or in .env"
            )
        return self.discord_token


def declarations() -> Iterator[tuple[str, Declaration]]:
    """(field name, declaration) of every setting, in the order Settings declares them."""
    for item in dataclasses.fields(Settings):
        yield item.name, item.metadata["setting"]


def load_settings(environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")) -> Settings:
    """Read settings; the process environment wins over `.env`. Raises SettingsError (one line)."""
    values: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    values.update(os.environ if environ is None else environ)
    given: dict[str, Any] = {}
    for name, declaration in declarations():
        value = declaration.read(values.get(declaration.variable))
        if value is not None:  # None: no default either (the field's own empty value stands)
            given[name] = value
    return Settings(**given)
