"""The same paper from two sources is one paper: a journal's feed entry and its bioRxiv preprint (by
the DOI the preprint names, or by title and first author), in either order; an arXiv listing's next
version updates its paper; the daily fetch of several sources."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import pytest
from source_fakes import FakeService, FakeTime, biorxiv_pages, client, fixture

from bot.services.papers.arxiv_fetch import HttpResponse
from bot.services.papers.sources.arxiv import ArxivSource
from bot.services.papers.sources.biorxiv import BiorxivSource
from bot.services.papers.sources.daily import run_daily_sources
from bot.services.papers.sources.fetch import SourceFetchSummary, fetch_source
from bot.services.papers.sources.http import PoliteClient, SourceUnreachableError
from bot.services.papers.sources.rss import RssSource
from bot.services.papers.sources.specs import SourceSpec
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository
from storage.repositories.source_fetches import SourceFetchRepository

FEED = "https://www.nature.com/neuro.rss"
#: the feed's entries in range, and the preprints among them (10 by DOI, 5 by title and first author)
IN_FEED, PREPRINTED, PREPRINTS = 49, 15, 54


async def fetch_preprints(db: Database, clock: FakeTime) -> SourceFetchSummary:
    return await fetch_source(
        db, BiorxivSource("biorxiv"), client(FakeService(biorxiv_pages("biorxiv")), clock), days=7
    )


async def fetch_feed(db: Database, clock: FakeTime) -> SourceFetchSummary:
    service = FakeService(lambda url, params: HttpResponse(200, fixture("rss_nature_neuroscience.xml")))
    return await fetch_source(db, RssSource(FEED), client(service, clock), days=8)


async def titles(db: Database) -> list[str]:
    return [title for _, _, _, title in await PaperRepository(db).dates_and_titles()]


async def test_a_journal_article_joins_its_preprint(db: Database) -> None:
    clock = FakeTime()
    await fetch_preprints(db, clock)
    feed = await fetch_feed(db, clock)
    assert (feed.added, feed.merged + feed.unchanged) == (IN_FEED - PREPRINTED, PREPRINTED)
    held = await titles(db)
    assert len(held) == PREPRINTS + IN_FEED - PREPRINTED
    assert len(set(held)) == len(held), "every paper once"
    first = json.loads(fixture("biorxiv_details_0.json"))["collection"][0]
    papers = PaperRepository(db)
    by_preprint = await papers.find_by_external(first["doi"])
    by_journal = await papers.find_by_external(first["published"])
    assert by_preprint is not None
    assert by_journal == by_preprint, "the journal DOI finds the preprint's paper"


async def test_a_preprint_joins_the_journal_article_stored_first(db: Database) -> None:
    clock = FakeTime()
    await fetch_feed(db, clock)
    preprints = await fetch_preprints(db, clock)
    # +1: a second version of one preprint
    assert (preprints.added, preprints.merged + preprints.unchanged) == (
        PREPRINTS - PREPRINTED,
        PREPRINTED + 1,
    )
    held = await titles(db)
    assert len(held) == PREPRINTS + IN_FEED - PREPRINTED
    assert len(set(held)) == len(held)


async def test_the_same_title_by_another_first_author_or_another_arxiv_id_stays_apart(db: Database) -> None:
    papers = PaperRepository(db)
    title = "Sparse attention for long genomic sequences"
    first = PaperRecord(title=title, authors=("Ada Lovelace",), arxiv_id="2401.00001", abstract="One.")
    await papers.upsert_many([first])
    other_author = PaperRecord(title=title, authors=("Grace Hopper",), abstract="Different work.")
    other_id = PaperRecord(title=title, authors=("Lovelace, Ada",), arxiv_id="2401.00002", abstract="Two.")
    same = PaperRecord(title=title.upper(), authors=("Lovelace, A.",), doi="10.1038/x-1", abstract="Three.")
    counts = await papers.upsert_many([other_author, other_id, same])
    assert (counts.added, counts.merged) == (2, 1)
    assert await papers.count() == 3


HYPERNETWORKS = (
    "This work explores hypernetworks: an approach of using one network, also known as a hypernetwork, "
    "to generate the weights for another network. Hypernetworks provide an abstraction that is similar "
    "to what is found in nature: the relationship between a genotype and a phenotype. We apply them to "
    "deep convolutional networks and long recurrent networks, where they can be viewed as a relaxed "
    "form of weight-sharing across layers."
)
INTRODUCTION = (
    "This special issue gathers twelve studies of coral reef recovery after bleaching events in the "
    "Indian Ocean. They follow reefs from larval settlement to the return of grazing fish, compare "
    "protected and fished sites over a decade, and ask what managers can do while the water warms."
)


def journal_edit(abstract: str) -> str:
    """A journal's version of an abstract: its first sentence cut."""
    return abstract.partition(". ")[2]


