"""Digest schedules: validate what a user typed and compute delivery times in *their* timezone.

A schedule is a local wall-clock time (HH:MM), an IANA timezone, a frequency (daily, weekdays
Monday–Friday, or weekly on one weekday) and a paper count. Every computation happens in the
subscriber's zone, so a DST change keeps the local time (09:00 stays 09:00):

* a local time that does not exist on a spring-forward day (02:30 in Europe/Berlin on the last
  Sunday of March) is delivered at the same instant the clock jumps past it (03:30 local) — the
  fold=0 reading of PEP 495, which is also where APScheduler's CronTrigger fires;
* a local time that happens twice on a fall-back day is delivered once, at its first occurrence;
  CronTrigger fires at both, and the second fire finds the period already claimed.

A period is one delivery of one subscription, keyed by its local date (``YYYY-MM-DD``): the key
the database claims before anything is sent.

Nothing here imports discord or APScheduler; every function takes ``now`` explicitly (an aware
datetime) or a :data:`Clock`, so tests are deterministic.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from bot.errors import InvalidScheduleError
from bot.services.search.snippets import echo

FREQUENCIES: Final = ("daily", "weekdays", "weekly")
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CRON_DAYS: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MIN_COUNT: Final = 1
MAX_COUNT: Final = 10
DEFAULT_TIME: Final = "09:00"
DEFAULT_TIMEZONE: Final = "UTC"
DEFAULT_FREQUENCY: Final = "daily"
DEFAULT_COUNT: Final = 5
AUTOCOMPLETE_LIMIT: Final = 25

#: Shown when the timezone box is still empty: the zones most people pick.
POPULAR_TIMEZONES: Final = (
    "UTC",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Paris",
    "Europe/Madrid",
    "Europe/Amsterdam",
    "Europe/Zurich",
    "Europe/Stockholm",
    "Europe/Warsaw",
    "Europe/Moscow",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "America/Toronto",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Shanghai",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Jerusalem",
    "Australia/Sydney",
    "Pacific/Auckland",
    "Africa/Johannesburg",
)

_TIME_RE = re.compile(r"^(\d{1,2})(?:[:.h](\d{2}))?\s*([ap]\.?m\.?)?$", re.IGNORECASE)
_TIME_HELP = "Use HH:MM in 24-hour form, e.g. 09:00 or 18:30 (9am and 6:30pm work too)."


# --------------------------------------------------------------------------------------------
# Parsing and validation (each raises InvalidScheduleError with a message a user can act on)


def parse_time(text: str) -> str:
    """A local time of day, normalised to ``HH:MM``."""
    match = _TIME_RE.match(text.strip())
    if match is None:
        raise InvalidScheduleError(f"“{echo(text, 40)}” is not a time. {_TIME_HELP}")
    hours, minutes = int(match[1]), int(match[2] or 0)
    meridiem = (match[3] or "").replace(".", "").lower()
    if meridiem:
        if not 1 <= hours <= 12:
            raise InvalidScheduleError(f"“{echo(text, 40)}” is not a time. {_TIME_HELP}")
        hours = hours % 12 + (12 if meridiem == "pm" else 0)
    elif match[2] is None:
        # A bare number ("9") is too easy to misread (9 minutes? 9 pm?): insist on a clear form.
        raise InvalidScheduleError(f"“{echo(text, 40)}” is not a time. {_TIME_HELP}")
    if not (0 <= hours <= 23 and 0 <= minutes <= 59):
        raise InvalidScheduleError(f"“{echo(text, 40)}” is not a time of day. {_TIME_HELP}")
    return f"{hours:02d}:{minutes:02d}"


@functools.cache
def _zone_names() -> tuple[str, ...]:
    """Every IANA zone name this machine (or the tzdata package) knows, sorted."""
    skip = {"Factory", "localtime", "posixrules"}
    return tuple(sorted(name for name in zoneinfo.available_timezones() if name not in skip))


@functools.cache
def _zone_lookup() -> dict[str, str]:
    """Case- and separator-insensitive spelling → canonical name."""
    return {_squash(name): name for name in _zone_names()}


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]+", "_", text.strip()).casefold()


def parse_timezone(text: str) -> str:
    """An IANA timezone name, returned in its canonical spelling ("europe/berlin" → "Europe/Berlin")."""
    name = _zone_lookup().get(_squash(text))
    if name is None:
        suggestions = timezone_choices(text, limit=3) if text.strip() else []
        hint = f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""
        raise InvalidScheduleError(
            f"“{echo(text, 60)}” is not a timezone I know.{hint} Use an IANA name such as "
            "Europe/Berlin or America/New_York (start typing and pick one from the list)."
        )
    return name


#: What people type for a zone that is no IANA name ("PST", "CEST"): the zones it usually means, offered
#: first, never taken silently (an abbreviation names an offset, a place keeps its summer time; "IST" is
#: India's and Ireland's). EST, MST, HST, CET and EET are also IANA names, of fixed offsets: they parse.
ABBREVIATIONS: Final[dict[str, tuple[str, ...]]] = {
    "pst": ("America/Los_Angeles",),
    "pdt": ("America/Los_Angeles",),
    "pt": ("America/Los_Angeles",),
    "mdt": ("America/Denver",),
    "mt": ("America/Denver",),
    "cst": ("America/Chicago", "Asia/Shanghai"),
    "cdt": ("America/Chicago",),
    "ct": ("America/Chicago",),
    "edt": ("America/New_York",),
    "et": ("America/New_York",),
    "bst": ("Europe/London",),
    "cest": ("Europe/Berlin", "Europe/Paris"),
    "eest": ("Europe/Athens", "Europe/Helsinki"),
    "ist": ("Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"),
    "jst": ("Asia/Tokyo",),
    "kst": ("Asia/Seoul",),
    "sgt": ("Asia/Singapore",),
    "hkt": ("Asia/Hong_Kong",),
    "aest": ("Australia/Sydney", "Australia/Brisbane"),
    "aedt": ("Australia/Sydney",),
    "nzst": ("Pacific/Auckland",),
    "nzdt": ("Pacific/Auckland",),
    "brt": ("America/Sao_Paulo",),
}


def timezone_choices(current: str, *, limit: int = AUTOCOMPLETE_LIMIT) -> list[str]:
    """Zone names matching what the user typed so far, best first (Discord shows at most 25).

    Order: the zones an abbreviation usually means ("pst" → America/Los_Angeles, :data:`ABBREVIATIONS`),
    then the whole name starts with the text, then a part of it does ("berlin" → Europe/Berlin,
    "york" → America/New_York), then it merely contains the text. Empty text lists popular zones.
    """
    limit = max(0, min(limit, AUTOCOMPLETE_LIMIT))
    needle = _squash(current)
    if not needle:
        return list(POPULAR_TIMEZONES[:limit])
    starts: list[str] = []
    part_starts: list[str] = []
    contains: list[str] = []
    for name in _zone_names():
        squashed = _squash(name)
        if squashed.startswith(needle):
            starts.append(name)
        elif any(part.startswith(needle) for part in re.split(r"[/_]", squashed)):
            part_starts.append(name)
        elif needle in squashed:
            contains.append(name)
    popular = set(POPULAR_TIMEZONES)
    meant = list(ABBREVIATIONS.get(needle, ()))
    ranked = meant + [
        name
        for group in (starts, part_starts, contains)
        for name in sorted(group, key=lambda n: (n not in popular, n.count("/"), n))
        if name not in meant
    ]
    return ranked[:limit]


def parse_frequency(text: str) -> str:
    value = text.strip().casefold()
    aliases = {"weekday": "weekdays", "workdays": "weekdays", "every day": "daily", "week": "weekly"}
    value = aliases.get(value, value)
    if value not in FREQUENCIES:
        raise InvalidScheduleError(
            f"Frequency must be one of {', '.join(FREQUENCIES)}, not “{echo(text, 40)}”."
        )
    return value


def parse_weekday(value: str | int) -> int:
    """0 = Monday … 6 = Sunday; accepts a number or a (prefix of a) day name."""
    if isinstance(value, int):
        if 0 <= value <= 6:
            return value
    else:
        text = value.strip().casefold()
        matches = [i for i, day in enumerate(WEEKDAYS) if len(text) >= 2 and day.startswith(text)]
        if len(matches) == 1:
            return matches[0]
    raise InvalidScheduleError(f"“{echo(str(value), 40)}” is not a day of the week (monday … sunday).")


def validate_count(count: int) -> int:
    if not MIN_COUNT <= count <= MAX_COUNT:
        raise InvalidScheduleError(f"Count must be between {MIN_COUNT} and {MAX_COUNT} papers, not {count}.")
    return count


def parse_topics(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Topics typed as one comma- or semicolon-separated string (or already a list); de-duplicated."""
    if text is None:
        return ()
    parts = re.split(r"[,;\n]", text) if isinstance(text, str) else list(text)
    seen: dict[str, str] = {}
    for part in parts:
        topic = " ".join(part.split())
        if not topic:
            continue
        if len(topic) > 100:
            raise InvalidScheduleError(
                f"A topic can be at most 100 characters (“{echo(topic, 30)}” is longer)."
            )
        seen.setdefault(topic.casefold(), topic)
    if len(seen) > 20:
        raise InvalidScheduleError("At most 20 topics per digest; separate them with commas.")
    return tuple(seen.values())


