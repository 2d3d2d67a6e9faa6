"""Digest schedules: input validation, next delivery in the subscriber's zone, DST, periods, catch-up."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.errors import InvalidScheduleError
from bot.services.digests.timing import (
    AUTOCOMPLETE_LIMIT,
    DueDigest,
    Schedule,
    check_due,
    digest_calls,
    format_local,
    latest_due,
    make_schedule,
    moved_later,
    next_delivery,
    occurrence,
    parse_frequency,
    parse_time,
    parse_timezone,
    parse_topics,
    parse_weekday,
    timezone_choices,
    validate_count,
)

BERLIN = ZoneInfo("Europe/Berlin")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# ---- parsing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("09:00", "09:00"),
        ("9:00", "09:00"),
        (" 18:30 ", "18:30"),
        ("7.45", "07:45"),
        ("9am", "09:00"),
        ("9:30 pm", "21:30"),
        ("12am", "00:00"),
        ("12:15pm", "12:15"),
        ("0:00", "00:00"),
        ("23:59", "23:59"),
    ],
)
def test_parse_time_accepts_clear_forms(text: str, expected: str) -> None:
    """Common ways of writing a time of day normalise to HH:MM."""
    assert parse_time(text) == expected


@pytest.mark.parametrize("text", ["24:00", "9:60", "9", "nine", "", "13pm", "09:0", "-1:00", "9:00:00"])
def test_parse_time_rejects_nonsense_with_help(text: str) -> None:
    """An invalid time is refused with a message that shows the expected form."""
    with pytest.raises(InvalidScheduleError, match="HH:MM"):
        parse_time(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Europe/Berlin", "Europe/Berlin"),
        ("europe/berlin", "Europe/Berlin"),
        ("america/new york", "America/New_York"),
        ("utc", "UTC"),
        ("Asia/Kolkata", "Asia/Kolkata"),
    ],
)
def test_parse_timezone_canonicalises(text: str, expected: str) -> None:
    """IANA names are accepted in any case and with spaces for underscores."""
    assert parse_timezone(text) == expected


def test_unknown_timezone_is_refused_with_suggestions() -> None:
    """A city alone or a made-up zone is refused; the message suggests real names."""
    with pytest.raises(InvalidScheduleError) as caught:
        parse_timezone("Berlin")
    assert "Europe/Berlin" in str(caught.value)
    with pytest.raises(InvalidScheduleError, match="IANA"):
        parse_timezone("Mars/Olympus_Mons")
    with pytest.raises(InvalidScheduleError, match="IANA"):
        parse_timezone("+02:00")


def test_an_abbreviation_is_refused_and_the_zones_it_usually_means_come_first() -> None:
    """ "PST" names an offset, not a place with summer time: refused, with America/Los_Angeles first
    (it offered PST8PDT alone); "IST" is India's, Ireland's and Israel's."""
    with pytest.raises(InvalidScheduleError, match=r"Did you mean America/Los_Angeles"):
        parse_timezone("PST")
    assert timezone_choices("cest")[:2] == ["Europe/Berlin", "Europe/Paris"]
    assert timezone_choices("IST")[:3] == ["Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"]
    assert parse_timezone("EST") == "EST"  # an IANA name (a fixed offset) stays one


def test_timezone_choices_rank_and_limit() -> None:
    """Autocomplete: city-name matches included, best first, never more than Discord's 25."""
    assert timezone_choices("berlin")[0] == "Europe/Berlin"
    assert timezone_choices("new y")[0] == "America/New_York"
    assert timezone_choices("york")[0] == "America/New_York"
    assert len(timezone_choices("a")) == AUTOCOMPLETE_LIMIT
    assert len(timezone_choices("")) <= AUTOCOMPLETE_LIMIT
    assert "UTC" in timezone_choices("")
    assert timezone_choices("zzzz-not-a-zone") == []
    for name in timezone_choices("america"):
        assert parse_timezone(name) == name


