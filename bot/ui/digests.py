"""How digests and channel feeds are asked for and described in Discord: the option types and one line
per subscription with when it comes next (the timezone autocomplete is `bot.exts._autocomplete`)."""

from __future__ import annotations

from typing import Literal

from bot.services.digests.subscriptions import Arrival, subscription_schedule
from bot.services.digests.timing import format_local
from bot.services.search.snippets import echo
from bot.ui.format import counted
from storage.models import Subscription

Frequency = Literal["daily", "weekdays", "weekly"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def discord_time(moment_utc_timestamp: float) -> str:
    """Discord renders <t:…:R> as "in 3 hours" in the reader's own client."""
    return f"<t:{int(moment_utc_timestamp)}:R>"


def describe_subscription(sub: Subscription, arrival: Arrival) -> str:
    """The schedule, count and topics, then when the next one arrives (in the subscriber's zone and
    relative), and why, when that is later than the time chosen: more is due then than Discord allows."""
    arrives = arrival.at
    schedule = subscription_schedule(sub)
    topics = ", ".join(echo(topic) for topic in sub.topics) if sub.topics else "your interests and reactions"
    next_at = format_local(arrives, sub.timezone)
    relative = discord_time(arrives.timestamp())
    text = (
        f"**{schedule.describe()}**, {counted(sub.count, 'paper', 'papers')} on *{topics}*.\n"
        f"Next digest: **{next_at}** ({relative})."
    )
    if arrival.moved:
        local = arrives.astimezone(schedule.zone)
        text += (
            f" {arrival.due_together:,} digests are due at {sub.time_local}, more than Discord lets a bot send "
            f"in one minute, so the last ones go out in the minutes after it: yours comes at {local:%H:%M}."
        )
    return text
