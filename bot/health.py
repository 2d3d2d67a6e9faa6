"""This process's heartbeat, for a container's or a supervisor's health check (`paperbot health`).

While `paperbot run` runs it writes `paperbot.health` in its state folder (beside a SQLite database
unless `PAPERBOT_STATE_DIR` says otherwise) every :data:`HEARTBEAT_SECONDS`: when, its pid and role,
whether it leads the background work, and what is wrong, if anything — the store did not answer, the
gateway is not connected (or some of this process's shards are not), a worker is not logged in yet,
the store has refused the writes waiting in the outbox for a minute or more, writes are in the outbox's
dead letter — and how many writes wait in its outbox (`bot.services.write_behind`).
`paperbot health`, run with the same settings, reads it: healthy when the last beat is at most
:data:`STALE_AFTER` old and names nothing wrong. A process that hangs stops beating, so its beat goes
stale; one that lost Discord or its store keeps beating and says what it lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

#: How often a running process writes its beat.
HEARTBEAT_SECONDS = 10.0
#: A beat older than this (three missed) means the process is not running, or hangs.
STALE_AFTER = timedelta(seconds=3 * HEARTBEAT_SECONDS)


@dataclass(frozen=True)
class Beat:
    at: datetime
    pid: int
    role: str
    leading: bool | None  # None: a gateway process, which never does the background work
    problems: tuple[str, ...] = ()
    #: writes accepted into the outbox and not stored yet, and those of them in its dead letter
    waiting: int = 0
    dead: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "at": self.at.astimezone(UTC).isoformat(timespec="seconds"),
                "pid": self.pid,
                "role": self.role,
                "leading": self.leading,
                "problems": list(self.problems),
                "waiting": self.waiting,
                "dead": self.dead,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Beat:
        """ValueError when the text is not a beat."""
        try:
            data = json.loads(text)
            at = datetime.fromisoformat(data["at"])
            leading = data["leading"]
            problems = data["problems"]
            beat = cls(
                at,
                int(data["pid"]),
                str(data["role"]),
                leading,
                tuple(str(p) for p in problems),
                int(data.get("waiting", 0)),
                int(data.get("dead", 0)),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"not a paperbot heartbeat ({error})") from None
        if at.tzinfo is None or not (leading is None or isinstance(leading, bool)):
            raise ValueError("not a paperbot heartbeat")
        return beat


def write_beat(path: Path, beat: Beat) -> None:
    """Replace the file at once (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(beat.to_json() + "\n", "utf-8")
    os.replace(partial, path)


def make_beat(
    role: str,
    leading: bool | None,
    problems: Sequence[str],
    *,
    now: datetime | None = None,
    waiting: int = 0,
    dead: int = 0,
) -> Beat:
    return Beat(now or datetime.now(UTC), os.getpid(), role, leading, tuple(problems), waiting, dead)


def judge(path: Path, *, now: datetime | None = None) -> tuple[bool, str]:
    """(healthy, one line saying why) for the beat at ``path``."""
    now = now or datetime.now(UTC)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return False, f"no heartbeat at {path}: paperbot run is not running with these settings (yet)"
    try:
        beat = Beat.from_json(text)
    except ValueError as error:
        return False, f"{path}: {error}"
    age = (now - beat.at).total_seconds()
    if now - beat.at > STALE_AFTER:
        return False, (
            f"the last heartbeat (pid {beat.pid}, {beat.role}) is {age:.0f} s old: the process stopped or hangs"
        )
    if beat.problems:
        return False, f"{beat.role} (pid {beat.pid}): " + "; ".join(beat.problems)
    leading = {None: "", True: ", leading the background work", False: ", standing by"}[beat.leading]
    line = f"healthy: {beat.role} (pid {beat.pid}){leading}, heartbeat {max(age, 0):.0f} s ago"
    if beat.waiting:
        line += f"; accepted writes waiting to be stored: {beat.waiting}"
    return True, line
