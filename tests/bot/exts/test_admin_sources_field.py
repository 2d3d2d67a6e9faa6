"""`/paperadmin stats`'s sources field: each source's line, within Discord's 1,024 characters a field
value may hold, however many sources there are."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.exts.admin import _sources_value
from bot.ui.embeds import FIELD_VALUE_LIMIT
from storage.models import SourceFetch


def fetch(n: int, *, error: str | None = None, cursor: str | None = None) -> SourceFetch:
    return SourceFetch(
        source=f"rss:https://journals.example.org/feed/{n}/current.rss",
        cursor=cursor,
        fetched_until="2026-12-03",
        last_fetch_at="2026-12-03T06:00:05+00:00",
        last_records=1234,
        last_added=56,
        total_records=98765,
        total_added=4321,
        last_error=error,
        last_error_at="2026-12-04T06:00:05+00:00" if error else None,
    )


def test_a_source_line_says_when_what_and_its_failure() -> None:
    value = _sources_value([fetch(1, error="cannot reach journals.example.org: offline", cursor="{}")])
    stamp = int(datetime(2026, 12, 3, 6, 0, 5, tzinfo=UTC).timestamp())
    assert value.startswith(
        f"`rss:https://journals.example.org/feed/1/current.rss` <t:{stamp}:f> (<t:{stamp}:R>)"
    )
    assert "1,234 read, 56 new; 98,765 read, 4,321 new in all" in value
    assert "(an interrupted fetch resumes next run)" in value
    assert value.endswith("last attempt failed: cannot reach journals.example.org: offline")


def test_many_sources_fit_in_one_field_with_how_many_more() -> None:
    value = _sources_value([fetch(n, error="HTTP 404: no feed there " * 5) for n in range(40)])
    assert len(value) <= FIELD_VALUE_LIMIT
    shown = value.count("`rss:")
    assert value.endswith(f"…and {40 - shown} more (`paperbot stats` lists them all)")
