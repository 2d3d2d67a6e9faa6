"""Followed authors, on each engine: kept in order, once each, under a cap, replaced and removed as one
write, forgotten with the person; and the paper reads that find a followed author's new papers."""

from __future__ import annotations

from storage.db import Database
from storage.migrate import available_migrations
from storage.models import PaperRecord
from storage.repositories.follows import FollowRepository, FollowRow
from storage.repositories.papers import PaperRepository
from storage.repositories.users import forget_user

SNOWFLAKE = 1_191_168_914_227_200_009


def _follow(name: str, group: int | None = None, at: str = "2026-03-01T09:00:00+00:00") -> FollowRow:
    return FollowRow(name, name.casefold(), group, f"with someone ({group})" if group else None, at)


async def _papers(db: Database, n: int) -> list[int]:
    records = [
        PaperRecord(
            title=f"Paper {k}", abstract=f"Abstract number {k} about topic {k}.", authors=("Wei Wang",)
        )
        for k in range(n)
    ]
    await PaperRepository(db).upsert_many(records)
    rows = await db.fetchall("SELECT id FROM papers ORDER BY id")
    return [int(row[0]) for row in rows]


async def test_follows_are_kept_in_order_once_each(db: Database) -> None:
    follows = FollowRepository(db)
    assert await follows.follows(SNOWFLAKE) == []
    first = _follow("Ada Lovelace", at="2026-03-01T09:00:00+00:00")
    second = _follow("Alan Turing", at="2026-03-01T09:00:00+00:00")  # the same second: insertion order
    assert await follows.add(SNOWFLAKE, first, limit=5) == "added"
    assert await follows.add(SNOWFLAKE, second, limit=5) == "added"
    assert await follows.add(SNOWFLAKE, first, limit=5) == "already"
    assert await follows.follows(SNOWFLAKE) == [first, second]
    assert await follows.count(SNOWFLAKE) == 2
    assert await follows.follows(SNOWFLAKE + 1) == [], "someone else follows nobody"


async def test_a_name_and_each_group_under_it_are_separate_follows(db: Database) -> None:
    ids = await _papers(db, 3)
    follows = FollowRepository(db)
    assert await follows.add(7, _follow("Wei Wang", ids[0]), limit=5) == "added"
    assert await follows.add(7, _follow("Wei Wang", ids[1]), limit=5) == "added"
    assert await follows.add(7, _follow("Wei Wang", ids[0]), limit=5) == "already"
    assert await follows.add(7, _follow("Ada Lovelace"), limit=5) == "added"
    assert [f.group_paper_id for f in await follows.follows(7)] == [ids[0], ids[1], None]
    # every paper under the name, instead of the two groups: one write, other names untouched
    assert await follows.replace_name(7, "wei wang", [_follow("Wei Wang")], limit=5) == "replaced"
    assert [(f.name, f.group_paper_id) for f in await follows.follows(7)] == [
        ("Ada Lovelace", None),
        ("Wei Wang", None),
    ]
    assert await follows.add(7, _follow("Wei Wang"), limit=5) == "already"
    # and back to two groups
    groups = [_follow("Wei Wang", ids[2]), _follow("Wei Wang", ids[0])]
    assert await follows.replace_name(7, "wei wang", groups, limit=5) == "replaced"
    assert [(f.name, f.group_paper_id, f.detail) for f in await follows.follows(7)][1:] == [
        ("Wei Wang", ids[2], f"with someone ({ids[2]})"),
        ("Wei Wang", ids[0], f"with someone ({ids[0]})"),
    ]


async def test_the_cap_refuses_and_writes_nothing(db: Database) -> None:
    ids = await _papers(db, 3)
    follows = FollowRepository(db)
    for name in ("A One", "B Two"):
        assert await follows.add(7, _follow(name), limit=3) == "added"
    assert await follows.add(7, _follow("Wei Wang", ids[0]), limit=3) == "added"
    assert await follows.add(7, _follow("C Three"), limit=3) == "full"
    assert await follows.add(7, _follow("Wei Wang", ids[1]), limit=3) == "full"
    assert await follows.count(7) == 3
    # replacing a name's follows frees their places
    assert await follows.replace_name(7, "wei wang", [_follow("Wei Wang")], limit=3) == "replaced"
    assert await follows.count(7) == 3
    # a refused replacement keeps what it would have replaced
    two = [_follow("Wei Wang", ids[1]), _follow("Wei Wang", ids[2])]
    assert await follows.replace_name(7, "wei wang", two, limit=3) == "full"
    assert [(f.name_key, f.group_paper_id) for f in await follows.follows(7)][-1] == ("wei wang", None)
    assert await follows.count(7) == 3


