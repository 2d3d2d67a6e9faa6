"""What paperbot keeps about people: INFO logs hold no one's topics, queries or ratings; stored searches
expire; forget-me says what it cannot reach (backups)."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.services.privacy import BACKUP_RETENTION_DAYS
from storage.db import Database
from storage.store import open_database

if TYPE_CHECKING:
    from paperbot_e2e import E2E

StartBot = Callable[..., contextlib.AbstractAsyncContextManager["E2E"]]

QUERY = "speculative decoding draft tokens"
SIMILAR_OF = "kv cache quantization"
TOPIC = "sparse mixture of experts routing"
DIGEST_TOPICS = "retrieval augmented generation, long context"


def paperbot_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What paperbot itself logged at INFO or above (not the sandbox standing in for Discord)."""
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.INFO
        and r.name.split(".")[0] in ("bot", "storage", "discord")
        and not r.name.startswith("bot.sandbox")
    ]


async def test_info_logs_hold_no_topics_queries_or_ratings(
    e2e: E2E, caplog: pytest.LogCaptureFixture
) -> None:
    """Search, similar, interests, subscribe with topics, a digest, a 👍 reaction and a 🔖 button:
    at INFO the log has none of the words people typed, and no line ties a person to a paper."""
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="bot")  # (also lowers caplog's handler to DEBUG)
    server = e2e.server
    bob = server.bob
    found = await server.run_command("bob", "paper search", query=QUERY, limit=3)
    assert "matched" in found.text
    similar_of = e2e.services.search.search(SIMILAR_OF, limit=1).hits[0].paper_id
    await server.run_command("bob", "paper similar", paper=str(similar_of))
    await server.run_command("bob", "paper interests add", topic=TOPIC)
    await server.run_command(
        "bob", "paper subscribe", topics=DIGEST_TOPICS, time="09:00", timezone="Asia/Tokyo"
    )
    await server.run_command("bob", "paper digest")

    shown = await server.run_command("bob", "paper show", paper=str(similar_of))
    assert shown.message is not None
    await server.eventually(lambda: len(shown.message.reactions) == 3, what="the bot's 👍 👎 🔖")
    await server.react("bob", shown.message, "👍")
    saved_id = int(re.findall(r"pb:save:(\d+)", str(found.message.components))[0])
    await server.click("bob", found, f"pb:save:{saved_id}")
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (bob.id,)),
        what="bob's ratings stored",
    )
    await server.wait_quiet()
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (bob.id,)) == 2

    records = paperbot_records(caplog)
    assert any(str(bob.id) in r.getMessage() for r in records), "the journeys were logged at all"
    text = "\n".join(r.getMessage() for r in records).casefold()
    for typed in (QUERY, TOPIC, *DIGEST_TOPICS.split(", ")):
        assert typed.casefold() not in text, f"{typed!r} reached the INFO log"
    for rated in (similar_of, saved_id):
        assert not ties(records, bob.id, rated), f"an INFO line ties bob to paper {rated}"
    # the same check finds the tie in the DEBUG lines, where an operator debugging can still see it
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.name.startswith("bot.")]
    assert ties(debug, bob.id, similar_of)
    assert ties(debug, bob.id, saved_id)


def ties(records: list[logging.LogRecord], user_id: int, paper_id: int) -> list[str]:
    """Lines naming both the user and the paper ("user 42 like paper 7")."""
    pattern = re.compile(rf"\bpaper #?{paper_id}\b")
    return [m for r in records if str(user_id) in (m := r.getMessage()) and pattern.search(m)]


async def test_forget_me_says_what_it_cannot_reach(e2e: E2E) -> None:
    """Both the question and the answer of forget-me say that backups keep a copy, and for how long."""
    server = e2e.server
    await server.run_command("carol", "paper interests add", topic=TOPIC)
    asked = await server.run_command("carol", "paper forget-me")
    assert "Backups" in asked.content
    assert f"{BACKUP_RETENTION_DAYS} days" in asked.content
    done = await server.click("carol", asked, "Delete everything")
    assert "deleted everything" in done.content
    assert "backups of the database taken before now still hold a copy" in done.content
    assert f"more than {BACKUP_RETENTION_DAYS} days old" in done.content


async def _store_search(db: Database, query: str, created_at: str) -> int:
    async with db.transaction() as conn:
        return int(
            await conn.fetchval(
                "INSERT INTO searches (kind, query, page_size, user_id, created_at) "
                "VALUES ('search', ?, 3, 7, ?) RETURNING id",
                (query, created_at),
            )
        )


async def test_searches_past_their_retention_are_deleted_at_start(
    start_paperbot: StartBot, tmp_path: Path
) -> None:
    """A listing older than PAPERBOT_SEARCH_RETENTION_DAYS is deleted when the bot starts (its buttons
    then say it expired); a recent one stays; the daily job is scheduled."""
    path = tmp_path / "paperbot.db"
    async with await open_database(path) as db:
        old = await _store_search(db, "an old query", "2020-01-01T00:00:00+00:00")
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO searches (kind, query, page_size, user_id, created_at) "
                "VALUES ('search', 'a recent query', 3, 7, strftime('%Y-%m-%dT%H:%M:%S+00:00', 'now', '-6 days'))"
            )
    async with start_paperbot(store=path, search_retention_days=7) as running:
        queries = [r[0] for r in await running.db.fetchall("SELECT query FROM searches ORDER BY id")]
        assert queries == ["a recent query"]
        assert running.bot.scheduler.jobs.get_job("privacy:prune") is not None
        assert await running.db.fetchval("SELECT COUNT(*) FROM searches WHERE id = ?", (old,)) == 0
