"""PaperRepository: merge rules (never duplicate, richer fills poorer, idempotent), look-ups, index rows."""

from __future__ import annotations

import asyncio

import pytest

from storage.db import Database
from storage.models import PaperIdentity, PaperRecord
from storage.repositories.papers import PaperRepository, UpsertCounts

ABSTRACT_A = (
    "We present Medusa, an efficient method that augments LLM inference by adding extra decoding heads to "
    "predict multiple subsequent tokens in parallel, with a tree-based attention mechanism."
)
ABSTRACT_B = (
    "We study statistical learning with dependent data and square loss in a hypothesis class with tail "
    "decay in Orlicz space, and obtain sharp rates that avoid sample size deflation."
)
ABSTRACT_C = (
    "Diffusion models sample slowly because every step evaluates a large network; we propose an early-exit "
    "scheme that skips parameters at steps where the score is easy to estimate."
)


def seed(abstract: str = ABSTRACT_A, **fields: object) -> PaperRecord:
    """An abstract-only record, as the paper-list parser makes."""
    values: dict[str, object] = {
        "title": "Medusa: an efficient method",
        "title_derived": True,
        "abstract": abstract,
    }
    values.update(fields)
    return PaperRecord(**values)  # type: ignore[arg-type]


def full(abstract: str = ABSTRACT_A, **fields: object) -> PaperRecord:
    values: dict[str, object] = {
        "title": "Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads",
        "abstract": abstract,
        "authors": ("Tianle Cai", "Yuhong Li"),
        "venue": "ICML",
        "year": 2024,
        "status": "Poster",
        "openreview_id": "PEpbUobfJv",
        "external_id": "PEpbUobfJv",
        "url": "https://openreview.net/forum?id=PEpbUobfJv",
    }
    values.update(fields)
    return PaperRecord(**values)  # type: ignore[arg-type]


@pytest.fixture
def repo(db: Database) -> PaperRepository:
    return PaperRepository(db)


async def _snapshot(db: Database) -> list[tuple[object, ...]]:
    return [tuple(row) for row in await db.fetchall("SELECT * FROM papers ORDER BY id")]


async def test_a_richer_record_fills_an_abstract_only_paper(repo: PaperRepository) -> None:
    assert await repo.upsert_many(
        [seed(code_url="https://github.com/FasterDecoding/Medusa")]
    ) == UpsertCounts(1, 0, 0)
    assert await repo.upsert_many([full(abstract="**" + ABSTRACT_A.upper() + "**")]) == UpsertCounts(0, 1, 0)
    assert await repo.count() == 1
    paper = await repo.get(1)
    assert paper is not None
    assert paper.title.startswith("Medusa: Simple LLM Inference")
    assert paper.title_derived is False
    assert paper.authors == ("Tianle Cai", "Yuhong Li")
    assert (paper.venue, paper.year, paper.status, paper.openreview_id) == (
        "ICML",
        2024,
        "Poster",
        "PEpbUobfJv",
    )
    assert paper.code_url == "https://github.com/FasterDecoding/Medusa", "kept, not overwritten by an empty"
    assert paper.abstract == ABSTRACT_A, "the stored abstract stays"


async def test_a_poorer_record_never_overwrites_real_data(repo: PaperRepository) -> None:
    await repo.upsert_many([full()])
    counts = await repo.upsert_many([seed(venue=None, year=None)])
    assert counts == UpsertCounts(0, 0, 1)
    paper = await repo.get(1)
    assert paper is not None
    assert paper.title_derived is False
    assert paper.authors


async def test_a_second_real_title_does_not_replace_the_first(repo: PaperRepository) -> None:
    await repo.upsert_many([full()])
    await repo.upsert_many([full(title="Medusa (camera-ready title)", status="Oral")])
    paper = await repo.get(1)
    assert paper is not None
    assert paper.title.startswith("Medusa: Simple")
    assert paper.status == "Poster"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"arxiv_id": "2401.10774"}, {"arxiv_id": "2401.10774"}),
        ({"arxiv_id": "hep-th/9901001"}, {"arxiv_id": "hep-th/9901001"}),
        ({"openreview_id": "AbCdEf1234"}, {"openreview_id": "AbCdEf1234"}),
        ({"doi": "10.1000/ABC"}, {"doi": "10.1000/abc"}),
    ],
)
async def test_the_same_id_with_different_text_is_one_paper(
    repo: PaperRepository, first: dict[str, object], second: dict[str, object]
) -> None:
    await repo.upsert_many([full(abstract=ABSTRACT_B, **{"openreview_id": None, **first})])
    counts = await repo.upsert_many(
        [full(abstract=ABSTRACT_C, authors=(), **{"openreview_id": None, **second})]
    )
    assert counts.added == 0
    assert await repo.count() == 1


