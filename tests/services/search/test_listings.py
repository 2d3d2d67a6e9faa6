"""SearchService: listings run and checked before the answer, stored behind it, paged; paper references.

A real database, the real engine over it and the real write-behind (its outbox in tmp_path).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bot.errors import USER_FACING, NotFoundError, QueryError
from bot.services.search import listings as listings_module
from bot.services.search.listings import SearchService
from bot.services.write_behind import WriteBehind
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.searches import SearchRepository

USER = 42
OTHER = 43

RECORDS = [
    PaperRecord(
        title="KV Cache Quantization for Long Contexts",
        abstract="We quantize the key value cache of transformers to two bits for long context inference.",
        authors=("Ada Lovelace", "Alan Turing"),
        venue="ICML 2024",
        year=2024,
        arxiv_id="2401.01234",
    ),
    PaperRecord(
        title="Cache Eviction for Transformer Inference",
        abstract="An eviction policy for the key value cache keeps transformer inference within memory.",
        authors=("Grace Hopper",),
        venue="NeurIPS 2023",
        year=2023,
    ),
    PaperRecord(
        title="Quantization of Vision Transformers",
        abstract="Post-training quantization of vision transformers with little loss of accuracy.",
        authors=("Alan Turing",),
        venue="ICML 2024",
        year=2024,
        doi="10.1000/vit.quant",
    ),
    PaperRecord(
        title="Graph Neural Networks for Molecules",
        abstract="Message passing networks predict molecular properties from graphs of atoms.",
        authors=("Marie Curie",),
        venue="ICLR 2024",
        year=2024,
    ),
]


@pytest.fixture
async def service(db: Database, tmp_path: Path) -> AsyncIterator[SearchService]:
    papers = PaperRepository(db)
    await papers.upsert_many(RECORDS)
    _, rows = await papers.index_rows_at()
    searches = SearchRepository(db)
    writes = WriteBehind(
        tmp_path / "paperbot.db.pending",
        feedback=FeedbackRepository(db),
        searches=searches,
        messages=PostedMessageRepository(db),
    )
    await writes.start()
    try:
        yield SearchService(SearchEngine.build(rows), papers, searches, writes)
    finally:
        await writes.stop()


async def _id_of(db: Database, title: str) -> int:
    row = await db.fetchone("SELECT id FROM papers WHERE title = ?", (title,))
    assert row is not None
    return int(row[0])


async def test_a_search_is_paged_and_each_page_knows_its_place(service: SearchService) -> None:
    first = await service.search(1001, user_id=USER, query="transformer cache", page_size=2)
    assert first.total == 3
    assert first.pages == 2
    assert (first.page, first.offset) == (0, 0)
    ranked = [hit.paper_id for hit in service.engine.search("transformer cache", limit=3).hits]
    assert [hit.paper.id for hit in first.hits] == ranked[:2], "the engine's order, read from the store"
    assert all("**" in hit.snippet for hit in first.hits), "the query's words in bold"
    assert all(hit.matched for hit in first.hits)
    second = await service.page(1001, 1, user_id=USER)
    assert (second.page, second.offset, second.total) == (1, 2, 3)
    assert [hit.paper.id for hit in second.hits] == ranked[2:]


async def test_papers_added_while_a_page_counts_its_matches_do_not_break_the_count(
    service: SearchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page counts the papers holding every word of the query, one word after the other: papers an
    ingest adds meanwhile (another thread) wait until the count is done, where they used to make the
    words' arrays of unequal length and the page fail."""
    index = service.engine.index
    read = index._mark
    adders: list[threading.Thread] = []

    def reading_while_papers_arrive(*args: Any) -> np.ndarray:
        holding = read(*args)
        if not adders:
            adding = threading.Thread(target=index.add, args=([9001], [["long", "context"]]))
            adders.append(adding)
            adding.start()
            adding.join(timeout=1.0)  # done at once, unless the count holds the index meanwhile
        return holding

    monkeypatch.setattr(index, "_mark", reading_while_papers_arrive)
    first = await service.search(1003, user_id=USER, query="long context", page_size=2)
    adders[0].join()
    assert first.holding_all == 1  # the KV cache paper, as the index held it when the count began
    assert index.slot_of(9001) >= 0  # the paper was added, after the count