@pytest.mark.parametrize("one_batch", [False, True], ids=["stored before", "in one batch"])
async def test_a_one_word_title_joins_its_preprint_when_author_and_abstract_agree(
    db: Database, one_batch: bool
) -> None:
    papers = PaperRepository(db)
    preprint = PaperRecord(
        title="HyperNetworks",
        authors=("Ha, David", "Dai, Andrew M."),
        abstract=HYPERNETWORKS,
        doi="10.1101/2016.09.106",
    )
    article = PaperRecord(
        title="Hypernetworks",
        authors=("David Ha", "Andrew M. Dai"),
        abstract=journal_edit(HYPERNETWORKS),
        doi="10.5555/jmlr.17.1",
    )
    if one_batch:
        await papers.upsert_many([preprint, article])
    else:
        await papers.upsert_many([preprint])
        assert (await papers.upsert_many([article])).added == 0
    assert await papers.count() == 1
    by_preprint = await papers.find_by_external("10.1101/2016.09.106")
    assert by_preprint is not None
    assert by_preprint.abstract == HYPERNETWORKS
    assert await papers.find_by_external("10.5555/jmlr.17.1") == by_preprint


async def test_two_papers_titled_introduction_stay_two_unless_author_and_abstract_agree(db: Database) -> None:
    papers = PaperRepository(db)
    await papers.upsert_many(
        [PaperRecord(title="Introduction", authors=("John Smith",), abstract=INTRODUCTION, doi="10.1/a")]
    )
    other_author = PaperRecord(
        title="Introduction", authors=("Jane Doe",), abstract=journal_edit(INTRODUCTION), doi="10.1/b"
    )
    other_text = PaperRecord(
        title="INTRODUCTION", authors=("Smith, Anna",), abstract=HYPERNETWORKS, doi="10.1/c"
    )
    placeholder = PaperRecord(
        title="Introduction", authors=("Smith, J.",), abstract="Introduction.", doi="10.1/d"
    )
    counts = await papers.upsert_many([other_author, other_text, placeholder])
    assert (counts.added, counts.merged + counts.unchanged) == (3, 0)
    assert await papers.count() == 4


async def test_the_first_of_two_introductions_keeps_its_title_key_for_its_journal_version(
    db: Database,
) -> None:
    """In one batch: John Smith's "Introduction", Anna Smith's (another text), then the journal's
    version of John's: it joins John's, not Anna's and not a paper of its own."""
    papers = PaperRepository(db)
    johns = PaperRecord(title="Introduction", authors=("John Smith",), abstract=INTRODUCTION, doi="10.1/a")
    annas = PaperRecord(title="Introduction", authors=("Smith, Anna",), abstract=HYPERNETWORKS, doi="10.1/b")
    journal = PaperRecord(
        title="Introduction", authors=("Smith, J.",), abstract=journal_edit(INTRODUCTION), doi="10.1/c"
    )
    counts = await papers.upsert_many([johns, annas, journal])
    assert (counts.added, await papers.count()) == (2, 2)
    assert await papers.find_by_external("10.1/c") == await papers.find_by_external("10.1/a")
    later = await papers.upsert_many(
        [
            PaperRecord(
                title="Introduction", authors=("Smith",), abstract=INTRODUCTION + " Later.", doi="10.1/d"
            )
        ]
    )
    assert later.added == 0
    assert await papers.find_by_external("10.1/d") == await papers.find_by_external("10.1/a")


