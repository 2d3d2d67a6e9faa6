"""Feedback capture: like/dislike exclusivity, idempotence, take-backs, pausing (a button's press and the
other ways a rating enters: tests/services/people/test_ratings.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from builders import Rater, stored_papers

from storage.db import Database
from storage.repositories.feedback import POPULAR_LIKERS, FeedbackRepository, Rated
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.users import UserRepository

USER = 111
OTHER = 222
MESSAGE = 9001
GUILD = 77


@pytest.fixture
async def rater(db: Database) -> Rater:
    return Rater(db, clock=lambda: datetime(2026, 1, 10, 12, tzinfo=UTC))


async def _react(db: Database, **rating: Any) -> Rated | None:
    """A reaction as the outbox stores it, at the time the rater's clock says."""
    return await FeedbackRepository(db).react(at="2026-01-10T12:00:00+00:00", **rating)


async def _signals(db: Database, user: int = USER) -> set[tuple[int, str]]:
    return {(row.paper_id, row.signal) for row in await FeedbackRepository(db).signals_for(user)}


async def test_reaction_on_a_posted_message_is_stored_for_that_user_and_paper(
    db: Database, rater: Rater
) -> None:
    """A 👍 on one of our single-paper messages becomes a like of that paper by the reacting user."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, GUILD, papers[1], kind="digest")
    change = await _react(db, user_id=USER, message_id=MESSAGE, signal="like", guild_id=GUILD, added=True)
    assert change is not None
    assert change.changed
    assert await _signals(db) == {(papers[1], "like")}
    row = await db.fetchone("SELECT guild_id, created_at FROM feedback WHERE user_id = ?", (USER,))
    assert row is not None
    assert row[0] == GUILD
    assert row[1].startswith("2026-01-10T12:00")


async def test_reaction_on_an_unknown_message_does_nothing(db: Database, rater: Rater) -> None:
    """Messages the bot did not post are ignored, without writing anything (an emoji that is no rating
    never gets here: the Discord layer drops it, tests/e2e/test_recommend_e2e.py)."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, GUILD, papers[0])
    assert await _react(db, user_id=USER, message_id=424242, signal="like", guild_id=None, added=True) is None
    assert await db.fetchval("SELECT COUNT(*) FROM feedback") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM users") == 0


async def test_repeated_reaction_events_are_idempotent(db: Database, rater: Rater) -> None:
    """The same reaction delivered twice stores one row and reports the second as no change."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, None, papers[0])
    first = await _react(db, user_id=USER, message_id=MESSAGE, signal="save", guild_id=None, added=True)
    second = await _react(db, user_id=USER, message_id=MESSAGE, signal="save", guild_id=None, added=True)
    assert first is not None
    assert first.changed
    assert second is not None
    assert not second.changed
    assert await db.fetchval("SELECT COUNT(*) FROM feedback") == 1


async def test_removing_the_reaction_takes_the_signal_back(db: Database, rater: Rater) -> None:
    """Removing 👍 deletes the like; removing it again is a harmless no-op."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, None, papers[0])
    await _react(db, user_id=USER, message_id=MESSAGE, signal="like", guild_id=None, added=True)
    removed = await _react(db, user_id=USER, message_id=MESSAGE, signal="like", guild_id=None, added=False)
    again = await _react(db, user_id=USER, message_id=MESSAGE, signal="like", guild_id=None, added=False)
    assert removed is not None
    assert removed.changed
    assert again is not None
    assert not again.changed
    assert await _signals(db) == set()


async def test_like_and_dislike_exclude_each_other_but_save_is_independent(
    db: Database, rater: Rater
) -> None:
    """👎 after 👍 replaces the like; a save stays alongside either."""
    papers = await stored_papers(db)
    await rater.set(USER, papers[0], "like")
    await rater.set(USER, papers[0], "save")
    change = await rater.set(USER, papers[0], "dislike")
    assert change.replaced == "like"
    assert await _signals(db) == {(papers[0], "dislike"), (papers[0], "save")}
    # removing the now-stale 👍 reaction later must not touch the dislike
    await rater.unset(USER, papers[0], "like")
    assert await _signals(db) == {(papers[0], "dislike"), (papers[0], "save")}


