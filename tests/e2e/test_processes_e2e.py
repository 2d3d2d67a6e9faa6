"""Two `paperbot run` processes on one PostgreSQL store, through the sandbox's sharded gateway, one shard
each, both able to do the background work: searches are answered on both shards; a 👍 in the second
shard's server changes the digest the leading process delivers; that process is killed (SIGKILL)
while the digest goes out, and the survivor takes the lead and finishes it — every paper once, none
missing, one header.

The processes are real (`python -m bot run`), so a kill is a kill; PAPERBOT_TAKEOVER_SECONDS=3 makes
the survivor take over within seconds instead of the default half minute."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bot_process import BotProcess

from bot.sandbox import SandboxServer
from bot.sandbox.emulator.interactions import InteractionResult
from bot.sandbox.emulator.state import SandboxMessage
from bot.services.papers.ingest.runner import ensure_shipped_corpus
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository
from storage.store import StoreLocation, open_database

pytestmark = pytest.mark.slow

TAKEOVER = "3"


def _named_by_a_like(text: str) -> bool:
    """A pick's reason names the liked paper: "like: …", or the interest the 👍 started, “its title”."""
    return "like: " in text or "for your interest in “" in text


def answering_shard(server: SandboxServer, result: InteractionResult) -> tuple[int, int]:
    shards = {r.session_id: tuple(r.d["shard"]) for r in server.dispatched("READY")}
    (sent,) = [r for r in server.dispatched("INTERACTION_CREATE") if int(r.d["id"]) == result.id]
    return shards[sent.session_id]


@contextlib.asynccontextmanager
async def bot_processes(
    server: SandboxServer, store: StoreLocation, tmp_path: Path
) -> AsyncIterator[list[BotProcess]]:
    """Shard 0 of 2 started first (so it leads), then shard 1 of 2; killed at the end if still running."""
    started: list[BotProcess] = []
    try:
        for shard in (0, 1):
            folder = tmp_path / f"shard{shard}"
            folder.mkdir()
            bot = await BotProcess.start(
                server,
                store,
                folder,
                PAPERBOT_STATE_DIR=str(folder),
                PAPERBOT_SHARDS=str(shard),
                PAPERBOT_SHARD_COUNT="2",
                PAPERBOT_TAKEOVER_SECONDS=TAKEOVER,
            )
            started.append(bot)
            await bot.wait_for(r"ready as paperbot")
        yield started
    finally:
        for bot in started:
            await bot.kill()


async def test_two_processes_share_the_work_and_a_killed_leaders_digest_is_finished_once(
    sandbox: SandboxServer, postgres_store: StoreLocation, tmp_path: Path
) -> None:
    server = sandbox
    second_lab = server.add_guild("Second Lab", members={"bob": False, "carol": False}, shard=(1, 2))
    elsewhere = server.guild_channel(second_lab, "general")
    async with await open_database(postgres_store) as db:
        await ensure_shipped_corpus(db)
        async with bot_processes(server, postgres_store, tmp_path) as (zero, one):
            await zero.wait_for(r"leading: this process does the background work")
            assert "leading:" not in one.log

            here = await server.run_command("bob", "paper search", query="speculative decoding", limit=3)
            there = await server.run_command(
                "bob", "paper search", query="speculative decoding", limit=3, where=elsewhere
            )
            assert (answering_shard(server, here), answering_shard(server, there)) == ((0, 2), (1, 2))
            assert "ecoding" in here.text
            assert "ecoding" in there.text

            # carol likes a paper in the second shard's server: the process on shard 1 stores it
            shown = await server.run_command("carol", "paper show", paper="Medusa", where=elsewhere)
            await server.react("carol", shown.message, "👍")
            await server.eventually(
                lambda: db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.carol.id,)),
                timeout=10,
                what="carol's 👍 stored by the shard 1 process",
            )

            # carol's digest fell due 20 minutes ago (set up an hour ago): the leader catches it up
            killed: list[int] = []

            def kill_the_sender_at_the_second_paper(kind: str, message: SandboxMessage) -> None:
                papers = [m for m in server.dm_messages("carol") if m.embeds]
                if kind == "create" and message.embeds and len(papers) == 2 and not killed:
                    os.kill(zero.pid, signal.SIGKILL)  # mid-digest: paper 2 is out, its answer not yet
                    killed.append(zero.pid)

            unsubscribe = server.subscribe(kill_the_sender_at_the_second_paper)
            now = datetime.now(UTC)
            due = (now - timedelta(minutes=20)).strftime("%H:%M")
            fields = ScheduleFields(("speculative decoding",), due, "UTC", "daily", 0, 4)
            await SubscriptionRepository(db).upsert_user(
                server.carol.id, fields, at=(now - timedelta(hours=1)).isoformat(timespec="seconds")
            )
            await server.eventually(lambda: killed, timeout=30, what="the leader sending carol's digest")
            unsubscribe()

            await one.wait_for(r"leading: this process does the background work", timeout=15)
            await one.wait_for(r"resuming digest run", timeout=15)

            def finished() -> bool:
                return len([m for m in server.dm_messages("carol") if m.embeds]) >= 4

            await server.eventually(finished, timeout=20, what="carol's 4 papers")
            await server.wait_quiet(quiet=1.0)
            dms = server.dm_messages("carol")
            papers = [m for m in dms if m.embeds]
            assert len(papers) == 4, [m.embeds[0].get("title") for m in papers]
            assert len([m for m in dms if not m.embeds]) == 1  # one header
            ids = [
                await db.fetchval("SELECT paper_id FROM posted_messages WHERE message_id = ?", (m.id,))
                for m in papers
            ]
            assert None not in ids
            assert len(set(ids)) == 4  # no paper twice
            assert await db.fetchval("SELECT status FROM digest_runs") == "sent"
            assert any(_named_by_a_like(m.text) for m in papers), (
                "the 👍 in the other shard's server shaped it"
            )

            assert await one.stop() == 0
    assert "Traceback" not in one.log


