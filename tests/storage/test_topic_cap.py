"""The cap on a person's interests holds when many are added at the same moment, on both engines."""

from __future__ import annotations

import asyncio

from bot.errors import UserFacingError
from bot.services.recommend.interests import MAX_TOPICS
from bot.services.recommend.recommender import Recommender
from bot.tree import friendly_message
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.repositories.interests import INTEREST_LIMIT, InterestLimitError, InterestRepository, topic_key

FULL = f"You already follow {MAX_TOPICS} interests; remove one with `/paper interests remove` first."


async def test_forty_topics_added_at_once_store_no_more_than_the_cap(db: Database) -> None:
    """40 different topics added at once, as 40 `/paper interests add` answered together would: each
    reads the person's topics before any has written, so each passes the check made before adding;
    the add itself holds the cap, and the ones past it are told so."""
    engine = SearchEngine.build([])
    profiles = Recommender(db, engine, engine.index).profiles
    results = await asyncio.gather(
        *(profiles.add_topic(7, f"topic number {n}") for n in range(40)), return_exceptions=True
    )
    assert len(await profiles.topics(7)) == MAX_TOPICS
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 40 - MAX_TOPICS
    assert all(isinstance(r, UserFacingError | InterestLimitError) for r in refused), refused
    assert {friendly_message(r) for r in refused if isinstance(r, Exception)} == {FULL}


async def test_the_add_counts_in_its_own_transaction(db: Database) -> None:
    """The repository's own count: ten adds at once under a cap of three store three; a topic the
    person has already is still "already there" when they are full, not refused."""
    interests = InterestRepository(db)
    assert INTEREST_LIMIT == MAX_TOPICS  # the service says it first, with the same number
    results = await asyncio.gather(
        *(interests.add(8, "topic", topic_key(f"t{n}"), topic=f"t{n}", limit=3) for n in range(10)),
        return_exceptions=True,
    )
    added = [n for n, r in enumerate(results) if isinstance(r, tuple) and r[1]]
    assert sorted(await interests.topics(8)) == sorted(f"t{n}" for n in added)
    assert len(await interests.topics(8)) == 3
    assert all(isinstance(r, InterestLimitError) for r in results if not isinstance(r, tuple))
    kept = (await interests.topics(8))[0]
    assert (await interests.add(8, "topic", topic_key(kept), topic=kept, limit=3))[1] is False
