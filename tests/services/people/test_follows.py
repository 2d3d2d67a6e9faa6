"""Following authors (`bot.services.people.follows`, `bot.services.people.authors`) on a real store, on each engine:
author autocomplete, following and unfollowing with every refusal writing nothing, people who may share
a name told apart by their co-authors, and a followed author's new papers first in the digest, once."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from builders import Clock
from digest_fakes import FakeSender, make_service

from bot.errors import NotFoundError, UserFacingError
from bot.services.people import authors
from bot.services.people.authors import AuthorDirectory, group_papers
from bot.services.people.follows import FollowService
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import Credits, PaperRepository

USER = 1_191_168_914_227_200_009
BEFORE = "2026-03-01T08:00:00+00:00"
FOLLOWED_AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
AFTER = "2026-03-01T10:00:00+00:00"


def _paper(title: str, *authors: str, venue: str | None = None, year: int | None = None) -> PaperRecord:
    return PaperRecord(
        title=title,
        abstract=f"{title}: we study {title.lower()} in depth and report what we found.",
        authors=authors,
        venue=venue,
        year=year,
    )


LIBRARY = [
    _paper("Graph kernels", "Ada Lovelace", "Alan Turing", venue="ICML 2023", year=2023),
    _paper("Tree search", "Ada Lovelace", "Grace Hopper", venue="NeurIPS 2024", year=2024),
    _paper("Loom programs", "Ada Lovelace", venue="ICML 2024", year=2024),
    _paper("Accents", "Ángel Díaz", "Alan Turing"),
    # two people who may share a name: their papers have no co-author in common
    _paper("Vision transformers", "Wei Wang", "Lei Zhang", venue="CVPR 2023", year=2023),
    _paper("Detection heads", "Wei Wang", "Lei Zhang", "Jian Sun", venue="CVPR 2024", year=2024),
    _paper("Graph mining", "Wei Wang", "Jiawei Han", venue="KDD 2019", year=2019),
]


class Library:
    """A store with papers, its search index and author directory, and a follow service on a clock."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.papers = PaperRepository(db)
        self.engine = SearchEngine()
        self.directory = AuthorDirectory(self.engine, self.papers)
        self.clock = Clock(FOLLOWED_AT)
        self.follows = FollowService(db, self.directory, clock=self.clock, limit=4)

    async def add(self, records: list[PaperRecord], *, at: str) -> list[int]:
        before = {int(row[0]) for row in await self.db.fetchall("SELECT id FROM papers")}
        await self.papers.upsert_many(records, now=at)
        rows = await self.db.fetchall("SELECT id FROM papers ORDER BY id")
        new = [int(row[0]) for row in rows if int(row[0]) not in before]
        self.engine.add(await self.papers.iter_index_rows(ids=new))
        return new

    async def id_of(self, title: str) -> int:
        return int(await self.db.fetchval("SELECT id FROM papers WHERE title = ?", (title,)))


@pytest.fixture
async def library(db: Database) -> Library:
    lib = Library(db)
    await lib.add(LIBRARY, at=BEFORE)
    return lib


async def _stored(db: Database) -> int:
    return int(await db.fetchval("SELECT COUNT(*) FROM author_follows"))


async def test_autocomplete_finds_names_by_any_word_accents_and_case_aside(library: Library) -> None:
    by_last = await library.follows.suggest("lovel")
    assert next((s.value, s.papers) for s in by_last) == ("Ada Lovelace", 3)
    assert next(s.value for s in await library.follows.suggest("ada lov")) == "Ada Lovelace"
    assert [s.value for s in await library.follows.suggest("angel d")] == ["Ángel Díaz"], (
        "as the paper writes it"
    )
    turing = await library.follows.suggest("TURING")
    assert next((s.value, s.groups) for s in turing) == ("Alan Turing", 2), (
        "with Ada Lovelace; with Ángel Díaz"
    )
    assert await library.follows.suggest("nobody like this") == []
    most = await library.follows.suggest("")
    assert most[0].value == "Ada Lovelace", "with nothing typed: the names with the most papers"
    starting = await library.follows.suggest("a")
    assert [s.value for s in starting][:2] == ["Ada Lovelace", "Alan Turing"], "names starting with it first"


