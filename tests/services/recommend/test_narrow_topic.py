"""Following a narrower topic in place of a broad one (the buttons under a broad topic's note)."""

from __future__ import annotations

from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from storage.db import Database


async def test_narrowing_replaces_the_broad_topic_keeps_one_followed_already_and_adds_once_it_is_gone(
    db: Database,
) -> None:
    engine = SearchEngine.build([])
    profiles = Recommender(db, engine, engine.index).profiles
    await profiles.add_topic(1, "Reinforcement Learning")
    await profiles.add_topic(1, "Offline RL")
    # the narrower topic is followed already (written otherwise): the broad one goes, it stays once
    assert await profiles.narrow_topic(1, "reinforcement learning", "offline rl") == (
        "Offline RL",
        "Reinforcement Learning",
    )
    assert await profiles.topics(1) == ["Offline RL"]
    # the broad topic is gone (an older answer's button): the narrower one is only added
    assert await profiles.narrow_topic(1, "reinforcement learning", "model-based reinforcement learning") == (
        "model-based reinforcement learning",
        None,
    )
    assert await profiles.topics(1) == ["Offline RL", "model-based reinforcement learning"]
