"""Starting from your own library: `/paper interests add file:` with a BibTeX export, paperbot's own
`/paper saved` export, a plain list; what is found counts as your 👍, what is not is said, and a bad or
oversized file stores nothing."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from answers import answer_text

from bot.sandbox import Upload
from storage.models import PaperRecord

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def _likes(e2e: E2E, user_id: int) -> set[int]:
    rows = await e2e.db.fetchall(
        "SELECT paper_id FROM feedback WHERE user_id = ? AND signal = 'like'", (user_id,)
    )
    return {int(r[0]) for r in rows}


async def _stored(e2e: E2E) -> dict[str, int]:
    await e2e.services.papers.upsert_many(
        [
            PaperRecord(
                title="Tree drafts for speculative decoding",
                abstract="We draft continuations as a tree and verify them in one pass of the target model. "
                * 2,
                arxiv_id="2401.01234",
            ),
            PaperRecord(
                title="Residual connections against oversmoothing",
                abstract="Deep graph networks oversmooth node features; residual message passing keeps them apart. "
                * 2,
                doi="10.1145/3580305.3599555",
            ),
            PaperRecord(
                title="Quantized key value caches for long contexts",
                abstract="Two-bit key value caches keep long-context inference within memory at little loss. "
                * 2,
            ),
        ]
    )
    await e2e.services.index.refresh()
    rows = await e2e.db.fetchall("SELECT id, title FROM papers")
    return {str(r[1]): int(r[0]) for r in rows}


@pytest.mark.both_engines
async def test_a_bibtex_library_counts_as_likes_and_says_what_it_could_not_use(e2e: E2E) -> None:
    server = e2e.server
    ids = await _stored(e2e)
    bib = """@article{a, title={Tree drafts}, journal={arXiv preprint arXiv:2401.01234}}
@article{b, title={Residual connections}, doi={10.1145/3580305.3599555}}
@inproceedings{c, title={Quantized Key Value Caches for Long Contexts}, year=2024}
@article{d, title={A paper nobody here has}, doi={10.1000/nothere}}
@misc{e, title={broken
"""
    answer = await server.run_command(
        "bob", "paper interests add", file=Upload("My Library.bib", bib.encode())
    )
    text = answer_text(answer)
    assert answer.ephemeral
    assert "BibTeX file: 4 entries" in text
    assert "3 of them are papers I have" in text
    assert "👍 3 now count as papers you like" in text
    assert "Not here (1): “A paper nobody here has”" in text
    assert re.search(r"Not understood \(1\): line 5: “@misc\{e, title=\{broken”", text), text
    wanted = {
        ids["Tree drafts for speculative decoding"],
        ids["Residual connections against oversmoothing"],
        ids["Quantized key value caches for long contexts"],
    }
    await server.eventually(lambda: _has_all(e2e, server.bob.id, wanted), what="bob's three 👍 stored")

    again = await server.run_command("bob", "paper interests add", file=Upload("again.bib", bib.encode()))
    assert "3 you had liked already" in answer_text(again)
    assert "👍 0 now count" in answer_text(again)


async def _has_all(e2e: E2E, user_id: int, wanted: set[int]) -> bool:
    return wanted <= await _likes(e2e, user_id)


async def test_paperbots_own_saved_export_comes_back_as_likes(e2e: E2E) -> None:
    """Saved papers exported as CSL-JSON by one person start another person's profile."""
    server = e2e.server
    ids = await _stored(e2e)
    first = await server.run_command(
        "alice", "paper search", query="speculative decoding tree drafts", limit=1
    )
    await server.click("alice", first, f"pb:save:{ids['Tree drafts for speculative decoding']}")
    await server.eventually(lambda: _saved(e2e, server.alice.id), what="alice's 🔖 stored")
    exported = await server.run_command("alice", "paper saved", export="csl-json")
    attachment = next(a for m in exported.messages for a in m.attachments)
    answer = await server.run_command(
        "carol", "paper interests add", file=Upload(attachment.filename, attachment.data)
    )
    assert "CSL-JSON file: 1 entry" in answer_text(answer)
    await server.eventually(
        lambda: _has_all(e2e, server.carol.id, {ids["Tree drafts for speculative decoding"]}),
        what="carol's 👍",
    )


async def _saved(e2e: E2E, user_id: int) -> bool:
    return bool(
        await e2e.db.fetchall("SELECT 1 FROM feedback WHERE user_id = ? AND signal = 'save'", (user_id,))
    )


async def test_a_bad_or_oversized_file_stores_nothing(e2e: E2E) -> None:
    server = e2e.server
    await _stored(e2e)
    refused = await server.run_command(
        "bob", "paper interests add", file=Upload("notes.txt", b"lunch with carol\nbuy milk\n")
    )
    assert "I found no paper in that file" in answer_text(refused)
    assert "Nothing was added" in answer_text(refused)
    huge = await server.run_command(
        "bob",
        "paper interests add",
        file=Upload("huge.bib", b"@misc{x, title={y}}\n" + b"%" * (3 * 1024 * 1024)),
    )
    assert "a library may be at most 2 MB" in answer_text(huge)
    assert await _likes(e2e, server.bob.id) == set()
