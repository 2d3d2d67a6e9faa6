"""Writes stored behind the answers (`bot.services.write_behind`): kept in the outbox at once, stored in
order once the database is free, never lost to a locked store, a store refusing writes (read-only,
full), a stop or a kill -9; what the store keeps refusing goes to the dead letter and stays; a
reaction that comes before its message's note waits for it; forget-me drops what is still pending,
in this process and in one that stored nothing of it yet."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from builders import Ticker
from store_refusals import RefusingStore

from bot.services.people.feedback import FeedbackService
from bot.services.people.privacy import PrivacyService
from bot.services.write_behind import MESSAGE_GRACE, WriteBehind
from storage.db import Database
from storage.models import PaperRecord
from storage.outbox import Outbox
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.searches import SearchRepository, StoredSearch
from storage.store import StoreLocation, open_database

REPO = Path(__file__).resolve().parents[2]
USER, OTHER, GUILD, MESSAGE = 11, 12, 77, 9001


async def _add_papers(db: Database) -> list[int]:
    records = [
        PaperRecord(title=f"Paper {n}", abstract=f"Paper {n} studies problem {n} in depth with method {n}.")
        for n in range(3)
    ]
    await PaperRepository(db).upsert_many(records)
    return [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")]


@pytest.fixture
async def papers(db: Database) -> list[int]:
    return await _add_papers(db)


def _writes(db: Database, path: Path, clock: Ticker | None = None, **options: float) -> WriteBehind:
    return WriteBehind(
        path,
        feedback=FeedbackRepository(db),
        searches=SearchRepository(db),
        messages=PostedMessageRepository(db),
        **({"clock": clock} if clock else {}),
        **options,
    )


@pytest.fixture
async def writes(db: Database, tmp_path: Path) -> AsyncIterator[WriteBehind]:
    behind = _writes(db, tmp_path / "paperbot.db.pending")
    await behind.start()
    try:
        yield behind
    finally:
        await behind.stop()


class StoreLock:
    """Another connection holding every write the store could take (as `paperbot ingest` holds
    SQLite's write lock; on PostgreSQL, the tables these writes touch locked against writers)."""

    def __init__(self, sqlite: sqlite3.Connection | None = None, postgres: asyncpg.Connection | None = None):
        self._sqlite, self._postgres = sqlite, postgres

    @classmethod
    async def take(cls, store: StoreLocation) -> StoreLock:
        if store.path is not None:
            other = sqlite3.connect(store.path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            return cls(sqlite=other)
        conn = await asyncpg.connect(store.url)
        await conn.execute("BEGIN")
        await conn.execute(f"LOCK TABLE {', '.join(LOCKED_TABLES)} IN EXCLUSIVE MODE")
        return cls(postgres=conn)

    async def release(self, *, close: bool = False) -> None:
        """Let go (COMMIT)."""
        if self._sqlite is not None:
            if self._sqlite.in_transaction:
                self._sqlite.execute("COMMIT")
            if close:
                self._sqlite.close()
        elif self._postgres is not None:
            if self._postgres.is_in_transaction():
                await self._postgres.execute("COMMIT")
            if close:
                await self._postgres.close()


LOCKED_TABLES = ("users", "feedback", "searches", "posted_messages", "recommendations_shown", "interests")


@pytest.fixture
async def locked(store: StoreLocation, db: Database) -> AsyncIterator[StoreLock]:
    lock = await StoreLock.take(store)
    try:
        yield lock
    finally:
        await lock.release(close=True)


async def _outbox_with_a_newer_kind(folder: Path) -> Path:
    """An outbox holding one write of a kind no version of this store takes (a newer bot's)."""
    path = folder / "paperbot.db.pending"
    outbox = await Outbox.open(path)
    try:
        await outbox.add("a kind from a newer version", {"user_id": OTHER})
    finally:
        await outbox.close()
    return path


async def _signals(db: Database) -> set[tuple[int, int, str]]:
    rows = await db.fetchall("SELECT user_id, paper_id, signal FROM feedback")
    return {(int(r[0]), int(r[1]), str(r[2])) for r in rows}


async def test_writes_accepted_while_the_store_is_locked_are_stored_once_it_is_free(
    db: Database, papers: list[int], writes: WriteBehind, locked: StoreLock
) -> None:
    listing = StoredSearch(123456789012345678, "search", "graph networks", None, None, None, None, 5, USER)
    await writes.listing(listing, user_id=USER)
    await writes.rating(user_id=USER, paper_id=papers[0], signal="save", added=True, guild_id=GUILD)
    await writes.posted_message(
        message_id=MESSAGE, channel_id=5, guild_id=GUILD, paper_id=papers[1], recipient_id=None
    )
    await writes.reaction(
        user_id=OTHER, message_id=MESSAGE, signal="like", guild_id=GUILD, added=True, on_our_message=True
    )
    await asyncio.sleep(0.3)
    assert writes.pending == 4
    assert writes.pending_listing(listing.id) == listing  # the page buttons find it meanwhile
    assert await _signals(db) == set()
    await locked.release()  # the other writer is done
    await writes.drained()
    assert await _signals(db) == {(USER, papers[0], "save"), (OTHER, papers[1], "like")}
    assert await SearchRepository(db).get(listing.id) == listing
    assert writes.pending_listing(listing.id) is None
    outbox = await Outbox.open(writes.path)  # another look at the file: nothing left in it
    try:
        assert await outbox.all() == []
    finally:
        await outbox.close()


async def test_what_a_stop_left_in_the_outbox_is_stored_at_the_next_start(
    db: Database, papers: list[int], tmp_path: Path, locked: StoreLock
) -> None:
    path = tmp_path / "paperbot.db.pending"
    first = _writes(db, path)
    await first.start()
    await first.rating(user_id=USER, paper_id=papers[2], signal="like", added=True, guild_id=None)
    await asyncio.sleep(0.2)
    await first.stop()  # while its write waits for the lock
    await locked.release()
    assert await _signals(db) == set()
    again = _writes(db, path)
    await again.start()
    try:
        await again.drained()
    finally:
        await again.stop()
    assert await _signals(db) == {(USER, papers[2], "like")}


CHILD = """
import asyncio, sys
from pathlib import Path
from bot.services.people.privacy import PrivacyService
from bot.services.write_behind import WriteBehind
from storage.store import open_database
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.searches import SearchRepository

async def main(db_path, outbox, paper_id):
    db = await open_database(db_path)
    writes = WriteBehind(Path(outbox), feedback=FeedbackRepository(db), searches=SearchRepository(db),
                         messages=PostedMessageRepository(db))
    await writes.start()
    await writes.rating(user_id=11, paper_id=int(paper_id), signal="save", added=True, guild_id=None)
    print("accepted", flush=True)
    await asyncio.sleep(60)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_write_accepted_just_before_a_kill_9_is_stored_at_the_next_start(
    db: Database, store: StoreLocation, papers: list[int], tmp_path: Path, locked: StoreLock
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD, "utf-8")
    path = tmp_path / "paperbot.db.pending"
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(store), str(path), str(papers[0]),
        stdout=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    assert child.stdout is not None
    try:
        assert (await asyncio.wait_for(child.stdout.readline(), 30)).strip() == b"accepted"
    finally:
        child.kill()  # the store was locked: the bot had accepted the click but not stored it
        await child.wait()
    await locked.release()
    assert await _signals(db) == set()
    again = _writes(db, path)
    await again.start()
    try:
        await again.drained()
    finally:
        await again.stop()
    assert await _signals(db) == {(USER, papers[0], "save")}


async def test_a_reaction_that_comes_before_its_messages_note_waits_for_it(
    db: Database, papers: list[int], writes: WriteBehind
) -> None:
    await writes.reaction(
        user_id=USER, message_id=MESSAGE, signal="save", guild_id=None, added=True, on_our_message=True
    )
    await writes.reaction(
        user_id=USER, message_id=MESSAGE, signal="save", guild_id=None, added=False, on_our_message=None
    )  # taken back at once (Discord does not say whose message): must not overtake the addition
    await writes.reaction(
        user_id=USER, message_id=MESSAGE, signal="like", guild_id=None, added=True, on_our_message=True
    )
    await asyncio.sleep(0.2)
    assert writes.pending == 3
    await writes.posted_message(
        message_id=MESSAGE, channel_id=5, guild_id=None, paper_id=papers[1], recipient_id=USER
    )
    await writes.drained()
    assert await _signals(db) == {(USER, papers[1], "like")}


async def test_a_reaction_on_a_message_that_never_gets_a_note_is_let_go(
    db: Database, papers: list[int], tmp_path: Path
) -> None:
    clock = Ticker()
    writes = _writes(db, tmp_path / "x.pending", clock)
    await writes.start()
    try:
        await writes.reaction(
            user_id=USER, message_id=MESSAGE, signal="like", guild_id=None, added=True, on_our_message=True
        )
        await writes.reaction(
            user_id=USER,
            message_id=MESSAGE + 1,
            signal="like",
            guild_id=None,
            added=True,
            on_our_message=False,
        )  # not one of the bot's messages: nothing to wait for
        await asyncio.sleep(0.2)
        assert writes.pending == 1
        clock.now += MESSAGE_GRACE
        await writes.drained(timeout=5)
    finally:
        await writes.stop()
    assert await _signals(db) == set()


async def test_forget_me_leaves_nothing_of_the_users_pending_writes(
    db: Database, papers: list[int], writes: WriteBehind, locked: StoreLock
) -> None:
    """As `Services.forget_user` does: what has not started is dropped, and a write already waiting
    for the lock is stored before the deletion, which then removes it."""
    await writes.rating(user_id=USER, paper_id=papers[0], signal="like", added=True, guild_id=None)
    await writes.rating(user_id=OTHER, paper_id=papers[0], signal="like", added=True, guild_id=None)
    await writes.rating(user_id=USER, paper_id=papers[1], signal="save", added=True, guild_id=None)
    await asyncio.sleep(0.2)  # the first one is waiting for the lock by now

    async def forget() -> int:
        discarded = await writes.discard_user(USER)  # waits for the one being stored
        await PrivacyService(db).forget(USER)
        return discarded

    forgetting = asyncio.create_task(forget())
    await asyncio.sleep(0.1)
    await locked.release()
    assert await forgetting == 2
    await writes.drained()
    assert await _signals(db) == {(OTHER, papers[0], "like")}


async def test_pressing_a_rating_button_twice_before_the_store_has_the_first_takes_it_back(
    db: Database, papers: list[int], writes: WriteBehind, locked: StoreLock
) -> None:
    feedback = FeedbackService(db)
    notes = []
    for _ in range(2):
        press = await feedback.plan_button(
            user_id=USER, paper_id=papers[0], signal="like", pending=writes.pending_ratings(USER, papers[0])
        )
        assert press.added is not None
        await writes.rating(user_id=USER, paper_id=papers[0], signal="like", added=press.added, guild_id=None)
        notes.append(press.note)
    assert notes[0].startswith("👍 Noted")
    assert notes[1].startswith("Removed your 👍")
    await locked.release()
    await writes.drained()
    assert await _signals(db) == set()


QUERY = "sparse routing of experts"
SNOWFLAKE = (
    1_191_168_914_227_200_009  # a real-sized user id (above the placeholder rows of a full SQLite store)
)


async def test_a_click_the_store_refuses_for_a_reason_other_than_busy_waits_and_is_stored_once_it_takes_writes(
    store: StoreLocation, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL made read-only (as after a failover) or SQLite full: a 🔖 click and a listing wait in
    the outbox and are stored once the store takes writes again. The outage is logged once when it
    begins and once when it ends, and neither line names the paper or the query."""
    caplog.set_level(logging.DEBUG, logger="bot.services.write_behind")
    async with RefusingStore.open(store) as refusing, await open_database(refusing.location) as db:
        paper = (await _add_papers(db))[1]
        writes = _writes(db, tmp_path / "paperbot.db.pending")
        await writes.start()
        try:
            await refusing.refuse(db)
            listing = StoredSearch(123456789012345678, "search", QUERY, None, None, None, None, 5, SNOWFLAKE)
            await writes.listing(listing, user_id=SNOWFLAKE)
            await writes.rating(user_id=SNOWFLAKE, paper_id=paper, signal="save", added=True, guild_id=GUILD)
            await asyncio.sleep(3.5)  # refused, and refused again after the backoff
            assert writes.pending >= 1
            assert await _signals(db) == set()
            state = writes.state()
            assert state.refused_for is not None
            assert state.error
            await refusing.accept(db)
            await writes.drained(timeout=30)
        finally:
            await writes.stop()
        assert await _signals(db) == {(SNOWFLAKE, paper, "save")}
        assert await SearchRepository(db).get(listing.id) == listing
    said = [r for r in caplog.records if r.name == "bot.services.write_behind" and r.levelno >= logging.INFO]
    assert [r.levelno for r in said] == [logging.WARNING, logging.INFO], [r.getMessage() for r in said]
    assert "does not take writes" in said[0].getMessage()
    assert "takes writes again" in said[1].getMessage()
    for record in said:
        assert QUERY not in record.getMessage()
        assert f"paper {paper}" not in record.getMessage()


async def test_a_write_the_store_keeps_refusing_goes_to_the_dead_letter_and_stays_while_later_ones_go_through(
    db: Database, papers: list[int], tmp_path: Path
) -> None:
    """An entry no version of the store takes (left by a newer version of the bot) is tried with a
    backoff, moved to the outbox's dead letter once refused for `dead_after`, reported, and still there
    after a restart; the writes after it are stored meanwhile."""
    path = await _outbox_with_a_newer_kind(tmp_path)
    writes = _writes(db, path, dead_after=0.5)
    await writes.start()
    try:
        await writes.rating(user_id=USER, paper_id=papers[0], signal="like", added=True, guild_id=None)
        async with asyncio.timeout(10):
            while writes.state().dead != 1 or writes.pending != 1:  # noqa: ASYNC110 - a state to poll
                await asyncio.sleep(0.05)
        assert await _signals(db) == {(USER, papers[0], "like")}
        (problem,) = writes.state().problems()
        assert f"writes in the dead letter of {path}: 1" in problem
    finally:
        await writes.stop()
    outbox = await Outbox.open(path)
    try:
        (kept,) = await outbox.all()
    finally:
        await outbox.close()
    assert (kept.kind, kept.dead) == ("a kind from a newer version", True)
    again = _writes(db, path)
    await again.start()
    try:
        await asyncio.sleep(0.3)  # tried at the start, refused again
        assert (again.pending, again.state().dead) == (1, 1)
    finally:
        await again.stop()


async def test_a_write_about_a_paper_that_is_gone_is_dropped_and_the_others_stored(
    db: Database, papers: list[int], writes: WriteBehind, locked: StoreLock
) -> None:
    """What can never be stored (the store answers that the paper it names does not exist) leaves
    the outbox; nothing else does."""
    await writes.rating(user_id=USER, paper_id=papers[0], signal="like", added=True, guild_id=None)
    await writes.rating(user_id=USER, paper_id=10_000, signal="save", added=True, guild_id=None)
    await writes.rating(user_id=OTHER, paper_id=papers[1], signal="save", added=True, guild_id=None)
    await locked.release()
    await writes.drained()
    assert await _signals(db) == {(USER, papers[0], "like"), (OTHER, papers[1], "save")}
    assert writes.state().dead == 0


async def test_what_a_process_accepted_before_its_person_forgot_elsewhere_is_not_stored_at_its_restart(
    db: Database, papers: list[int], tmp_path: Path, locked: StoreLock
) -> None:
    """A process accepts a 👍, a listing and a DM note about a person and stops before storing them; the
    person asks another process to forget them (it finds nothing to delete); when the first starts
    again, nothing about them is stored. What they do afterwards is stored: they may come back."""
    path = tmp_path / "paperbot.db.pending"
    first = _writes(db, path)
    await first.start()
    await first.rating(user_id=USER, paper_id=papers[0], signal="like", added=True, guild_id=None)
    await first.listing(StoredSearch(55, "search", QUERY, None, None, None, None, 5, USER), user_id=USER)
    await first.posted_message(
        message_id=MESSAGE, channel_id=5, guild_id=None, paper_id=papers[1], recipient_id=USER
    )
    await asyncio.sleep(0.2)
    await first.stop()
    await locked.release()
    assert (await PrivacyService(db).forget(USER)).total == 0
    again = _writes(db, path)
    await again.start()
    try:
        await again.drained()
        assert await _signals(db) == set()
        assert await db.fetchval("SELECT COUNT(*) FROM users") == 0
        assert await db.fetchval("SELECT COUNT(*) FROM searches") == 0
        assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 0
        await again.rating(user_id=USER, paper_id=papers[2], signal="like", added=True, guild_id=None)
        await again.drained()
    finally:
        await again.stop()
    assert await _signals(db) == {(USER, papers[2], "like")}


async def test_a_reaction_an_older_version_left_in_the_outbox_naming_its_emoji_is_stored(
    db: Database, papers: list[int], tmp_path: Path
) -> None:
    """Before the signal was kept, the outbox kept the reaction's emoji: such an entry, waiting at an
    upgrade, is still stored as its signal (and one that is no rating is dropped)."""
    path = tmp_path / "paperbot.db.pending"
    await PostedMessageRepository(db).record(MESSAGE, 5, GUILD, papers[0], kind="digest")
    outbox = await Outbox.open(path)
    base = {"user_id": USER, "message_id": MESSAGE, "guild_id": GUILD, "added": True, "ours": True}
    await outbox.add("reaction", base | {"emoji": "🔖", "at": "2026-01-10T12:00:00+00:00"})
    await outbox.add("reaction", base | {"emoji": "🎉", "at": "2026-01-10T12:00:01+00:00"})
    await outbox.close()
    behind = _writes(db, path)
    await behind.start()
    try:
        await behind.drained()
    finally:
        await behind.stop()
    rows = await db.fetchall("SELECT paper_id, signal FROM feedback WHERE user_id = ?", (USER,))
    assert [tuple(row) for row in rows] == [(papers[0], "save")]


async def test_a_stop_as_a_write_arrives_stops_and_keeps_what_waits(db: Database, tmp_path: Path) -> None:
    """The bot stopping just as a write wakes the applier, while a write waits to be tried again: the
    stop ends (it once waited forever: the stop's cancellation was lost in `asyncio.wait_for` as the
    wait it guarded ended in the same turn of the loop), and what waits stays in the outbox."""
    path = await _outbox_with_a_newer_kind(tmp_path)
    for _ in range(5):
        writes = _writes(db, path)
        await writes.start()
        await asyncio.sleep(0.1)  # tried and refused: the applier waits to try it again
        writes._wake.set()  # (as a write arriving does, in the same turn of the loop as the stop)
        stopping = asyncio.create_task(writes.stop())
        done, _ = await asyncio.wait({stopping}, timeout=3)
        assert done, "the stop waited for the applier forever"
    outbox = await Outbox.open(path)
    try:
        assert [entry.kind for entry in await outbox.all()] == ["a kind from a newer version"]
    finally:
        await outbox.close()
