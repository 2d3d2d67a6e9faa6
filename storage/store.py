"""Where the store is (`PAPERBOT_DB`): a SQLite file or a PostgreSQL server, and opening it.

`StoreLocation.parse("./paperbot.db")` is a SQLite file; `parse("postgresql://user@host/db")` (or
`postgres://`) a PostgreSQL database. `open_database(location)` opens either as a `Database`.

A process also keeps a few files of its own (the outbox of writes not stored yet, the search-index
snapshot): in its state folder (`PAPERBOT_STATE_DIR`), else beside a SQLite file as
`paperbot.db.pending`, or as `paperbot.pending` in the working directory for PostgreSQL
(`local_file`).

A PostgreSQL URL may carry a password (`postgresql://user:PASSWORD@host/db`, or `?password=`):
`redact_url` is what every message, log line and `repr` shows of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from storage.db import Database
from storage.postgres import PostgresDatabase
from storage.sqlite import SQLiteDatabase

_POSTGRES_SCHEMES = ("postgresql", "postgres")
#: URL parameters libpq and asyncpg read a password from
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
_HIDDEN = "***"
#: a PostgreSQL URL inside any text (a log line, an error message)
_STORE_URL = re.compile(r"postgres(?:ql)?://[^\s'\"]+", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` with its password, in the user part or in a `password=` parameter, shown as ***."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    at = rest.partition("?")[0].rfind("@")
    if at < 0:  # no user part, or a password with an unescaped "?" (never a query's user=me@host)
        at = rest.find("@")
        if "=" in rest[: max(at, 0)]:
            at = -1
    if at >= 0 and ":" in rest[:at]:
        rest = f"{rest[:at].partition(':')[0]}:{_HIDDEN}{rest[at:]}"
    before, question, query = rest.partition("?")
    if question:
        query, hash_mark, fragment = query.partition("#")
        parameters = [
            f"{key}={_HIDDEN}" if unquote(key).lower() in _SECRET_PARAMETERS else f"{key}{equals}{value}"
            for key, equals, value in (part.partition("=") for part in query.split("&"))
        ]
        rest = f"{before}?{'&'.join(parameters)}{hash_mark}{fragment}"
    return f"{scheme}{sep}{rest}"


def redact_store_urls(text: str) -> str:
    """`text` with every PostgreSQL URL in it redacted (`redact_url`)."""
    return _STORE_URL.sub(lambda found: redact_url(found.group()), text)


@dataclass(frozen=True, slots=True, repr=False)
class StoreLocation:
    """A SQLite file (`path`) or a PostgreSQL URL (`url`): exactly one is set."""

    path: Path | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.url is None):
            raise ValueError("a store is a SQLite file or a PostgreSQL URL")

    @classmethod
    def parse(cls, raw: str | Path) -> StoreLocation:
        """A path or a postgresql:// URL; ValueError for any other URL."""
        if isinstance(raw, Path):
            return cls(path=raw)
        text = raw.strip()
        scheme, sep, _ = text.partition("://")
        if not sep:
            return cls(path=Path(text))
        if scheme.lower() not in _POSTGRES_SCHEMES:
            raise ValueError(f"must be a SQLite file path or a postgresql:// URL, got a {scheme}:// URL")
        parts = urlsplit(text)
        if not parts.hostname and "host=" not in parts.query:
            raise ValueError("must name the PostgreSQL server: postgresql://USER@HOST[:PORT]/DATABASE")
        return cls(url=text)

    @property
    def in_memory(self) -> bool:
        return self.path is not None and str(self.path) == ":memory:"

    def __str__(self) -> str:
        """The path, or the URL without its password (safe to log)."""
        if self.path is not None:
            return str(self.path)
        assert self.url is not None
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"StoreLocation({str(self)!r})"

    def local_file(self, suffix: str, local_dir: Path | None = None) -> Path | None:
        """Where a process keeps its file `suffix` (".pending", ".search-index") for this store: in
        `local_dir` when given, else beside a SQLite file or in the working directory for PostgreSQL;
        None for an in-memory database."""
        if self.path is None:
            return (local_dir or Path()) / f"paperbot{suffix}"
        if self.in_memory:
            return None
        name = self.path.name + suffix
        return local_dir / name if local_dir is not None else self.path.with_name(name)


async def open_database(location: StoreLocation | Path | str, *, migrate: bool = True) -> Database:
    """Open (and by default migrate) the store at `location`; close it when done."""
    if not isinstance(location, StoreLocation):
        location = StoreLocation.parse(location)
    if location.url is not None:
        return await PostgresDatabase.open(location.url, name=str(location), migrate=migrate)
    assert location.path is not None
    return await SQLiteDatabase.open(location.path, migrate=migrate)
