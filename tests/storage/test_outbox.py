"""The outbox: every addition is on disk when its add returns, additions made together are written
together, removals of many entries remove every one, its files are the bot user's alone, and
the dead letter keeps what it is given."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from storage.outbox import Outbox


async def test_additions_made_at_once_are_all_kept_in_the_order_they_were_made(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path / "pending")
    try:
        first = await outbox.add("listing", {"n": -1})
        writes = await asyncio.gather(*(outbox.add("listing", {"n": n}) for n in range(50)))
    finally:
        await outbox.close()
    assert [w.id for w in writes] == sorted(w.id for w in writes)
    assert len({first.id, *(w.id for w in writes)}) == 51
    again = await Outbox.open(tmp_path / "pending")  # another look at the file
    try:
        kept = await again.all()
    finally:
        await again.close()
    assert [w.payload["n"] for w in kept] == list(range(-1, 50))
    assert [w.id for w in kept] == [first.id, *(w.id for w in writes)]


async def test_additions_still_being_written_at_close_are_kept(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path / "pending")
    adding = [asyncio.create_task(outbox.add("reaction", {"n": n})) for n in range(20)]
    await asyncio.sleep(0)  # every add has queued its write
    await outbox.close()
    assert len({(await task).id for task in adding}) == 20
    again = await Outbox.open(tmp_path / "pending")
    try:
        assert len(await again.all()) == 20
    finally:
        await again.close()


async def test_removing_more_entries_than_one_statement_takes_removes_them_all(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path / "pending")
    try:
        writes = await asyncio.gather(*(outbox.add("listing", {"n": n}) for n in range(1200)))
        await outbox.remove([w.id for w in writes[:1100]])
        assert [w.payload["n"] for w in await outbox.all()] == list(range(1100, 1200))
    finally:
        await outbox.close()


async def test_the_outbox_files_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    """What people did, waiting to be stored: 0600 (and its -wal, -shm) under the usual umask 022."""
    previous = os.umask(0o022)
    try:
        (tmp_path / "state").mkdir()
        outbox = await Outbox.open(tmp_path / "state" / "paperbot.pending")
        try:
            await outbox.add("rating", {"user_id": 1, "paper_id": 2, "signal": "like", "added": True})
            files = sorted((tmp_path / "state").iterdir())
            assert [f.name for f in files] == [
                "paperbot.pending",
                "paperbot.pending-shm",
                "paperbot.pending-wal",
            ]
            assert {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {
                f.name: "0o600" for f in files
            }
        finally:
            await outbox.close()
    finally:
        os.umask(previous)


async def test_an_entry_moved_to_the_dead_letter_stays_in_the_file_until_it_is_removed(
    tmp_path: Path,
) -> None:
    """The dead letter keeps an entry's place in the order, what the store answered, and the entry
    itself across a reopen; removing it (stored at last) empties it; ids are never given twice."""
    outbox = await Outbox.open(tmp_path / "pending")
    try:
        first, second, third = [await outbox.add("rating", {"n": n}) for n in range(3)]
        await outbox.bury(
            second.id, failing_since="2026-12-01T09:00:00+00:00", error="ReadOnlySQLTransactionError (25006)"
        )
    finally:
        await outbox.close()
    again = await Outbox.open(tmp_path / "pending")
    try:
        kept = await again.all()
        assert [(w.id, w.payload["n"], w.dead) for w in kept] == [
            (first.id, 0, False),
            (second.id, 1, True),
            (third.id, 2, False),
        ]
        assert kept[1].dead_error == "ReadOnlySQLTransactionError (25006)"
        await again.remove([first.id, second.id])
        assert [w.id for w in await again.all()] == [third.id]
        assert (await again.add("rating", {"n": 3})).id > third.id
    finally:
        await again.close()
