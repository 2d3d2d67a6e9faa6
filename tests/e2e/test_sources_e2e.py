"""End to end: papers from two live sources — bioRxiv preprints, then the journal's feed with their
published versions and a bioRxiv version 2 — and the digests of the real discord.py client never send
one paper twice; `/paperadmin stats` lists each source's last fetch and counts.

The sources answer from the fixture files (tests/fixtures/sources) through a fake transport: the
sandbox has no network, and the fetch, its dedup and the index refresh are the ones the daily job runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from builders import wait_idle
from source_fakes import FakeService, FakeTime, client, fixture
from test_digest_e2e import paper_messages, posted_paper_ids, wait_for_papers

from bot.scheduler import SOURCES_JOB_ID
from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.sources.biorxiv import BiorxivSource
from bot.services.papers.sources.fetch import SourceFetchSummary, fetch_source
from bot.services.papers.sources.rss import RssSource
from storage.repositories import paper_keys

if TYPE_CHECKING:
    from paperbot_e2e import E2E
    from test_digest_e2e import StartBot

FEED = "https://www.nature.com/neuro.rss"
PREPRINTED = 15  # the first 15 preprints have their journal version in the feed


def _preprint_rows() -> list[dict]:
    rows = []
    for name in ("biorxiv_details_0.json", "biorxiv_details_30.json"):
        rows += [r for r in json.loads(fixture(name))["collection"] if isinstance(r, dict) and r.get("doi")]
    return rows


def _details(rows: list[dict]) -> bytes:
    message = {"status": "ok", "cursor": 0, "count": len(rows), "total": str(len(rows))}
    return json.dumps({"messages": [message], "collection": rows}).encode()


def _journal_feed() -> bytes:
    """The feed's channel and its first PREPRINTED items: the journal versions of the preprints."""
    xml = fixture("rss_nature_neuroscience.xml").decode()
    head, *items = re.split(r"(?=<item )", xml)
    return (head + "".join(items[:PREPRINTED]).split("</rdf:RDF>")[0] + "</rdf:RDF>\n").encode()


async def _fetch(e2e: E2E, source: BiorxivSource | RssSource, body: bytes) -> SourceFetchSummary:
    def answer(url: str, params: Mapping[str, str]) -> HttpResponse:
        return HttpResponse(200, body)

    summary = await fetch_source(e2e.db, source, client(FakeService(answer), FakeTime()), days=8)
    await e2e.services.index.refresh()
    return summary


async def test_a_paper_from_two_sources_and_two_versions_reaches_a_digest_once(
    start_paperbot: StartBot,
) -> None:
    rows = _preprint_rows()
    first_versions = [r for r in rows if r["version"] == "1"][:PREPRINTED]
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        server = e2e.server
        preprints = await _fetch(e2e, BiorxivSource("biorxiv"), _details(first_versions))
        assert preprints.added == PREPRINTED

        await server.run_command("bob", "paper subscribe", topics="learning", count=5)
        await server.run_command("bob", "paper digest")
        first = await wait_for_papers(e2e, lambda: server.dm_messages("bob"), 5)
        sent_first = await posted_paper_ids(e2e, first)

        # the journal versions arrive, and a second version of a preprint already sent
        journal = await _fetch(e2e, RssSource(FEED), _journal_feed())
        assert journal.added == 0
        assert journal.merged + journal.unchanged == PREPRINTED
        sent_doi = (await e2e.services.papers.get(sent_first[0])).doi  # type: ignore[union-attr]
        revised = dict(next(r for r in first_versions if r["doi"] == sent_doi), version="2")
        revised["abstract"] += " This version adds a second cohort."
        update = await _fetch(e2e, BiorxivSource("biorxiv"), _details([revised]))
        assert (update.added, update.merged) == (0, 1)
        assert await e2e.services.papers.count() == PREPRINTED

        for _ in range(4):  # digests until one has nothing that was not sent
            before = len(paper_messages(server.dm_messages("bob")))
            await server.run_command("bob", "paper digest")
            await wait_idle(e2e.bot.digest_jobs)
            await server.wait_quiet()
            if len(paper_messages(server.dm_messages("bob"))) == before:
                break
        sent = await posted_paper_ids(e2e, paper_messages(server.dm_messages("bob")))
        assert len(sent) > 5, len(sent)
        assert len(set(sent)) == len(sent), "no paper twice"
        titles = [
            paper_keys.normalise_text(p.title) for p in (await e2e.services.papers.get_many(sent)).values()
        ]
        assert len(set(titles)) == len(sent), "no title twice, whichever source or version it came from"

        stats = await server.run_command("alice", "paperadmin stats")
        assert stats.embed is not None
        fields = {f["name"]: f["value"] for f in stats.embed["fields"]}
        lines = fields["Sources (every server)"].splitlines()
        assert lines[0].startswith("`biorxiv` <t:")
        assert ": 1 read, 0 new; 16 read, 15 new in all" in lines[0]
        assert lines[1].startswith(f"`rss:{FEED}` <t:")
        assert ": 15 read, 0 new; 15 read, 0 new in all" in lines[1]


async def test_the_running_bot_schedules_the_sources_only_when_set(start_paperbot: StartBot) -> None:
    sources = ("biorxiv:neuroscience", f"rss:{FEED}")
    async with start_paperbot(sources=sources, arxiv_fetch_time="05:20") as running:
        job = running.bot.scheduler.jobs.get_job(SOURCES_JOB_ID)
        assert job is not None
        assert (job.next_run_time.hour, job.next_run_time.minute) == (5, 20)
        running.bot.scheduler.remove_daily_jobs()  # another process leads now
        assert running.bot.scheduler.jobs.get_job(SOURCES_JOB_ID) is None
    async with start_paperbot() as plain:
        assert plain.bot.scheduler.jobs.get_job(SOURCES_JOB_ID) is None