async def test_arxiv_versions_are_stored_without_version_by_the_parsers_and_match(
    repo: PaperRepository,
) -> None:
    await repo.upsert_many([full(arxiv_id="2401.10774v1", openreview_id=None, abstract=ABSTRACT_B)])
    await repo.upsert_many([full(arxiv_id="arXiv:2401.10774v3", openreview_id=None, abstract=ABSTRACT_C)])
    assert await repo.count() == 1
    paper = await repo.find_by_external("https://arxiv.org/abs/2401.10774v2")
    assert paper is not None
    assert paper.arxiv_id == "2401.10774"


async def test_ingesting_again_changes_nothing(db: Database, repo: PaperRepository) -> None:
    batch = [
        seed(),
        full(abstract=ABSTRACT_B, openreview_id="x1", external_id="x1"),
        full(abstract=ABSTRACT_C, openreview_id=None),
    ]
    await repo.upsert_many(batch)
    before = await _snapshot(db)
    await asyncio.sleep(1.1)  # a second later: any rewrite would show in updated_at
    assert await repo.upsert_many(batch) == UpsertCounts(0, 0, 3)
    assert await _snapshot(db) == before


async def test_duplicates_inside_one_batch_merge(repo: PaperRepository) -> None:
    counts = await repo.upsert_many([seed(), full(), seed(), full(venue="NeurIPS")])
    assert counts == UpsertCounts(1, 1, 2)
    assert await repo.count() == 1
    paper = await repo.get(1)
    assert paper is not None
    assert paper.venue == "ICML"
    assert not paper.title_derived


async def test_a_record_joining_two_papers_merges_into_the_strongest_match(
    db: Database, repo: PaperRepository
) -> None:
    """arXiv id points at paper 1, the abstract at paper 2: paper 1 gets the record, paper 2 stays."""
    await repo.upsert_many([full(abstract=ABSTRACT_B, arxiv_id="2401.00001", openreview_id=None)])
    await repo.upsert_many([seed(abstract=ABSTRACT_C)])
    counts = await repo.upsert_many(
        [
            full(
                abstract=ABSTRACT_C,
                arxiv_id="2401.00001",
                openreview_id="NEWID12345",
                doi="10.1000/x",
                authors=("Z",),
            )
        ]
    )
    assert counts == UpsertCounts(0, 1, 0)
    assert await repo.count() == 2
    one, two = (await repo.get(1)), (await repo.get(2))
    assert one is not None
    assert two is not None
    assert (one.openreview_id, one.doi) == ("NEWID12345", "10.1000/x")
    assert two.title_derived is True
    assert two.openreview_id is None
    key_two = await db.fetchval("SELECT content_key FROM papers WHERE id = 2")
    assert key_two is not None, "the abstract's key stays with the paper that had it"


async def test_look_ups_by_id_and_external_id(repo: PaperRepository) -> None:
    await repo.upsert_many(
        [
            full(arxiv_id="2401.10774", doi="10.48550/arXiv.2401.10774"),
            full(abstract=ABSTRACT_B, openreview_id=None, external_id="4983", title="SciFact doc"),
        ]
    )
    assert (await repo.find_by_external("1")).title.startswith("Medusa")  # type: ignore[union-attr]
    assert (await repo.find_by_external("#2")).title == "SciFact doc"  # type: ignore[union-attr]
    assert (await repo.find_by_external("4983")).title == "SciFact doc"  # type: ignore[union-attr]
    for text in (
        "2401.10774v2",
        "arXiv:2401.10774",
        "PEpbUobfJv",
        "https://openreview.net/forum?id=PEpbUobfJv",
        "10.48550/ARXIV.2401.10774",
        "https://doi.org/10.48550/arXiv.2401.10774",
    ):
        paper = await repo.find_by_external(text)
        assert paper is not None, text
        assert paper.id == 1, text
    assert await repo.find_by_external("nope") is None
    assert await repo.find_by_external("  ") is None
    assert await repo.get(99) is None
    many = await repo.get_many([2, 1, 99, 1])
    assert sorted(many) == [1, 2]


