"""What paperbot keeps about people: INFO logs hold no one's topics, queries or ratings (when a button
fails too); stored searches expire; forget-me says what it cannot reach (backups)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.services.papers.ingest import ingest_bytes
from bot.services.people.privacy import BACKUP_RETENTION_DAYS
from bot.tree import GENERIC_FAILURE
from storage.db import Database
from storage.store import open_database
from tests.services.recommend.test_topic_breadth import library

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


async def library_store(tmp_path: Path) -> Path:
    """A store where "reinforcement learning" is broad (60 of 200 papers, three sub-areas) and 70
    papers are about object detection (tests/services/test_topic_breadth.py's library, each abstract
    longer)."""
    path = tmp_path / "library.db"
    papers = [
        {
            "id": f"p{row.paper_id}",
            "title": row.title,
            # longer, so a digest shows its gist with a "Full abstract" button
            "abstract": f"{row.abstract} Earlier work on {row.title.lower()} needs labels for every "
            "example. In this paper, we propose a method trained from a handful of labelled examples. "
            "It matches fully supervised methods on three benchmarks.",
        }
        for row in library()
    ]
    async with await open_database(path) as db:
        await ingest_bytes(db, "library.jsonl", "\n".join(json.dumps(p) for p in papers).encode())
    return path


async def test_a_failed_button_logs_the_button_and_the_person_but_not_the_paper_or_topic(
    start_paperbot: StartBot,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """👍, "Full abstract" and "More like this" on a digest paper and a narrower topic's button, each
    failing on the store: the person is told, the ERROR line names the button and the person, and which
    paper or topic it was pressed for is logged at DEBUG only."""
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="bot")
    async with start_paperbot(store=await library_store(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        broad = await server.run_command("bob", "paper interests add", topic="reinforcement learning")
        await server.run_command("bob", "paper subscribe", topics="object detection", count=3)
        await server.run_command("bob", "paper digest")
        await server.eventually(lambda: len([m for m in server.dm_messages("bob") if m.embeds]) == 3)
        await server.wait_quiet()
        digest_paper = next(m for m in server.dm_messages("bob") if m.embeds)
        paper_id = await e2e.services.messages.paper_for(digest_paper.id)
        assert paper_id is not None

        async def store_fails(*args: object, **kwargs: object) -> None:
            raise RuntimeError("the store failed")

        for service, method in (
            (e2e.services.feedback, "plan_button"),
            (e2e.services.papers, "get"),
            (e2e.services.search_service, "similar"),
            (e2e.services.profiles, "narrow_topic"),
        ):
            monkeypatch.setattr(service, method, store_fails)
        caplog.clear()
        pressed = [
            await server.click("bob", digest_paper, "👍"),
            await server.click("bob", digest_paper, "Full abstract"),
            await server.click("bob", digest_paper, "More like this"),
            await server.click("bob", broad, "offline reinforcement learning"),
        ]
        for button in (
            "rating button",
            "full abstract button",
            "more like this button",
            "narrower topic button",
        ):
            e2e.allow_error(f"{button} failed")

    assert all(GENERIC_FAILURE in result.text for result in pressed)
    bob = server.bob.id
    shown = logging.Formatter()  # the whole line, traceback included
    above = [shown.format(r) for r in paperbot_records(caplog)]
    assert sum(f"user={bob}" in line and " button failed" in line for line in above) == 4
    detail = re.compile(rf"(?:[:#]|paper |button ){paper_id}\b")
    assert not [line for line in above if detail.search(line)], "a line names the paper bob pressed for"
    assert not [line for line in above if "offline reinforcement" in line], "a line names bob's topic"
    debug = [
        r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and r.name.startswith("bot.")
    ]
    assert any(f"like on paper {paper_id}" in line and str(bob) in line for line in debug)
    assert any("offline reinforcement learning" in line and str(bob) in line for line in debug)


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
