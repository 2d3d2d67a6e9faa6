"""Several paperbot processes on one store, through the sandbox's sharded gateway: each gateway process
answers the servers of its own shards (and shard 0 the DMs); a subscription made through a gateway-only
process is delivered by the process that does the background work, which a worker does over REST
without ever connecting the gateway.

The processes run in this test's event loop (`start_paperbot` twice on one store); the same in
separate OS processes, killed mid-digest, is test_processes_e2e.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import Clock, wait_idle
from paperbot_e2e import E2E

from bot.sandbox import SandboxServer
from bot.sandbox.emulator.interactions import InteractionResult
from storage.store import StoreLocation

StartBot = Callable[..., contextlib.AbstractAsyncContextManager[E2E]]
MONDAY_0700 = datetime(2026, 11, 30, 7, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    """The digest service's clock, in every process of the test."""
    return Clock(MONDAY_0700)


def answering_shard(server: SandboxServer, result: InteractionResult) -> tuple[int, int]:
    """The [shard_id, num_shards] of the gateway session Discord sent the interaction to."""
    shards = {r.session_id: tuple(r.d["shard"]) for r in server.dispatched("READY")}
    (sent,) = [r for r in server.dispatched("INTERACTION_CREATE") if int(r.d["id"]) == result.id]
    return shards[sent.session_id]


@contextlib.asynccontextmanager
async def two_shards(
    start_paperbot: StartBot, store: StoreLocation, tmp_path: Path, *, second_role: str = "gateway"
) -> AsyncIterator[tuple[E2E, E2E]]:
    """Shard 0 of 2 doing everything, and shard 1 of 2 as `second_role`, each with its own files."""
    async with (
        start_paperbot(
            store=store, shard_ids=(0,), shard_count=2, state_dir=tmp_path / "zero", dev_guild_id=None
        ) as zero,
        start_paperbot(
            store=store,
            shard_ids=(1,),
            shard_count=2,
            role=second_role,
            state_dir=tmp_path / "one",
            dev_guild_id=None,  # global commands: offered in every server and in DMs
            load_shipped_corpus=False,
        ) as one,
    ):
        yield zero, one


@pytest.mark.both_engines
async def test_each_process_answers_the_servers_of_its_own_shards(
    start_paperbot: StartBot, e2e_store: StoreLocation, sandbox: SandboxServer, tmp_path: Path
) -> None:
    second_lab = sandbox.add_guild("Second Lab", members={"bob": False}, shard=(1, 2))
    elsewhere = sandbox.guild_channel(second_lab, "general")
    async with two_shards(start_paperbot, e2e_store, tmp_path) as (zero, one):
        assert [g.id for g in zero.bot.guilds] == [sandbox.guild.id]
        assert [g.id for g in one.bot.guilds] == [second_lab.id]
        here = await sandbox.run_command("bob", "paper search", query="kv cache quantization", limit=3)
        there = await sandbox.run_command(
            "bob", "paper search", query="kv cache quantization", limit=3, where=elsewhere
        )
        in_dm = await sandbox.run_command("bob", "paper search", query="speculative decoding", where="dm")
        assert "KV Cache" in here.text
        assert "KV Cache" in there.text
        assert "ecoding" in in_dm.text
        assert answering_shard(sandbox, here) == (0, 2)
        assert answering_shard(sandbox, there) == (1, 2)
        assert answering_shard(sandbox, in_dm) == (0, 2)  # DMs come to shard 0

        await sandbox.click("bob", there, "Next ▶")  # a button on shard 1's message: shard 1 answers
        rated = await sandbox.click("bob", there, 1)
        assert rated.ephemeral
        await sandbox.eventually(
            lambda: one.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (sandbox.bob.id,)),
            what="shard 1's process stored bob's rating",
        )