async def test_follow_a_name_then_refusals_that_write_nothing(library: Library) -> None:
    follows = library.follows
    outcome = await follows.follow(USER, "ada lovelace")
    assert outcome.name == "Ada Lovelace", "the name as the papers write it"
    assert outcome.chosen == ()
    assert outcome.papers == 3
    assert len(outcome.groups) == 2, "with Turing, and with Hopper (the paper without co-authors joins one)"
    assert not outcome.has_digest
    assert [(f.name, f.group_paper_id, f.since) for f in await follows.following(USER)] == [
        ("Ada Lovelace", None, "2026-03-01T09:00:00+00:00")
    ]
    with pytest.raises(
        UserFacingError, match=re.escape("You already follow “Ada Lovelace”, since 2026-03-01.")
    ):
        await follows.follow(USER, "Ada Lovelace")
    with pytest.raises(
        NotFoundError,
        match=re.escape("I know no author named “Ada Byron” in the library (close: “Ada Lovelace”)"),
    ):
        await follows.follow(USER, "Ada Byron")
    with pytest.raises(NotFoundError, match="I know no author named “Zzyzx Qq”"):
        await follows.follow(USER, "Zzyzx Qq")
    with pytest.raises(UserFacingError, match="Give an author's name"):
        await follows.follow(USER, "   ")
    assert await _stored(library.db) == 1
    for name in ("Alan Turing", "Grace Hopper", "Lei Zhang"):
        await follows.follow(USER, name)
    with pytest.raises(UserFacingError, match="You follow 4 authors, the most I keep"):
        await follows.follow(USER, "Jian Sun")
    assert await _stored(library.db) == 4


async def test_a_shared_name_is_said_with_what_tells_them_apart(library: Library) -> None:
    follows = library.follows
    cvpr, kdd = await library.id_of("Vision transformers"), await library.id_of("Graph mining")
    listed = await follows.suggest("Wei Wang")
    assert [s.value for s in listed] == ["Wei Wang", f"Wei Wang (#{cvpr})", f"Wei Wang (#{kdd})"]
    assert (listed[0].groups, listed[0].papers, listed[0].group) == (2, 3, None)
    assert listed[1].group is not None
    assert listed[1].group.coauthors == ("Lei Zhang", "Jian Sun")
    assert [s.group.describe() for s in listed[1:] if s.group] == [
        "with Lei Zhang, Jian Sun · CVPR · 2023–2024 · 2 papers",
        "with Jiawei Han · KDD · 2019 · 1 paper",
    ]

    every = await follows.follow(USER, "Wei Wang")
    assert every.chosen == (), "the bare name: every paper under it"
    assert every.papers == 3
    assert len(every.groups) == 2, "and the groups, to say so"

    picked = await follows.follow(USER, f"Wei Wang (#{kdd})")
    assert [g.paper_ids for g in picked.chosen] == [{kdd}]
    assert [(f.name, f.group_paper_id) for f in picked.replaced] == [("Wei Wang", None)]
    assert [(f.value, f.detail) for f in await follows.following(USER)] == [
        (f"Wei Wang (#{kdd})", "with Jiawei Han · KDD · 2019 · 1 paper")
    ], "only that one now, instead of every paper under the name"
    with pytest.raises(
        UserFacingError, match=r"You already follow Wei Wang \(with Jiawei Han.*\), since 2026"
    ):
        await follows.follow(USER, f"Wei Wang (#{kdd})")
    with pytest.raises(NotFoundError, match="is not one of Wei Wang's"):
        await follows.follow(USER, f"Wei Wang (#{await library.id_of('Graph kernels')})")
    both = await follows.follow(USER, f"Wei Wang (#{cvpr})")
    assert both.replaced == ()
    assert [f.group_paper_id for f in await follows.following(USER)] == [kdd, cvpr]
    again = await follows.follow(USER, "wei wang")
    assert len(again.replaced) == 2
    assert [(f.value, f.detail) for f in await follows.following(USER)] == [("Wei Wang", None)]


