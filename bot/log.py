"""Logging set-up, called once from the CLI: one line per event, discord.http at WARNING.

Every record becomes exactly one line, `time LEVEL logger: message`; a traceback is folded into that
line (newlines written as `\\n`), so `grep`, `journalctl` and `docker logs` see one event per line.
The bot token is replaced by `[token]` in the final line, and the password of any PostgreSQL URL by
`***` (`storage.store.redact_url`), whatever logged it and wherever it appears (message, arguments or
traceback).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from storage.store import redact_store_urls

LINE_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


class OneLineFormatter(logging.Formatter):
    """Formats a record as one line and removes the bot token and store passwords from it."""

    def __init__(self, token: str | None = None) -> None:
        super().__init__(LINE_FORMAT, DATE_FORMAT)
        self._token = token

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        if self._token:
            line = line.replace(self._token, "[token]")
        return redact_store_urls(line).replace("\r", "").replace("\n", "\\n")


def context_ids(
    *,
    guild: int | None = None,
    channel: int | None = None,
    user: int | None = None,
    command: str | None = None,
) -> str:
    """The ids of an event as `guild=… channel=… user=… command=/…`, for the end of a log line."""
    parts = [f"guild={guild}", f"channel={channel}", f"user={user}"]
    if command:
        parts.append(f"command=/{command.lstrip('/')}")
    return " ".join(parts)


def interaction_ids(interaction: Any) -> str:
    """`context_ids` of a discord.Interaction (read by attribute, so this module needs no discord)."""
    command = getattr(interaction, "command", None)
    user = getattr(interaction, "user", None)
    return context_ids(
        guild=getattr(interaction, "guild_id", None),
        channel=getattr(interaction, "channel_id", None),
        user=getattr(user, "id", None),
        command=getattr(command, "qualified_name", None),
    )


def setup_logging(level: str = "INFO", *, token: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(token))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("discord").setLevel(max(logging.INFO, root.level))
    logging.getLogger("discord.http").setLevel(logging.WARNING)
    logging.getLogger("discord.gateway").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    logging.getLogger("aiosqlite").setLevel(logging.WARNING)
