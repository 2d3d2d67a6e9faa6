"""Journeys 11–12 for server admins: /paperadmin ingest with an attached file, /paperadmin stats.

Through the real discord.py client and the local Discord server: the file is uploaded as an
attachment, downloaded by the bot from the attachment URL, ingested with the same parsers as the
CLI, and the new papers are searchable at once.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from answers import answer_text
from shared_data import shared_path

from bot.sandbox import ClientRefused

if TYPE_CHECKING:
    from conftest import E2E


async def _paper_count(e2e: E2E) -> int:
    return int(await e2e.db.fetchval("SELECT COUNT(*) FROM papers"))


NEW_PAPERS = [
    {
        "id": "zx-1",
        "title": "Zorblax: Quasitensor Routing for Sparse Mixture Models",
        "abstract": "We introduce zorblax, a quasitensor router for sparse mixtures of experts.",
        "authors": ["Ada Quill", "Ben Root"],
        "venue": "TESTCONF",
        "year": 2026,
    },
    {
        "id": "zx-2",
        "title": "Flumberly Gradients",
        "abstract": "Flumberly gradients stabilise training of very deep quasitensor networks.",
        "authors": ["Cy Dee"],
        "venue": "TESTCONF",
        "year": 2026,
    },
]


async def test_admin_ingests_an_attached_file_and_its_papers_are_searchable_at_once(e2e: E2E) -> None:
    """added / merged / rejected (with the line and reason), then /paper search finds the new papers."""
    before = await _paper_count(e2e)
    seed = await e2e.db.fetchone(
        "SELECT id, abstract FROM papers WHERE title_derived = 1 ORDER BY id LIMIT 1"
    )
    assert seed is not None, "the shipped corpus has abstract-only papers"
    richer = {
        "id": "zx-3",
        "title": "Plonkwise Attention Is Real",
        "abstract": seed["abstract"],
        "authors": ["E. F."],
    }
    lines = [json.dumps(p) for p in NEW_PAPERS] + [json.dumps(richer), '{"title": "broken", "abstract": ']
    upload = ("zorblax.jsonl", "\n".join(lines) + "\n")

    result = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)

    assert result.ephemeral
    text = result.text
    assert "zorblax.jsonl" in text
    assert re.search(r"added \*\*2\*\*", text), text
    assert re.search(r"merged \*\*1\*\*", text), text
    assert re.search(r"rejected \*\*1\*\*", text), text
    assert "zorblax.jsonl:4: invalid JSON" in text, "the rejected record is named by file and line"
    assert len(result.content) <= 2000
    assert await _paper_count(e2e) == before + 2
    merged = await e2e.db.fetchone("SELECT title, title_derived FROM papers WHERE id = ?", (seed["id"],))
    assert tuple(merged) == ("Plonkwise Attention Is Real", 0), "the richer record filled in the title"

    found = await e2e.server.run_command("bob", "paper search", query="zorblax quasitensor")
    assert "Zorblax: Quasitensor Routing" in answer_text(found)
    found = await e2e.server.run_command("bob", "paper search", query="plonkwise")
    assert "Plonkwise Attention Is Real" in answer_text(found), (
        "the merged paper is re-indexed with its title"
    )


async def test_ingesting_the_same_file_again_changes_nothing(e2e: E2E) -> None:
    upload = ("again.json", json.dumps(NEW_PAPERS))
    first = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert re.search(r"added \*\*2\*\*", first.text), first.text
    count = await _paper_count(e2e)
    second = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert re.search(r"added \*\*0\*\*, merged \*\*0\*\*, unchanged 2", second.text), second.text
    assert "Nothing new" in second.text
    assert await _paper_count(e2e) == count


@pytest.mark.parametrize(
    ("upload", "reason"),
    [
        (("broken.json", '[{"title": "a", "abstract": "b"'), "broken.json"),
        (("latin1.txt", "Caf\xe9 papers\n\nAn abstract about caf\xe9s.".encode("latin-1")), "not UTF-8"),
        (("damaged.jsonl.gz", b"\x1f\x8b\x08\x00garbage"), "gzip"),
    ],
)
async def test_a_malformed_file_is_refused_with_a_reason_and_writes_nothing(
    e2e: E2E, upload: tuple[str, Any], reason: str
) -> None:
    before = await _paper_count(e2e)
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert result.ephemeral
    assert re.search(r"added \*\*0\*\*", result.text), result.text
    assert re.search(r"rejected \*\*1\*\*", result.text), result.text
    assert reason in result.text
    assert await _paper_count(e2e) == before


async def test_many_rejected_records_fit_discord_and_come_as_a_file(e2e: E2E) -> None:
    bad = "\n".join(f'{{"id": "no-text-{i}", "authors": ["Someone"]}}' for i in range(300))
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=("titles.jsonl", bad))
    assert result.ephemeral
    assert len(result.content) <= 2000
    assert re.search(r"rejected \*\*300\*\*", result.text), result.text
    assert "rejected.txt" in result.text
    files = [a for m in result.messages for a in m.attachments if a.filename == "rejected.txt"]
    assert len(files) == 1
    listed = files[0].data.decode().splitlines()
    assert len(listed) > 10
    assert listed[0].startswith("titles.jsonl:1")


async def test_non_admins_cannot_ingest(e2e: E2E) -> None:
    """Hidden from members without Manage Server, and refused by the bot if they get to it anyway."""
    before = await _paper_count(e2e)
    upload = ("sneaky.json", json.dumps(NEW_PAPERS))
    with pytest.raises(ClientRefused):
        await e2e.server.run_command("bob", "paperadmin ingest", file=upload)
    # e.g. an admin opened the command to everyone in Server Settings → Integrations
    result = await e2e.server.run_command("bob", "paperadmin ingest", file=upload, force=True)
    assert result.ephemeral
    assert "Manage Server" in result.text
    assert await _paper_count(e2e) == before
    stats = await e2e.server.run_command("bob", "paperadmin stats", force=True)
    assert "Manage Server" in stats.text


async def test_a_file_over_the_size_limit_is_refused_before_download(start_paperbot: Any) -> None:
    async with start_paperbot(max_ingest_bytes=1024) as e2e:
        before = await _paper_count(e2e)
        big = json.dumps(NEW_PAPERS * 20)
        assert len(big) > 1024
        result = await e2e.server.run_command("alice", "paperadmin ingest", file=("big.json", big))
        assert result.ephemeral
        assert "big.json" in result.text
        assert "I accept files up to 1 KB" in result.text
        assert not e2e.server.requests_matching("GET /attachments/**"), "the file was downloaded anyway"
        assert await _paper_count(e2e) == before


async def test_stats_shows_counts_last_fetch_and_next_digests(e2e: E2E) -> None:
    server = e2e.server
    feed = await server.run_command(
        "alice", "paperadmin feed set", channel="general", topics="language models", time="09:00"
    )
    assert feed.ok, feed.failure

    result = await server.run_command("alice", "paperadmin stats")

    assert result.ephemeral
    embed = result.embed
    assert embed is not None
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    papers = await _paper_count(e2e)
    assert fields["Papers"].startswith(f"{papers:,} ({papers:,} searchable)")
    assert fields["Users"].startswith(str(await e2e.db.fetchval("SELECT COUNT(*) FROM users")))
    assert "1 channel feeds" in fields["Subscriptions"]
    assert "never" in fields["Last arXiv fetch"]
    assert re.search(r"next <t:\d+:f>", fields["Next digests"]), fields["Next digests"]
    assert "1 in the next 24 hours" in fields["Next digests"]
    general = server.channel("general")
    assert f"<#{general.id}> <t:" in fields["This server's feeds"]


# --- the real corpora of ../shared through Discord ----------------------------------------------------


@pytest.mark.shared
async def test_the_icml_2024_list_through_discord_gives_the_seed_papers_their_titles(e2e: E2E) -> None:
    """Seeds (shipped) + ICML 2024 uploaded as .jsonl.gz = 2,610 papers, none left with a derived title."""
    icml = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    assert await _paper_count(e2e) == 38
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=icml, timeout=60)
    assert re.search(r"added \*\*2572\*\*, merged \*\*38\*\*", result.text), result.text
    assert await _paper_count(e2e) == 2610
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM papers WHERE title_derived = 1") == 0
    assert len(e2e.services.search) == 2610
    stats = await e2e.server.run_command("alice", "paperadmin stats")
    assert stats.embed is not None
    papers = next(f["value"] for f in stats.embed["fields"] if f["name"] == "Papers")
    assert papers == "2,610 (2,610 searchable)"


@pytest.mark.shared
async def test_arxiv_api_responses_use_the_same_parsers(e2e: E2E) -> None:
    """An arXiv Atom response goes in; the recorded HTTP 400 error feed is refused with its reason."""
    atom = shared_path("data", "arxiv-api", "lukasschwab-arxiv.py-2016", "search_au_del_maestro.xml")
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=atom)
    assert re.search(r"added \*\*10\*\*", result.text), result.text
    error_feed = shared_path(
        "data", "arxiv-api", "lukasschwab-arxiv.py-2026", "id_abc_s0_m100_b79c8dcf6bc3.json"
    )
    before = await _paper_count(e2e)
    refused = await e2e.server.run_command("alice", "paperadmin ingest", file=error_feed)
    assert re.search(r"added \*\*0\*\*", refused.text), refused.text
    assert re.search(r"rejected \*\*1\*\*", refused.text), refused.text
    assert await _paper_count(e2e) == before
