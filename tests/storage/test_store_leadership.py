"""One process at a time leads a store (storage.leadership), on both engines: a second process's lock
is refused while the first holds it, and taken the moment the first lets go — or dies, SIGKILL
included; on PostgreSQL a leader whose connection the server dropped knows it no longer leads."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncpg

from storage.store import StoreLocation, open_database

REPO = Path(__file__).resolve().parents[2]
HOLDER = """
import asyncio, sys
from storage.store import open_database

async def main(location):
    db = await open_database(location)
    lock = await db.leader_lock()
    assert await lock.acquire()
    print("leading", flush=True)
    await asyncio.sleep(600)

asyncio.run(main(sys.argv[1]))
"""


async def test_one_leader_at_a_time_and_the_next_when_it_lets_go(store: StoreLocation) -> None:
    async with await open_database(store) as first, await open_database(store) as second:
        one, two = await first.leader_lock(), await second.leader_lock()
        assert await one.acquire()
        assert await one.acquire()  # taking it again while holding it: still held
        assert not await two.acquire()
        assert await one.held()
        assert not await two.held()
        await one.release()
        assert await two.acquire()
        assert not await one.acquire()
        await two.release()


async def test_a_killed_leader_lets_the_next_process_lead(store: StoreLocation, tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, "utf-8")
    holder = await asyncio.create_subprocess_exec(
        sys.executable, str(script), store.url or str(store.path), stdout=asyncio.subprocess.PIPE, cwd=REPO
    )
    assert holder.stdout is not None
    async with await open_database(store) as db:
        lock = await db.leader_lock()
        try:
            assert (await asyncio.wait_for(holder.stdout.readline(), 30)).strip() == b"leading"
            assert not await lock.acquire()
        finally:
            holder.kill()  # SIGKILL: no clean-up of its own
            await holder.wait()
        for _ in range(50):  # the server (or the kernel) lets go at once
            if await lock.acquire():
                break
            await asyncio.sleep(0.1)
        assert await lock.held()
        await lock.release()


async def test_a_postgresql_leader_whose_connection_died_knows_it(postgres_store: StoreLocation) -> None:
    async with await open_database(postgres_store) as db, await open_database(postgres_store) as other:
        lock, next_lock = await db.leader_lock(), await other.leader_lock()
        assert await lock.acquire()
        admin = await asyncpg.connect(postgres_store.url)
        try:  # the server ends the session holding the lock (as when it restarts)
            await admin.execute("SELECT pg_terminate_backend($1)", lock._conn.get_server_pid())  # type: ignore[attr-defined]
        finally:
            await admin.close()
        assert not await lock.held()  # the leader stops its work
        assert await next_lock.acquire()  # and the next process leads
        await next_lock.release()
        await lock.release()
