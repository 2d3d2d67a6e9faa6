"""Embeds and views for /paper recommend, /paper interests, /paper saved and /paper forget-me."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import discord

from bot.errors import NotFoundError
from bot.services.papers.export import FORMATS, export
from bot.services.people.mutes import MuteAdded
from bot.services.people.privacy import BACKUP_RETENTION_DAYS
from bot.services.recommend.interests import InterestSummary, ProfileSummary
from bot.services.recommend.topic_breadth import Breadth
from bot.services.search.snippets import echo, escape_markdown
from bot.ui.embeds import (
    BUTTON_LABEL_LIMIT,
    CUSTOM_ID_LIMIT,
    DESCRIPTION_LIMIT,
    FIELD_VALUE_LIMIT,
    PAPER_COLOUR,
    TITLE_LIMIT,
    ListedPaper,
    results_embed,
)
from bot.ui.format import counted, display_abstract, display_title, file_size, paper_link, trim
from bot.ui.views import Answered, add_rating_buttons, report_item_error, secondary_button
from storage.models import Paper

if TYPE_CHECKING:
    from storage.repositories.users import ForgetCounts

log = logging.getLogger(__name__)

SAVED_SHOWN = 25
SNIPPET_CHARS = 220


def listed(paper: Paper, reason: str | None) -> ListedPaper:
    snippet = escape_markdown(trim(display_abstract(paper), SNIPPET_CHARS)) if paper.abstract else ""
    return ListedPaper(paper=paper, snippet=snippet, matched=(), reason=reason)


def picks_embed(heading: str, entries: Sequence[ListedPaper], footer: str) -> discord.Embed:
    return results_embed(heading, entries, first_number=1, footer=footer)


def rating_view(entries: Sequence[ListedPaper]) -> discord.ui.View:
    """Numbered 👍 👎 🔖 buttons per paper (👍 and 🔖 only beyond five papers: 25 buttons at most)."""
    view = discord.ui.View(timeout=None)
    add_rating_buttons(view, [entry.paper.id for entry in entries], first_number=1)
    return view


def _lines_within(lines: Sequence[str], limit: int, empty: str) -> str:
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit - 12:
            out.append(f"… and {len(lines) - len(out)} more")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out) or empty


_KIND_MARK = {"topic": "🔎", "paper": "📄", "liked": "👍"}


def _words(words: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"`{escape_markdown(w)}`" for w, _ in words)


def interest_lines(entry: InterestSummary) -> str:
    """One interest: its name, whether paused, its picks and how many were liked, the reactions it
    learns from (wherever they were given), what it learned."""
    interest = entry.interest
    name = escape_markdown(trim(interest.label, 100))
    if interest.row.kind == "paper":
        name = f"papers like “{name}”"
    elif interest.row.kind == "liked":
        name = f"papers like “{name}” (from your 👍)"
    elif interest.row.origin == "subscribe":
        name += " (from your digest)"
    if interest.narrowed_to is not None:
        name += f", the part like “{escape_markdown(trim(interest.narrowed_to, 100))}”"
    head = f"{_KIND_MARK.get(interest.row.kind, '•')} **{name}**" + (" · ⏸️ paused" if interest.paused else "")
    if entry.picks == 1:
        fared = "1 pick, liked" if entry.liked else "1 pick, not liked yet"
    else:
        fared = f"{entry.picks} picks" + (f", {entry.liked} of them liked" if entry.picks else "")
    lines = [head, fared]
    # a 👍 from a search teaches an interest as much as one on its picks; a 🔖 as much as a 👍
    taught = []
    if entry.wanted:
        taught.append(f"{counted(entry.wanted, 'paper', 'papers')} you 👍 or 🔖")
    if entry.disliked:
        taught.append(
            f"{entry.disliked if entry.wanted else counted(entry.disliked, 'paper', 'papers')} you 👎"
        )
    if taught:
        lines[-1] += " · learns from " + ", ".join(taught)
    if entry.liked_words:
        lines[-1] += f" · for: {_words(entry.liked_words)}"
    if entry.disliked_words:
        lines[-1] += f" · against: {_words(entry.disliked_words)}"
    return "\n".join(lines)


def interests_embed(
    summary: ProfileSummary, mutes: Sequence[str] = (), *, library_texts: int = 0
) -> discord.Embed:
    """Each interest with what it learned and how its picks fared, then follows, muted topics, counts
    and learning."""
    embed = discord.Embed(title="Your paper interests", colour=PAPER_COLOUR)
    blocks = [interest_lines(entry) for entry in summary.interests]
    embed.description = _lines_within(
        blocks, DESCRIPTION_LIMIT, "*None yet — add one with `/paper interests add`.*"
    )
    if summary.followed:
        authors = [
            f"• {escape_markdown(name)}" + (f" ({escape_markdown(detail)})" if detail else "")
            for name, detail in summary.followed
        ]
        embed.add_field(
            name=f"Authors you follow ({len(summary.followed)})",
            value=_lines_within(authors, FIELD_VALUE_LIMIT, "—"),
            inline=False,
        )
    if library_texts:
        papers = counted(library_texts, "paper", "papers")
        embed.add_field(
            name=f"Your library, not here ({library_texts:,})",
            value=(
                f"The titles and abstracts of {papers} of your library I do not have teach your picks "
                "(“papers like those in your library”); they are kept for you alone."
            ),
            inline=False,
        )
    if mutes:
        embed.add_field(
            name=f"Muted topics ({len(mutes)}): never in your picks or digest",
            value=_lines_within([f"🔇 {escape_markdown(m)}" for m in mutes], FIELD_VALUE_LIMIT, "—"),
            inline=False,
        )
    counts = summary.counts
    embed.add_field(
        name="Reactions", value=f"👍 {counts.likes} · 👎 {counts.dislikes} · 🔖 {counts.saves}", inline=True
    )
    embed.add_field(
        name="Learning",
        value="⏸️ paused (reactions are not learned)" if summary.paused else "▶️ on",
        inline=True,
    )
    embed.set_footer(
        text="/paper interests add · remove · reset · pause · mute · unmute · /paper follow an author"
    )
    return embed


def saved_embed(papers: Sequence[Paper]) -> discord.Embed:
    lines = []
    for number, paper in enumerate(papers[:SAVED_SHOWN], 1):
        title = escape_markdown(trim(display_title(paper), 150))
        link = paper_link(paper)
        lines.append(f"{number}. [{title}]({link})" if link else f"{number}. {title}")
    embed = discord.Embed(
        title=trim(f"Your saved papers ({len(papers)})", TITLE_LIMIT),
        description=_lines_within(lines, DESCRIPTION_LIMIT, "—"),
        colour=PAPER_COLOUR,
    )
    more = f"showing the newest {SAVED_SHOWN} · " if len(papers) > SAVED_SHOWN else ""
    embed.set_footer(
        text=f"{more}the buttons attach them all as a file for Zotero or another reference manager"
    )
    return embed


NO_SAVED_PAPERS = "You have no saved papers yet: react 🔖 to a paper the bot posted, or press a 🔖 button."


def export_answer(papers: Sequence[Paper], key: str, size_limit: int) -> dict[str, Any]:
    """The message carrying ``papers`` as a file in format ``key``, or saying why it cannot
    (larger than Discord lets the bot attach here)."""
    exported = export(papers, key)
    label = exported.format.label
    if len(exported.data) > size_limit:
        return {
            "content": (
                f"Your {len(papers)} saved papers make a {file_size(len(exported.data))} {label} file, and Discord "
                f"lets me attach at most {file_size(size_limit)} here. Take the 🔖 off a few papers and try again."
            )
        }
    return {
        "content": f"Your {counted(len(papers), 'saved paper', 'saved papers')} as {label} (File → Import in Zotero).",
        "file": discord.File(io.BytesIO(exported.data), filename=exported.filename),
    }


class ExportButton(
    Answered, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"pb:export:(?P<format>[a-z-]+)"
):
    """Attaches the presser's saved papers as a file in one format (the buttons under /paper saved)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(secondary_button(label=FORMATS[key].label, emoji="📎", custom_id=f"pb:export:{key}"))

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ExportButton:
        if match["format"] not in FORMATS:
            raise NotFoundError("That export format is not offered any more: run /paper saved again.")
        return cls(match["format"])


