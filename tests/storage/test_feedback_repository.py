"""Reactions as the search path asks about them: whether a person's reactions may order what they see."""

from __future__ import annotations

from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.interests import InterestRepository, topic_key
from storage.repositories.papers import PaperRepository
from storage.repositories.users import UserRepository


async def test_reactions_order_results_only_when_given_and_learning_is_not_paused(db: Database) -> None:
    papers = PaperRepository(db)
    await papers.upsert_many([PaperRecord(title="KV cache quantization", abstract="We quantize the cache.")])
    paper_id = int(await db.fetchval("SELECT id FROM papers"))
    feedback, users = FeedbackRepository(db), UserRepository(db)

    assert not await feedback.learns_from_reactions(7)  # a stranger to the store
    await InterestRepository(db).add(7, "topic", topic_key("kv cache"), topic="kv cache")
    assert not await feedback.learns_from_reactions(7)  # topics alone are not reactions
    await feedback.set_signal(7, paper_id, "save", guild_id=None)
    assert await feedback.learns_from_reactions(7)  # a bookmark is a reaction too
    await feedback.set_signal(7, paper_id, "like", guild_id=1)
    assert await feedback.learns_from_reactions(7)
    assert not await feedback.learns_from_reactions(8)  # only one's own reactions count

    await users.set_learning_paused(7, True)
    assert not await feedback.learns_from_reactions(7)
    await users.set_learning_paused(7, False)
    assert await feedback.learns_from_reactions(7)

    await feedback.remove_signal(7, paper_id, "like")
    await feedback.remove_signal(7, paper_id, "save")
    assert not await feedback.learns_from_reactions(7)  # every reaction taken back
