"""Recommender and profile: topics and the learned model on the real search engine and a real database."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from builders import Rater

from bot.errors import UserFacingError
from bot.services.people.privacy import PrivacyService
from bot.services.recommend.candidates import jaccard
from bot.services.recommend.paper_facts import recency_factor
from bot.services.recommend.profile import RankingParams, decay
from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
USER = 5

CORPUS = [
    # quantization / kv cache
    (
        "KV cache quantization for long-context inference",
        "We quantize the key value cache of transformers to 2 bits, cutting memory for long context inference.",
        2024,
    ),
    (
        "Low-bit weight quantization of large language models",
        "Post-training quantization of weights to 4 bits keeps accuracy of large language models.",
        2024,
    ),
    (
        "Activation outliers and quantization",
        "Outlier channels in activations make quantization of transformers hard; we smooth them.",
        2023,
    ),
    (
        "Quantized attention kernels",
        "Fast attention kernels operating on quantized key value cache blocks with low memory traffic.",
        2024,
    ),
    # reinforcement learning
    (
        "Offline reinforcement learning with conservative critics",
        "Conservative value estimates for offline reinforcement learning from fixed datasets of robot trajectories.",
        2022,
    ),
    (
        "Policy gradients for robot locomotion",
        "Policy gradient reinforcement learning trains robot locomotion controllers in simulation.",
        2021,
    ),
    (
        "Model-based reinforcement learning for manipulation",
        "A learned dynamics model plans robot manipulation with reinforcement learning rewards.",
        2023,
    ),
    # graphs
    (
        "Graph neural networks for molecules",
        "Message passing graph neural networks predict molecular properties from atom graphs.",
        2022,
    ),
    (
        "Oversmoothing in deep graph networks",
        "Deep graph neural networks oversmooth node features; we add residual message passing.",
        2023,
    ),
    # a near-copy of the first paper (a re-upload with a different title)
    (
        "KV cache quantization for long context inference (extended)",
        "We quantize the key value cache of transformers to 2 bits, cutting memory for long context inference.",
        2024,
    ),
]


@pytest.fixture
async def setup(db: Database) -> tuple[Recommender, Rater, dict[str, int]]:
    papers = PaperRepository(db)
    await papers.upsert_many(
        PaperRecord(title=t, abstract=a, year=y, venue="TestConf", authors=("Ada Lovelace",))
        for t, a, y in CORPUS
    )
    rows = await db.fetchall("SELECT id, title FROM papers")
    ids = {str(r[1]): int(r[0]) for r in rows}
    engine = SearchEngine.build(await papers.iter_index_rows())
    recommender = Recommender(db, engine, engine.index, clock=lambda: NOW)
    return recommender, Rater(db, clock=lambda: NOW), ids


def _title(ids: dict[str, int], pid: int) -> str:
    return next(t for t, i in ids.items() if i == pid)


async def test_new_user_without_topics_or_feedback_gets_nothing(setup) -> None:  # type: ignore[no-untyped-def]
    """No topics and no reactions: no guesswork (the command asks for topics instead)."""
    recommender, _, _ = setup
    assert await recommender.recommend(USER, count=5) == []
    result = await recommender.personal(USER, guild_id=1, count=5)
    assert result.status == "no_profile"


async def test_topic_ranks_matching_papers_with_reasons(setup) -> None:  # type: ignore[no-untyped-def]
    """A topic alone finds its papers, and each reason names the interest that brought it."""
    recommender, _, ids = setup
    await recommender.profiles.add_topic(USER, "KV cache quantization")
    picks = await recommender.recommend(USER, count=3)
    assert picks
    assert all(
        "quantiz" in _title(ids, p.paper_id).lower() or "cache" in _title(ids, p.paper_id).lower()
        for p in picks
    )
    assert picks[0].reason.startswith("for your interest in KV cache quantization")
    assert all(p.reason.startswith("for your interest in KV cache quantization") for p in picks)


async def test_shown_and_rated_papers_are_never_recommended_again(setup) -> None:  # type: ignore[no-untyped-def]
    """A second call skips what the first showed; rated papers and caller exclusions stay out too."""
    recommender, feedback, ids = setup
    await recommender.profiles.add_topic(USER, "quantization")
    first = {p.paper_id for p in await recommender.recommend(USER, count=2)}
    rated = ids["Quantized attention kernels"]
    await feedback.set(USER, rated, "dislike")
    excluded = ids["Activation outliers and quantization"]
    second = {p.paper_id for p in await recommender.recommend(USER, count=10, exclude={excluded})}
    assert not second & (first | {rated, excluded})


async def test_mark_shown_false_leaves_history_alone(setup) -> None:  # type: ignore[no-untyped-def]
    """A dry run (digest preview) does not use up papers."""
    recommender, _, _ = setup
    await recommender.profiles.add_topic(USER, "reinforcement learning")
    a = await recommender.recommend(USER, count=2, mark_shown=False)
    b = await recommender.recommend(USER, count=2, mark_shown=False)
    assert [p.paper_id for p in a] == [p.paper_id for p in b]


async def test_likes_pull_recommendations_toward_similar_papers(setup) -> None:  # type: ignore[no-untyped-def]
    """With only a like (no topics), the picks are papers like the liked one, named in the reason."""
    recommender, feedback, ids = setup
    liked = ids["Offline reinforcement learning with conservative critics"]
    await feedback.set(USER, liked, "like")
    picks = await recommender.recommend(USER, count=2)
    titles = [_title(ids, p.paper_id) for p in picks]
    assert all("reinforcement" in t.lower() or "robot" in t.lower() for t in titles), titles
    # the interest the like started goes by the paper's title: the reason names it once
    assert (
        picks[0].reason == "for your interest in “Offline reinforcement learning with conservative critics”"
    )


async def test_a_person_s_model_is_fitted_off_the_event_loop(setup) -> None:  # type: ignore[no-untyped-def]
    """Fitting a model reads the whole corpus (tens of ms at 100k papers): `/paper recommend`, the
    interests' learned words and a search ordered by reactions fit it in a worker thread, so the bot
    keeps answering everyone else meanwhile."""
    recommender, feedback, ids = setup
    await feedback.set(USER, ids["Offline reinforcement learning with conservative critics"], "like")
    fitted_on: list[threading.Thread] = []
    fit = recommender.models.fit

    def recording_fit(*args, **kwargs):  # type: ignore[no-untyped-def]
        fitted_on.append(threading.current_thread())
        return fit(*args, **kwargs)

    recommender.models.fit = recording_fit
    assert await recommender.recommend(USER, count=2)
    await recommender.summary(USER, now=NOW)
    assert len(fitted_on) == 2
    assert all(thread is not threading.main_thread() for thread in fitted_on)


async def test_dislikes_push_papers_down(setup) -> None:  # type: ignore[no-untyped-def]
    """Two people type the same topic, which the third robot-learning paper matches best; one 👎s
    the other two robot papers, the other two quantization papers. The robot paper leads the graph
    papers by less for the one who disliked its neighbours (their words count against it)."""
    recommender, feedback, ids = setup
    robot = ids["Model-based reinforcement learning for manipulation"]
    graphs = {ids["Graph neural networks for molecules"], ids["Oversmoothing in deep graph networks"]}
    disliked = {
        "robot": (
            "Policy gradients for robot locomotion",
            "Offline reinforcement learning with conservative critics",
        ),
        "quantization": ("Activation outliers and quantization", "Quantized attention kernels"),
    }
    lead = {}
    for user, corner in ((USER, "robot"), (USER + 1, "quantization")):
        await recommender.profiles.add_topic(user, "reinforcement learning networks")
        for title in disliked[corner]:
            await feedback.set(user, ids[title], "dislike")
        scores = {p.paper_id: p.score for p in await recommender.recommend(user, count=10, mark_shown=False)}
        lead[corner] = scores[robot] - max(scores[g] for g in graphs)
    assert lead["robot"] < lead["quantization"] - 0.1


async def test_near_copies_are_not_listed_together(setup) -> None:  # type: ignore[no-untyped-def]
    """The re-upload of a paper is not picked next to the original."""
    recommender, _, ids = setup
    await recommender.profiles.add_topic(USER, "kv cache quantization long context")
    picks = {p.paper_id for p in await recommender.recommend(USER, count=5)}
    pair = {ids[CORPUS[0][0]], ids[CORPUS[-1][0]]}
    assert len(picks & pair) == 1


async def test_channel_feed_uses_only_its_topics(setup) -> None:  # type: ignore[no-untyped-def]
    """user_id=None ranks by the given topics and records nothing."""
    recommender, _, ids = setup
    picks = await recommender.recommend(None, count=2, topics=["graph neural networks"])
    assert {_title(ids, p.paper_id) for p in picks} <= {
        "Graph neural networks for molecules",
        "Oversmoothing in deep graph networks",
    }
    assert picks


async def test_nothing_above_the_bar_returns_nothing(setup) -> None:  # type: ignore[no-untyped-def]
    """A topic no paper is about returns no picks and a 'nothing new' status."""
    recommender, _, _ = setup
    await recommender.profiles.add_topic(USER, "protein folding cryo-em")
    assert await recommender.recommend(USER, count=5) == []
    assert (await recommender.personal(USER, guild_id=None, count=5)).status == "nothing_new"


async def test_popular_papers_start_a_newcomer(setup) -> None:  # type: ignore[no-untyped-def]
    """Someone with no profile gets the server's most liked papers."""
    recommender, feedback, ids = setup
    liked = ids["Graph neural networks for molecules"]
    for user in (100, 101, 102):
        await feedback.set(user, liked, "like", guild_id=42)
    result = await recommender.personal(USER, guild_id=42, count=5)
    assert result.status == "popular"
    assert [p.paper_id for p in result.popular] == [liked]
    assert result.popular[0].votes == 3


