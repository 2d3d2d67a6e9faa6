"""The parts of serving several interests that need no store: which interest a reaction teaches,
each interest's share of a list, the list interleaved from their rankings, and the reason's words."""

from __future__ import annotations

import numpy as np
import pytest

from bot.services.recommend.attribution import GROUP_COSINE, JOIN_COSINE, attribute
from bot.services.recommend.candidates import Candidate
from bot.services.recommend.paper_facts import word_cut
from bot.services.recommend.recommender import REASON_CHARS, reason
from bot.services.recommend.shares import allocate, engagement, interleave
from paperindex.tokenizer import tokenize
from storage.repositories.feedback import FeedbackRow
from storage.repositories.interests import InterestRow

NOW = "2026-03-01T09:00:00+00:00"


def _interest(
    interest_id: int, kind: str = "topic", topic: str | None = None, paper_id: int | None = None, **kw: object
) -> InterestRow:
    return InterestRow(
        id=interest_id,
        user_id=1,
        kind=kind,  # type: ignore[arg-type]
        key=f"{kind}:{topic or paper_id}",
        topic=topic,
        paper_id=paper_id,
        origin="interests",
        paused_at=kw.get("paused_at"),
        removed_at=kw.get("removed_at"),
        added_at="2026-01-01T00:00:00+00:00",
        narrowed_by=int(kw["narrowed_by"]) if "narrowed_by" in kw else None,
    )


def _row(paper_id: int, signal: str, at: str = NOW) -> FeedbackRow:
    return FeedbackRow(paper_id, signal, at)  # type: ignore[arg-type]