def test_popular_zones_come_first_among_prefix_matches() -> None:
    """Typing "europe/" offers the zones most people pick before the obscure ones."""
    choices = timezone_choices("europe/")
    assert choices.index("Europe/Berlin") < choices.index("Europe/Andorra")
    assert choices.index("Europe/London") < choices.index("Europe/Athens")
    assert all(name.startswith("Europe/") for name in choices)


def test_frequency_weekday_count_topics() -> None:
    """The other options validate with clear errors."""
    assert parse_frequency("Weekdays") == "weekdays"
    with pytest.raises(InvalidScheduleError, match="daily, weekdays, weekly"):
        parse_frequency("hourly")
    assert parse_weekday("fri") == 4
    assert parse_weekday(6) == 6
    with pytest.raises(InvalidScheduleError):
        parse_weekday("t")  # tuesday or thursday?
    assert validate_count(10) == 10
    with pytest.raises(InvalidScheduleError, match="between 1 and 10"):
        validate_count(11)
    with pytest.raises(InvalidScheduleError):
        validate_count(0)
    assert parse_topics("kv cache,  LLM efficiency ; kv cache,,") == ("kv cache", "LLM efficiency")
    assert parse_topics(None) == ()
    with pytest.raises(InvalidScheduleError):
        parse_topics("x" * 101)


def test_make_schedule_keeps_unset_fields_from_base() -> None:
    """Changing one option of an existing schedule keeps the others."""
    base = make_schedule(
        time_local="07:15", timezone="Asia/Tokyo", frequency="weekly", weekday="wed", count=3
    )
    changed = make_schedule(count=8, base=base)
    assert changed == Schedule("07:15", "Asia/Tokyo", "weekly", 2, 8)
    with pytest.raises(InvalidScheduleError):
        make_schedule(timezone="Nowhere/Land", base=base)


# ---- delivery times ----------------------------------------------------------------------------


def test_next_delivery_is_in_the_subscribers_zone() -> None:
    """09:00 Europe/Berlin in winter is 08:00 UTC; after it passes, the next is tomorrow."""
    schedule = make_schedule(time_local="09:00", timezone="Europe/Berlin")
    first = next_delivery(schedule, utc(2026, 11, 30, 7, 0))
    assert first.due_utc == utc(2026, 11, 30, 8, 0)
    assert first.key == "2026-11-30"
    assert first.due_at.tzinfo == BERLIN
    second = next_delivery(schedule, utc(2026, 11, 30, 8, 0))  # strictly after now
    assert second.due_utc == utc(2026, 12, 1, 8, 0)


def test_period_key_is_the_local_date_not_the_utc_date() -> None:
    """In Auckland, 07:00 local on 1 Dec is still 30 Nov in UTC; the period is 1 Dec."""
    schedule = make_schedule(time_local="07:00", timezone="Pacific/Auckland")
    period = next_delivery(schedule, utc(2026, 11, 30, 12, 0))
    assert period.key == "2026-12-01"
    assert period.due_utc == utc(2026, 11, 30, 18, 0)


def test_dst_keeps_local_wall_clock_time() -> None:
    """Across the March change, 09:00 Berlin stays 09:00 local (08:00 UTC before, 07:00 after)."""
    schedule = make_schedule(time_local="09:00", timezone="Europe/Berlin")
    saturday = next_delivery(schedule, utc(2026, 3, 28, 0, 0))
    sunday = next_delivery(schedule, saturday.due_at)
    assert saturday.due_utc == utc(2026, 3, 28, 8, 0)
    assert sunday.due_utc == utc(2026, 3, 29, 7, 0)
    assert sunday.due_at.hour == 9
    # New York changes on another date; its 09:00 stays 09:00 there too.
    ny = make_schedule(time_local="09:00", timezone="America/New_York")
    assert next_delivery(ny, utc(2026, 3, 7, 0)).due_utc == utc(2026, 3, 7, 14, 0)
    assert next_delivery(ny, utc(2026, 3, 8, 0)).due_utc == utc(2026, 3, 8, 13, 0)


