"""Starting from your own library: `/paper interests add file:` with a BibTeX export, paperbot's own
`/paper saved` export, a plain list; what is found counts as your 👍, an arXiv paper not here is fetched
(from a recording of arXiv's API), a paper still not here teaches from its own title and abstract for
that person alone, what is left is said, and a bad or oversized file stores nothing."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from answers import answer_text
from arxiv_recording import RECORDED_TITLE, recorded_arxiv

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
    assert "📖 Learned from their own text (1, not here): “A paper nobody here has”" in text
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


SPIKING = [
    (
        "Surrogate gradients for spiking neural networks",
        "Training spiking neural networks with surrogate gradients of the spike function on neuromorphic chips.",
    ),
    (
        "Event cameras meet spiking neurons",
        "Spiking neurons process event camera streams with sparse spikes on neuromorphic hardware.",
    ),
    (
        "Energy of spiking networks on Loihi",
        "We measure the energy of spiking neural networks running on neuromorphic Loihi chips.",
    ),
    (
        "Temporal coding in spiking networks",
        "Spike timing codes let spiking neural networks classify with few spikes.",
    ),
]
STORED_SPIKING = [
    (
        "Spiking transformers with spike-driven attention",
        "A spiking neural network transformer whose attention is driven by binary spikes on neuromorphic chips.",
    ),
    (
        "Converting ANNs into spiking neural networks",
        "Trained networks converted into spiking neural networks keep accuracy with few spike time steps.",
    ),
    (
        "Neuromorphic learning rules for spiking neurons",
        "Local plasticity trains spiking neurons on neuromorphic hardware without backpropagation.",
    ),
]
STORED_OTHER = [
    (
        "Protein structure from sequence",
        "Folding proteins from their amino acid sequence with attention over residues.",
    ),
    (
        "Weather forecasts with graph networks",
        "Medium-range weather forecasting with message passing on a mesh of the globe.",
    ),
    ("Retrieval for question answering", "Dense retrieval of passages for open-domain question answering."),
]


def _bib(entries: list[tuple[str, str]]) -> bytes:
    return "\n".join(
        f"@article{{e{n}, title={{{title}}}, abstract={{{abstract}}}, year=2024}}"
        for n, (title, abstract) in enumerate(entries)
    ).encode()


@pytest.mark.both_engines
async def test_a_library_the_store_lacks_still_teaches_from_its_own_text(e2e: E2E) -> None:
    """Four papers on spiking networks, none of them here: /paper recommend leans to the spiking papers
    the store has, and nobody else can find the four."""
    server = e2e.server
    await e2e.services.papers.upsert_many(
        PaperRecord(title=t, abstract=a, year=2025) for t, a in STORED_SPIKING + STORED_OTHER
    )
    await e2e.services.index.refresh()
    rows = await e2e.db.fetchall("SELECT id, title FROM papers")
    spiking = {int(r[0]) for r in rows if str(r[1]) in {t for t, _ in STORED_SPIKING}}

    answer = answer_text(
        await server.run_command("bob", "paper interests add", file=Upload("mine.bib", _bib(SPIKING)))
    )
    assert "BibTeX file: 4 entries" in answer
    assert (
        "📖 Learned from their own text (4, not here): “Surrogate gradients for spiking neural networks”"
        in answer
    )
    assert "kept for you alone" in answer
    assert "Not here" not in answer
    assert await _likes(e2e, server.bob.id) == set()  # no paper of the store was liked

    picks = await server.run_command("bob", "paper recommend", count=3)
    picked = {
        int(m.group(1))
        for message in picks.messages
        for button in message.buttons
        if (m := re.fullmatch(r"pb:\w+:(\d+)", str(button.get("custom_id", ""))))
    }
    assert len(picked) == 3, answer_text(picks)
    assert picked <= spiking, answer_text(picks)
    assert "papers like those in your library" in answer_text(picks)
    shown = answer_text(await server.run_command("bob", "paper interests show"))
    assert "Your library, not here (4)" in shown
    subscribed = answer_text(await server.run_command("bob", "paper subscribe", time="09:00"))
    assert "✅ Subscribed" in subscribed  # the library is enough to start a digest from

    # the texts are bob's alone: no paper of the store, so nobody finds them
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM papers WHERE title = ?", (SPIKING[0][0],)) == 0
    found = await server.run_command("carol", "paper search", query="surrogate gradients spike function")
    assert SPIKING[0][0] not in answer_text(found)
    again = answer_text(
        await server.run_command("bob", "paper interests add", file=Upload("mine.bib", _bib(SPIKING)))
    )
    assert "(4, not here (4 kept from before))" in again
    assert (
        await e2e.db.fetchval("SELECT COUNT(*) FROM library_texts WHERE user_id = ?", (server.bob.id,)) == 4
    )


async def test_an_arxiv_entry_not_here_is_fetched_and_liked(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    async with recorded_arxiv() as (url, asked), start_paperbot(arxiv_lookup_url=url) as e2e:
        server = e2e.server
        bib = b"""@article{a, title={Heat-bath random walks}, eprint={1605.08386}, archivePrefix={arXiv}}
@article{b, title={A paper nobody here has}}
@misc{c, title={broken
"""
        answer = answer_text(
            await server.run_command("bob", "paper interests add", file=Upload("lib.bib", bib))
        )
        assert "📚 1 of them is a paper I have (1 fetched from arXiv just now)" in answer
        assert "👍 1 now counts as a paper you like" in answer
        assert "📖 Learned from their own text (1, not here): “A paper nobody here has”" in answer
        assert re.search(r"Not understood \(1\): line 3", answer), answer
        assert [q["id_list"] for q in asked] == ["1605.08386"]
        stored = await e2e.services.papers.find_by_external("1605.08386")
        assert stored is not None
        assert stored.title == RECORDED_TITLE
        await server.eventually(lambda: _has_all(e2e, server.bob.id, {stored.id}), what="bob's 👍 on it")
