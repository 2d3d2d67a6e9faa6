"""The files a 👍 by reaction runs through, traced, are the ones CONTRIBUTING.md "The files each journey
touches" lists: every file of `bot/`, `storage/` and `paperindex/` in which a function ran between the
reaction and its row in the store (`sys.setprofile` and `threading.setprofile`). Not counted, as
there: what every journey runs (`storage/db.py`, the engine's module, `storage/models.py`,
`bot/log.py`), and the sandbox that plays Discord. Two reactions are traced and the files both ran
through kept, so a timer of the bot that fires meanwhile is not counted as the journey's."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paperbot_e2e import E2E

ROOT = Path(__file__).resolve().parents[2]
TRACED = ("bot/", "storage/", "paperindex/")
EVERY_JOURNEY = {
    "storage/db.py",
    "storage/sqlite.py",
    "storage/postgres.py",
    "storage/models.py",
    "bot/log.py",
}


@contextmanager
def files_run() -> Iterator[set[str]]:
    """The files of the journey (`TRACED`, less `EVERY_JOURNEY` and the sandbox) in which a function
    ran meanwhile, in any thread."""
    seen: set[str] = set()
    codes: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename not in codes:
            codes.add(frame.f_code.co_filename)
            path = Path(frame.f_code.co_filename)
            if path.is_relative_to(ROOT):
                name = path.relative_to(ROOT).as_posix()
                if (
                    name.startswith(TRACED)
                    and name not in EVERY_JOURNEY
                    and not name.startswith("bot/sandbox/")
                ):
                    seen.add(name)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def documented(journey: str) -> list[str]:
    """The files CONTRIBUTING.md lists for a journey (its bullet, up to "Before,")."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    bullet = text.split(f"\n- {journey}:", 1)[1].split("\n- ", 1)[0].split("Before,", 1)[0]
    return sorted(re.findall(r"`([\w/]+\.py)`", bullet))


async def test_a_like_by_reaction_reaches_its_storage_through_the_files_contributing_names(e2e: E2E) -> None:
    server = e2e.server
    alice = server.user("alice").id
    traced: list[set[str]] = []
    for stored, paper in enumerate(("1", "2"), start=1):
        shown = await server.run_command("alice", "paper show", paper=paper)
        message = shown.message
        assert message is not None
        await server.eventually(
            lambda m=message: e2e.db.fetchval("SELECT 1 FROM posted_messages WHERE message_id = ?", (m.id,)),
            what="the paper's message to be known",
        )
        await server.wait_quiet()
        with files_run() as seen:
            await server.react("alice", message, "👍")
            await server.eventually(
                lambda n=stored: e2e.db.fetchval(
                    "SELECT COUNT(*) FROM feedback WHERE user_id = ? HAVING COUNT(*) >= ?", (alice, n)
                ),
                what="alice's 👍 to be stored",
            )
        traced.append(seen)
    assert sorted(set.intersection(*traced)) == documented("a 👍 by reaction")
