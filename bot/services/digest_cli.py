"""`paperbot digest --user ID --dry-run`: show the digest a user would get now, from the terminal.

The dry run builds the digest exactly as the bot would (same subscription, topics, count, exclusions
and reasons) and prints it; it sends nothing and records nothing (no claimed period, no "shown" or
"sent" marks), so it can be run any number of times. Without --dry-run, `bot.digest_send` sends it.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

from bot.runtime import open_services
from bot.services.digest import DigestPlan, DigestService, subscription_schedule
from bot.services.schedule import format_local
from bot.settings import Settings
from storage.models import Paper


async def run_digest_dry_run(
    settings: Settings, *, user_id: int, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if user_id <= 0:
        print("paperbot digest: --user must be a Discord user id (a positive number)", file=err)
        return 2
    async with open_services(settings) as services:
        text = await render_dry_run(services.digest, user_id)
    print(text, file=out)
    return 0


async def render_dry_run(service: DigestService, user_id: int) -> str:
    """The digest ``user_id`` would get now, as plain text (nothing is sent or recorded)."""
    sub = await service.subscriptions.for_user(user_id)
    lines = [f"Digest for user {user_id} (dry run: nothing sent, nothing recorded)"]
    if sub is None:
        lines.append("Subscription: none (a /paper digest now would use the user's interests and reactions)")
    else:
        schedule = subscription_schedule(sub)
        topics = ", ".join(sub.topics) if sub.topics else "the user's interests and reactions"
        state = "" if sub.active else f" — PAUSED: {sub.paused_reason or 'no reason recorded'}"
        lines.append(f"Subscription: {schedule.describe()}, {sub.count} papers on {topics}{state}")
        if sub.active:
            upcoming = service.next_delivery(sub)
            lines.append(
                f"Next delivery: {format_local(upcoming.due_at, sub.timezone)} (period {upcoming.key})"
            )
    plan = await service.build(sub, user_id=user_id)
    lines.append("")
    lines.extend(_plan_lines(plan))
    return "\n".join(lines)


def _plain(text: str) -> str:
    """Discord markdown to terminal text."""
    return re.sub(r"[*_`]", "", text)


def _plan_lines(plan: DigestPlan) -> list[str]:
    if not plan.papers:
        return [_plain(plan.nothing_text)]
    lines = [_plain(plan.header), ""]
    for number, planned in enumerate(plan.papers, 1):
        paper = planned.paper
        lines.append(f"{number:2d}. {_title(paper)}  [paper #{paper.id}]")
        lines.append(f"    {_authors(paper)} · {_venue(paper)}")
        lines.append(f"    why: {planned.reason}")
        link = paper.url or paper.pdf_url
        if link:
            lines.append(f"    {link}")
    return lines


def _title(paper: Paper) -> str:
    return f"{paper.title} (derived title)" if paper.title_derived else paper.title


def _authors(paper: Paper) -> str:
    if not paper.authors:
        return "Unknown authors"
    shown = ", ".join(paper.authors[:3])
    return shown + (" et al." if len(paper.authors) > 3 else "")


def _venue(paper: Paper) -> str:
    parts = [part for part in (paper.venue, str(paper.year) if paper.year else None) if part]
    return " ".join(parts) if parts else "venue unknown"