async def test_a_first_author_marked_with_an_asterisk_still_names_the_paper(db: Database) -> None:
    papers = PaperRepository(db)
    title = "What does it take to generate natural textures?"
    text = INTRODUCTION.replace("coral reef", "texture synthesis")
    await papers.upsert_many(
        [PaperRecord(title=title, authors=("Ivan Ustyuzhaninov *", "Wieland Brendel *"), abstract=text)]
    )
    counts = await papers.upsert_many(
        [PaperRecord(title=title, authors=("Ustyuzhaninov, Ivan",), abstract="Edited.", doi="10.5555/t")]
    )
    assert (counts.added, await papers.count()) == (0, 1)


@pytest.mark.parametrize(
    ("stored", "journal"),
    [
        (("Martín Abadi", "David G. Andersen"), ("Martín Abadi, David G. Andersen",)),  # a list as one string
        (("María de la Cruz",), ("de la Cruz, María",)),  # a family name of several words, comma first
    ],
)
async def test_a_first_author_written_another_way_still_names_the_paper(
    db: Database, stored: tuple[str, ...], journal: tuple[str, ...]
) -> None:
    papers = PaperRepository(db)
    title = "Learning to protect communications with adversarial neural cryptography"
    await papers.upsert_many([PaperRecord(title=title, authors=stored, abstract=INTRODUCTION)])
    counts = await papers.upsert_many(
        [PaperRecord(title=title, authors=journal, abstract="Edited.", doi="10.5555/c")]
    )
    assert (counts.added, await papers.count()) == (0, 1)


