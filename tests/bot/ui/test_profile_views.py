"""How `/paper interests show` lists one interest: its picks, and what it learns from in words a person
reads without knowing that a 🔖 teaches as a 👍 does."""

from __future__ import annotations

from bot.services.recommend.interests import Interest, InterestSummary
from bot.ui.profile_views import interest_lines
from storage.repositories.interests import InterestRow


def _summary(*, picks: int, liked: int, wanted: int = 0, disliked: int = 0) -> InterestSummary:
    row = InterestRow(
        1, 7, "topic", "topic:kv cache", "kv cache", None, "interests", None, None, "2026-12-05"
    )
    return InterestSummary(Interest(row, "kv cache"), (), (), picks, liked, wanted, disliked)


def test_the_likes_of_its_picks_and_what_it_learns_from_are_told_apart() -> None:
    lines = interest_lines(_summary(picks=9, liked=0, wanted=2, disliked=1)).splitlines()
    assert lines[0] == "🔎 **kv cache**"
    # a 👍 on a search result and a 🔖 teach it, though none of its own picks was liked
    assert lines[1] == "9 picks, 0 of them liked · learns from 2 papers you 👍 or 🔖, 1 you 👎"


def test_an_interest_with_no_picks_yet_says_so_without_a_count_of_liked_ones() -> None:
    assert interest_lines(_summary(picks=0, liked=0)).splitlines()[1] == "0 picks"
    assert interest_lines(_summary(picks=1, liked=1, wanted=1)).splitlines()[1] == (
        "1 pick, liked · learns from 1 paper you 👍 or 🔖"
    )
    assert interest_lines(_summary(picks=1, liked=0)).splitlines()[1] == "1 pick, not liked yet"
    assert interest_lines(_summary(picks=3, liked=0, disliked=2)).splitlines()[1] == (
        "3 picks, 0 of them liked · learns from 2 papers you 👎"
    )