def test_older_signals_count_less() -> None:
    """Half-life decay: a 30-day-old signal weighs half of one given now."""
    assert decay(NOW.isoformat(), NOW, 30) == pytest.approx(1.0)
    assert decay((NOW - timedelta(days=30)).isoformat(), NOW, 30) == pytest.approx(0.5)
    assert decay((NOW - timedelta(days=90)).isoformat(), NOW, 30) == pytest.approx(0.125)


def test_recency_prefers_newer_papers_slightly() -> None:
    """A new paper gets 1.0, a year-old one less, a very old one the floor; unknown is neutral."""
    params = RankingParams()
    today = NOW.date()
    new = recency_factor(today, today, params)
    year = recency_factor(today - timedelta(days=365), today, params)
    old = recency_factor(today - timedelta(days=365 * 30), today, params)
    assert new == pytest.approx(1.0)
    assert params.recency_floor < year < new
    assert old == pytest.approx(params.recency_floor, abs=1e-3)
    assert recency_factor(None, today, params) == pytest.approx(year)
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)


async def test_interests_add_remove_pause_reset(setup) -> None:  # type: ignore[no-untyped-def]
    """Topics are deduplicated case-insensitively; pause toggles; reset forgets likes but keeps saves."""
    recommender, feedback, ids = setup
    profiles = recommender.profiles
    assert await profiles.add_topic(USER, "  Graph   neural networks ") == ("Graph neural networks", True)
    assert await profiles.add_topic(USER, "graph neural networks") == ("Graph neural networks", False)
    with pytest.raises(UserFacingError):
        await profiles.add_topic(USER, "the of and")
    with pytest.raises(UserFacingError, match="not one of your interests"):
        await profiles.remove(USER, "robots")
    assert await profiles.set_paused(USER) is True
    assert await profiles.set_paused(USER) is False
    assert await profiles.set_paused(USER, True) is True
    await profiles.set_paused(USER, False)
    await feedback.set(USER, ids["Graph neural networks for molecules"], "like")
    await feedback.set(USER, ids["Oversmoothing in deep graph networks"], "save")
    summary = await recommender.summary(USER)
    assert summary.counts.likes == 1
    assert [s.interest.label for s in summary.interests] == ["Graph neural networks"]
    removed = await profiles.reset(USER)
    assert removed.likes == 1
    after = await recommender.summary(USER)
    assert (after.counts.likes, after.counts.saves) == (0, 1)
    assert await profiles.remove(USER, "GRAPH neural networks") == "Graph neural networks"
    assert (await recommender.summary(USER)).topics == ()


