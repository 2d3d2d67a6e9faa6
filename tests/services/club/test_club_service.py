"""The club's rules without Discord: when a week's announcement falls (in the club's zone, across a
change of clock), who wins (a tie to the first listed, no vote to the first candidate), nonces that
Discord takes, and messages within Discord's limits whatever the titles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.services.club import Outcome, PollPlan, next_announcement, nonce, winner_of
from bot.ui import club as ui
from storage.models import ClubRow, Paper


def _club(**changes: object) -> ClubRow:
    values: dict[str, object] = {
        "channel_id": 1,
        "guild_id": 2,
        "weekday": 6,  # Sunday
        "time": "02:30",
        "timezone": "Europe/Berlin",
        "topics": "",
        "created_by": 3,
        "active": True,
    }
    values.update(changes)
    return ClubRow(**values)  # type: ignore[arg-type]


def _paper(paper_id: int, title: str) -> Paper:
    return Paper(
        id=paper_id,
        title=title,
        title_derived=False,
        abstract="An abstract. We propose a method.",
        authors=("Ada Lovelace",),
        venue="ICML",
        year=2024,
        status=None,
        url=None,
        pdf_url=None,
        code_url=None,
        arxiv_id=f"2401.{paper_id:05d}",
        openreview_id=None,
        doi=None,
        external_id=None,
        source=None,
        published=None,
        added_at="2026-01-01T00:00:00+00:00",
    )


def test_the_announcement_keeps_local_time_across_a_clock_change() -> None:
    club = _club(weekday=2, time="18:00")
    before = next_announcement(club, datetime(2026, 10, 20, tzinfo=UTC))
    after = next_announcement(club, before)
    assert before == datetime(2026, 10, 21, 16, 0, tzinfo=UTC)  # CEST
    assert after == datetime(2026, 10, 28, 17, 0, tzinfo=UTC)  # CET: still 18:00 in Berlin
    assert next_announcement(club, after - timedelta(seconds=1)) == after


def test_a_time_skipped_by_the_clock_change_still_comes() -> None:
    club = _club(weekday=6, time="02:30")  # 29 March 2026: 02:00-03:00 does not exist in Berlin
    moment = next_announcement(club, datetime(2026, 3, 28, tzinfo=UTC))
    assert moment.date() == datetime(2026, 3, 29).date()


def test_who_wins() -> None:
    assert winner_of((1, 3, 2)) == (1, False)
    assert winner_of((2, 0, 2)) == (0, True)  # a tie: the first listed
    assert winner_of((0, 0, 0)) == (0, False)  # no vote: the first candidate
    assert winner_of(()) == (0, False)


def test_nonces_fit_discord_and_differ_by_step() -> None:
    made = {
        nonce(1191168914227200007, "2026-12-02T17:00:00+00:00", k)
        for k in ("poll", "announce", "paper", "remind")
    }
    assert len(made) == 4
    assert all(len(n) <= 25 for n in made)


def test_long_titles_stay_within_discords_poll_limits() -> None:
    long = "A " + "very " * 80 + "long title"
    plan = PollPlan(
        1,
        1_796_230_800,
        [_paper(n, f"{long} {n}") for n in range(1, 11)],
        datetime(2026, 12, 2, 17, tzinfo=UTC),
        48,
        "America/Argentina/ComodRivadavia",
    )
    poll, text = ui.poll_message(plan)
    assert len(poll.question or "") <= 300
    assert len(poll.answers) == 10
    assert all(len(a.text) <= 55 for a in poll.answers)
    assert len(text) <= 2000
    assert len(ui.thread_name(plan.candidates[0])) <= 100
    outcome = Outcome(plan.candidates[1], (1, 1) + (0,) * 8, plan.candidates, True, plan.announce_at, "UTC")
    assert "A tie at 1 vote" in ui.announcement(outcome)
    assert len(ui.announcement(outcome)) <= 2000