# --------------------------------------------------------------------------------------------
# Schedules and periods


@dataclass(frozen=True, slots=True)
class Schedule:
    """A validated delivery schedule (build it with :func:`make_schedule`)."""

    time_local: str = DEFAULT_TIME
    timezone: str = DEFAULT_TIMEZONE
    frequency: str = DEFAULT_FREQUENCY
    weekday: int = 0
    count: int = DEFAULT_COUNT

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def hour(self) -> int:
        return int(self.time_local[:2])

    @property
    def minute(self) -> int:
        return int(self.time_local[3:])

    def runs_on(self, day: date) -> bool:
        if self.frequency == "weekdays":
            return day.weekday() < 5
        if self.frequency == "weekly":
            return day.weekday() == self.weekday
        return True

    def cron_fields(self, offset: timedelta = timedelta(0)) -> dict[str, str]:
        """Keyword arguments for APScheduler's CronTrigger (plus ``timezone=self.zone``): the schedule's
        time, ``offset`` later (the next day's when the offset crosses midnight)."""
        seconds = self.hour * 3600 + self.minute * 60 + int(offset.total_seconds())
        days_later, seconds = divmod(seconds, 24 * 3600)
        if self.frequency == "weekdays":
            days = ",".join(_CRON_DAYS[(day + days_later) % 7] for day in range(5))
        elif self.frequency == "weekly":
            days = _CRON_DAYS[(self.weekday + days_later) % 7]
        else:
            days = "*"
        hour, rest = divmod(seconds, 3600)
        return {"day_of_week": days, "hour": str(hour), "minute": str(rest // 60), "second": str(rest % 60)}

    def describe(self) -> str:
        """ "weekdays at 09:00 Europe/Berlin", "weekly on Monday at 18:30 UTC"."""
        when = {"daily": "daily", "weekdays": "weekdays (Mon–Fri)"}.get(
            self.frequency, f"weekly on {WEEKDAYS[self.weekday].capitalize()}"
        )
        return f"{when} at {self.time_local} {self.timezone}"


def make_schedule(
    *,
    time_local: str | None = None,
    timezone: str | None = None,
    frequency: str | None = None,
    weekday: str | int | None = None,
    count: int | None = None,
    base: Schedule | None = None,
) -> Schedule:
    """Validate every given field; missing ones come from ``base`` (an existing schedule) or defaults.

    Raises InvalidScheduleError before anything is stored.
    """
    schedule = base or Schedule()
    result = Schedule(
        time_local=schedule.time_local if time_local is None else parse_time(time_local),
        timezone=schedule.timezone if timezone is None else parse_timezone(timezone),
        frequency=schedule.frequency if frequency is None else parse_frequency(frequency),
        weekday=schedule.weekday if weekday is None else parse_weekday(weekday),
        count=schedule.count if count is None else validate_count(count),
    )
    # Re-validate the stored fields too (a hand-edited row must not crash the scheduler later).
    parse_time(result.time_local)
    parse_timezone(result.timezone)
    parse_frequency(result.frequency)
    parse_weekday(result.weekday)
    validate_count(result.count)
    return result


@dataclass(frozen=True, slots=True)
class Period:
    """One delivery of a schedule: the local date it belongs to and the instant it is due."""

    key: str  # local date, YYYY-MM-DD
    local_date: date
    due_at: datetime  # aware, in the schedule's zone

    @property
    def due_utc(self) -> datetime:
        return self.due_at.astimezone(UTC)


def period_key(local_date: date) -> str:
    return local_date.isoformat()


def occurrence(schedule: Schedule, local_date: date) -> Period:
    """When the schedule's wall-clock time happens on ``local_date`` (DST-safe; see module doc)."""
    zone = schedule.zone
    wall = datetime.combine(local_date, time(schedule.hour, schedule.minute), tzinfo=zone)  # fold=0
    # Round-trip through UTC: a time in a spring-forward gap becomes the real instant after the jump
    # (02:30 → 03:30); an ambiguous fall-back time keeps its first (fold=0) reading.
    due = wall.astimezone(UTC).astimezone(zone)
    return Period(key=period_key(local_date), local_date=local_date, due_at=due)


def _periods_from(schedule: Schedule, start: date, step: int) -> Iterator[Period]:
    day = start
    for _ in range(16):  # every frequency runs at least once a week
        if schedule.runs_on(day):
            yield occurrence(schedule, day)
        day += timedelta(days=step)


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime")


def next_delivery(schedule: Schedule, now: datetime) -> Period:
    """The first delivery strictly after ``now``."""
    _require_aware(now)
    # Compare in UTC: Python compares two datetimes sharing a tzinfo by wall time, ignoring DST.
    now = now.astimezone(UTC)
    start = now.astimezone(schedule.zone).date() - timedelta(days=1)
    for period in _periods_from(schedule, start, 1):
        if period.due_utc > now:
            return period
    raise AssertionError("unreachable: a schedule runs at least weekly")  # pragma: no cover


def latest_due(schedule: Schedule, now: datetime) -> Period:
    """The most recent delivery at or before ``now`` (the one a fire at ``now`` delivers)."""
    _require_aware(now)
    now = now.astimezone(UTC)
    start = now.astimezone(schedule.zone).date() + timedelta(days=1)
    for period in _periods_from(schedule, start, -1):
        if period.due_utc <= now:
            return period
    raise AssertionError("unreachable: a schedule runs at least weekly")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class DueCheck:
    """Whether the most recent period of a schedule is still to be delivered at some moment.

    The one rule for a period that fell due (a job firing late, a period missed while the bot was
    down): it is delivered when the subscription was set up (in this form) before it fell due and it
    fell due at most ``grace`` ago.
    """

    period: Period
    #: how long ago the period fell due
    late: timedelta
    #: the subscription was set up, or changed, after this period fell due: it is not this one's
    before_setup: bool
    #: fell due longer than the grace window ago
    too_late: bool

    @property
    def deliver(self) -> bool:
        return not self.before_setup and not self.too_late


def check_due(schedule: Schedule, now: datetime, grace: timedelta, *, set_up_at: datetime) -> DueCheck:
    """The most recent period at or before ``now``, and whether to deliver it (see :class:`DueCheck`).

    Subscribing at 10:00 for 09:00 does not mean "send today's": ``set_up_at`` (when the schedule was
    set) rules out a period due before it.
    """
    period = latest_due(schedule, now)
    late = now.astimezone(UTC) - period.due_utc
    return DueCheck(
        period=period,
        late=late,
        before_setup=period.due_utc < set_up_at.astimezone(UTC),
        too_late=late > grace,
    )


# --------------------------------------------------------------------------------------------
# Digests due in the same minute: on time while Discord's limits allow, the rest a minute or more later


def digest_calls(count: int, *, channel: bool) -> int:
    """The requests one digest of ``count`` papers costs under Discord's global limit: its header and a
    message per paper, and in a channel the bot's 👍 👎 🔖 under each paper."""
    return 1 + count * (4 if channel else 1)


@dataclass(frozen=True, slots=True)
class DueDigest:
    """One digest due at some minute, as :func:`moved_later` weighs it."""

    subscription_id: int
    #: its requests (:func:`digest_calls`)
    calls: int
    #: who goes first: the digests set up (or last changed) earlier
    order: tuple[str, int]


def moved_later(due: Sequence[DueDigest], calls_per_minute: int, most: timedelta) -> dict[int, timedelta]:
    """How much later than its minute each digest due in that same minute goes out: not at all while
    the requests of those before it and its own fit in what Discord lets the bot send in a minute
    (``calls_per_minute``); the others a whole minute later for each minute's worth of requests before
    them, at most ``most``. The digests set up first keep their minute, so a new subscription never moves
    one that was told it comes on time."""
    most_minutes = int(most.total_seconds() // 60)
    moved: dict[int, timedelta] = {}
    before = 0
    for digest in sorted(due, key=lambda d: d.order):
        minutes = 0
        if calls_per_minute > 0 and most_minutes > 0:
            minutes = min((before + digest.calls - 1) // calls_per_minute, most_minutes)
        moved[digest.subscription_id] = timedelta(minutes=minutes)
        before += digest.calls
    return moved


def format_local(moment: datetime, zone: str) -> str:
    """ "Monday 30 November 2026 at 09:00 CET" in the given zone."""
    local = moment.astimezone(ZoneInfo(zone))
    return f"{local:%A} {local.day} {local:%B %Y} at {local:%H:%M} {local.tzname() or zone}"