def test_nonexistent_local_time_is_sent_when_the_clock_jumps_past_it() -> None:
    """02:30 does not exist in Berlin on 29 March 2026: that day's digest goes at 03:30 local, once."""
    schedule = make_schedule(time_local="02:30", timezone="Europe/Berlin")
    period = occurrence(schedule, date(2026, 3, 29))
    assert period.due_utc == utc(2026, 3, 29, 1, 30)
    assert (period.due_at.hour, period.due_at.minute) == (3, 30)
    following = next_delivery(schedule, period.due_at)
    assert following.key == "2026-03-30"
    assert following.due_utc == utc(2026, 3, 30, 0, 30)
    # "now" given as the (nonexistent) local wall time in the same zone still compares by instant.
    assert latest_due(schedule, datetime(2026, 3, 29, 2, 30, tzinfo=BERLIN)).key == "2026-03-29"
    assert latest_due(schedule, datetime(2026, 3, 29, 3, 29, tzinfo=BERLIN)).key == "2026-03-28"


def test_ambiguous_local_time_is_sent_once_at_its_first_occurrence() -> None:
    """02:30 happens twice in Berlin on 25 Oct 2026: one period, due at the first 02:30 (CEST)."""
    schedule = make_schedule(time_local="02:30", timezone="Europe/Berlin")
    first = next_delivery(schedule, utc(2026, 10, 24, 12, 0))
    assert first.key == "2026-10-25"
    assert first.due_utc == utc(2026, 10, 25, 0, 30)
    # At the second 02:30 (CET) the latest due period is still the same one: nothing new to send.
    assert latest_due(schedule, utc(2026, 10, 25, 1, 30)).key == "2026-10-25"
    assert next_delivery(schedule, utc(2026, 10, 25, 0, 30)).key == "2026-10-26"


def test_weekdays_and_weekly() -> None:
    """Weekdays skip Saturday and Sunday (local); weekly runs on its weekday only."""
    weekdays = make_schedule(time_local="09:00", timezone="UTC", frequency="weekdays")
    friday_evening = utc(2026, 12, 4, 20, 0)  # a Friday
    assert next_delivery(weekdays, friday_evening).key == "2026-12-07"  # Monday
    weekly = make_schedule(time_local="18:00", timezone="UTC", frequency="weekly", weekday="wednesday")
    assert next_delivery(weekly, utc(2026, 11, 30, 0, 0)).key == "2026-12-02"
    assert next_delivery(weekly, utc(2026, 12, 2, 18, 0)).key == "2026-12-09"
    assert latest_due(weekly, utc(2026, 12, 8, 0, 0)).key == "2026-12-02"


def test_weekdays_follow_the_local_date() -> None:
    """Monday 08:00 in Tokyo is Sunday 23:00 UTC: a weekday digest is due then."""
    schedule = make_schedule(time_local="08:00", timezone="Asia/Tokyo", frequency="weekdays")
    period = next_delivery(schedule, utc(2026, 12, 6, 12, 0))  # Sunday noon UTC
    assert period.key == "2026-12-07"
    assert period.due_utc == utc(2026, 12, 6, 23, 0)


def test_due_within_grace_window() -> None:
    """A missed period counts within the grace window, not after it, and not before the subscription."""
    schedule = make_schedule(time_local="09:00", timezone="UTC")
    grace = timedelta(hours=6)
    long_ago = utc(2026, 1, 1)
    assert check_due(schedule, utc(2026, 11, 30, 14, 59), grace, set_up_at=long_ago).deliver
    too_late = check_due(schedule, utc(2026, 11, 30, 15, 1), grace, set_up_at=long_ago)
    assert not too_late.deliver
    assert too_late.too_late
    assert too_late.late == timedelta(hours=6, minutes=1)
    set_up_after = check_due(schedule, utc(2026, 11, 30, 10), grace, set_up_at=utc(2026, 11, 30, 9, 30))
    assert not set_up_after.deliver
    assert set_up_after.before_setup
    latest = check_due(schedule, utc(2026, 11, 30, 10), grace, set_up_at=utc(2026, 11, 29, 12))
    assert latest.deliver
    assert latest.period.key == "2026-11-30"


