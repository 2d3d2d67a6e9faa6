"""Zotero-ready export through the real discord.py client and the local Discord server: /paper saved
lists the bookmarks with BibTeX, RIS and CSL-JSON buttons, `export:` attaches a file directly, each file
carries the ids, DOI, URL and abstract, and a file too large to attach is refused with the reason."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from export_specs import check_against_schema, parse_ris
from lab_papers import KV_ABSTRACT, LAB, add_papers

from bot.sandbox import SandboxServer

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def _save_lab_papers(e2e: E2E) -> list[int]:
    server = e2e.server
    ids = await add_papers(e2e, LAB)
    for paper_id in ids:
        shown = await server.run_command("bob", "paper show", paper=str(paper_id))
        await server.eventually(
            lambda shown=shown: len(shown.message.reactions) == 3, what="the bot's reactions"
        )
        await server.react("bob", shown.message, "🔖")
    await server.eventually(lambda: _count_saved(e2e, len(ids)), what="both bookmarks stored")
    return ids


async def _count_saved(e2e: E2E, n: int) -> bool:
    return int(await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE signal = 'save'")) == n


async def test_saved_papers_export_to_bibtex_ris_and_csl_json_with_ids_doi_url_and_abstract(e2e: E2E) -> None:
    server = e2e.server
    await _save_lab_papers(e2e)
    listing = await server.run_command("bob", "paper saved")
    assert listing.ephemeral
    assert "Your saved papers (2)" in listing.embed["title"]
    assert [b["label"] for b in listing.message.buttons] == ["BibTeX", "RIS", "CSL-JSON"]

    ris = await server.click("bob", listing, "RIS")
    assert ris.ephemeral
    [attachment] = ris.message.attachments
    assert attachment.filename == "paperbot-saved.ris"
    records = parse_ris(attachment.data.decode("utf-8"))
    by_title = {dict(record)["TI"]: record for record in records}
    kv, tree = by_title[LAB[0]["title"]], by_title[LAB[1]["title"]]
    kv_fields = dict(kv)
    assert kv_fields["TY"] == "CONF"
    assert kv_fields["DO"] == "10.5555/kvsquash.2024"
    assert kv_fields["UR"] == "https://arxiv.org/abs/2405.00001"
    assert kv_fields["AB"] == KV_ABSTRACT
    assert ("N1", "arXiv: 2405.00001") in kv
    assert [v for t, v in kv if t == "AU"][:2] == ["Lovelace, Ada", "Turing, Alan"]
    assert ("N1", "OpenReview: TrEeDrAfT1") in tree
    assert dict(tree)["UR"] == "https://openreview.net/forum?id=TrEeDrAfT1"

    csl = await server.click("bob", listing, "CSL-JSON")
    [attachment] = csl.message.attachments
    assert attachment.filename == "paperbot-saved.json"
    items = json.loads(attachment.data)
    check_against_schema(items)
    items_by_title = {item["title"]: item for item in items}
    kv_item = items_by_title[LAB[0]["title"]]
    assert kv_item["DOI"] == "10.5555/kvsquash.2024"
    assert kv_item["abstract"] == KV_ABSTRACT
    assert "arXiv: 2405.00001" in kv_item["note"]
    assert "OpenReview: TrEeDrAfT1" in items_by_title[LAB[1]["title"]]["note"]

    bib = await server.run_command("bob", "paper saved", export="bibtex")
    [attachment] = bib.message.attachments
    assert attachment.filename == "paperbot-saved.bib"
    text = attachment.data.decode("utf-8")
    assert "doi = {10.5555/kvsquash.2024}" in text
    assert "eprint = {2405.00001}" in text
    assert "note = {OpenReview: TrEeDrAfT1}" in text
    assert "Your 2 saved papers as BibTeX" in bib.content


async def test_a_file_too_large_to_attach_is_refused_with_the_reason(
    start_paperbot, sandbox: SandboxServer
) -> None:  # type: ignore[no-untyped-def]
    sandbox.options.attachment_size_limit = 1024  # as a server whose uploads Discord caps that low
    async with start_paperbot() as e2e:
        await _save_lab_papers(e2e)
        answer = await e2e.server.run_command("bob", "paper saved", export="ris")
        assert answer.ephemeral
        assert answer.message.attachments == []
        assert "Discord lets me attach at most 1 KB here" in answer.content
        assert "Take the 🔖 off a few papers" in answer.content