async def test_feedback_is_per_user(db: Database, rater: Rater) -> None:
    """Two people reacting on the same message each get their own signal (a channel feed)."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, GUILD, papers[2], kind="feed")
    await _react(db, user_id=USER, message_id=MESSAGE, signal="like", guild_id=GUILD, added=True)
    await _react(db, user_id=OTHER, message_id=MESSAGE, signal="dislike", guild_id=GUILD, added=True)
    assert await _signals(db, USER) == {(papers[2], "like")}
    assert await _signals(db, OTHER) == {(papers[2], "dislike")}


async def test_paused_learning_ignores_likes_and_dislikes_but_keeps_saves(db: Database, rater: Rater) -> None:
    """With learning paused, 👍/👎 are not recorded, 🔖 still bookmarks, and take-backs still work."""
    papers = await stored_papers(db)
    await rater.set(USER, papers[0], "like")
    await UserRepository(db).set_learning_paused(USER, True)
    liked = await rater.set(USER, papers[1], "like")
    saved = await rater.set(USER, papers[1], "save")
    assert liked.paused
    assert not liked.changed
    assert saved.changed
    await rater.unset(USER, papers[0], "like")
    assert await _signals(db) == {(papers[1], "save")}


async def test_deleting_a_paper_deletes_its_messages_and_feedback(db: Database, rater: Rater) -> None:
    """posted_messages and feedback follow their paper (foreign keys cascade)."""
    papers = await stored_papers(db)
    await PostedMessageRepository(db).record(MESSAGE, 5, None, papers[0])
    await rater.set(USER, papers[0], "save")
    await db.execute("DELETE FROM papers WHERE id = ?", (papers[0],))
    assert await PostedMessageRepository(db).paper_for(MESSAGE) is None
    assert await _signals(db) == set()


async def test_popular_here_takes_three_people_who_liked_it_in_this_server(
    db: Database, rater: Rater
) -> None:
    """A paper is popular in a server once three people there 👍'd it, and more 👍'd than 👎'd it;
    the most liked first. Bookmarks never count, nor 👍 given in a DM or another server."""
    papers = await stored_papers(db, 6)
    for user in (1, 2, 3, 4):
        await rater.set(user, papers[0], "like", guild_id=GUILD)
    for user in (1, 2, 3):
        await rater.set(user, papers[1], "like", guild_id=GUILD)
    for user in (1, 2):  # two 👍 and three 🔖: bookmarks are private
        await rater.set(user, papers[2], "like", guild_id=GUILD)
    for user in (3, 4, 5):
        await rater.set(user, papers[2], "save", guild_id=GUILD)
    await rater.set(1, papers[3], "like", guild_id=GUILD)  # two here, one in a DM, one elsewhere
    await rater.set(2, papers[3], "like", guild_id=GUILD)
    await rater.set(3, papers[3], "like", guild_id=None)
    await rater.set(4, papers[3], "like", guild_id=GUILD + 1)
    for user in (1, 2, 3):  # as many 👎 as 👍
        await rater.set(user, papers[4], "like", guild_id=GUILD)
    for user in (4, 5, 6):
        await rater.set(user, papers[4], "dislike", guild_id=GUILD)
    for user in (1, 2, 3):  # liked by three, in another server only
        await rater.set(user, papers[5], "like", guild_id=GUILD + 1)
    repo = FeedbackRepository(db)
    assert POPULAR_LIKERS == 3
    assert await repo.popular(guild_id=GUILD, limit=5) == [(papers[0], 4), (papers[1], 3)]
    assert await repo.popular(guild_id=GUILD, limit=5, exclude={papers[0]}) == [(papers[1], 3)]
    assert await repo.popular(guild_id=GUILD, limit=1) == [(papers[0], 4)]
    assert await repo.popular(guild_id=GUILD + 1, limit=5) == [(papers[5], 3)]


async def test_a_dm_has_nothing_popular(db: Database, rater: Rater) -> None:
    """Without a server there is no "here": nothing is popular, however many liked a paper anywhere."""
    papers = await stored_papers(db)
    for user in (1, 2, 3):
        await rater.set(user, papers[0], "like", guild_id=GUILD)
        await rater.set(user, papers[1], "like", guild_id=None)
    assert await FeedbackRepository(db).popular(guild_id=None, limit=5) == []
