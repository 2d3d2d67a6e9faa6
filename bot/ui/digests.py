"""How digests and channel feeds are asked for and described in Discord: the option types and one line
per subscription with when it comes next (the timezone autocomplete is `bot.exts._autocomplete`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from bot.services.digests.subscriptions import subscription_schedule
from bot.services.digests.timing import format_local
from storage.models import Subscription

if TYPE_CHECKING:
    pass

Frequency = Literal["daily", "weekdays", "weekly"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def discord_time(moment_utc_timestamp: float) -> str:
    """Discord renders <t:…:R> as "in 3 hours" in the reader's own client."""
    return f"<t:{int(moment_utc_timestamp)}:R>"


def describe_subscription(sub: Subscription, arrives: datetime) -> str:
    """The schedule, count and topics, then when the next one ``arrives`` (in the subscriber's zone and
    relative), and why that is later than the time chosen when the deliveries of that time are spread."""
    schedule = subscription_schedule(sub)
    topics = ", ".join(sub.topics) if sub.topics else "your interests and reactions"
    next_at = format_local(arrives, sub.timezone)
    relative = discord_time(arrives.timestamp())
    text = (
        f"**{schedule.describe()}**, {sub.count} paper{'s' if sub.count != 1 else ''} on *{topics}*.\n"
        f"Next digest: **{next_at}** ({relative})."
    )
    local = arrives.astimezone(schedule.zone)
    if f"{local:%H:%M}" != sub.time_local:
        text += (
            f" Everyone's {sub.time_local} digests go out over the minutes after it, so they don't all "
            f"arrive at once: yours comes at {local:%H:%M}."
        )
    return text
