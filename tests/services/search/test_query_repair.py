"""QueryRepair: a typed search answered by author, or repaired (corrected words, other forms), on a
real store and the real engine over it."""

from __future__ import annotations

import asyncio
import time

import pytest
from test_listings import RECORDS

from bot.services.people.authors import AuthorDirectory
from bot.services.search.query_repair import QueryRepair
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository


async def _repair(db: Database, records: list[PaperRecord]) -> tuple[QueryRepair, SearchEngine]:
    papers = PaperRepository(db)
    await papers.upsert_many(records)
    _, rows = await papers.index_rows_at()
    engine = SearchEngine.build(rows)
    return QueryRepair(AuthorDirectory(engine, papers)), engine


async def test_an_authors_full_name_lists_their_papers_newest_first(db: Database) -> None:
    repair, engine = await _repair(db, RECORDS)
    answer = await repair.search(engine, "alan  TURING", limit=5)
    assert answer.author == "Alan Turing"
    assert answer.results.total == 2
    titles = {engine.title(hit.paper_id) for hit in answer.results.hits}
    assert titles == {"KV Cache Quantization for Long Contexts", "Quantization of Vision Transformers"}
    # the filters apply: under a venue where they have no paper, the words are searched instead
    none = await repair.search(engine, "Alan Turing", limit=5, venue="NeurIPS")
    assert none.author is None  # no paper of theirs there: the words are searched instead
    assert none.results.total == 0


async def test_newest_first_then_latest_added(db: Database) -> None:
    records = [
        PaperRecord(title=f"Paper {year}", abstract="Words.", authors=("Ada Lovelace",), year=year)
        for year in (2021, 2024, 2022)
    ]
    repair, engine = await _repair(db, records)
    answer = await repair.search(engine, "Ada Lovelace", limit=2)
    assert [engine.title(h.paper_id) for h in answer.results.hits] == ["Paper 2024", "Paper 2022"]
    page_two = await repair.search(engine, "Ada Lovelace", limit=2, offset=2)
    assert [engine.title(h.paper_id) for h in page_two.results.hits] == ["Paper 2021"]


@pytest.mark.parametrize("query", ['"Alan Turing"', "Turing", "Alan Turingg"])
async def test_quotes_one_word_or_another_name_search_the_words(db: Database, query: str) -> None:
    repair, engine = await _repair(db, RECORDS)
    answer = await repair.search(engine, query, limit=5)
    assert answer.author is None


async def test_a_misspelt_query_says_what_it_searched(db: Database) -> None:
    repair, engine = await _repair(db, RECORDS)
    answer = await repair.search(engine, "quantizaton of trasnformers", limit=5)
    assert answer.searched_as == "quantization of transformers"
    assert answer.results.total == 4 - 1  # every paper but the molecules one
    plain = await repair.search(engine, "quantization of transformers", limit=5)
    assert plain.searched_as is None
    assert [h.score for h in plain.results.hits] == [h.score for h in answer.results.hits]


async def test_a_search_does_not_wait_past_discords_answer_time_for_a_long_catch_up(db: Database) -> None:
    """A start's first look at a million papers' names takes seconds: a search waits for it only
    `wait` seconds, is answered with what was read so far (the words as typed), and once the names
    are in, the next search lists the author's papers."""
    repair, engine = await _repair(db, RECORDS)
    assert repair.authors is not None
    names_read = asyncio.Event()
    catch_up = repair.authors.refresh

    async def slow_refresh() -> None:
        await names_read.wait()
        await catch_up()

    repair.authors.refresh = slow_refresh  # type: ignore[method-assign]
    repair.wait = 0.05
    started = time.perf_counter()
    answer = await asyncio.wait_for(repair.search(engine, "Alan Turing", limit=5), 5)
    assert time.perf_counter() - started < 2.0
    assert answer.author is None  # the names are not in yet: the words are searched
    names_read.set()
    later = await repair.search(engine, "Alan Turing", limit=5)
    assert later.author == "Alan Turing"


async def test_a_query_of_known_words_is_answered_before_the_names_and_words_are_read(db: Database) -> None:
    """A start's first look at the names and words takes seconds of CPU: a query it cannot change (no
    word to correct, no author of that name) neither waits for it nor shares the CPU with it; the look
    starts once searches pause."""
    repair, engine = await _repair(db, RECORDS)
    assert repair.authors is not None
    looked = asyncio.Event()

    async def slow_refresh() -> None:
        looked.set()
        await asyncio.sleep(30)

    repair.authors.refresh = slow_refresh  # type: ignore[method-assign]
    repair.wait, repair.quiet = 20.0, 0.2
    answer = await asyncio.wait_for(repair.search(engine, "transformers", limit=5), 5)
    assert answer.results.total > 0
    assert not looked.is_set()  # not while the answer is made and sent
    await asyncio.wait_for(looked.wait(), 5)  # once searches pause
    assert repair._catching_up is not None
    repair._catching_up.cancel()


async def test_a_name_or_a_misspelt_word_waits_for_the_look(db: Database) -> None:
    """A query whose answer the look may change starts it at once and waits for it (up to ``wait``)."""
    for query in ("Alan Turing", "trasnformers"):
        repair, engine = await _repair(db, RECORDS)
        repair.quiet = 60.0
        answer = await repair.search(engine, query, limit=5)
        assert answer.author == "Alan Turing" or answer.searched_as == "transformers", query


async def test_the_command_line_waits_for_the_whole_look(db: Database) -> None:
    """With no answer time to keep, every name is read before the first query, however long it takes."""
    repair, engine = await _repair(db, RECORDS)
    assert repair.authors is not None
    catch_up = repair.authors.refresh

    async def slow_refresh() -> None:
        await asyncio.sleep(0.3)
        await catch_up()

    repair.authors.refresh = slow_refresh  # type: ignore[method-assign]
    repair.wait = 0.01
    await repair.catch_up(engine)
    assert (await repair.answer(engine, "Alan Turing", limit=5)).author == "Alan Turing"
