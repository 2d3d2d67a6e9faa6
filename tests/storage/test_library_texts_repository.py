"""A person's library papers kept as text: one per title, up to a limit, gone when they are forgotten."""

from __future__ import annotations

from storage.db import Database
from storage.repositories.library_texts import LibraryText, LibraryTextRepository
from storage.repositories.users import forget_user


async def test_texts_are_kept_once_each_within_the_limit_and_forgotten(db: Database) -> None:
    texts = LibraryTextRepository(db)
    first = [LibraryText("a", "A", "about a"), LibraryText("b", "B", None)]
    assert await texts.add_many(7, first) == 2
    assert (
        await texts.add_many(7, [LibraryText("a", "A again", "other"), LibraryText("c", "C", None)], limit=3)
        == 1
    )
    assert await texts.add_many(7, [LibraryText("d", "D", None)], limit=3) == 0
    assert [t.title for t in await texts.texts(7)] == ["A", "B", "C"]
    assert await texts.texts(8) == []
    counts = await forget_user(db, 7)
    assert counts.library_texts == 3
    assert await texts.texts(7) == []