async def test_forget_me_deletes_every_row_about_the_user(db: Database, setup) -> None:  # type: ignore[no-untyped-def]
    """Topics, feedback, history, subscription (+ runs), digests sent, DM index, searches, user row."""
    recommender, feedback, ids = setup
    pid = ids["Graph neural networks for molecules"]
    await recommender.profiles.add_topic(USER, "graphs")
    await feedback.set(USER, pid, "save")
    await recommender.recommend(USER, count=2)
    await PostedMessageRepository(db).record(555, 9, None, pid, USER, "digest")
    await PostedMessageRepository(db).record(556, 9, 1, pid, None, "paper")  # a channel post: stays
    await db.execute(
        "INSERT INTO subscriptions (kind, user_id, created_at, updated_at) VALUES ('user', ?, 'x', 'x')",
        (USER,),
    )
    await db.execute("INSERT INTO digest_sent (user_id, paper_id, sent_at) VALUES (?, ?, 'x')", (USER, pid))
    await db.execute(
        "INSERT INTO subscriptions (kind, channel_id, created_by, created_at, updated_at) "
        "VALUES ('channel', 77, ?, 'x', 'x')",
        (USER,),
    )
    await feedback.set(USER + 1, pid, "like")  # someone else: untouched

    counts = await PrivacyService(db).forget(USER)
    assert counts.total >= 7
    for table, column in (
        ("users", "id"),
        ("interests", "user_id"),
        ("feedback", "user_id"),
        ("recommendations_shown", "user_id"),
        ("subscriptions", "user_id"),
        ("digest_sent", "user_id"),
        ("posted_messages", "recipient_id"),
        ("subscriptions", "created_by"),
    ):
        assert await db.fetchval(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (USER,)) == 0, table
    assert await db.fetchval("SELECT COUNT(*) FROM posted_messages") == 1
    assert await db.fetchval("SELECT COUNT(*) FROM subscriptions WHERE kind = 'channel'") == 1
    assert await db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (USER + 1,)) == 1


