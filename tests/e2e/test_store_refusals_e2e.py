"""When the store refuses writes for a reason other than "busy" — PostgreSQL read-only after a failover,
SQLite's disk full — people are answered as ever, `paperbot health` and `/paperadmin stats` count what
waits, and nothing they did is lost: it is stored once the store takes writes again
(`tests/store_refusals.py` makes the store refuse)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from store_refusals import RefusingStore

from bot.health import judge
from storage.store import StoreLocation

if TYPE_CHECKING:
    from paperbot_e2e import E2E

StartBot = Callable[..., contextlib.AbstractAsyncContextManager["E2E"]]


@pytest.mark.both_engines
async def test_a_bookmark_clicked_while_the_store_refuses_writes_is_stored_once_it_takes_them_again(
    start_paperbot: StartBot, e2e_store: StoreLocation
) -> None:
    async with RefusingStore.open(e2e_store) as refusing, start_paperbot(store=refusing.location) as e2e:
        # (PostgreSQL: the failover cuts the bot's connections; what was reading then says so once)
        e2e.allow_error("could not index the papers committed to the store")
        server = e2e.server
        found = await server.run_command("bob", "paper search", query="kv cache quantization", limit=3)
        await e2e.services.writes.drained()  # its listing is stored: only the click is refused below
        paper_id = int(re.findall(r"pb:save:(\d+)", str(found.message.components))[0])

        await refusing.refuse(e2e.db)
        saved = await server.click("bob", found, f"pb:save:{paper_id}")
        assert "Saved" in saved.text  # answered at once, as ever
        await asyncio.sleep(2)  # the store has refused it by now, and again after a second
        assert e2e.services.writes.pending == 1, "the click was dropped"
        health = e2e.settings.local_file(".health")
        assert health is not None

        def reported() -> bool:
            return judge(health)[1].endswith("; accepted writes waiting to be stored: 1")

        await server.eventually(reported, timeout=15, what="paperbot health to count the waiting click")
        stats = await server.run_command("alice", "paperadmin stats")
        waiting = next(f["value"] for f in stats.embed["fields"] if f["name"].startswith("Not stored yet"))
        assert waiting.startswith("1 write (reactions, clicks, listings); the store has refused")
        assert await _feedback(e2e) == set()

        await refusing.accept(e2e.db)
        await e2e.services.writes.drained(timeout=60)
        assert await _feedback(e2e) == {(server.user("bob").id, paper_id, "save")}


async def _feedback(e2e: E2E) -> set[tuple[int, int, str]]:
    rows = await e2e.db.fetchall("SELECT user_id, paper_id, signal FROM feedback")
    return {(int(r[0]), int(r[1]), str(r[2])) for r in rows}
