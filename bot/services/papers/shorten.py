"""Text shortened to fit a limit (Discord's, or a line's), always at a word's end, never inside one:
"…for KV Cache…", not "…for KV Cac…".

:func:`cut` is for plain text; :func:`cut_markdown` for Discord markdown, which it keeps whole: it never
cuts inside a link (``[title](url)``) or an escape (``\\*``), and closes the bold and italics it cut
through (``**kv cache** and **quant…**`` ends ``**quant**…``). Only a single word longer than the
limit is cut inside (there is no word's end to cut at).
"""

from __future__ import annotations

import re
from typing import Final

ELLIPSIS: Final = "…"
#: what a cut leaves off the end before its ellipsis (never a word's letters)
_LINK: Final = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TRAILING: Final = " \t\n,;:.-·–—"


def cut(text: str, limit: int, *, ellipsis: str = ELLIPSIS) -> str:
    """``text`` (stripped) when it fits ``limit`` characters, else its words up to the last one that
    fits, then ``ellipsis``."""
    text = text.strip()
    if len(text) <= limit:
        return text
    room = limit - len(ellipsis)
    if room <= 0:
        return ellipsis[:limit]
    end = _last_space(text, room)
    if end is None:  # one word longer than the limit
        return text[:room] + ellipsis
    return text[:end].rstrip(_TRAILING) + ellipsis


def one_line(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed to single spaces, cut as :func:`cut` does."""
    return cut(" ".join(text.split()), limit)


def _last_space(text: str, room: int) -> int | None:
    """The position of the last whitespace at or before ``room`` (a word ends right before it) that
    leaves some text before it, or None."""
    for at in range(min(room, len(text) - 1), 0, -1):
        if text[at].isspace() and text[:at].rstrip(_TRAILING):
            return at
    return None


def cut_markdown(text: str, limit: int, *, ellipsis: str = ELLIPSIS) -> str:
    """Markdown ``text`` (stripped) when it fits ``limit`` characters, else cut at the last word's end
    that fits outside any link, with the bold and italics open there closed (see the module doc)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    best: tuple[int, str] | None = None
    bold = italic = in_label = in_url = False
    at = 0
    while at < len(text) and at <= limit:
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if text.startswith("**", at):
            bold = not bold
            at += 2
            continue
        if char == "*":
            italic = not italic
        elif char == "[" and not in_url:
            in_label = True
        elif char == "]" and in_label:
            in_label = False
            if text.startswith("(", at + 1):
                in_url = True
                at += 2
                continue
        elif char == ")" and in_url:
            in_url = False
        elif char.isspace() and not (in_label or in_url):
            kept = text[:at].rstrip(_TRAILING)
            closers = ("*" if italic else "") + ("**" if bold else "")
            if kept and len(kept) + len(closers) + len(ellipsis) <= limit:
                best = (len(kept), closers)
        at += 1
    if best is None:  # no word's end fits: the text without its markup, cut plainly
        return cut(_unmarked(text), limit, ellipsis=ellipsis)
    end, closers = best
    kept = text[:end]
    if closers and kept.endswith(closers):  # "**bold**" would close an empty run: drop the opener
        return kept[: -len(closers)].rstrip(_TRAILING) + ellipsis
    return kept + closers + ellipsis


def _unmarked(text: str) -> str:
    """``text`` without its links' markup (their labels kept), bold or italics."""
    return _LINK.sub(r"\1", text).replace("**", "").replace("*", "")
