"""`/paper forget-me` wins everywhere: nothing about the person comes back from a reaction another
process accepted and had not stored when it died, nor from a digest going out to them meanwhile; and
someone who comes back afterwards is stored as anyone."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest
from bot_process import BotProcess

from bot.sandbox import SandboxServer
from bot.services.papers.ingest.runner import ensure_shipped_corpus
from storage.db import Database
from storage.store import StoreLocation, open_database

if TYPE_CHECKING:
    from paperbot_e2e import E2E

#: Where a person's rows are (the column naming them).
PERSONAL = (
    ("users", "id"),
    ("interests", "user_id"),
    ("feedback", "user_id"),
    ("recommendations_shown", "user_id"),
    ("subscriptions", "user_id"),
    ("digest_sent", "user_id"),
    ("posted_messages", "recipient_id"),
    ("searches", "user_id"),
    ("author_follows", "user_id"),
    ("mutes", "user_id"),
    ("library_texts", "user_id"),
)


async def rows_about(db: Database, user_id: int) -> dict[str, int]:
    """How many rows of each table are about the person (tables with none left out)."""
    found = {}
    for table, column in PERSONAL:
        count = int(await db.fetchval(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (user_id,)))
        if count:
            found[table] = count
    return found


def outbox_entries(path: Path) -> int:
    """What a process's outbox file holds, its dead letter too (read beside the process, as an operator
    would)."""
    if not path.exists():
        return 0
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE name IN ('pending', 'dead_letter')")
        ]
        return sum(int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]) for table in tables)
    finally:
        conn.close()


async def forget_me(server: SandboxServer, user: str) -> None:
    asked = await server.run_command(user, "paper forget-me")
    done = await server.click(user, asked, "Delete everything")
    assert "deleted everything" in done.content


@pytest.mark.slow
async def test_a_reaction_a_dead_process_accepted_before_its_person_forgot_elsewhere_never_comes_back(
    sandbox: SandboxServer, postgres_store: StoreLocation, tmp_path: Path
) -> None:
    """Two processes on one PostgreSQL store, a shard each. B (shard 1) accepts carol's 👍 while another
    writer holds the tables it writes, and is killed before storing it; carol asks A (shard 0) to
    forget her, which finds nothing of her; B starts again and replays its outbox: nothing about carol
    is stored. Her next 👍, after that, is stored: she may come back."""
    server = sandbox
    second_lab = server.add_guild("Second Lab", members={"bob": False, "carol": False}, shard=(1, 2))
    elsewhere = server.guild_channel(second_lab, "general")
    carol = server.user("carol").id
    started: list[BotProcess] = []

    async def start(shard: int, store: StoreLocation) -> BotProcess:
        folder = tmp_path / f"shard{shard}"
        folder.mkdir(exist_ok=True)
        process = await BotProcess.start(
            server,
            store,
            folder,
            PAPERBOT_STATE_DIR=str(folder),
            PAPERBOT_SHARDS=str(shard),
            PAPERBOT_SHARD_COUNT="2",
        )
        started.append(process)
        await process.wait_for(r"ready as paperbot")
        return process

    async with await open_database(postgres_store) as db:
        await ensure_shipped_corpus(db)
        try:
            a = await start(0, postgres_store)
            b = await start(1, postgres_store)
            shown = await server.run_command("carol", "paper show", paper="Medusa", where=elsewhere)
            assert shown.message is not None
            await server.eventually(
                lambda: db.fetchval(
                    "SELECT COUNT(*) FROM posted_messages WHERE message_id = ?", (shown.message.id,)
                ),
                timeout=10,
                what="B to store which paper its message shows",
            )
            assert await rows_about(db, carol) == {}

            other_writer = await asyncpg.connect(postgres_store.url)
            try:
                await other_writer.execute("BEGIN")
                await other_writer.execute("LOCK TABLE users, feedback IN EXCLUSIVE MODE")
                await server.react("carol", shown.message, "👍")
                pending = tmp_path / "shard1" / "paperbot.pending"
                await server.eventually(
                    lambda: outbox_entries(pending) == 1, timeout=10, what="B to accept the 👍"
                )
                await b.kill()
            finally:
                await other_writer.close()  # (its transaction ends: the tables are free)

            await forget_me(server, "carol")  # in Paper Lab: shard 0, process A
            assert await rows_about(db, carol) == {}

            b = await start(1, postgres_store)
            await server.eventually(
                lambda: outbox_entries(pending) == 0, timeout=20, what="B to replay its outbox"
            )
            assert await rows_about(db, carol) == {}, "the 👍 accepted before forget-me brought carol back"

            found = await server.run_command(
                "carol", "paper search", query="speculative decoding", where=elsewhere
            )
            assert "ecoding" in found.text  # B answers on its shard again
            await server.unreact("carol", shown.message, "👍")
            await server.react("carol", shown.message, "👍")  # she comes back
            await server.eventually(
                lambda: db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (carol,)),
                timeout=10,
                what="carol's new 👍 to be stored",
            )
            assert await b.stop() == 0
            assert await a.stop() == 0
        finally:
            for process in started:
                await process.kill()
    assert "Traceback" not in "\n".join(p.log for p in started)


@pytest.mark.both_engines
async def test_forget_me_while_a_digest_goes_out_leaves_nothing_of_the_person(e2e: E2E) -> None:
    """Carol, interested in large language models, asks for her digest; Discord holds the third paper back (a 429 for 3 s), and meanwhile she
    asks to be forgotten. The paper in flight goes out, no other follows, and afterwards nothing about
    her is stored: no row, no sent records, no posted messages, no DM channel."""
    server = e2e.server
    carol = server.user("carol").id
    papers = itertools.count()

    def third_paper(method: str, path: str, body: Any) -> bool:
        return isinstance(body, dict) and bool(body.get("embeds")) and next(papers) == 2

    await server.run_command("carol", "paper interests add", topic="large language models")
    await server.run_command("carol", "paper interests mute", topic="diffusion models")
    assert await rows_about(e2e.db, carol) != {}
    held = server.faults.add("POST /channels/*/messages", "429", retry_after=3.0, when=third_paper)
    digest = asyncio.create_task(server.run_command("carol", "paper digest", timeout=30))
    await server.eventually(lambda: held.hits, timeout=20, what="the third paper to be held back")
    await forget_me(server, "carol")
    assert "Sent 3 papers" in (await digest).text
    await server.wait_quiet(quiet=1.0)
    sent = [m for m in server.dm_messages("carol") if m.embeds]
    assert len(sent) == 3, [m.embeds[0].get("title") for m in sent]
    assert await rows_about(e2e.db, carol) == {}
