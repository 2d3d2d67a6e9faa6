"""Which process does the background work (bot.leadership): the first to take the store's lock leads,
the others stand by, and one of them leads within a look of the leader stopping; a leader that lost
its lock stops its work. On both engines."""

from __future__ import annotations

import asyncio
import contextlib

from bot.leadership import Leadership
from storage.store import StoreLocation, open_database


class Work:
    def __init__(self) -> None:
        self.events: list[str] = []

    async def lead(self) -> None:
        self.events.append("lead")

    async def step_down(self) -> None:
        self.events.append("step down")


async def test_one_process_leads_and_another_takes_over_when_it_stops(store: StoreLocation) -> None:
    async with await open_database(store) as first_db, await open_database(store) as second_db:
        first_work, second_work = Work(), Work()
        first = Leadership(
            await first_db.leader_lock(), lead=first_work.lead, step_down=first_work.step_down, every=0.05
        )
        second = Leadership(
            await second_db.leader_lock(), lead=second_work.lead, step_down=second_work.step_down, every=0.05
        )
        runs = [asyncio.create_task(first.run())]
        await asyncio.sleep(0.1)
        runs.append(asyncio.create_task(second.run()))
        await asyncio.sleep(0.2)
        assert (first.leading, second.leading) == (True, False)
        assert (first_work.events, second_work.events) == (["lead"], [])

        runs[0].cancel()  # the leader stops
        with contextlib.suppress(asyncio.CancelledError):
            await runs[0]
        assert first_work.events == ["lead", "step down"]
        for _ in range(40):
            if second.leading:
                break
            await asyncio.sleep(0.05)
        assert second_work.events == ["lead"]
        runs[1].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runs[1]


async def test_a_leader_that_lost_its_lock_stops_its_work(store: StoreLocation) -> None:
    async with await open_database(store) as db:
        work = Work()
        lock = await db.leader_lock()
        leadership = Leadership(lock, lead=work.lead, step_down=work.step_down, every=0.05)
        await leadership.step()
        assert leadership.leading
        await lock.release()  # as when the connection holding it died
        await leadership.step()
        assert not leadership.leading
        assert work.events == ["lead", "step down"]
        await lock.release()