def export_view() -> discord.ui.View:
    """One button per export format: BibTeX, RIS, CSL-JSON."""
    view = discord.ui.View(timeout=None)
    for key in FORMATS:
        view.add_item(ExportButton(key))
    return view


OUTSIDE_FORGET_ME = (
    "Out of my reach: backups of the database taken before now still hold a copy until they are "
    f"deleted (the daily backup paperbot's deploy files set up deletes copies more than "
    f"{BACKUP_RETENTION_DAYS} days old; copies an operator made by hand last as long as they keep them). "
    "At the default log level, logs name your user id but never your topics, searches or reactions."
)


class ForgetMeView(discord.ui.View):
    """Confirm / cancel for /paper forget-me; only the person who asked can press them. ``forget``
    (given by `bot.exts.recommend`) deletes what is stored about them."""

    def __init__(
        self, user_id: int, forget: Callable[[int], Awaitable[ForgetCounts]], *, timeout: float = 120.0
    ) -> None:
        super().__init__(timeout=timeout)
        self.user_id = user_id
        self.forget = forget
        self.done = False

    async def interaction_check(self, interaction: discord.Interaction[Any]) -> bool:
        if interaction.user.id != self.user_id:
            await interaction.response.send_message("This button is not for you.", ephemeral=True)
            return False
        return True

    async def on_error(
        self, interaction: discord.Interaction[Any], error: Exception, item: discord.ui.Item[Any]
    ) -> None:
        await report_item_error(interaction, error, "forget-me button")

    def _finish(self) -> None:
        self.done = True
        for item in self.children:
            if isinstance(item, discord.ui.Button):
                item.disabled = True
        self.stop()

    @discord.ui.button(label="Delete everything", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction[Any], button: discord.ui.Button[Any]) -> None:
        counts = await self.forget(self.user_id)
        self._finish()
        await interaction.response.edit_message(
            content=(
                f"Done. I deleted everything I stored about you ({counts.total} records: topics, "
                f"{counted(counts.feedback, 'reaction or bookmark', 'reactions and bookmarks')}, "
                f"{counted(counts.subscriptions, 'subscription', 'subscriptions')}, "
                f"{counted(counts.follows, 'followed author', 'followed authors')}, searches, "
                "recommendation history, DM index). "
                "Anything you do from now on starts afresh.\n"
                f"{OUTSIDE_FORGET_ME}"
            ),
            view=self,
        )

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction[Any], button: discord.ui.Button[Any]) -> None:
        self._finish()
        await interaction.response.edit_message(content="Cancelled: nothing was deleted.", view=self)


