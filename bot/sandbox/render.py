"""Sandbox messages as readable terminal text (the `paperbot sandbox` console, test failure output)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from bot.sandbox.emulator.state import SandboxMessage, iter_components

JSON = dict[str, Any]
WIDTH = 100

#: Discord's timestamp markup, ``<t:UNIX>`` or ``<t:UNIX:STYLE>``, which its clients show as a time in
#: the reader's own zone (message formatting, timestamp styles t T d D f F R; f when none is given)
_TIMESTAMP = re.compile(r"<t:(-?\d{1,13})(?::([tTdDfFR]))?>")
_STYLES = {
    "t": "%H:%M",
    "T": "%H:%M:%S",
    "d": "%d/%m/%Y",
    "D": "%-d %B %Y",
    "f": "%-d %B %Y %H:%M",
    "F": "%A, %-d %B %Y %H:%M",
}


def readable_times(text: str, *, now: datetime | None = None, zone: tzinfo | None = None) -> str:
    """``text`` with each Discord timestamp as a Discord client shows it (in ``zone``, the machine's own
    by default; ``R`` relative to ``now``: "in 14 hours", "3 minutes ago")."""

    def shown(match: re.Match[str]) -> str:
        try:
            when = datetime.fromtimestamp(int(match.group(1)), UTC)
        except (OverflowError, OSError, ValueError):
            return match.group(0)  # out of range: Discord shows it as typed, too
        style = match.group(2) or "f"
        if style == "R":
            return relative_time(when, now or datetime.now(UTC))
        return when.astimezone(zone).strftime(_STYLES[style])

    return _TIMESTAMP.sub(shown, text)


#: Discord's mention markup for a channel (``<#id>``) and a member (``<@id>``, ``<@!id>``), which its
#: clients show as the channel's or the member's name
_MENTION = re.compile(r"<(#|@!?)(\d{15,20})>")


def readable_mentions(text: str, names: Mapping[int, str]) -> str:
    """``text`` with each channel and member mention as a Discord client shows it ("#papers", "@bob"),
    its name from ``names`` (ids of channels and users); one it does not know stays as written."""

    def shown(match: re.Match[str]) -> str:
        name = names.get(int(match.group(2)))
        if name is None:
            return match.group(0)
        return ("#" if match.group(1) == "#" else "@") + name

    return _MENTION.sub(shown, text)


def relative_time(when: datetime, now: datetime) -> str:
    """How far ``when`` is from ``now`` in words, as Discord's ``R`` style says it."""
    seconds = (when - now).total_seconds()
    span = abs(seconds)
    steps = (
        (45, "a few seconds", None),
        (90, "a minute", None),
        (45 * 60, "{} minutes", 60),
        (90 * 60, "an hour", None),
        (22 * 3600, "{} hours", 3600),
        (36 * 3600, "a day", None),
        (26 * 86400, "{} days", 86400),
        (45 * 86400, "a month", None),
        (320 * 86400, "{} months", 30.4 * 86400),
        (548 * 86400, "a year", None),
        (float("inf"), "{} years", 365.25 * 86400),
    )
    words = next(
        text.format(round(span / unit)) if unit else text for limit, text, unit in steps if span < limit
    )
    return f"in {words}" if seconds >= 0 else f"{words} ago"


def button_text(button: JSON) -> str:
    emoji = (button.get("emoji") or {}).get("name") or ""
    label = button.get("label") or ""
    text = f"{emoji} {label}".strip() or button.get("custom_id", "?")
    if button.get("style") == 5:
        text += f" → {button.get('url')}"
    if button.get("disabled"):
        text += " (disabled)"
    return text


def render_message(
    message: SandboxMessage,
    *,
    number: int | None = None,
    viewer: str | None = None,
    names: Mapping[int, str] | None = None,
) -> str:
    """A message with its embeds, numbered buttons, selects, attachments and reactions (``names``: of
    the channels and users its mentions name)."""
    text = "\n".join(_message_lines(message, number, viewer))
    return readable_mentions(text, names) if names else text