async def test_a_listing_pages_before_the_store_has_it_and_after(
    service: SearchService, db: Database
) -> None:
    await service.search(1002, user_id=USER, query="quantization", venue="icml", page_size=1)
    assert service.writes.pending_listing(1002) is not None or await SearchRepository(db).get(1002)
    assert (await service.page(1002, 1, user_id=USER)).listing.venue == "icml"
    await service.writes.drained()
    assert await SearchRepository(db).get(1002) is not None
    stored = await service.page(1002, 1, user_id=USER)
    assert stored.total == 2
    assert [hit.paper.title for hit in stored.hits] == ["Quantization of Vision Transformers"]


async def test_a_search_with_no_match_says_which_filters_applied_and_stores_nothing(
    service: SearchService, db: Database
) -> None:
    with pytest.raises(QueryError) as no_filter:
        await service.search(1003, user_id=USER, query="photosynthesis", page_size=5)
    assert str(no_filter.value) == "No papers match “photosynthesis”. Try other or fewer words."
    with pytest.raises(QueryError) as filtered:
        await service.search(1004, user_id=USER, query="cache", author="Curie", year=2024, page_size=5)
    assert str(filtered.value) == (
        "No papers match “cache” with author “Curie”, year 2024. Try without a filter or with other words."
    )
    await service.writes.drained()
    assert await db.fetchall("SELECT id FROM searches") == []


async def test_a_query_that_cannot_be_searched_is_refused_before_anything_runs(
    service: SearchService,
) -> None:
    with pytest.raises(USER_FACING, match="no words in it"):
        await service.search(1005, user_id=USER, query="🙂 ?!", page_size=5)
    # a paper's link pasted as the query: where to take it
    with pytest.raises(QueryError, match=r"a link to a paper.*`/paper show paper:` takes it"):
        await service.search(1005, user_id=USER, query="https://arxiv.org/abs/2401.00001", page_size=5)


async def test_an_expired_listing_says_so(service: SearchService) -> None:
    with pytest.raises(NotFoundError, match=r"^This result list has expired; run the search again\.$"):
        await service.page(999_999, 0, user_id=USER)


async def test_papers_like_one_paper_leave_it_out_and_carry_its_title(
    service: SearchService, db: Database
) -> None:
    source = await _id_of(db, "KV Cache Quantization for Long Contexts")
    first = await service.similar(1006, user_id=USER, paper=str(source), page_size=5)
    assert first.source_title == "KV Cache Quantization for Long Contexts"
    assert first.listing.paper_id == source
    ids = [hit.paper.id for hit in first.hits]
    assert source not in ids
    assert ids == [hit.paper_id for hit in service.engine.similar(source, limit=5).hits]
    assert (await service.page(1006, 0, user_id=USER)).hits == first.hits