# Papers 1–9 lie along three directions of a 3-d space: 1–3 "rl", 4–6 "kv", 7–9 far from both.
PLACES = {p: np.eye(3, dtype=np.float32)[(p - 1) // 3] for p in range(1, 10)}
CENTRES = {"offline rl": np.array([1.0, 0, 0]), "kv cache": np.array([0, 1.0, 0])}


def _attribute(interests, signals, seen=(), brought=None):  # type: ignore[no-untyped-def]
    return attribute(
        interests,
        signals,
        frozenset(seen),
        brought or {},
        coords_of=PLACES.get,
        topic_centre=CENTRES.get,
    )


def test_a_reaction_teaches_the_interest_that_brought_the_paper_else_the_closest() -> None:
    rl, kv = _interest(1, topic="offline rl"), _interest(2, topic="kv cache")
    taught = _attribute(
        [rl, kv],
        [_row(1, "like"), _row(5, "like"), _row(4, "dislike")],
        seen={1, 2, 4, 5},
        brought={1: 2, 2: 1},  # paper 1 (an rl paper) was brought by the kv interest: it is its
    ).taught
    assert [s.paper_id for s in taught[2].signals] == [1, 5, 4]
    assert taught[1].signals == []
    assert taught[1].ignored == [2]  # brought by rl, shown, left without a reaction
    assert (taught[2].wanted, taught[2].disliked) == (2, 1)


def test_a_like_far_from_every_interest_starts_one_and_a_dislike_there_teaches_nothing() -> None:
    rl = _interest(1, topic="offline rl")
    result = _attribute([rl], [_row(7, "like"), _row(8, "like"), _row(9, "dislike"), _row(4, "dislike")])
    assert result.new_groups == (7,)  # 8 lies with 7: it joins the group 7 started
    assert result.taught[1].signals == []
    grouped = _attribute(
        [rl, _interest(3, "liked", paper_id=7)], [_row(7, "like"), _row(8, "like"), _row(9, "dislike")]
    )
    assert grouped.new_groups == ()
    assert [s.paper_id for s in grouped.taught[3].signals] == [7, 8, 9]
    assert JOIN_COSINE > 0


def test_the_paper_named_for_a_topic_teaches_that_topic_wherever_it_lies() -> None:
    """Paper 7 lies far from "offline rl": a 👍 on it alone would start an interest of its own, but
    named for that topic (it narrowed it) it teaches the topic; other far likes still start one."""
    rl = _interest(1, topic="offline rl", narrowed_by=7)
    result = _attribute([rl], [_row(7, "like"), _row(8, "like")])
    assert [s.paper_id for s in result.taught[1].signals] == [7]
    assert result.new_groups == (8,)


def test_removed_interests_teach_nothing_and_paused_ones_nothing_after_the_pause() -> None:
    removed = _interest(1, topic="offline rl", removed_at="2026-02-01T00:00:00+00:00")
    paused = _interest(2, topic="kv cache", paused_at="2026-02-01T00:00:00+00:00")
    result = _attribute(
        [removed, paused],
        [_row(1, "like"), _row(4, "like", "2026-01-15T00:00:00+00:00"), _row(5, "like")],
        brought={1: 1},
    )
    assert 1 not in result.taught
    assert [s.paper_id for s in result.taught[2].signals] == [4]  # 5 came after the pause
    assert result.new_groups == ()  # a 👍 on a removed interest's pick starts nothing


def test_every_interest_gets_two_picks_while_the_count_allows_then_the_rest_go_by_engagement() -> None:
    assert allocate(10, {"rl": 1.0, "kv": 2.0}) == {"rl": 4, "kv": 6}
    # two picks each while the count allows, however little one interest is engaged with
    assert allocate(5, {"rl": 1.0, "kv": 0.1}) == {"rl": 3, "kv": 2}
    assert allocate(5, {"a": 1.0, "b": 0.1, "c": 3.0}) == {"a": 2, "b": 1, "c": 2}
    assert allocate(2, {"a": 1.0, "b": 5.0, "c": 3.0}) == {"a": 0, "b": 1, "c": 1}
    assert sum(allocate(7, {"a": 0.3, "b": 0.3, "c": 0.4}).values()) == 7
    assert engagement(1, 0, 0) > engagement(0, 0, 0) > engagement(0, 1, 0)
    assert engagement(0, 0, 10) == pytest.approx(0.5)


def test_the_list_interleaves_the_rankings_and_fills_from_others_when_one_runs_out() -> None:
    rankings = {"rl": ["r1", "r2", "r3", "r4"], "kv": ["k1", "dup", "k2"]}
    taken: set[str] = set()

    def admit(_: str, item: str) -> bool:
        if item == "dup" or item in taken:
            return False
        taken.add(item)
        return True

    assert interleave(rankings, {"rl": 2, "kv": 2}, 4, admit) == [
        ("rl", "r1"),
        ("kv", "k1"),
        ("rl", "r2"),
        ("kv", "k2"),
    ]
    taken.clear()
    short = {"rl": ["r1", "r2", "r3"], "kv": ["k1"]}
    assert [i for _, i in interleave(short, {"rl": 2, "kv": 2}, 4, admit)] == ["r1", "k1", "r2", "r3"]


def test_a_reason_names_the_interest_and_is_never_cut_inside_a_word() -> None:
    long_title = "Bifurcated attention for single-context large-batch sampling with a very long title indeed"
    text = reason("offline RL", Candidate(1, 1.0, ("offline", "policy")), word_cut(long_title, 60))
    assert text.startswith("for your interest in offline RL · matched: offline, policy · like: Bifurcated")
    assert text.endswith("…")
    assert not text[:-1].endswith(" ")
    assert reason("kv cache", Candidate(1, 1.0, ("KV", "cache")), None) == "for your interest in kv cache"
    words = " ".join(["quantization"] * 30)
    long = reason(words, Candidate(1, 1.0, ("a",) * 3), "x " * 80)
    assert len(long) <= REASON_CHARS
    assert long.split(" ")[-1].rstrip("…") in {"quantization", "x", "a", ""}
    assert word_cut("abcdefghij klmnop", 12) == "abcdefghij…"


def test_a_reason_names_a_saved_paper_as_saved() -> None:
    """(Which liked paper it names is the recommender's choice: never the one the interest is named
    after, test_recommender.py::test_likes_pull_recommendations_toward_similar_papers.)"""
    title = "The Emergence of Reproducibility and Consistency in…"
    saved = Candidate(1, 1.0, (), like=7, like_signal="save")
    other = "Rolling Diffusion Models"
    assert reason(f"“{title}”", saved, other) == f"for your interest in “{title}” · saved: {other}"


def test_a_reason_leaves_out_words_most_papers_hold_and_does_not_just_repeat_the_name() -> None:
    """'learning' is generic: matching 'offline' and 'reinforcement' of "offline reinforcement
    learning" only repeats the name; matching 'offline' alone says what the paper holds of it."""
    name = "offline reinforcement learning"
    generic = frozenset(tokenize("learning"))
    whole = reason(name, Candidate(1, 1.0, ("offline", "reinforcement")), None, generic)
    assert whole == f"for your interest in {name}"
    part = reason(name, Candidate(1, 1.0, ("offline",)), None, generic)
    assert part == f"for your interest in {name} · matched: offline"


def test_liked_papers_far_from_every_interest_are_grouped_by_place_not_one_interest_each() -> None:
    # a library: three papers of one line of work in different words (cosine 0.25 to each other, under
    # the 0.3 a 👍 needs to join an interest) and one paper far from them; none near the typed topic
    b = 0.75**0.5
    places = {
        p: np.array(v, dtype=np.float32)
        for p, v in {
            10: (0.5, b, 0, 0, 0),
            11: (0.5, 0, b, 0, 0),
            12: (0.5, 0, 0, b, 0),
            20: (-1, 0, 0, 0, 0),
        }.items()
    }
    topic = np.array([0, 0, 0, 0, 1.0])
    rl = _interest(1, topic="offline rl")
    likes = [_row(p, "like") for p in (10, 20, 11, 12)]
    result = attribute([rl], likes, frozenset(), {}, coords_of=places.get, topic_centre=lambda _: topic)
    assert result.new_groups == (10, 20)  # two groups, each seeded by its first paper
    # once they are stored, every paper of the library teaches its own group
    groups = [rl, _interest(3, "liked", paper_id=10), _interest(4, "liked", paper_id=20)]
    grouped = attribute(groups, likes, frozenset(), {}, coords_of=places.get, topic_centre=lambda _: topic)
    assert grouped.new_groups == ()
    assert sorted(s.paper_id for s in grouped.taught[3].signals) == [10, 11, 12]
    assert [s.paper_id for s in grouped.taught[4].signals] == [20]
    assert GROUP_COSINE < 0.25 < JOIN_COSINE