async def test_a_menu_pick_follows_only_the_groups_picked(library: Library) -> None:
    follows = library.follows
    cvpr, kdd = await library.id_of("Vision transformers"), await library.id_of("Graph mining")
    await follows.follow(USER, "Wei Wang")
    only = await follows.follow_groups(USER, "wei wang", [cvpr])
    assert [g.paper_id for g in only.chosen] == [cvpr]
    assert [f.group_paper_id for f in await follows.following(USER)] == [cvpr]
    both = await follows.follow_groups(USER, "wei wang", [cvpr, kdd])
    assert both.chosen == (), "every group picked: every paper under the name"
    assert [f.group_paper_id for f in await follows.following(USER)] == [None]
    with pytest.raises(NotFoundError, match="changed since this list was made"):
        await follows.follow_groups(USER, "wei wang", [await library.id_of("Graph kernels")])
    assert [f.group_paper_id for f in await follows.following(USER)] == [None], "nothing changed"


async def test_unfollow_by_name_or_by_group(library: Library) -> None:
    follows = library.follows
    with pytest.raises(UserFacingError, match="You follow no authors yet"):
        await follows.unfollow(USER, "Ada Lovelace")
    kdd, cvpr = await library.id_of("Graph mining"), await library.id_of("Vision transformers")
    await follows.follow(USER, "Ada Lovelace")
    await follows.follow(USER, f"Wei Wang (#{kdd})")
    await follows.follow(USER, f"Wei Wang (#{cvpr})")
    assert [f.value for f in await follows.suggest_followed(USER, "kdd")] == [f"Wei Wang (#{kdd})"]
    with pytest.raises(UserFacingError, match="You follow 2 authors named “Wei Wang”"):
        await follows.unfollow(USER, "Wei Wang")
    removed = await follows.unfollow(USER, f"Wei Wang (#{kdd})")
    assert removed.group_paper_id == kdd
    assert (await follows.unfollow(USER, "wei wang")).group_paper_id == cvpr, "the only one left"
    with pytest.raises(
        NotFoundError, match=re.escape("You don't follow “Alan Turing”. You follow “Ada Lovelace”.")
    ):
        await follows.unfollow(USER, "Alan Turing")
    assert (await follows.unfollow(USER, "Ada Lovelace")).name == "Ada Lovelace"
    assert await follows.following(USER) == []


async def test_new_papers_are_those_added_since_the_follow(library: Library) -> None:
    follows = library.follows
    await follows.follow(USER, "Ada Lovelace")
    await follows.follow(USER, "Alan Turing")
    assert await follows.new_papers(USER, limit=5) == [], "papers from before the follow are not new"
    new = await library.add(
        [
            _paper("Analytical engines", "Ada Lovelace"),
            _paper("Computable numbers", "Alan Turing", "Ada Lovelace"),
            _paper("Compilers", "Grace Hopper"),
        ],
        at=AFTER,
    )
    found = await follows.new_papers(USER, limit=5)
    assert [(p.paper_id, p.reason) for p in found] == [
        (new[0], "by Ada Lovelace, whom you follow"),
        (new[1], "by Ada Lovelace and Alan Turing, whom you follow"),
    ], "each paper once, with every followed author on it"
    assert [p.paper_id for p in await follows.new_papers(USER, exclude={new[0]}, limit=5)] == [new[1]]
    assert [p.paper_id for p in await follows.new_papers(USER, limit=1)] == [new[0]], "the oldest first"
    assert await follows.new_papers(USER + 1, limit=5) == []


async def test_a_group_follow_gets_only_that_groups_new_papers(library: Library) -> None:
    follows = library.follows
    kdd = await library.id_of("Graph mining")
    await follows.follow(USER, f"Wei Wang (#{kdd})")
    new = await library.add(
        [
            _paper("Heterogeneous graphs", "Wei Wang", "Jiawei Han", venue="KDD 2026"),  # the one followed
            _paper("Segment everything", "Wei Wang", "Lei Zhang"),  # the other Wei Wang's
            _paper("A new field", "Wei Wang", "Someone New"),  # no co-author in common: a group of its own
        ],
        at=AFTER,
    )
    found = await follows.new_papers(USER, limit=5)
    assert [(p.paper_id, p.reason) for p in found] == [(new[0], "by Wei Wang, whom you follow")]