async def test_papers_like_one_paper_are_listed_only_as_deep_as_they_are_alike(
    service: SearchService, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nearly every paper shares a word with any other: the listing stops at the most alike, rather than
    counting the whole library in pages nobody reads."""
    source = await _id_of(db, "KV Cache Quantization for Long Contexts")
    sharing = service.engine.similar(source, limit=1).total
    assert sharing == 2
    monkeypatch.setattr(listings_module, "SIMILAR_LISTED", 1)
    first = await service.similar(1007, user_id=USER, paper=str(source), page_size=1)
    assert (first.total, first.pages) == (1, 1)


async def test_a_paper_is_named_by_id_external_id_or_title(service: SearchService, db: Database) -> None:
    kv = await _id_of(db, "KV Cache Quantization for Long Contexts")
    vit = await _id_of(db, "Quantization of Vision Transformers")
    assert (await service.resolve_paper(f" {kv} ")).id == kv
    assert (await service.resolve_paper("arXiv:2401.01234v3")).id == kv
    assert (await service.resolve_paper("https://doi.org/10.1000/VIT.QUANT")).id == vit
    assert (await service.resolve_paper("graph neural")).id == await _id_of(
        db, "Graph Neural Networks for Molecules"
    ), "one title matches what was typed"
    assert (await service.resolve_paper("quantization of vision transformers")).id == vit, "an exact title"


async def test_an_unknown_or_ambiguous_paper_reference_is_refused_with_the_reference_quoted(
    service: SearchService,
) -> None:
    with pytest.raises(NotFoundError, match=r"^Name a paper: start typing its title"):
        await service.resolve_paper("   ")
    with pytest.raises(NotFoundError, match=r"^I don't know a paper matching “quantization”"):
        await service.resolve_paper("quantization")  # two titles: not a choice
    long = "z" * 200
    with pytest.raises(NotFoundError) as refused:
        await service.resolve_paper(long)
    assert f"“{'z' * 79}…”" in str(refused.value)


async def test_autocomplete_offers_a_paper_by_its_ids_from_the_store(
    service: SearchService, db: Database
) -> None:
    """The index built from the store holds each paper's arXiv id, OpenReview id and DOI, so the
    paper autocomplete (`/paper show`, `/paper interests add paper:`) offers a paper by any of them."""
    kv = await _id_of(db, "KV Cache Quantization for Long Contexts")
    title = "KV Cache Quantization for Long Contexts"
    for typed in ("2401.01234", "2401.01234v2", "arXiv:2401.01234", "https://arxiv.org/abs/2401.01234"):
        assert service.autocomplete(typed)[:1] == [(kv, title)], typed
    assert service.autocomplete("2401.012")[:1] == [(kv, title)], "an id being typed"
    assert service.autocomplete("10.1000/VIT.quant")[0][1] == "Quantization of Vision Transformers"
    assert service.autocomplete("2402.99999") == []
    more = await service.papers.upsert_many(
        [
            PaperRecord(
                title="Later", abstract="A paper stored after the index was built.", arxiv_id="2501.00007"
            )
        ]
    )
    assert more.added == 1
    service.engine.add((await service.papers.changes_after(0)).changed)
    assert service.autocomplete("2501.00007")[0][1] == "Later", "and papers it follows after"


async def test_a_page_is_in_its_searchers_order_whoever_presses(service: SearchService) -> None:
    """A listing's close matches are ordered by the model of the person who ran it, on its first page
    and on every page anyone turns to; another person's press never asks for their own order, and the
    page says whether it is shown to its searcher."""
    asked: list[int] = []

    async def order(user_id: int, paper_ids: Sequence[int], scores: Sequence[float]) -> list[int]:
        asked.append(user_id)
        return list(reversed(paper_ids)) if user_id == USER else list(paper_ids)

    personal = SearchService(
        service.engine, service.papers, service.searches, service.writes, personal_order=order
    )
    plain = [hit.paper_id for hit in service.engine.search("transformer cache", limit=3).hits]
    first = await personal.search(1007, user_id=USER, query="transformer cache", page_size=2)
    assert [hit.paper.id for hit in first.hits] == plain[::-1][:2]
    theirs = await personal.page(1007, 1, user_id=OTHER)
    mine = await personal.page(1007, 1, user_id=USER)
    assert [hit.paper.id for hit in theirs.hits] == [hit.paper.id for hit in mine.hits] == plain[::-1][2:]
    assert (theirs.personal, theirs.for_searcher) == (True, False)
    assert (mine.personal, mine.for_searcher) == (True, True)
    assert OTHER not in asked
