"""While another process holds the database's write lock (a `paperbot ingest`, a backup tool, an
operator's sqlite3 shell), people keep being answered within Discord's 3 s, and nothing they did is
lost: it is stored once the lock is free. The lock is held longer than SQLite's busy timeout (5 s)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from paperbot_e2e import E2E

HELD = 6.0  # seconds: past SQLite's busy timeout, so a write that waited for it would fail


@pytest.fixture
def other_writer(e2e: E2E) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(e2e.settings.store.path, isolation_level=None)
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


async def _feedback(e2e: E2E) -> set[tuple[int, int, str]]:
    rows = await e2e.db.fetchall("SELECT user_id, paper_id, signal FROM feedback")
    return {(int(r[0]), int(r[1]), str(r[2])) for r in rows}


async def test_a_reaction_while_another_process_holds_the_lock_is_stored_once_it_lets_go(
    e2e: E2E, other_writer: sqlite3.Connection
) -> None:
    server = e2e.server
    shown = await server.run_command("bob", "paper show", paper="1", where="papers")
    assert shown.message is not None
    await server.wait_quiet()  # the bot has added its three reactions
    other_writer.execute("BEGIN IMMEDIATE")
    started = asyncio.get_running_loop().time()
    await server.react("bob", shown.message, "👍")
    await server.react("carol", shown.message, "🔖")
    await asyncio.sleep(HELD - (asyncio.get_running_loop().time() - started))
    assert await _feedback(e2e) == set()  # nothing could be written yet
    other_writer.execute("COMMIT")
    bob, carol = server.user("bob").id, server.user("carol").id
    await server.eventually(lambda: _feedback(e2e), timeout=10, what="both reactions to be stored")
    await e2e.services.writes.drained()
    assert await _feedback(e2e) == {(bob, 1, "like"), (carol, 1, "save")}


async def test_search_paging_and_rating_clicks_are_answered_while_another_process_holds_the_lock(
    e2e: E2E, other_writer: sqlite3.Connection
) -> None:
    """Each of these is answered within 3 s (the sandbox fails the call otherwise), and the listing
    and the ratings are in the store once the lock is free."""
    server = e2e.server
    other_writer.execute("BEGIN IMMEDIATE")
    started = asyncio.get_running_loop().time()
    result = await server.run_command("bob", "paper search", query="language models", limit=2)
    page_two = await server.click("bob", result, "Next ▶")
    assert "page 2 of" in page_two.message.embeds[0]["footer"]["text"]
    listed = [int(i) for i in re.findall(r"pb:save:(\d+)", str(page_two.message.components))]
    saved = await server.click("bob", page_two, f"pb:save:{listed[0]}")
    assert saved.ephemeral
    assert "Saved" in saved.text
    liked = await server.click("bob", page_two, f"pb:like:{listed[1]}")
    assert "Noted" in liked.text
    undone = await server.click("bob", page_two, f"pb:like:{listed[1]}")  # pressed again: taken back
    assert "Removed your 👍" in undone.text
    similar = await server.run_command("carol", "paper similar", paper="1")
    assert "Papers like" in similar.text
    assert asyncio.get_running_loop().time() - started < HELD
    await asyncio.sleep(HELD - (asyncio.get_running_loop().time() - started))
    other_writer.execute("COMMIT")
    await e2e.services.writes.drained()
    bob = server.user("bob").id
    assert await _feedback(e2e) == {(bob, listed[0], "save")}
    stored = await e2e.db.fetchall("SELECT id, kind FROM searches ORDER BY id")
    assert [(int(r[0]), str(r[1])) for r in stored] == [(result.id, "search"), (similar.id, "similar")]
