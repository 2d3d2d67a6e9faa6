"""The composition root, on both engines: the search index snapshot beside the store, and papers stored
by another process (a `paperbot ingest` next to the running bot) becoming searchable, by the store's
change sequence; numpy on one BLAS thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from bot.runtime import open_services, snapshot_path
from bot.services.papers.ingest.normalise import Rejected
from bot.services.papers.ingest.records import parse_jsonl
from bot.services.papers.ingest.runner import ingest_bytes
from bot.services.search import live_index
from bot.settings import Settings
from paperindex import compiled, prepare
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository
from storage.store import StoreLocation, open_database

PAPER = {
    "id": "x1",
    "title": "Quokka-guided curriculum for offline reinforcement learning",
    "abstract": "We propose a quokka-guided curriculum that orders offline transitions by difficulty. " * 3,
}


async def _ingest_elsewhere(store: StoreLocation, record: dict[str, str]) -> None:
    """Store a paper through a second connection, as `paperbot ingest` in another process would."""
    async with await open_database(store) as other:
        await ingest_bytes(other, "other.jsonl", json.dumps(record).encode())


async def test_the_index_is_saved_beside_the_database_and_reused(
    store: StoreLocation, tmp_path: Path
) -> None:
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        first = services.search.search("quantization", limit=3).hits
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    assert snapshot.exists()
    saved_at = snapshot.stat().st_mtime_ns
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits == first
    assert snapshot.stat().st_mtime_ns == saved_at  # loaded, not rebuilt


async def test_a_large_first_build_runs_in_a_child_process_and_is_read_in_place(
    store: StoreLocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A first start over a store of ``CHILD_BUILD_PAPERS`` or more has a child process build and save
    the index, and reads the snapshot it saved: this process never runs the build (here it cannot),
    and answers as an index built here would."""
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        expected = services.search.search("quantization", limit=3).hits
        papers = len(services.search)
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    snapshot.unlink()
    monkeypatch.setattr(live_index, "CHILD_BUILD_PAPERS", 1)
    caplog.set_level(logging.INFO, logger=live_index.__name__)

    async def not_here(*args: object) -> None:
        raise AssertionError("the index was built in the bot's own process")

    monkeypatch.setattr(live_index, "_build", not_here)
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits == expected
        assert services.index.position.papers == papers
    assert snapshot.exists()
    assert (
        f"the child process built the search index of {papers} papers (its peak resident memory: "
        in caplog.text
    )


def _failing_build(store: StoreLocation, snapshot: Path) -> None:
    raise OSError("no room for the snapshot")


async def test_a_child_build_that_fails_is_done_in_process_instead(
    store: StoreLocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(store=store, state_dir=tmp_path)
    monkeypatch.setattr(live_index, "CHILD_BUILD_PAPERS", 1)
    monkeypatch.setattr(live_index, "_build_snapshot", _failing_build)
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits
    assert "could not build the search index in a child process" in caplog.text
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    assert snapshot.exists()  # saved by the build done here


async def test_a_stale_snapshot_is_rebuilt_with_the_new_papers(store: StoreLocation, tmp_path: Path) -> None:
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings):
        pass
    await _ingest_elsewhere(settings.store, PAPER)
    async with open_services(settings) as services:
        assert services.search.search("quokka curriculum", limit=3).hits


async def test_a_corrupt_snapshot_is_replaced_by_a_good_one_at_start(
    store: StoreLocation, tmp_path: Path
) -> None:
    """A snapshot that cannot be used (here: not even a zip) is rebuilt from the store and saved again."""
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        first = services.search.search("quantization", limit=3).hits
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    snapshot.write_bytes(b"not a snapshot at all")
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits == first
    saved_at = snapshot.stat().st_mtime_ns
    assert snapshot.read_bytes()[:2] == b"PK", "a good snapshot (a zip of arrays) was saved in its place"
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits == first
    assert snapshot.stat().st_mtime_ns == saved_at, "and the next start loads it"


async def test_papers_stored_by_another_process_become_searchable_while_running(
    store: StoreLocation, tmp_path: Path
) -> None:
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        await _ingest_elsewhere(settings.store, PAPER)
        assert not services.search.search("quokka curriculum", limit=3).hits
        assert await services.index.refresh() == 1
        assert services.search.search("quokka curriculum", limit=3).hits
        assert await services.index.refresh() == 0  # nothing new: nothing re-indexed
        assert await services.index.save_snapshot()
    async with open_services(settings) as services:  # the refreshed snapshot matches the store
        assert services.search.search("quokka curriculum", limit=3).hits


