"""Where a rating enters (`bot.services.people.ratings`): a button's press toggles and answers with the
title, a message command never takes back, a reaction counts on the bot's own messages only; each is
kept in the outbox and stored behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from builders import stored_papers

from bot.errors import NotFoundError, UserFacingError
from bot.services.people.feedback import FeedbackService
from bot.services.people.ratings import OnMessage, Ratings
from bot.services.write_behind import WriteBehind
from storage.db import Database
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.searches import SearchRepository
from storage.repositories.users import UserRepository

USER = 111
GUILD = 77
MESSAGE = 9001


async def _signals(db: Database, user: int = USER) -> set[tuple[int, str]]:
    return {(row.paper_id, row.signal) for row in await FeedbackRepository(db).signals_for(user)}


@pytest.fixture
async def ratings(db: Database, tmp_path: Path) -> AsyncIterator[Ratings]:
    feedback = FeedbackService(db)
    writes = WriteBehind(
        tmp_path / "pending",
        feedback=feedback,
        searches=SearchRepository(db),
        messages=PostedMessageRepository(db),
    )
    await writes.start()
    try:
        yield Ratings(feedback, writes)
    finally:
        await writes.stop()


async def press(ratings: Ratings, paper_id: int, signal: str, *, guild_id: int | None) -> str:
    """A rating button pressed; once the store has it, what the presser was told."""
    answered = await ratings.on_paper(USER, signal, paper_id, guild_id=guild_id)  # type: ignore[arg-type]
    await ratings.writes.drained()
    return answered.note


async def test_button_toggles_and_confirms_with_the_title(db: Database, ratings: Ratings) -> None:
    """The first press records and says so with the title; the second press takes it back."""
    papers = await stored_papers(db)
    note = await press(ratings, papers[0], "like", guild_id=GUILD)
    assert note.startswith("👍")
    assert "Paper number 0" in note
    assert await _signals(db) == {(papers[0], "like")}
    undo = await press(ratings, papers[0], "like", guild_id=GUILD)
    assert undo.startswith("Removed your 👍")
    assert "Paper number 0" in undo
    assert await _signals(db) == set()


async def test_button_dislike_replaces_a_like(db: Database, ratings: Ratings) -> None:
    """Pressing 👎 on a liked paper swaps the like for a dislike."""
    papers = await stored_papers(db)
    await press(ratings, papers[0], "like", guild_id=None)
    note = await press(ratings, papers[0], "dislike", guild_id=None)
    assert note.startswith("👎")
    assert await _signals(db) == {(papers[0], "dislike")}


async def test_button_while_paused_says_learning_is_paused(db: Database, ratings: Ratings) -> None:
    """A 👍 press while paused is not recorded and the user is told how to resume."""
    papers = await stored_papers(db)
    await UserRepository(db).set_learning_paused(USER, True)
    note = await press(ratings, papers[0], "like", guild_id=None)
    assert "paused" in note
    assert "/paper interests pause" in note
    assert await _signals(db) == set()


async def test_button_on_a_missing_paper_or_bad_signal_is_a_friendly_error(
    db: Database, ratings: Ratings
) -> None:
    """A button naming a deleted paper or an unknown rating raises a user-facing error."""
    papers = await stored_papers(db)
    with pytest.raises(NotFoundError):
        await press(ratings, papers[-1] + 100, "like", guild_id=None)
    with pytest.raises(UserFacingError):
        await press(ratings, papers[0], "love", guild_id=None)


async def test_a_message_command_gives_a_rating_but_never_takes_it_back(
    db: Database, ratings: Ratings
) -> None:
    papers = await stored_papers(db)
    first = await ratings.on_paper(USER, "save", papers[0], guild_id=None, takes_back=False)
    await ratings.writes.drained()
    again = await ratings.on_paper(USER, "save", papers[0], guild_id=None, takes_back=False)
    await ratings.writes.drained()
    assert (first.added, again.added) == (True, False)
    assert await _signals(db) == {(papers[0], "save")}


async def test_a_reaction_counts_on_the_bots_own_message_only(db: Database, ratings: Ratings) -> None:
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, GUILD, papers[1], kind="digest")
    assert await ratings.on_message(USER, "like", OnMessage(MESSAGE, ours=True), added=True, guild_id=GUILD)
    assert not await ratings.on_message(USER, "like", OnMessage(4242, ours=None), added=False, guild_id=GUILD)
    await ratings.writes.drained()
    assert await _signals(db) == {(papers[1], "like")}


async def test_a_paper_named_as_liked_is_a_like_once_and_never_taken_back(
    db: Database, ratings: Ratings
) -> None:
    """`/paper interests add paper:` and a library's papers: a 👍 the first time; naming it again keeps it."""
    papers = await stored_papers(db)
    first = await ratings.seed(USER, papers[0], guild_id=GUILD)
    assert first.added
    await ratings.writes.drained()
    again = await ratings.seed(USER, papers[0], guild_id=GUILD)
    assert not again.added
    await ratings.writes.drained()
    assert await _signals(db) == {(papers[0], "like")}
