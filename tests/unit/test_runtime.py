"""The composition root: the search index snapshot beside the database, and papers stored by another
process (a `paperbot ingest` next to the running bot) becoming searchable."""

from __future__ import annotations

import json
from pathlib import Path

from bot.runtime import open_services, snapshot_path
from bot.services.ingest.runner import ingest_bytes
from bot.settings import Settings
from storage.db import Database

PAPER = {
    "id": "x1",
    "title": "Quokka-guided curriculum for offline reinforcement learning",
    "abstract": "We propose a quokka-guided curriculum that orders offline transitions by difficulty. " * 3,
}


async def _ingest_elsewhere(db_path: Path, record: dict[str, str]) -> None:
    """Store a paper through a second connection, as `paperbot ingest` in another process would."""
    async with await Database.open(db_path) as other:
        await ingest_bytes(other, "other.jsonl", json.dumps(record).encode())


async def test_the_index_is_saved_beside_the_database_and_reused(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "paperbot.db")
    async with open_services(settings) as services:
        first = services.search.search("quantization", limit=3).hits
    snapshot = snapshot_path(settings)
    assert snapshot is not None
    assert snapshot.exists()
    saved_at = snapshot.stat().st_mtime_ns
    async with open_services(settings) as services:
        assert services.search.search("quantization", limit=3).hits == first
    assert snapshot.stat().st_mtime_ns == saved_at  # loaded, not rebuilt


async def test_a_stale_snapshot_is_rebuilt_with_the_new_papers(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "paperbot.db")
    async with open_services(settings):
        pass
    await _ingest_elsewhere(settings.db_path, PAPER)
    async with open_services(settings) as services:
        assert services.search.search("quokka curriculum", limit=3).hits


async def test_papers_stored_by_another_process_become_searchable_while_running(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "paperbot.db")
    async with open_services(settings) as services:
        await _ingest_elsewhere(settings.db_path, PAPER)
        assert not services.search.search("quokka curriculum", limit=3).hits
        assert await services.refresh_changed() >= 1  # (stamps have one-second resolution)
        assert services.search.search("quokka curriculum", limit=3).hits
    async with open_services(settings) as services:  # the refreshed snapshot matches the store
        assert services.search.search("quokka curriculum", limit=3).hits