def test_groups_link_papers_through_shared_co_authors() -> None:
    credits = [
        Credits(1, ("X Y", "A"), "ICML 2020", 2020),
        Credits(2, ("B", "x  y"), None, 2021),
        Credits(5, ("X Y", "C"), "ICLR 2019", 2019),  # nobody in common with the others: a group
        Credits(3, ("X Y", "A", "B"), "NeurIPS", 2022),  # joins 1 and 2 into one group
        Credits(4, ("X Y",), None, None),  # no co-authors: says nothing, joins the largest group
    ]
    groups = group_papers("x y", credits)
    assert [sorted(g.paper_ids) for g in groups] == [[1, 2, 3, 4], [5]]
    assert groups[0].paper_id == 1
    assert groups[0].coauthors == ("A", "B")
    assert groups[0].years == (2020, 2022)
    assert groups[0].describe() == "with A, B · ICML, NeurIPS · 2020–2022 · 4 papers"
    assert groups[1].describe() == "with C · ICLR · 2019 · 1 paper"
    (alone,) = group_papers("x y", [Credits(4, ("X Y",), None, None)])
    assert alone.describe() == "no co-authors · 1 paper"


async def test_the_digest_brings_followed_papers_first_and_never_twice(library: Library) -> None:
    await library.follows.follow(USER, "Grace Hopper")
    (new,) = await library.add([_paper("Nanoseconds", "Grace Hopper")], at=AFTER)
    others = [await library.id_of(t) for t in ("Graph kernels", "Loom programs", "Accents")]
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    digests = make_service(
        library.db,
        clock,
        {others[0]: 3.0, others[1]: 2.0, others[2]: 1.0, new: 0.5},
        followed=library.follows,
    )
    first = FakeSender()
    await digests.delivery.deliver_now(USER, first)
    assert first.papers[0] == (new, "by Grace Hopper, whom you follow")
    assert first.paper_ids == [new, *others], "then the recommender's picks, the followed one not again"
    second = FakeSender()
    await digests.delivery.deliver_now(USER, second)
    assert new not in second.paper_ids, "never twice"


async def test_many_new_papers_are_taken_in_aside_then_swapped_in(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a few thousand new papers the directory is rebuilt in a worker thread (here: from the
    first paper on) and swapped in; names old and new are found after each."""
    monkeypatch.setattr(authors, "_INLINE_SLOTS", 0)
    names = AuthorDirectory(library.engine, library.papers)
    await names.refresh()
    assert names.matches("lovelace") == [("ada lovelace", 3)]
    assert names.matches("hopper") == [("grace hopper", 1)]
    await library.add([_paper("Cobol", "Grace Hopper", "Jean Sammet")], at=AFTER)
    await names.refresh()
    assert names.matches("hopper") == [("grace hopper", 2)]
    assert names.matches("samm") == [("jean sammet", 1)]
    assert names.matches("")[:2] == [("ada lovelace", 3), ("wei wang", 3)], "most papers first"


async def test_names_taken_in_one_by_one_after_the_arrays_count_with_theirs(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory's arrays made at the start, then a few papers taken in inline: a name the arrays
    hold gains papers (and climbs), a new name is found by each of its words, and both by paper."""
    monkeypatch.setattr(authors, "_INLINE_SLOTS", 0)
    names = AuthorDirectory(library.engine, library.papers)
    await names.refresh()  # every paper so far, into arrays
    monkeypatch.setattr(authors, "_INLINE_SLOTS", 10_000)
    added = await library.add(
        [
            _paper("Compilers", "Grace Hopper", "Jean Sammet"),
            _paper("Linkers", "Grace Hopper"),
            _paper("Loaders", "Grace Hopper", "Kathleen Booth"),
        ],
        at=AFTER,
    )
    await names.refresh()  # inline: beside the arrays
    assert names.matches("hopper") == [("grace hopper", 4)]
    assert names.paper_ids("grace hopper")[-3:] == list(added)
    assert names.matches("booth") == [("kathleen booth", 1)]
    assert names.matches("kath boo") == [("kathleen booth", 1)]
    assert names.matches("")[:1] == [("grace hopper", 4)], "its papers since count: most papers first"
    assert names.paper_ids("jean sammet") == [added[0]]