async def test_identities_are_each_papers_title_and_ids(repo: PaperRepository) -> None:
    await repo.upsert_many(
        [
            full(arxiv_id="2401.10774", doi="10.48550/arXiv.2401.10774"),
            full(abstract=ABSTRACT_B, openreview_id=None, external_id="4983", title="SciFact doc"),
        ]
    )
    found = await repo.identities([2, 99, 1, 2])
    assert found == {
        1: PaperIdentity(
            1, full().title, "PEpbUobfJv", "2401.10774", "PEpbUobfJv", "10.48550/arxiv.2401.10774"
        ),
        2: PaperIdentity(2, "SciFact doc", "4983", None, None, None),
    }
    assert await repo.identities([]) == {}


async def test_index_rows_and_changes_after(db: Database, repo: PaperRepository) -> None:
    await repo.upsert_many([full(), full(abstract=ABSTRACT_B, openreview_id=None, authors=())])
    rows = await repo.iter_index_rows()
    assert [row.paper_id for row in rows] == [1, 2]
    assert rows[0].authors == ("Tianle Cai", "Yuhong Li")
    assert rows[1].authors == ()
    assert (rows[0].venue, rows[0].year) == ("ICML", 2024)
    assert [row.paper_id for row in await repo.iter_index_rows(ids=[2])] == [2]
    assert [row.paper_id for row in await repo.iter_index_rows(page=1)] == [1, 2]
    position, everything = await repo.index_rows_at()
    assert everything == rows
    assert (position.seq, position.papers) == (2, 2)
    async with repo.index_pages_at(page=1) as (paged_at, pages):
        assert paged_at == position
        assert [page async for page in pages] == [[rows[0]], [rows[1]]]  # a page at a time, in id order
    assert await repo.changes_after(position.seq) == (2, [])
    seq, changed = await repo.changes_after(0)
    assert (seq, [row.paper_id for row in changed]) == (2, [1, 2])


async def test_every_paper_write_takes_the_next_change_seq(db: Database, repo: PaperRepository) -> None:
    """Inserts and updates, through the repository or plain SQL, each move the sequence forward; a
    record that changes nothing does not."""
    await repo.upsert_many([full()])
    first = await repo.index_position()
    await repo.upsert_many([full()])  # the same record again: nothing written
    assert await repo.index_position() == first
    await repo.upsert_many([full(code_url="https://github.com/x/y")])  # fills a field: an update
    seq, changed = await repo.changes_after(first.seq)
    assert [row.paper_id for row in changed] == [1]
    assert seq > first.seq
    await db.execute("UPDATE papers SET venue = 'NeurIPS' WHERE id = 1")
    later, changed = await repo.changes_after(seq)
    assert later > seq
    assert [(row.paper_id, row.venue) for row in changed] == [(1, "NeurIPS")]
    await db.execute(
        "INSERT INTO papers (title, abstract, added_at, updated_at) VALUES ('Typed in', 'by hand', 'x', 'x')"
    )
    latest, changed = await repo.changes_after(later)
    assert [row.title for row in changed] == ["Typed in"]
    assert latest > later


async def test_upsert_inside_the_callers_transaction_rolls_back_with_it(
    db: Database, repo: PaperRepository
) -> None:
    async def merge_then_fail() -> None:
        async with db.transaction() as conn:
            await repo.upsert_many([full()], conn=conn)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await merge_then_fail()
    assert await repo.count() == 0


async def test_large_batches_are_chunked(repo: PaperRepository) -> None:
    records = [
        full(
            abstract=f"{ABSTRACT_B} Variant number {n} of this abstract, long enough.",
            openreview_id=f"id{n:06d}",
            external_id=None,
        )
        for n in range(1300)
    ]
    assert await repo.upsert_many(records) == UpsertCounts(1300, 0, 0)
    assert await repo.upsert_many(records) == UpsertCounts(0, 0, 1300)
    assert await repo.count() == 1300