def test_naive_now_is_refused() -> None:
    """Every time is aware: a naive datetime is a programming error, caught early."""
    with pytest.raises(ValueError, match="aware"):
        next_delivery(Schedule(), datetime(2026, 1, 1, 9, 0))


def test_describe_and_format_local() -> None:
    """Texts the user reads name the zone and the local time."""
    schedule = make_schedule(time_local="09:00", timezone="Europe/Berlin", frequency="weekdays")
    assert schedule.describe() == "weekdays (Mon–Fri) at 09:00 Europe/Berlin"
    assert format_local(utc(2026, 11, 30, 8, 0), "Europe/Berlin") == "Monday 30 November 2026 at 09:00 CET"


# ---- digests due in the same minute ---------------------------------------------------------------


def test_digests_due_together_keep_their_minute_while_discords_limits_allow() -> None:
    """A minute's worth of requests (2,700, as the bot's pacer sends) goes out at the minute chosen: 200
    five-paper DM digests (1,200 requests) all do; of 1,000 the first 450 do, the next 450 a minute
    later, the rest two; those set up first keep their minute; never more than ``most``."""

    def due(n: int, calls: int = digest_calls(5, channel=False)) -> list[DueDigest]:
        return [DueDigest(i, calls, (f"2026-11-30T06:{i // 60 % 60:02d}:{i % 60:02d}", i)) for i in range(n)]

    assert digest_calls(5, channel=False) == 6
    assert digest_calls(5, channel=True) == 21, "a feed's papers get the bot's three reactions each"
    assert set(moved_later(due(200), 2700, timedelta(minutes=60)).values()) == {timedelta(0)}
    moved = moved_later(due(1000), 2700, timedelta(minutes=60))
    minutes = [moved[i] // timedelta(minutes=1) for i in range(1000)]
    assert minutes == [0] * 450 + [1] * 450 + [2] * 100
    assert set(moved_later(due(1000), 2700, timedelta(minutes=1)).values()) == {
        timedelta(0),
        timedelta(minutes=1),
    }
    assert set(moved_later(due(1000), 2700, timedelta(0)).values()) == {timedelta(0)}, "0: none moves"
    assert set(moved_later(due(1000), 0, timedelta(minutes=60)).values()) == {timedelta(0)}
    shuffled = list(reversed(due(1000)))
    assert moved_later(shuffled, 2700, timedelta(minutes=60)) == moved, "by when they were set up"


def test_cron_fields_with_an_offset_cross_midnight_onto_the_next_day() -> None:
    weekdays = make_schedule(time_local="23:55", frequency="weekdays")
    assert weekdays.cron_fields(timedelta(minutes=3, seconds=7)) == {
        "day_of_week": "mon,tue,wed,thu,fri",
        "hour": "23",
        "minute": "58",
        "second": "7",
    }
    assert weekdays.cron_fields(timedelta(minutes=10)) == {
        "day_of_week": "tue,wed,thu,fri,sat",
        "hour": "0",
        "minute": "5",
        "second": "0",
    }
    sunday = make_schedule(time_local="23:59", frequency="weekly", weekday="sunday")
    assert sunday.cron_fields(timedelta(minutes=2))["day_of_week"] == "mon"
    assert make_schedule(time_local="09:00").cron_fields() == {
        "day_of_week": "*",
        "hour": "9",
        "minute": "0",
        "second": "0",
    }