async def test_remove_takes_exactly_one_follow(db: Database) -> None:
    ids = await _papers(db, 1)
    follows = FollowRepository(db)
    await follows.add(7, _follow("Wei Wang"), limit=5)
    await follows.add(7, _follow("Wei Wang", ids[0]), limit=5)
    assert await follows.remove(7, "wei wang", ids[0])
    assert not await follows.remove(7, "wei wang", ids[0])
    assert [f.group_paper_id for f in await follows.follows(7)] == [None]
    assert await follows.remove(7, "wei wang", None)
    assert not await follows.remove(7, "ada lovelace", None)
    assert await follows.follows(7) == []


async def test_forget_me_deletes_the_follows(db: Database) -> None:
    follows = FollowRepository(db)
    await follows.add(7, _follow("Ada Lovelace"), limit=5)
    await follows.add(8, _follow("Ada Lovelace"), limit=5)
    counts = await forget_user(db, 7)
    assert counts.follows == 1
    assert await follows.follows(7) == []
    assert len(await follows.follows(8)) == 1, "someone else's follow stays"


async def test_credits(db: Database) -> None:
    papers = PaperRepository(db)
    await papers.upsert_many(
        [
            PaperRecord(
                title="Old", abstract="An old paper on graphs.", authors=("Ada Lovelace", "Alan Turing")
            ),
            PaperRecord(title="New", abstract="A new paper on trees.", venue="ICML 2026", year=2026),
        ]
    )
    old, new = [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")]
    credits = await papers.credits([old, new, 999])
    assert credits[old].authors == ("Ada Lovelace", "Alan Turing")
    assert (credits[new].authors, credits[new].venue, credits[new].year) == ((), "ICML 2026", 2026)
    assert set(credits) == {old, new}


async def test_a_follow_starts_after_the_papers_stored_before_it(db: Database) -> None:
    """Papers new to a follow are those with a larger id than any stored when it was made (the same
    second is no matter); replacing a name's follows keeps the earliest start."""
    ids = await _papers(db, 2)
    follows = FollowRepository(db)
    await follows.add(7, _follow("Ada Lovelace"), limit=5)
    (first,) = await follows.follows(7)
    assert first.after_paper_id == ids[-1]
    more = await _papers(db, 4)
    await follows.add(7, _follow("Alan Turing"), limit=5)
    assert (await follows.follows(7))[1].after_paper_id == more[-1]
    await follows.replace_name(7, "ada lovelace", [_follow("Ada Lovelace", more[0])], limit=5)
    assert [(f.name, f.after_paper_id) for f in await follows.follows(7)] == [
        ("Alan Turing", more[-1]),
        ("Ada Lovelace", ids[-1]),
    ], "narrowed to a group: what was new to every paper under the name stays new"
    assert (await follows.add(8, _follow("Ada Lovelace"), limit=5)) == "added"
    assert (await follows.follows(8))[0].after_paper_id == more[-1]


async def test_upgrading_starts_older_follows_at_their_time(db: Database) -> None:
    """Migration 0007's backfill, on each engine: a follow stored before it starts after the papers
    added before it was made."""
    await PaperRepository(db).upsert_many(
        [PaperRecord(title="Before", abstract="Stored before the follow was made.")],
        now="2026-01-01T00:00:00+00:00",
    )
    await PaperRepository(db).upsert_many(
        [PaperRecord(title="After", abstract="Stored after the follow was made.")],
        now="2026-03-01T00:00:00+00:00",
    )
    before, _ = [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")]
    await db.execute("INSERT INTO users (id, created_at) VALUES (7, '2026-01-01')")
    await db.execute(
        "INSERT INTO author_follows (user_id, name, name_key, followed_at) "
        "VALUES (7, 'Ada Lovelace', 'ada lovelace', '2026-02-01T00:00:00+00:00')"
    )
    (migration,) = [m for m in available_migrations(db.dialect) if m.name == "0007_follows_after_paper.sql"]
    await db.execute(migration.sql[migration.sql.index("UPDATE author_follows") :])
    assert [f.after_paper_id for f in await FollowRepository(db).follows(7)] == [before]
