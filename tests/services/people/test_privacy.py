"""Retention: stored searches and the notes of who asked to be forgotten are deleted after their days;
the shipped backups' retention is the one forget-me tells people about."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.services.people.privacy import BACKUP_RETENTION_DAYS, PrivacyService
from storage.db import Database
from storage.repositories.searches import SearchRepository

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


async def _search_at(db: Database, query: str, when: datetime) -> None:
    await db.execute(
        "INSERT INTO searches (kind, query, page_size, user_id, created_at) VALUES ('search', ?, 5, 1, ?)",
        (query, when.isoformat(timespec="seconds")),
    )


async def _queries(db: Database) -> list[str]:
    return [str(r[0]) for r in await db.fetchall("SELECT query FROM searches ORDER BY id")]


async def test_searches_older_than_the_retention_are_deleted(db: Database) -> None:
    privacy = PrivacyService(db, search_retention_days=30, clock=lambda: NOW)
    await _search_at(db, "a year ago", NOW - timedelta(days=365))
    await _search_at(db, "31 days ago", NOW - timedelta(days=31))
    await _search_at(db, "29 days ago", NOW - timedelta(days=29))
    await _search_at(db, "just now", NOW)
    assert await privacy.prune_searches() == 2
    assert await _queries(db) == ["29 days ago", "just now"]
    assert await privacy.prune_searches() == 0


async def test_a_stored_listing_is_still_found_until_it_is_pruned(db: Database) -> None:
    """Pruning leaves today's listings intact, so their paging buttons keep working."""
    stored = await SearchRepository(db).save(kind="search", query="kv cache", page_size=5, user_id=1)
    await PrivacyService(db, search_retention_days=1).prune_searches()
    assert await SearchRepository(db).get(stored.id) == stored


async def test_a_failed_prune_is_logged_not_raised(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    privacy = PrivacyService(db, search_retention_days=30, clock=lambda: NOW)
    await db.close()
    with caplog.at_level(logging.ERROR):
        assert await privacy.prune_searches() == 0
    assert "could not delete search listings" in caplog.text


async def test_notes_of_who_asked_to_be_forgotten_are_kept_90_days(db: Database) -> None:
    """Forget-me notes the person and the time (so nothing they did before comes back); the daily prune
    deletes the note after 90 days, with the searches."""
    clock = {"now": NOW - timedelta(days=91)}
    privacy = PrivacyService(db, clock=lambda: clock["now"])
    await privacy.forget(7)
    clock["now"] = NOW - timedelta(days=10)
    await privacy.forget(8)
    clock["now"] = NOW
    await privacy.prune()
    assert [int(r[0]) for r in await db.fetchall("SELECT user_id FROM forgotten_users")] == [8]


def test_forget_me_names_the_retention_the_backup_unit_applies() -> None:
    """paperbot-backup.service deletes backups with `find … -mtime +N -delete`: N is what forget-me says."""
    unit = (DEPLOY / "paperbot-backup.service").read_text("utf-8")
    (days,) = re.findall(r"-mtime \+(\d+) -delete", unit)
    assert int(days) == BACKUP_RETENTION_DAYS