async def test_a_worker_killed_mid_digest_is_restarted_and_finishes_it_once(
    sandbox: SandboxServer, postgres_store: StoreLocation, tmp_path: Path
) -> None:
    """The processes of deploy/docker-compose.postgres.yml: a gateway and a worker. A 👍 through the
    gateway shapes the digest the worker sends; the worker is killed while it goes out, and a new worker
    on the same state folder (what Docker's `restart: unless-stopped` starts) finishes it — every paper
    once, one header. The gateway never does the background work."""
    server = sandbox
    async with await open_database(postgres_store) as db:
        await ensure_shipped_corpus(db)
        started: list[BotProcess] = []

        async def start(role: str) -> BotProcess:
            folder = tmp_path / role
            folder.mkdir(exist_ok=True)
            process = await BotProcess.start(
                server,
                postgres_store,
                folder,
                PAPERBOT_ROLE=role,
                PAPERBOT_STATE_DIR=str(folder),
                PAPERBOT_TAKEOVER_SECONDS=TAKEOVER,
            )
            started.append(process)
            return process

        try:
            gateway = await start("gateway")
            await gateway.wait_for(r"ready as paperbot")
            worker = await start("worker")
            await worker.wait_for(r"leading: this process does the background work")

            shown = await server.run_command("carol", "paper show", paper="Medusa")
            await server.react("carol", shown.message, "👍")
            await server.eventually(
                lambda: db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.carol.id,)),
                timeout=10,
                what="carol's 👍 stored by the gateway",
            )

            killed: list[int] = []

            def kill_the_worker_at_the_second_paper(kind: str, message: SandboxMessage) -> None:
                papers = [m for m in server.dm_messages("carol") if m.embeds]
                if kind == "create" and message.embeds and len(papers) == 2 and not killed:
                    os.kill(worker.pid, signal.SIGKILL)
                    killed.append(worker.pid)

            unsubscribe = server.subscribe(kill_the_worker_at_the_second_paper)
            now = datetime.now(UTC)
            fields = ScheduleFields(
                ("speculative decoding",),
                (now - timedelta(minutes=20)).strftime("%H:%M"),
                "UTC",
                "daily",
                0,
                4,
            )
            await SubscriptionRepository(db).upsert_user(
                server.carol.id, fields, at=(now - timedelta(hours=1)).isoformat(timespec="seconds")
            )
            await server.eventually(lambda: killed, timeout=30, what="the worker sending carol's digest")
            unsubscribe()
            await worker.kill()

            restarted = await start("worker")
            await restarted.wait_for(r"leading: this process does the background work", timeout=30)
            await restarted.wait_for(r"resuming digest run", timeout=15)
            await server.eventually(
                lambda: len([m for m in server.dm_messages("carol") if m.embeds]) >= 4,
                timeout=20,
                what="carol's 4 papers",
            )
            await server.wait_quiet(quiet=1.0)
            dms = server.dm_messages("carol")
            papers = [m for m in dms if m.embeds]
            ids = [
                await db.fetchval("SELECT paper_id FROM posted_messages WHERE message_id = ?", (m.id,))
                for m in papers
            ]
            assert len(ids) == 4, [m.embeds[0].get("title") for m in papers]
            assert None not in ids
            assert len(set(ids)) == 4  # no paper twice
            assert len([m for m in dms if not m.embeds]) == 1  # one header
            assert await db.fetchval("SELECT status FROM digest_runs") == "sent"
            assert any(_named_by_a_like(m.text) for m in papers), "the 👍 through the gateway shaped it"
            assert "leading:" not in gateway.log
            assert await restarted.stop() == 0
            assert await gateway.stop() == 0
        finally:
            for process in started:
                await process.kill()
    assert "Traceback" not in gateway.log + restarted.log
