"""A claimed digest run is held by one process at a time (storage.repositories.digests): another takes
it over only once the holder's lease ran out or was let go, one of several trying at once wins, and a
process that lost its run can reserve nothing more of it — on both engines, the processes being
separate connections to one store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.digests import ClaimLostError, DigestRepository, Recipient
from storage.repositories.papers import PaperRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository
from storage.store import StoreLocation, open_database

USER = 7
T0, T1, T2 = "2026-11-30T09:00:00.000+00:00", "2026-11-30T09:00:30.000+00:00", "2026-11-30T09:01:00.000+00:00"


@pytest.fixture
async def other(store: StoreLocation, db: Database) -> AsyncIterator[Database]:
    """A second process's connection to the same store."""
    async with await open_database(store) as second:
        yield second


async def _run(db: Database) -> int:
    await PaperRepository(db).upsert_many(
        [
            PaperRecord(title=f"P{n}", abstract=f"Paper {n} is about subject {n} in great detail.")
            for n in range(3)
        ]
    )
    fields = ScheduleFields((), "09:00", "UTC", "daily", 0, 3)
    sub = await SubscriptionRepository(db).upsert_user(USER, fields)
    run = await DigestRepository(db).claim_run(sub.id, "2026-11-30", owner="first", lease_until=T1)
    assert run is not None
    assert (run.claimed_by, run.lease_until) == ("first", T1)
    await DigestRepository(db).plan_items(run.id, [(1, "a"), (2, "b"), (3, "c")])
    return run.id


async def test_a_held_run_is_taken_over_only_once_its_lease_ran_out(db: Database, other: Database) -> None:
    run_id = await _run(db)
    first, second = DigestRepository(db), DigestRepository(other)
    assert [r.id for r in await second.open_runs(takeable_by="second", now=T0)] == []
    assert not await second.take_over(run_id, "second", now=T0, lease_until=T2)
    assert await first.renew(run_id, "first", lease_until=T1)
    # the first process died: its lease runs out
    assert [r.id for r in await second.open_runs(takeable_by="second", now=T2)] == [run_id]
    assert await second.take_over(run_id, "second", now=T2, lease_until="2026-11-30T09:01:30+00:00")
    assert not await first.renew(run_id, "first", lease_until=T2)  # it lost the run
    assert [r.id for r in await first.open_runs(takeable_by="second", now=T2)] == []  # held: not takeable


async def test_a_process_that_lost_its_run_reserves_nothing_more_of_it(db: Database, other: Database) -> None:
    run_id = await _run(db)
    first, second = DigestRepository(db), DigestRepository(other)
    recipient = Recipient(user_id=USER)
    assert await first.reserve_item(run_id, 1, recipient, owner="first")
    assert await second.take_over(run_id, "second", now=T2, lease_until="2026-11-30T09:01:30+00:00")
    with pytest.raises(ClaimLostError, match="held by second now, not first"):
        await first.reserve_item(run_id, 2, recipient, owner="first")
    with pytest.raises(ClaimLostError):
        await first.reserve_header(run_id, owner="first")
    assert [item.paper_id for item in await second.unsent_items(run_id)] == [2, 3]
    assert await second.reserve_item(run_id, 2, recipient, owner="second")


async def test_a_run_let_go_of_is_taken_at_once(db: Database, other: Database) -> None:
    run_id = await _run(db)
    await DigestRepository(db).release(run_id, "first")
    assert [r.id for r in await DigestRepository(other).open_runs(takeable_by="second", now=T0)] == [run_id]
    assert await DigestRepository(other).take_over(run_id, "second", now=T0, lease_until=T1)


async def test_of_two_processes_taking_over_at_once_one_wins(db: Database, other: Database) -> None:
    run_id = await _run(db)
    outcomes = await asyncio.gather(
        DigestRepository(db).take_over(run_id, "second", now=T2, lease_until="2026-11-30T09:02:00+00:00"),
        DigestRepository(other).take_over(run_id, "third", now=T2, lease_until="2026-11-30T09:02:00+00:00"),
    )
    assert sorted(outcomes) == [False, True]
    (run,) = await DigestRepository(db).open_runs()
    assert run.claimed_by == ("second" if outcomes[0] else "third")


async def test_a_finished_run_is_never_taken_over(db: Database) -> None:
    run_id = await _run(db)
    await DigestRepository(db).finish_run(run_id, "sent")
    assert not await DigestRepository(db).take_over(run_id, "second", now=T2, lease_until=T2)
    assert await DigestRepository(db).open_runs(takeable_by="second", now=T2) == []


async def test_on_postgresql_a_takeover_waits_for_a_reservation_under_way(
    postgres_store: StoreLocation,
) -> None:
    """The reservation share-locks the run's row: a takeover that comes meanwhile waits for it to
    commit, then sees the paper reserved (to be sent again with its nonce), never as still to send."""
    import asyncpg

    async with await open_database(postgres_store) as db, await open_database(postgres_store) as other:
        run_id = await _run(db)
        reserving = await asyncpg.connect(postgres_store.url)
        try:
            await reserving.execute("BEGIN")
            assert await reserving.fetchval(
                "SELECT claimed_by FROM digest_runs WHERE id = $1 FOR SHARE", run_id
            )
            await reserving.execute(
                "UPDATE digest_items SET sent_at = $1 WHERE run_id = $2 AND paper_id = 1", T0, run_id
            )
            taking = asyncio.create_task(
                DigestRepository(other).take_over(run_id, "second", now=T2, lease_until=T2)
            )
            await asyncio.sleep(0.3)
            assert not taking.done()
            await reserving.execute("COMMIT")
            assert await asyncio.wait_for(taking, 5)
        finally:
            await reserving.close()
        assert [item.paper_id for item in await DigestRepository(other).unsent_items(run_id)] == [2, 3]