def muted_line(done: MuteAdded, *, feed: bool = False) -> str:
    """The answer to a mute: what it hides now, or that the same words were muted before."""
    shown = echo(done.phrase)
    if not done.added:
        who = "This feed already mutes" if feed else "You already mute"
        return f"{who} “{shown}” (the same words, in any of their forms). Nothing was changed."
    papers = (
        f"the {counted(done.papers, 'paper', 'papers')} here that say it (in any form of its words)"
        if done.papers
        else "no paper here says it yet; those that will (in any form of its words)"
    )
    clash = ""
    if done.topics:
        named = ", ".join(f"“{echo(t)}”" for t in done.topics)
        whose = "This feed's topic" if feed else "Your interest"
        clash = (
            f"\n⚠️ {whose}{'s' if len(done.topics) > 1 else ''} {named} say{'' if len(done.topics) > 1 else 's'} "
            "it too: only the papers that do not say it can be picked for "
            f"{'them' if len(done.topics) > 1 else 'it'}."
        )
    if feed:
        return (
            f"🔇 Muted “{shown}” in this feed: {papers} are never posted there. "
            "`/paperadmin feed unmute` brings them back." + clash
        )
    return (
        f"🔇 Muted “{shown}”: {papers} never reach "
        "your digest, `/paper recommend` or the order your reactions give your searches; a search still "
        "lists them and says how many were muted for you. `/paper interests unmute` brings them back." + clash
    )


def unmuted_line(phrase: str, *, feed: bool = False) -> str:
    if feed:
        return f"🔊 Unmuted “{echo(phrase)}”: this feed may post papers that say it again."
    return f"🔊 Unmuted “{echo(phrase)}”: papers that say it may reach your picks and digest again."


