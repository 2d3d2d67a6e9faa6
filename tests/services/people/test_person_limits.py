"""Each person's limits on the costly commands: a few at once, then one every so often; one digest at a
time; people do not share a budget; a refusal says how long to wait."""

from __future__ import annotations

import pytest
from builders import Ticker

from bot.errors import UserFacingError
from bot.services.people.limits import (
    DIGEST_NOW,
    AlreadyRunningError,
    Limit,
    PersonLimits,
    TooSoonError,
)

ALICE, BOB = 1, 2


def test_a_burst_then_one_every_so_often_and_each_person_has_their_own() -> None:
    clock = Ticker()
    limits = PersonLimits({"digest": DIGEST_NOW}, clock=clock)
    limits.take("digest", ALICE)
    limits.take("digest", ALICE)
    with pytest.raises(TooSoonError) as refused:
        limits.take("digest", ALICE)
    assert refused.value.wait == pytest.approx(600)
    assert isinstance(refused.value, UserFacingError)
    assert str(refused.value) == (
        "⏳ Try again in 10 min: `/paper digest` is limited to 2 at once, then one every 10 min for each "
        "person, so that the bot stays quick for everyone."
    )
    limits.take("digest", BOB)  # Bob's budget is his own
    clock.now += 588.4
    with pytest.raises(TooSoonError, match=r"^⏳ Try again in 12 s:"):
        limits.take("digest", ALICE)
    clock.now += 11.6
    limits.take("digest", ALICE)  # one more after 10 minutes, and no more
    with pytest.raises(TooSoonError):
        limits.take("digest", ALICE)


def test_a_refused_use_costs_nothing() -> None:
    """Being refused does not push the next allowed use further away."""
    clock = Ticker()
    limits = PersonLimits({"search": Limit("searching", burst=1, every=2)}, clock=clock)
    limits.take("search", ALICE)
    for _ in range(4):
        clock.now += 0.25
        with pytest.raises(TooSoonError):
            limits.take("search", ALICE)
    clock.now += 1.0  # 2 s after the first
    limits.take("search", ALICE)


def test_the_wait_is_never_shown_as_zero() -> None:
    clock = Ticker()
    limits = PersonLimits({"search": Limit("searching", burst=1, every=2)}, clock=clock)
    limits.take("search", ALICE)
    clock.now += 1.9999
    with pytest.raises(TooSoonError, match=r"^⏳ Try again in 1 s:"):
        limits.take("search", ALICE)


def test_one_digest_at_a_time_per_person() -> None:
    limits = PersonLimits()
    with limits.one_at_a_time("digest", ALICE, busy="still going out"):
        with (
            pytest.raises(AlreadyRunningError, match=r"^still going out$"),
            limits.one_at_a_time("digest", ALICE, busy="still going out"),
        ):
            pass
        with limits.one_at_a_time("digest", BOB, busy="still going out"):
            pass
    with limits.one_at_a_time("digest", ALICE, busy="still going out"):  # the first one ended
        pass


def test_the_one_in_flight_ends_when_it_fails() -> None:
    limits = PersonLimits()
    with pytest.raises(RuntimeError), limits.one_at_a_time("digest", ALICE, busy="busy"):
        raise RuntimeError("the digest failed")
    with limits.one_at_a_time("digest", ALICE, busy="busy"):
        pass


def test_switched_off_nothing_is_refused() -> None:
    limits = PersonLimits({"digest": DIGEST_NOW}, enabled=False)
    for _ in range(10):
        limits.take("digest", ALICE)
    with (
        limits.one_at_a_time("digest", ALICE, busy="busy"),
        limits.one_at_a_time("digest", ALICE, busy="busy"),
    ):
        pass


def test_people_whose_budget_filled_up_again_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded: once many people are counted, those with a full budget again are dropped
    (a new count starts full anyway), and the others keep theirs."""
    monkeypatch.setattr("bot.services.people.limits._PRUNE_AT", 3)
    clock = Ticker()
    limits = PersonLimits({"search": Limit("searching", burst=1, every=2)}, clock=clock)
    limits.take("search", 10)
    limits.take("search", 11)
    clock.now += 5
    limits.take("search", 12)
    limits.take("search", 13)  # prunes 10 and 11, whose budget is full again
    assert set(limits._buckets) == {("search", 12), ("search", 13)}
    with pytest.raises(TooSoonError):
        limits.take("search", 12)
