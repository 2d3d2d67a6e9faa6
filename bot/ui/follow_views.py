"""What `/paper follow`, `/paper following` and `/paper unfollow` show: the author autocompletes, the
answers, and the menu that picks which of the people who may share a name to follow.

The menu's ``custom_id`` carries the folded name, so it keeps working on a message of any age and
after a restart; its options are the groups of papers under the name (their first paper's id).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import discord

from bot.services.people.follows import AuthorSuggestion, Followed, FollowOutcome
from bot.services.search.snippets import echo, escape_markdown
from bot.ui.embeds import CONTENT_LIMIT, DESCRIPTION_LIMIT, PAPER_COLOUR, TITLE_LIMIT
from bot.ui.format import counted, trim
from bot.ui.views import Answered

#: Discord's limits: a choice's or a menu option's name, label and value; options in one menu
CHOICE_LIMIT = 100
MENU_OPTIONS = 25
_MENU_PREFIX = "pb:authors:"
#: groups listed in the answer that says a name may be shared; groups followed named in its first line
LISTED_GROUPS = 10
NAMED_GROUPS = 3


def suggestion_label(suggestion: AuthorSuggestion) -> str:
    """ "Wei Wang · 3 papers in 2 groups (every one)", "Wei Wang — with Lei Zhang · CVPR · 2023 · 2 papers"."""
    if suggestion.group is not None:
        label = f"{suggestion.name} — {suggestion.group.describe()}"
    elif suggestion.groups > 1:
        label = f"{suggestion.name} · {counted(suggestion.papers, 'paper', 'papers')} in {suggestion.groups} groups (every one)"
    else:
        label = f"{suggestion.name} · {counted(suggestion.papers, 'paper', 'papers')}"
    return trim(label, CHOICE_LIMIT)


def followed_label(follow: Followed) -> str:
    """ "Wei Wang — with Jiawei Han · KDD · 2019 · 1 paper", or the name."""
    return trim(f"{follow.name} — {follow.detail}" if follow.detail else follow.name, CHOICE_LIMIT)


def follow_answer(outcome: FollowOutcome) -> dict[str, Any]:
    """The answer to a follow: what is followed and what that brings; where the papers under the name
    fall into several groups, that they may be different people, each group, and a menu to pick."""
    name = f"**{echo(outcome.name)}**"
    reason = f"“by {echo(outcome.name)}, whom you follow”"
    if outcome.chosen:
        which = "; ".join(escape_markdown(g.describe()) for g in outcome.chosen[:NAMED_GROUPS])
        if len(outcome.chosen) > NAMED_GROUPS:
            which += f"; and {len(outcome.chosen) - NAMED_GROUPS} more groups"
        lines = [
            f"✅ You follow {name} ({which}). Their new papers come first in your digest, with the reason "
            f"{reason}: the papers under the name that share a co-author with these."
        ]
    else:
        lines = [
            f"✅ You follow {name} ({counted(outcome.papers, 'paper', 'papers')} here). Their new papers come first in your "
            f"digest, with the reason {reason}."
        ]
    if outcome.replaced:
        if outcome.chosen:
            lines.append("This replaces what you followed under the name before.")
        else:
            lines.append("That is every paper under the name, instead of the groups you picked before.")
    if not outcome.has_digest:
        lines.append("You have no digest yet: `/paper subscribe` sends one, or `/paper digest` any time.")
    answer: dict[str, Any] = {"content": trim("\n".join(lines), CONTENT_LIMIT)}
    if len(outcome.groups) > 1:
        answer["embed"] = groups_embed(outcome)
        view = groups_view(outcome)
        if view is not None:
            answer["view"] = view
    return answer


def groups_embed(outcome: FollowOutcome) -> discord.Embed:
    """ "Two people may share this name": the groups under the name and what tells them apart."""
    groups = outcome.groups
    lines = [
        f"The papers under “{echo(outcome.name)}” fall into {len(groups)} groups with no co-author "
        "in common: they may be different people. To follow only some of them, pick them below."
    ]
    for number, group in enumerate(groups[:LISTED_GROUPS], 1):
        lines.append(f"{number}. {escape_markdown(group.describe())}")
    if len(groups) > LISTED_GROUPS:
        lines.append(f"… and {len(groups) - LISTED_GROUPS} more groups (in the menu)")
    title = f"{len(groups)} authors may share the name {outcome.name}"
    return discord.Embed(
        title=trim(title, TITLE_LIMIT),
        description=trim("\n".join(lines), DESCRIPTION_LIMIT),
        colour=PAPER_COLOUR,
    )


def groups_view(outcome: FollowOutcome) -> discord.ui.View | None:
    """The menu of the name's groups (None when the name is too long to carry in its ``custom_id``)."""
    if len(_MENU_PREFIX + outcome.key) > CHOICE_LIMIT:
        return None
    chosen = {g.paper_id for g in outcome.chosen}
    options = [
        discord.SelectOption(
            label=trim(f"{number}. {group.describe()}", CHOICE_LIMIT),
            value=str(group.paper_id),
            default=group.paper_id in chosen,
        )
        for number, group in enumerate(outcome.groups[:MENU_OPTIONS], 1)
    ]
    view = discord.ui.View(timeout=None)
    view.add_item(AuthorGroupsMenu(outcome.key, options))
    return view


class AuthorGroupsMenu(
    Answered, discord.ui.DynamicItem[discord.ui.Select[Any]], template=r"pb:authors:(?P<key>.+)"
):
    """Follow only the groups picked under one name (instead of every paper under it)."""

    def __init__(self, key: str, options: Sequence[discord.SelectOption] = ()) -> None:
        self.key = key
        super().__init__(
            discord.ui.Select(
                custom_id=f"{_MENU_PREFIX}{key}",
                placeholder="Follow only some of them: pick which",
                min_values=1,
                max_values=max(1, len(options)),
                options=list(options) or [discord.SelectOption(label="—", value="0")],
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> AuthorGroupsMenu:
        options = item.options if isinstance(item, discord.ui.Select) else []
        return cls(match["key"], options)


def following_embed(follows: Sequence[Followed], limit: int) -> discord.Embed:
    """The authors a person follows, each with what told its group apart."""
    lines = []
    for follow in follows:
        what = f" ({escape_markdown(follow.detail)})" if follow.detail else ""
        lines.append(f"• **{echo(follow.name)}**{what} — since {follow.since[:10]}")
    embed = discord.Embed(
        title=f"Authors you follow ({len(follows)} of {limit})",
        description=trim("\n".join(lines), DESCRIPTION_LIMIT)
        if lines
        else "*None yet — follow one with `/paper follow author:` and pick a name from the list.*",
        colour=PAPER_COLOUR,
    )
    embed.set_footer(text="Their new papers come first in your digest · /paper unfollow to stop one")
    return embed