def added_line(topic: str) -> str:
    """The answer's line for a topic just added."""
    return f"Added “{echo(topic)}”. `/paper recommend` now uses it."


def breadth_note(topic: str, breadth: Breadth, *, buttons: bool, ask_for_paper: bool = True) -> str:
    """The line that tells someone a topic they gave is broad, with narrower topics inside it (as
    buttons under the answer, or to give again, as with ``/paper subscribe topics:``), and the other
    ways to say which part of it they mean: a paper they like (unless they just gave one; it counts as
    a 👍 at once, where reactions to picks take days to find the part), or reactions."""
    said = f"“{echo(topic)}” is broad: {breadth.matches:,} of {breadth.papers:,} papers here have its words."
    paper = "name a paper you like (`/paper interests add paper:`), " if ask_for_paper else ""
    learn = f"{paper}or 👍 and 👎 the picks: paperbot learns which part of it you want."
    if not breadth.narrower:
        return f"{said} Give a narrower topic, {learn}"
    named = ", ".join(f"“{echo(n)}”" for n in breadth.narrower)
    choose = (
        "Press the one you mean (it takes the place of the broad one)" if buttons else "Give the one you mean"
    )
    return f"{said} Narrower topics in it: {named}. {choose}, {learn}"


class NarrowTopicButton(
    Answered,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"pb:narrow:(?P<narrower>[^|]+)\|(?P<broad>.+)",
):
    """Follows a narrower topic in place of the broad one it was offered under (/paper interests add)."""

    def __init__(self, narrower: str, broad: str) -> None:
        self.narrower, self.broad = narrower, broad
        super().__init__(
            secondary_button(
                label=trim(narrower, BUTTON_LABEL_LIMIT), emoji="🎯", custom_id=narrow_id(narrower, broad)
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> NarrowTopicButton:
        return cls(match["narrower"], match["broad"])


def narrow_id(narrower: str, broad: str) -> str:
    """The custom id of the button that follows ``narrower`` in place of ``broad``."""
    return f"pb:narrow:{narrower}|{broad}"


class NarrowByPaperButton(
    Answered,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"pb:narrowby:(?P<paper>[0-9]+)\|(?P<topic>.+)",
):
    """Says a paper just named is what the person means by one of their typed topics (offered under
    /paper interests add paper: when the paper went to another interest or started its own)."""

    def __init__(self, paper_id: int, topic: str) -> None:
        self.paper_id, self.topic = paper_id, topic
        super().__init__(
            secondary_button(
                label=trim(f"It is what I mean by “{topic}”", BUTTON_LABEL_LIMIT),
                emoji="🎯",
                custom_id=narrow_by_id(paper_id, topic),
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> NarrowByPaperButton:
        return cls(int(match["paper"]), match["topic"])


def narrow_by_id(paper_id: int, topic: str) -> str:
    """The custom id of the button that narrows ``topic`` by the paper ``paper_id``."""
    return f"pb:narrowby:{paper_id}|{topic}"


#: at most this many topics offered to narrow by a paper named (one row of buttons)
NARROW_BY_BUTTONS = 5


def narrow_by_view(paper_id: int, topics: Sequence[str]) -> discord.ui.View | None:
    """A button for each typed topic (the first five whose button Discord can hold) that a paper just
    named could be the part of."""
    fitting = [t for t in topics if len(narrow_by_id(paper_id, t)) <= CUSTOM_ID_LIMIT][:NARROW_BY_BUTTONS]
    if not fitting:
        return None
    view = discord.ui.View(timeout=None)
    for topic in fitting:
        view.add_item(NarrowByPaperButton(paper_id, topic))
    return view


def narrower_view(broad: str, breadth: Breadth) -> discord.ui.View | None:
    """A button for each narrower topic whose button Discord can hold (custom id ≤ 100 characters)."""
    fitting = [n for n in breadth.narrower if "|" not in n and len(narrow_id(n, broad)) <= CUSTOM_ID_LIMIT]
    if not fitting:
        return None
    view = discord.ui.View(timeout=None)
    for narrower in fitting:
        view.add_item(NarrowTopicButton(narrower, broad))
    return view