async def test_a_refresh_of_more_papers_than_one_batch_indexes_them_all(
    store: StoreLocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The papers another process stored go into the index a batch at a time (the index's lock is
    let go between batches, for the searches waiting on it): every one of them, the last odd batch too."""
    monkeypatch.setattr(live_index, "INDEX_BATCH", 2)
    words = ["quokka", "wombat", "numbat", "bilby", "dingo"]
    lines = [
        {"id": f"x{n}", "title": f"A {word}-guided curriculum", "abstract": f"We study the {word}. " * 6}
        for n, word in enumerate(words)
    ]
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        async with await open_database(settings.store) as other:
            await ingest_bytes(other, "other.jsonl", "\n".join(map(json.dumps, lines)).encode())
        assert await services.index.refresh() == 5
        for word in words:
            assert services.search.search(word, limit=1).hits, word
        assert await services.index.refresh() == 0


def _record(line: dict[str, str]) -> PaperRecord:
    (item,) = parse_jsonl([json.dumps(line)], source="other.jsonl")
    assert not isinstance(item, Rejected)
    return item


async def test_papers_committed_while_a_refresh_runs_are_indexed_and_survive_a_restart(
    store: StoreLocation, tmp_path: Path
) -> None:
    """An ingest in another process stamps its rows when it starts and commits minutes later; a
    refresh that runs in between cannot see them. The next refresh must still index them, and the
    snapshot saved after it must not claim papers the index does not hold."""
    settings = Settings(store=store, state_dir=tmp_path)
    started_long_ago = "2026-01-01T00:00:00+00:00"  # the ingest's clock, read before its transaction
    async with open_services(settings) as services:
        async with await open_database(settings.store) as other, other.transaction() as conn:
            await PaperRepository(other).upsert_many([_record(PAPER)], conn=conn, now=started_long_ago)
            assert await services.index.refresh() == 0  # runs while the ingest is uncommitted
            await services.index.save_snapshot()
        assert await services.index.refresh() == 1  # the ingest has committed
        assert services.search.search("quokka curriculum", limit=3).hits
        await services.index.save_snapshot()
    async with open_services(settings) as services:
        assert services.search.search("quokka curriculum", limit=3).hits


async def test_a_snapshot_saved_mid_ingest_is_not_taken_for_the_finished_store(
    store: StoreLocation, tmp_path: Path
) -> None:
    """The snapshot records the change sequence the index has seen: after the ingest commits more, a
    restart rebuilds instead of loading an index that lacks the new papers."""
    settings = Settings(store=store, state_dir=tmp_path)
    async with open_services(settings) as services:
        await _ingest_elsewhere(settings.store, PAPER)
        await services.index.refresh()
        assert await services.index.save_snapshot()
        other = dict(PAPER, id="x2", title="Wombat-scheduled replay buffers", abstract="Wombat replay. " * 20)
        await _ingest_elsewhere(settings.store, other)  # after the snapshot, never refreshed
    async with open_services(settings) as services:
        assert services.search.search("wombat replay", limit=3).hits
        assert services.search.search("quokka curriculum", limit=3).hits


async def test_following_the_store_indexes_another_process_commits_and_then_saves_the_snapshot(
    store: StoreLocation, tmp_path: Path
) -> None:
    settings = Settings(store=store, state_dir=tmp_path)
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    async with open_services(settings) as services:
        saved_at = snapshot.stat().st_mtime_ns
        following = asyncio.create_task(services.follow_store(every=0.05))
        try:
            await _ingest_elsewhere(settings.store, PAPER)
            for _ in range(200):
                if services.search.search("quokka curriculum", limit=3).hits:
                    break
                await asyncio.sleep(0.05)
            assert services.search.search("quokka curriculum", limit=3).hits
            for _ in range(200):  # the next quiet look saves the snapshot
                if snapshot.stat().st_mtime_ns != saved_at:
                    break
                await asyncio.sleep(0.05)
            assert snapshot.stat().st_mtime_ns != saved_at
            refreshed_at = snapshot.stat().st_mtime_ns
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
    async with open_services(settings) as services:
        assert services.search.search("quokka curriculum", limit=3).hits
    assert snapshot.stat().st_mtime_ns == refreshed_at  # loaded as saved: it holds this store exactly


def _blas_threads() -> set[int]:
    return {int(info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"}


async def test_the_bot_runs_numpy_on_one_blas_thread(tmp_path: Path) -> None:
    """BLAS threads that would spin against the event loop on a busy machine (a person's model fit
    took seconds there) are down to one once the services are open, whatever the process had."""
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        async with open_services(
            Settings(store=StoreLocation(path=tmp_path / "paperbot.db"), state_dir=tmp_path)
        ):
            assert _blas_threads() == {1}


async def test_a_start_before_the_loops_are_compiled_answers_on_their_twins_then_switches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first start after an install: numba's cache does not hold the loops yet, so the services
    answer at once on the numpy twins while a child compiles them, then switch to the compiled loops
    once it is done — the same answers before and after."""
    children: list[subprocess.Popen[bytes]] = []

    def compile_in_background() -> subprocess.Popen[bytes]:  # the loops are in this test's cache already
        children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"]))
        return children[-1]

    monkeypatch.setattr(prepare, "ready", lambda: False)
    monkeypatch.setattr(prepare, "compile_in_background", compile_in_background)
    lines: list[str] = []
    settings = Settings(store=StoreLocation(path=tmp_path / "paperbot.db"), state_dir=tmp_path)
    try:
        async with open_services(settings, progress=lines.append) as services:
            assert compiled.using_twins()
            on_twins = services.search.search("kv cache quantization", limit=5)
            assert on_twins.hits
            for _ in range(100):
                if not compiled.using_twins():
                    break
                await asyncio.sleep(0.1)
            assert not compiled.using_twins(), "still on the twins 10 s after the child finished"
            assert services.search.search("kv cache quantization", limit=5) == on_twins
    finally:
        compiled.use_twins(False)
    assert len(children) == 1
    assert lines == [
        "preparing the search loops in the background (once after an install); answers meanwhile come "
        "from their numpy twins",
        "loading 38 papers into the search index…",
    ]


async def test_a_start_with_the_loops_compiled_uses_them_and_starts_no_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prepare, "ready", lambda: True)
    monkeypatch.setattr(prepare, "compile_in_background", lambda: pytest.fail("no child when compiled"))
    lines: list[str] = []
    settings = Settings(store=StoreLocation(path=tmp_path / "paperbot.db"), state_dir=tmp_path)
    async with open_services(settings, progress=lines.append) as services:
        assert not compiled.using_twins()
        assert services.search.search("kv cache quantization", limit=5).hits
    assert lines == ["loading 38 papers into the search index…"]