def _message_lines(message: SandboxMessage, number: int | None, viewer: str | None) -> list[str]:
    where = message.channel.label()
    tags = []
    if message.ephemeral:
        tags.append(f"only {viewer} sees this" if viewer else "ephemeral")
    if message.edited_at is not None:
        tags.append("edited")
    if message.deleted:
        tags.append("deleted")
    head = f"#{number} " if number is not None else ""
    head += f"{message.author.username} in {where}"
    if tags:
        head += f" ({', '.join(tags)})"
    lines = [head]
    if message.loading:
        lines.append("  … thinking")
    if message.content:
        lines.extend(_wrap(message.content, "  "))
    for embed in message.embeds:
        lines.extend(_render_embed(embed))
    buttons = message.buttons
    if buttons:
        lines.append("  " + "   ".join(f"[{i}] {button_text(b)}" for i, b in enumerate(buttons, 1)))
    for select in message.selects:
        options = " | ".join(
            str(o.get("label")) + f" ({o.get('value')})" for o in select.get("options") or []
        )
        lines.append(f"  menu {select.get('custom_id')}: {select.get('placeholder') or ''} [{options}]")
    for component in iter_components(message.components):
        if component.get("type") == 10:  # components v2 text display
            lines.extend(_wrap(str(component.get("content", "")), "  "))
    for attachment in message.attachments:
        lines.append(f"  📎 {attachment.filename} ({_size(attachment.size)}) {attachment.url}")
    if message.reactions:
        lines.append("  " + "  ".join(f"{emoji} {len(users)}" for emoji, users in message.reactions.items()))
    return lines


def _render_embed(embed: JSON) -> list[str]:
    bar = "  ┃ "
    lines: list[str] = []
    if author := (embed.get("author") or {}).get("name"):
        lines.append(bar + author)
    if title := embed.get("title"):
        lines.append(bar + title + (f"  <{embed['url']}>" if embed.get("url") else ""))
    elif embed.get("url"):
        lines.append(bar + f"<{embed['url']}>")
    if description := embed.get("description"):
        lines.extend(_wrap(description, bar))
    for field in embed.get("fields") or []:
        name, value = field.get("name", ""), field.get("value", "")
        if "\n" in value or len(name) + len(value) > WIDTH - 10:
            lines.append(bar + f"▸ {name}")
            lines.extend(_wrap(value, bar + "  "))
        else:
            lines.append(bar + f"▸ {name}: {readable_times(value)}")
    if footer := (embed.get("footer") or {}).get("text"):
        lines.extend(_wrap(footer, bar + "— "))
    for media in ("image", "thumbnail"):
        if url := (embed.get(media) or {}).get("url"):
            lines.append(bar + f"[{media}: {url}]")
    return lines


def _wrap(text: str, prefix: str) -> list[str]:
    lines: list[str] = []
    for paragraph in readable_times(text).splitlines() or [""]:
        wrapped = textwrap.wrap(
            paragraph, width=WIDTH - len(prefix), break_long_words=False, break_on_hyphens=False
        )
        lines.extend(prefix + line for line in wrapped or [""])
    return lines


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def render_choices(choices: list[JSON]) -> str:
    if not choices:
        return "  (no suggestions)"
    return "\n".join(f"  {i}. {c.get('name')}   = {c.get('value')!r}" for i, c in enumerate(choices, 1))


def render_modal(modal: JSON) -> str:
    lines = [f"  ▣ {modal.get('title')} (modal {modal.get('custom_id')})"]
    for component in iter_components(modal.get("components") or []):
        if component.get("type") == 4:
            required = "" if component.get("required", True) is False else " (required)"
            label = component.get("label") or component.get("placeholder") or ""
            lines.append(f"    {component.get('custom_id')}: {label}{required}")
        elif component.get("type") == 18:
            lines.append(f"    {component.get('label')}")
    return "\n".join(lines)
