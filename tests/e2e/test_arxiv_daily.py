"""The daily arXiv fetch: scheduled at its UTC time, new papers searchable at once, failures logged."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.runtime import Services, open_services
from bot.scheduler import ARXIV_JOB_ID, ProcessScheduler
from bot.services.papers.arxiv_daily import run_daily_fetch
from bot.services.papers.arxiv_fetch import FetchSummary
from bot.services.papers.ingest.runner import ingest_bytes
from bot.settings import Settings
from storage.db import Database
from storage.store import StoreLocation

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title>arXiv Query</title>
  <entry>
    <id>http://arxiv.org/abs/2611.01234v2</id>
    <published>2026-11-29T10:00:00Z</published>
    <updated>2026-11-29T10:00:00Z</updated>
    <title>Zebrafish-inspired swarm routing for sparse mixture-of-experts</title>
    <summary>We route tokens in sparse mixture-of-experts layers with a zebrafish-inspired swarm rule
    and show it balances expert load without auxiliary losses.</summary>
    <author><name>Ada Lovelace</name></author>
    <arxiv:primary_category term="cs.LG"/>
    <category term="cs.LG"/>
  </entry>
</feed>
"""


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    settings = Settings(store=StoreLocation.parse(tmp_path / "paperbot.db"), arxiv_categories=("cs.LG",))
    async with open_services(settings) as built:
        yield built


async def fake_fetch(db: Database, *, categories: Sequence[str], days: int) -> FetchSummary:
    summary = await ingest_bytes(db, "arxiv.atom", ATOM.encode())
    return FetchSummary(
        categories=tuple(categories), requests=1, added=summary.added, merged=summary.merged,
        unchanged=summary.unchanged, rejected=summary.rejected,
    )  # fmt: skip


async def test_fetched_papers_are_searchable_at_once(services: Services) -> None:
    assert not services.search.search("zebrafish swarm routing", limit=5).hits
    summary = await run_daily_fetch(
        services.db, services.settings.arxiv_categories, services.index.refresh, fetch=fake_fetch
    )
    assert summary is not None
    assert summary.added == 1
    hits = services.search.search("zebrafish swarm routing", limit=5).hits
    assert len(hits) == 1
    paper = await services.papers.get(hits[0].paper_id)
    assert paper is not None
    assert paper.arxiv_id == "2611.01234"


async def test_a_failed_fetch_is_logged_and_does_not_raise(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(db: Database, *, categories: Sequence[str], days: int) -> FetchSummary:
        raise TimeoutError("arXiv did not answer")

    with caplog.at_level(logging.ERROR):
        assert (
            await run_daily_fetch(
                services.db, services.settings.arxiv_categories, services.index.refresh, fetch=broken
            )
            is None
        )
    assert "daily arXiv fetch of cs.LG failed" in caplog.text


async def test_a_failed_index_refresh_is_logged_and_does_not_raise(
    services: Services, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetch stored its papers but indexing them failed: logged, not raised (the scheduler's job
    must never raise), and the stored papers are reported."""

    def broken(rows: object) -> None:
        raise MemoryError("no room for the new postings")

    monkeypatch.setattr(services.search, "add", broken)
    with caplog.at_level(logging.ERROR):
        summary = await run_daily_fetch(
            services.db, services.settings.arxiv_categories, services.index.refresh, fetch=fake_fetch
        )
    assert summary is not None
    assert summary.added == 1
    assert "could not be indexed" in caplog.text
    assert await services.db.fetchval("SELECT COUNT(*) FROM papers WHERE arxiv_id = '2611.01234'") == 1


async def test_nothing_is_fetched_without_categories(services: Services) -> None:
    services.settings = replace(services.settings, arxiv_categories=())
    called = False

    async def spy(db: Database, *, categories: Sequence[str], days: int) -> FetchSummary:
        nonlocal called
        called = True
        raise AssertionError("must not fetch")

    assert (
        await run_daily_fetch(
            services.db, services.settings.arxiv_categories, services.index.refresh, fetch=spy
        )
        is None
    )
    assert not called


async def test_the_job_fires_daily_at_the_configured_utc_time() -> None:
    scheduler = ProcessScheduler()
    scheduler.jobs.start(paused=True)
    try:

        async def job() -> None:
            return None

        scheduled = scheduler.daily_fetch(job, time_utc="06:30")
        assert scheduled.id == ARXIV_JOB_ID
        fire = scheduled.trigger.get_next_fire_time(None, datetime(2026, 11, 30, 7, 0, tzinfo=UTC))
        assert fire == datetime(2026, 12, 1, 6, 30, tzinfo=UTC)
        scheduler.daily_fetch(job, time_utc="05:00")  # replaced, not duplicated
        assert [j.id for j in scheduler.jobs.get_jobs()] == [ARXIV_JOB_ID]
    finally:
        await scheduler.stop()


async def test_the_running_bot_schedules_the_fetch_only_when_categories_are_set(start_paperbot: Any) -> None:
    async with start_paperbot(arxiv_categories=("cs.LG", "cs.CL"), arxiv_fetch_time="05:15") as running:
        job = running.bot.scheduler.jobs.get_job(ARXIV_JOB_ID)
        assert job is not None
        assert (job.next_run_time.hour, job.next_run_time.minute) == (5, 15)
    async with start_paperbot() as plain:
        assert plain.bot.scheduler.jobs.get_job(ARXIV_JOB_ID) is None