@pytest.mark.both_engines
async def test_a_subscription_made_on_a_gateway_process_is_delivered_by_the_worker(
    start_paperbot: StartBot, e2e_store: StoreLocation, sandbox: SandboxServer, tmp_path: Path, clock: Clock
) -> None:
    """The gateway process answers /paper subscribe and schedules nothing; the worker — logged in over
    REST, never on the gateway — picks the subscription up from the store within seconds and, when its
    time comes, sends the digest by DM."""
    async with (
        start_paperbot(store=e2e_store, role="gateway", state_dir=tmp_path / "gateway") as gateway,
        start_paperbot(
            store=e2e_store, role="worker", state_dir=tmp_path / "worker", load_shipped_corpus=False
        ) as worker,
    ):
        identifies = [r for r in sandbox.gateway_events if r.direction == "recv" and r.op == 2]
        assert len(identifies) == 1, "the worker never connected the gateway"
        answer = await sandbox.run_command(
            "alice", "paper subscribe", topics="kv cache, speculative decoding", time="09:00", count=3
        )
        assert "Subscribed" in answer.text
        sub = await gateway.services.digests.subscriptions.for_user(sandbox.alice.id)
        assert sub is not None
        assert gateway.bot.digest_jobs.scheduler.get_job(f"digest:{sub.id}") is None
        job = await sandbox.eventually(
            lambda: worker.bot.digest_jobs.scheduler.get_job(f"digest:{sub.id}"),
            timeout=15,
            what="the worker's job for the new subscription",
        )
        clock.now = MONDAY_0700.replace(hour=9)  # its time comes
        job.modify(next_run_time=datetime.now(UTC))
        worker.bot.digest_jobs.scheduler.wakeup()
        await sandbox.eventually(
            lambda: len([m for m in sandbox.dm_messages("alice") if m.embeds]) == 3,
            timeout=15,
            what="alice's digest of 3 papers",
        )
        await wait_idle(worker.bot.digest_jobs)  # each message is recorded once it went out
        posted = await worker.db.fetchval(
            "SELECT COUNT(*) FROM posted_messages WHERE recipient_id = ?", (sandbox.alice.id,)
        )
        assert posted == 3


@pytest.mark.both_engines
async def test_a_paper_ingested_through_any_process_or_the_cli_is_searchable_in_every_process(
    start_paperbot: StartBot, e2e_store: StoreLocation, sandbox: SandboxServer, tmp_path: Path
) -> None:
    """Each process's index follows the store's change sequence: an /paperadmin ingest answered by one
    process, and a `paperbot ingest` beside them, are found through the other process within seconds
    (the promise is 60 s)."""
    second_lab = sandbox.add_guild("Second Lab", members={"bob": False}, shard=(1, 2))
    elsewhere = sandbox.guild_channel(second_lab, "general")
    async with (
        start_paperbot(
            store=e2e_store,
            shard_ids=(0,),
            shard_count=2,
            state_dir=tmp_path / "zero",
            dev_guild_id=None,
            operator_ids=frozenset({sandbox.alice.id}),
        ),
        start_paperbot(
            store=e2e_store,
            shard_ids=(1,),
            shard_count=2,
            role="gateway",
            state_dir=tmp_path / "one",
            dev_guild_id=None,
            load_shipped_corpus=False,
        ),
    ):
        record = {
            "id": "zx-1",
            "title": "Zorblax: Quasitensor Routing for Sparse Mixture Models",
            "abstract": "We introduce zorblax, a quasitensor router for sparse mixtures of experts. " * 2,
        }
        ingested = await sandbox.run_command(
            "alice", "paperadmin ingest", file=("zorblax.jsonl", json.dumps(record))
        )
        assert "added **1**" in ingested.text

        async def found_in_shard_1(query: str) -> bool:
            result = await sandbox.run_command(
                "bob", "paper search", query=query, where=elsewhere, check=False
            )
            return result.ok and "No papers" not in result.text and query.split()[0] in result.text.lower()

        started = time.monotonic()
        await sandbox.eventually(
            lambda: found_in_shard_1("zorblax quasitensor"), timeout=60, what="the ingest, on shard 1"
        )
        assert time.monotonic() - started < 60

        other = {
            "id": "wb-1",
            "title": "Wombat-Scheduled Replay Buffers",
            "abstract": "Wombat scheduling orders replay buffers for offline reinforcement learning. " * 2,
        }
        (tmp_path / "cli.jsonl").write_text(json.dumps(other) + "\n", "utf-8")
        env = {
            **os.environ,
            "PAPERBOT_DB": e2e_store.url or str(e2e_store.path),
            "PAPERBOT_LOG_LEVEL": "WARNING",
        }
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "ingest", str(tmp_path / "cli.jsonl"), env=env, cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert await cli.wait() == 0
        await sandbox.eventually(
            lambda: found_in_shard_1("wombat replay"), timeout=60, what="the CLI's ingest, on shard 1"
        )

        async def found_in_shard_0() -> bool:
            result = await sandbox.run_command("bob", "paper search", query="wombat replay", check=False)
            return result.ok and "Wombat-Scheduled Replay Buffers" in result.text

        await sandbox.eventually(found_in_shard_0, timeout=60, what="the CLI's ingest, on shard 0")
