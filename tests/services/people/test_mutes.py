"""Muted topics: what a phrase matches, the rules of a mute, and the papers it keeps out of picks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.services.people.mutes import MuteError, MuteMatcher, MuteService, holds_phrase, mute_terms
from bot.services.people.privacy import PrivacyService
from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository
from storage.repositories.subscriptions import ScheduleFields, SubscriptionRepository

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
USER = 7

CORPUS = [
    (
        "Offline reinforcement learning with critics",
        "Conservative critics for offline reinforcement learning.",
    ),
    ("Policy gradients for locomotion", "Robots learn locomotion by reinforced learning."),
    ("Reinforcement signals in memory", "Reinforcement, learning and memory in hippocampus models."),
    ("Learning to rank with transformers", "Transformers rank documents for search."),
    ("KV cache quantization", "We quantize the key value cache to 2 bits for long contexts."),
    ("Quantized attention kernels", "Attention kernels on quantized key value cache blocks."),
    ("Graph neural networks for molecules", "Message passing predicts molecular properties."),
]


def test_a_phrase_matches_its_words_side_by_side_in_any_form() -> None:
    terms = mute_terms("Reinforcement Learning")
    assert terms == ("reinforc", "learn")
    assert holds_phrase("Deep reinforcement-learning agents", terms)
    assert holds_phrase("trained by reinforced learning", terms)  # the stems match
    assert holds_phrase("reinforcement of learning", terms)  # stop words are skipped, as search does
    assert not holds_phrase("Reinforcement, learning and memory", terms)  # a comma ends the phrase
    assert not holds_phrase("learning reinforcement", terms)  # the order counts
    assert not holds_phrase("reinforcement and curriculum learning", terms)
    assert holds_phrase("GPT 3.5 answers", mute_terms("gpt 3.5"))  # a number's dot is no break


@pytest.fixture
async def muting(db: Database) -> tuple[MuteService, Recommender, dict[str, int]]:
    papers = PaperRepository(db)
    await papers.upsert_many(PaperRecord(title=t, abstract=a, year=2024) for t, a in CORPUS)
    ids = {str(r[1]): int(r[0]) for r in await db.fetchall("SELECT id, title FROM papers")}
    engine = SearchEngine.build(await papers.iter_index_rows())
    mutes = MuteService(db, MuteMatcher(engine.index, papers), clock=lambda: NOW)
    recommender = Recommender(db, engine, engine.index, clock=lambda: NOW, mutes=mutes)
    return mutes, recommender, ids


async def test_a_muted_phrase_hides_the_papers_that_say_it(muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, ids = muting
    done = await mutes.mute(USER, "  reinforcement   learning ")
    assert done.added
    assert done.phrase == "reinforcement learning"
    assert done.papers == 2
    assert await mutes.muted(USER) == {
        ids["Offline reinforcement learning with critics"],
        ids["Policy gradients for locomotion"],
    }
    assert await mutes.count_muted(USER, list(ids.values())) == 2
    assert await mutes.muted(USER + 1) == frozenset()


async def test_a_word_in_exactly_half_the_papers_is_muted_all_the_same(db: Database) -> None:
    """rank-bm25 gives a word in exactly half the papers idf 0, so those papers score 0 for it: the
    mute still finds them by the words they hold."""
    papers = PaperRepository(db)
    await papers.upsert_many(
        PaperRecord(title=t, abstract=a, year=2024)
        for t, a in [
            ("Diffusion models for images", "Denoising diffusion makes images."),
            ("Heat diffusion on graphs", "Heat spreads over the nodes."),
            ("KV cache quantization", "Two bits per value."),
            ("Graph neural networks", "Message passing over nodes."),
        ]
    )
    engine = SearchEngine.build(await papers.iter_index_rows())
    assert engine.index.idf(mute_terms("diffusion")[0]) == 0.0
    mutes = MuteService(db, MuteMatcher(engine.index, papers), clock=lambda: NOW)
    assert (await mutes.mute(USER, "diffusion")).papers == 2


async def test_recommend_never_picks_a_muted_paper(muting) -> None:  # type: ignore[no-untyped-def]
    mutes, recommender, ids = muting
    await recommender.profiles.add_topic(USER, "reinforcement learning")
    before = {p.paper_id for p in await recommender.recommend(USER, count=5, mark_shown=False)}
    rl = {ids["Offline reinforcement learning with critics"], ids["Policy gradients for locomotion"]}
    assert rl <= before
    await mutes.mute(USER, "reinforcement learning")
    after = {p.paper_id for p in await recommender.recommend(USER, count=5, mark_shown=False)}
    assert not after & rl
    await mutes.unmute(USER, "Reinforced Learning")  # the same terms
    again = {p.paper_id for p in await recommender.recommend(USER, count=5, mark_shown=False)}
    assert rl <= again


@pytest.mark.parametrize(
    ("phrase", "said"),
    [
        ("   ", "Give the words to mute"),
        ("the of and", "only very common words"),
        ("x" * 101, "at most 100 characters"),
        ("one two three four five six seven", "at most 6 words"),
    ],
)
async def test_bad_phrases_are_refused_and_nothing_stored(muting, phrase: str, said: str) -> None:  # type: ignore[no-untyped-def]
    mutes, _, _ = muting
    with pytest.raises(MuteError, match=said):
        await mutes.mute(USER, phrase)
    assert await mutes.mutes(USER) == []


async def test_the_same_words_twice_are_one_mute_and_the_limit_holds(db: Database, muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, _ = muting
    await mutes.mute(USER, "kv cache")
    again = await mutes.mute(USER, "KV caches")
    assert not again.added
    assert again.phrase == "kv cache"
    small = MuteService(db, mutes.matcher, limit=2, clock=lambda: NOW)
    await small.mute(USER, "graph")
    with pytest.raises(MuteError, match="You mute 2 topics already"):
        await small.mute(USER, "molecules")
    assert [m.phrase for m in await small.mutes(USER)] == ["kv cache", "graph"]
    assert not (await small.mute(USER, "graph")).added  # a repeat at the limit is no error


async def test_unmuting_what_is_not_muted_says_what_is(muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, _ = muting
    with pytest.raises(MuteError, match="You have no muted topics"):
        await mutes.unmute(USER, "graph")
    await mutes.mute(USER, "kv cache")
    with pytest.raises(MuteError, match="Muted now: “kv cache”"):
        await mutes.unmute(USER, "graph")


async def test_a_feed_keeps_its_own_mutes(db: Database, muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, ids = muting
    feeds = SubscriptionRepository(db)
    fields = ScheduleFields(("quantization",), "09:00", "UTC", "daily", 0, 3)
    await feeds.upsert_channel(10, 1, fields, created_by=USER)
    with pytest.raises(MuteError, match="no paper feed"):
        await mutes.feed_mute(1, 11, "kv cache")
    with pytest.raises(MuteError, match="no paper feed"):
        await mutes.feed_mute(2, 10, "kv cache")  # another server's channel
    done = await mutes.feed_mute(1, 10, "key value cache")
    assert done.added
    assert not (await mutes.feed_mute(1, 10, "Key-value caches")).added
    feed = await feeds.for_channel(10)
    assert feed is not None
    assert feed.mutes == ("key value cache",)
    assert await mutes.hidden(feed.mutes) == {
        ids["KV cache quantization"],
        ids["Quantized attention kernels"],
    }
    assert await mutes.muted(USER) == frozenset()
    await feeds.upsert_channel(10, 1, fields, created_by=USER)  # feed set again keeps its mutes
    with pytest.raises(MuteError, match=r"This feed doesn.t mute “graph”\. Muted now: “key value cache”"):
        await mutes.feed_unmute(1, 10, "graph")
    assert await mutes.feed_unmute(1, 10, "key-value caches") == "key value cache"
    feed = await feeds.for_channel(10)
    assert feed is not None
    assert feed.mutes == ()


async def test_a_feeds_mutes_have_a_limit(db: Database, muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, _ = muting
    fields = ScheduleFields(("quantization",), "09:00", "UTC", "daily", 0, 3)
    await SubscriptionRepository(db).upsert_channel(10, 1, fields, created_by=USER)
    small = MuteService(db, mutes.matcher, limit=1, clock=lambda: NOW)
    await small.feed_mute(1, 10, "graph")
    with pytest.raises(MuteError, match="This feed mutes 1 topics already"):
        await small.feed_mute(1, 10, "molecules")


async def test_forget_me_deletes_a_persons_mutes(db: Database, muting) -> None:  # type: ignore[no-untyped-def]
    mutes, _, _ = muting
    await mutes.mute(USER, "kv cache")
    counts = await PrivacyService(db, clock=lambda: NOW).forget(USER)
    assert counts.mutes == 1
    assert await mutes.mutes(USER) == []


async def test_papers_indexed_later_are_matched_too(db: Database, muting) -> None:  # type: ignore[no-untyped-def]
    mutes, recommender, _ = muting
    await mutes.mute(USER, "graph neural")
    assert len(await mutes.muted(USER)) == 1
    papers = PaperRepository(db)
    await papers.upsert_many([PaperRecord(title="Graph neural networks at scale", abstract="Big graphs.")])
    new = await db.fetchval("SELECT id FROM papers WHERE title = ?", ("Graph neural networks at scale",))
    paper = await papers.get(int(new))
    assert paper is not None
    recommender.engine.add([(paper.id, paper.title, paper.abstract or "")])
    assert int(new) in await mutes.muted(USER)


async def test_a_mute_names_the_persons_interests_that_say_it(muting) -> None:  # type: ignore[no-untyped-def]
    mutes, recommender, _ = muting
    await recommender.profiles.add_topic(USER, "offline reinforcement learning")
    await recommender.profiles.add_topic(USER, "graph neural networks")
    done = await mutes.mute(USER, "reinforcement learning")
    assert done.topics == ("offline reinforcement learning",)
    assert (await mutes.mute(USER, "kv cache")).topics == ()