async def test_search_is_ordered_by_reactions_only_while_learning(setup) -> None:  # type: ignore[no-untyped-def]
    """A search's close matches come in the order a person's reactions taught (the rest keep their
    place), never for someone without reactions or while they paused learning, again once resumed."""
    recommender, feedback, ids = setup
    hits = recommender.engine.search("quantized key value cache memory", limit=10).hits
    paper_ids, scores = [h.paper_id for h in hits], [h.score for h in hits]
    kernels = ids["Quantized attention kernels"]
    assert paper_ids.index(kernels) == 2
    assert scores[2] >= 0.7 * scores[0]
    assert await recommender.personal_order(USER, paper_ids, scores) is None  # no reactions yet

    await feedback.set(USER, kernels, "like")
    await feedback.set(USER, ids["Low-bit weight quantization of large language models"], "dislike")
    learned = await recommender.personal_order(USER, paper_ids, scores)
    assert learned is not None
    assert learned[0] == kernels
    assert sorted(learned) == sorted(paper_ids)
    assert learned[3:] == paper_ids[3:]
    assert await recommender.personal_order(USER + 1, paper_ids, scores) is None  # someone else

    await recommender.profiles.set_paused(USER, True)
    assert await recommender.personal_order(USER, paper_ids, scores) is None
    await recommender.profiles.set_paused(USER, False)
    assert await recommender.personal_order(USER, paper_ids, scores) == learned


async def test_ranking_orders_every_unseen_paper_by_the_person_s_model(setup) -> None:  # type: ignore[no-untyped-def]
    """`ranking` lists every paper the person has not seen, those their model wants first: with a 👍 on
    an offline-RL paper, the other reinforcement-learning papers lead and the rated one is absent."""
    recommender, feedback, ids = setup
    liked = ids["Offline reinforcement learning with conservative critics"]
    await feedback.set(USER, liked, "like")
    order = await recommender.ranking(USER, now=NOW)
    assert sorted(order) == sorted(set(ids.values()) - {liked})
    assert "reinforcement" in _title(ids, order[0]).lower() or "robot" in _title(ids, order[0]).lower()


async def test_ranking_without_reactions_follows_the_topics(setup) -> None:  # type: ignore[no-untyped-def]
    recommender, _, ids = setup
    await recommender.profiles.add_topic(USER, "graph neural networks")
    order = await recommender.ranking(USER, now=NOW)
    assert len(order) == len(ids)
    assert "graph" in _title(ids, order[0]).lower()