def atom(version: int, abstract: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
 xmlns:arxiv="http://arxiv.org/schemas/atom"><title>arXiv Query</title>
<opensearch:totalResults>1</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>
<entry><id>http://arxiv.org/abs/2411.01234v{version}</id><published>2024-12-01T10:00:00Z</published>
<title>Grid cells as a learned code for path integration</title><summary>{abstract}</summary>
<author><name>Ada Lovelace</name></author><arxiv:primary_category term="q-bio.NC"/></entry></feed>""".encode()


async def test_an_arxiv_listing_of_version_2_updates_its_paper(db: Database) -> None:
    clock = FakeTime()
    first = "We train recurrent networks to integrate velocity and find grid-like units in them, " * 2
    second = first + "Version 2 adds experiments on rodents' recorded trajectories."
    answers = iter([atom(1, first), atom(2, second)])
    service = FakeService(lambda url, params: HttpResponse(200, next(answers)))
    source = ArxivSource("q-bio.NC")
    one = await fetch_source(
        db, source, PoliteClient(service, service="arXiv", spacing=3.0, sleep=clock.sleep, clock=clock)
    )
    two = await fetch_source(
        db, source, PoliteClient(service, service="arXiv", spacing=3.0, sleep=clock.sleep, clock=clock)
    )
    assert (one.added, two.added, two.merged) == (1, 0, 1)
    assert service.calls[0][1]["search_query"] == "cat:q-bio.NC"
    paper = await PaperRepository(db).find_by_external("2411.01234")
    assert paper is not None
    assert paper.abstract.endswith("rodents' recorded trajectories.")
    assert await PaperRepository(db).count() == 1


def listing(ids: list[str], *, total: int, start: int) -> bytes:
    """An arXiv API page of cs.LG papers submitted on the fixtures' last day."""
    entries = "".join(
        f"<entry><id>http://arxiv.org/abs/{i}v1</id><published>2024-12-02T10:00:00Z</published>"
        f"<title>Paper {i} on sparse attention</title><summary>We study paper {i}: a long enough abstract "
        f"about sparse attention in transformers, with experiments.</summary>"
        f'<author><name>Author {i}</name></author><arxiv:primary_category term="cs.LG"/></entry>'
        for i in ids
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
 xmlns:arxiv="http://arxiv.org/schemas/atom"><title>arXiv Query</title>
<opensearch:totalResults>{total}</opensearch:totalResults><opensearch:startIndex>{start}</opensearch:startIndex>
{entries}</feed>""".encode()


@pytest.mark.parametrize("empty_answers", [1, 5], ids=["once", "every time"])
async def test_an_empty_arxiv_page_inside_the_results_is_asked_again_and_else_resumed(
    db: Database, empty_answers: int
) -> None:
    """arXiv sometimes answers a page inside a result set with no entries: asked again after a backoff
    it has them; when it stays empty (4 retries), the fetch stops there and the next one resumes."""
    clock = FakeTime()
    empty = iter(range(empty_answers))

    def answer(url: str, params: Mapping[str, str]) -> HttpResponse:
        if params["start"] == "0":
            return HttpResponse(200, listing(["2412.00001", "2412.00002"], total=4, start=0))
        if next(empty, None) is not None:
            return HttpResponse(200, listing([], total=4, start=2))
        return HttpResponse(200, listing(["2412.00003", "2412.00004"], total=4, start=2))

    service = FakeService(answer)
    source = ArxivSource("cs.LG", page_size=2)
    summary = await fetch_source(db, source, client(service, clock, spacing=3.0), days=2)
    state = await SourceFetchRepository(db).get("arxiv:cs.LG")
    assert state is not None
    if empty_answers == 1:
        assert (summary.added, await PaperRepository(db).count()) == (4, 4)
        assert [s for s in clock.sleeps if s > 3] == [6.0]
        assert state.cursor is None
        assert state.fetched_until == "2024-12-02"
    else:
        assert (summary.added, len(service.calls)) == (2, 6)
        assert [s for s in clock.sleeps if s > 3] == [6.0, 12.0, 24.0, 48.0]
        assert state.fetched_until is None, "a fetch that stopped early is not finished"
        assert state.cursor is not None
        assert json.loads(state.cursor)["page"] == {"start": 2}


async def test_the_daily_fetch_runs_every_source_and_a_failing_one_leaves_the_others(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeTime()
    refreshed: list[int] = []

    async def fetch(database: Database, spec: SourceSpec) -> SourceFetchSummary:
        if spec.kind == "openreview":
            raise SourceUnreachableError("cannot reach OpenReview's API: offline")
        if spec.kind == "rss":
            return await fetch_feed(database, clock)
        return await fetch_preprints(database, clock)

    async def index() -> int:
        refreshed.append(1)
        return 0

    specs = ["openreview:ICLR.cc/2025/Conference", "biorxiv", f"rss:{FEED}"]
    with caplog.at_level(logging.ERROR):
        done = await run_daily_sources(db, specs, index, fetch=fetch)
    assert [s.source for s in done] == ["biorxiv", f"rss:{FEED}"]
    assert refreshed == [1]
    assert "daily fetch of openreview:ICLR.cc/2025/Conference failed" in caplog.text
    assert len(set(await titles(db))) == PREPRINTS + IN_FEED - PREPRINTED
    states = {s.source: s for s in await SourceFetchRepository(db).all()}
    assert states["biorxiv"].last_added == PREPRINTS


async def test_papers_stored_before_the_title_keys_get_theirs_at_the_first_fetch(db: Database) -> None:
    """A store migrated from before migration 13: its papers have no title + first-author key until
    the first fetch gives them theirs (once); then the journal articles matched only by title and
    first author find their preprints too."""
    clock = FakeTime()
    await fetch_preprints(db, clock)
    async with db.transaction() as conn:  # as a store from before: no title keys
        await conn.execute("DELETE FROM paper_aliases WHERE kind = 'title_author'")
        await conn.execute("DELETE FROM app_state WHERE key LIKE 'paper_aliases:%'")
    feed = await fetch_feed(db, clock)
    assert feed.added == IN_FEED - PREPRINTED
    assert await PaperRepository(db).backfill_title_keys() == 0, "once per store"
