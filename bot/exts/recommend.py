"""/paper recommend, /paper interests show|add|remove|reset|pause, /paper saved, /paper forget-me.

Every answer is personal, so every answer is ephemeral.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.errors import UserFacingError
from bot.exts._autocomplete import paper_autocomplete
from bot.exts._groups import Subcommands
from bot.exts._items import answer
from bot.services.papers.export import FORMATS
from bot.services.people.library import MAX_LIBRARY_BYTES
from bot.services.people.privacy import BACKUP_RETENTION_DAYS
from bot.services.recommend.topic_breadth import breadth
from bot.services.search.snippets import echo
from bot.ui.format import counted, file_size, trim
from bot.ui.library import library_answer
from bot.ui.profile_views import (
    NO_SAVED_PAPERS,
    ExportButton,
    ForgetMeView,
    NarrowByPaperButton,
    NarrowTopicButton,
    added_line,
    breadth_note,
    export_answer,
    export_view,
    interests_embed,
    listed,
    muted_line,
    narrow_by_view,
    narrower_view,
    picks_embed,
    rating_view,
    saved_embed,
    unmuted_line,
)
from bot.ui.views import rating_legend, report_item_error

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

paper_group = Subcommands("paper")
interests_group = Subcommands("paper", "interests")

Count = app_commands.Range[int, 1, 10]
Topic = app_commands.Range[str, 1, 100]

NO_PROFILE = (
    "I don't know your interests yet. Add a topic with `/paper interests add topic:kv cache quantization`, "
    "or react 👍 to papers you like in `/paper search` results, and I'll recommend from there."
)
NOTHING_NEW = (
    "Nothing new is close enough to your interests right now: you have already seen the best matches. "
    "Add another topic with `/paper interests add`, or try again when new papers arrive."
)


@paper_group.command(name="recommend", description="Papers picked for you from your topics and reactions")
@app_commands.describe(count="How many papers (1-10, default 5)")
async def recommend_command(interaction: discord.Interaction[PaperBot], count: Count = 5) -> None:
    services = interaction.client.services
    services.limits.take("recommend", interaction.user.id)
    await interaction.response.defer(ephemeral=True, thinking=True)
    # the picks count as seen only once the answer carrying them went out (a refused answer hides none)
    result = await services.recommender.personal(
        interaction.user.id, guild_id=interaction.guild_id, count=count, mark_shown=False
    )
    if result.status == "picks":
        papers = await services.papers.get_many(p.paper_id for p in result.picks)
        entries = [listed(papers[p.paper_id], p.reason) for p in result.picks if p.paper_id in papers]
        heading = f"{counted(len(entries), 'paper', 'papers')} for you"
        footer = rating_legend(len(entries))
    elif result.status == "popular":
        papers = await services.papers.get_many(p.paper_id for p in result.popular)
        entries = [
            listed(papers[p.paper_id], f"👍 from {p.votes} people here")
            for p in result.popular
            if p.paper_id in papers
        ]
        heading = "Popular here while I learn your interests"
        footer = "Add topics with /paper interests add for personal picks · rate with the buttons"
    else:
        await interaction.followup.send(
            NOTHING_NEW if result.status == "nothing_new" else NO_PROFILE, ephemeral=True
        )
        return
    await interaction.followup.send(
        embed=picks_embed(heading, entries, footer), view=rating_view(entries), ephemeral=True
    )
    if result.status == "picks":
        try:
            await services.recommender.mark_shown(
                interaction.user.id,
                [p.paper_id for p in result.picks],
                brought={p.paper_id: p.interest_id for p in result.picks},
            )
        except Exception:  # they went out: at worst they are offered again, which beats an error line
            log.warning("could not mark user %s's picks as shown", interaction.user.id, exc_info=True)


@interests_group.command(
    name="show", description="Your interests, what each learned, and how its picks fared"
)
async def interests_show(interaction: discord.Interaction[PaperBot]) -> None:
    # The summary fits each interest's model, as /paper recommend does: it may take longer than
    # Discord's 3 s for a first response on a busy machine, so the answer follows a defer.
    await interaction.response.defer(ephemeral=True, thinking=True)
    services = interaction.client.services
    summary = await services.recommender.summary(interaction.user.id)
    mutes = [m.phrase for m in await services.mutes.mutes(interaction.user.id)]
    kept = await services.library.kept(interaction.user.id)
    await interaction.followup.send(embed=interests_embed(summary, mutes, library_texts=kept), ephemeral=True)


@interests_group.command(
    name="add", description="Follow a topic, or start from a paper you like (it counts as your 👍)"
)
@app_commands.describe(
    topic="A few words describing what you want to read about, e.g. kv cache quantization",
    paper="A paper you like: start typing its title, or give an arXiv/OpenReview id",
    file="Your library: a BibTeX, RIS or CSL-JSON export (Zotero, Mendeley), or a list of arXiv ids and DOIs",
)
@app_commands.autocomplete(paper=paper_autocomplete)
async def interests_add(
    interaction: discord.Interaction[PaperBot],
    topic: Topic | None = None,
    paper: app_commands.Range[str, 1, 200] | None = None,
    file: discord.Attachment | None = None,
) -> None:
    if file is not None:
        await add_library(interaction, file)
        return
    if topic is None and paper is None:
        raise UserFacingError(
            "Give a topic (`topic:kv cache quantization`) or a paper you like (`paper:` and pick one), or both; "
            "or start from your own library (`file:` a BibTeX, RIS or CSL-JSON export)."
        )
    services = interaction.client.services
    user_id = interaction.user.id
    seed = await services.search_service.resolve_paper(paper) if paper is not None else None
    lines = []
    view = None
    stored = None
    if topic is not None:
        stored, added = await services.profiles.add_topic(user_id, topic)
        lines.append(added_line(stored) if added else f"You already follow “{echo(stored)}”.")
        # a tenth of a second or more for a broad topic at 36k papers: in a thread, off the event loop
        broad = await asyncio.to_thread(breadth, services.search, stored) if added else None
        if broad is not None:
            view = narrower_view(stored, broad)
            lines.append(breadth_note(stored, broad, buttons=view is not None, ask_for_paper=paper is None))
    if seed is not None:
        interest, new_interest = await services.recommender.add_paper(user_id, seed.id, for_topic=stored)
        if new_interest:
            lines.append(f"Following papers like “{echo(interest.label)}” as an interest of its own.")
        elif interest.row.narrowed_by == seed.id:
            lines.append(
                f"It narrows your interest in {echo(interest.described)} to the part like it: papers like it "
                "lead its picks now, not every paper with its words."
            )
        elif interest.row.kind == "topic":
            lines.append(f"It teaches your interest in {echo(interest.described)}.")
        if topic is None:  # named alone: it may be the part of another typed topic the person means
            other = [
                i.label
                for i in await services.profiles.interests(user_id)
                if i.row.kind == "topic" and not i.paused and i.id != interest.id
            ]
            view = narrow_by_view(seed.id, other)
            if view is not None:
                lines.append("If it is the part of another of your topics you mean, press that topic.")
        press = await services.ratings.on_seed(user_id, seed.id, guild_id=interaction.guild_id)
        lines.append(press.note)
    if view is None:
        await interaction.response.send_message("\n".join(lines), ephemeral=True)
    else:  # the narrower topics of a broad one, as buttons
        await interaction.response.send_message("\n".join(lines), view=view, ephemeral=True)


async def add_library(interaction: discord.Interaction[PaperBot], file: discord.Attachment) -> None:
    """`/paper interests add file:`: the papers of a person's library count as their 👍."""
    services = interaction.client.services
    services.limits.take("library", interaction.user.id)
    if file.size > MAX_LIBRARY_BYTES:  # refused before it is downloaded
        raise UserFacingError(
            f"That file is {file_size(file.size)}; a library may be at most {file_size(MAX_LIBRARY_BYTES)}. "
            "Nothing was added."
        )
    await interaction.response.defer(ephemeral=True, thinking=True)  # arXiv fetches take seconds
    done = await services.library.run(
        interaction.user.id, await file.read(), file.filename, guild_id=interaction.guild_id
    )
    await interaction.followup.send(library_answer(done), ephemeral=True)


async def _interest_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    interests = await interaction.client.services.profiles.interests(interaction.user.id)
    needle = current.casefold()
    return [
        app_commands.Choice(name=trim(i.label + (" (paused)" if i.paused else ""), 100), value=i.label[:100])
        for i in interests
        if needle in i.label.casefold()
    ][:25]


@interests_group.command(name="remove", description="Stop following one of your interests")
@app_commands.describe(topic="One of your interests: a topic, or the paper it started from")
@app_commands.autocomplete(topic=_interest_autocomplete)
async def interests_remove(interaction: discord.Interaction[PaperBot], topic: Topic) -> None:
    removed = await interaction.client.services.profiles.remove(interaction.user.id, topic)
    await interaction.response.send_message(f"Removed “{echo(removed)}”.", ephemeral=True)


@interests_group.command(
    name="reset", description="Forget what your 👍 and 👎 taught (topics and saves stay)"
)
async def interests_reset(interaction: discord.Interaction[PaperBot]) -> None:
    removed = await interaction.client.services.profiles.reset(interaction.user.id)
    forgot = (
        f"Forgot {removed.likes} 👍 and {removed.dislikes} 👎."
        if removed.likes or removed.dislikes
        else "You had no 👍 or 👎 to forget."
    )
    await interaction.response.send_message(
        f"{forgot} Your topics and saved papers are kept "
        "(saved papers still count as interests; take a 🔖 off to stop one counting).",
        ephemeral=True,
    )


@interests_group.command(
    name="pause", description="Pause or resume one interest, or learning from your reactions as a whole"
)
@app_commands.describe(
    paused="True to pause, False to resume; leave empty to switch",
    interest="One of your interests: it brings no picks and learns nothing until resumed",
)
@app_commands.autocomplete(interest=_interest_autocomplete)
async def interests_pause(
    interaction: discord.Interaction[PaperBot], paused: bool | None = None, interest: Topic | None = None
) -> None:
    profiles = interaction.client.services.profiles
    if interest is not None:
        label, now_paused = await profiles.pause(interaction.user.id, interest, paused)
        shown = echo(label)
        message = (
            f"Paused “{shown}”: it brings no picks and learns nothing until you resume it "
            "(`/paper interests pause interest:… paused:False`). Your other interests go on."
            if now_paused
            else f"“{shown}” is back: it gets its share of your picks again."
        )
        await interaction.response.send_message(message, ephemeral=True)
        return
    now_paused = await profiles.set_paused(interaction.user.id, paused)
    message = (
        "Learning paused: your 👍 and 👎 are not learned until you resume (🔖 still saves). "
        "What I learned so far is kept and still used."
        if now_paused
        else "Learning is on: your 👍 and 👎 shape your recommendations again."
    )
    await interaction.response.send_message(message, ephemeral=True)


@interests_group.command(
    name="mute", description="Never be shown papers that say a phrase (searches still find them)"
)
@app_commands.describe(topic="A short phrase, e.g. reinforcement learning: papers saying it leave your picks")
async def interests_mute(interaction: discord.Interaction[PaperBot], topic: Topic) -> None:
    await interaction.response.defer(ephemeral=True, thinking=True)  # a new phrase reads its papers' texts
    done = await interaction.client.services.mutes.mute(interaction.user.id, topic)
    await interaction.followup.send(muted_line(done), ephemeral=True)


async def _mute_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    mutes = await interaction.client.services.mutes.mutes(interaction.user.id)
    needle = current.casefold()
    return [
        app_commands.Choice(name=trim(m.phrase, 100), value=m.phrase[:100])
        for m in mutes
        if needle in m.phrase.casefold()
    ][:25]


@interests_group.command(name="unmute", description="Be shown papers on a topic you muted again")
@app_commands.describe(topic="One of your muted topics")
@app_commands.autocomplete(topic=_mute_autocomplete)
async def interests_unmute(interaction: discord.Interaction[PaperBot], topic: Topic) -> None:
    removed = await interaction.client.services.mutes.unmute(interaction.user.id, topic)
    await interaction.response.send_message(unmuted_line(removed), ephemeral=True)


@paper_group.command(
    name="saved", description="Your saved papers, or all of them as a BibTeX, RIS or CSL-JSON file"
)
@app_commands.describe(export="Attach them all as a file for Zotero or another reference manager")
@app_commands.choices(
    export=[
        app_commands.Choice(name=f"{f.label} ({f.filename.rsplit('.', 1)[1]})", value=f.key)
        for f in FORMATS.values()
    ]
)
async def saved_command(interaction: discord.Interaction[PaperBot], export: str | None = None) -> None:
    await interaction.response.defer(ephemeral=True, thinking=True)
    papers = await interaction.client.services.feedback.saved_papers(interaction.user.id)
    if not papers:
        await interaction.followup.send(NO_SAVED_PAPERS, ephemeral=True)
    elif export:
        await interaction.followup.send(
            **export_answer(papers, export, interaction.filesize_limit), ephemeral=True
        )
    else:
        await interaction.followup.send(embed=saved_embed(papers), view=export_view(), ephemeral=True)


@paper_group.command(name="forget-me", description="Delete everything paperbot stores about you")
async def forget_me_command(interaction: discord.Interaction[PaperBot]) -> None:
    view = ForgetMeView(interaction.user.id, interaction.client.services.forget_user)
    await interaction.response.send_message(
        "This deletes your topics, muted topics, library papers kept as text, reactions, saved papers, "
        "followed authors, subscription, searches and history, for good. "
        "Backups taken before now keep a copy until they are deleted (the daily backup paperbot ships "
        f"deletes them after {BACKUP_RETENTION_DAYS} days). Sure?",
        view=view,
        ephemeral=True,
    )


async def export_saved(interaction: discord.Interaction[Any], button: ExportButton) -> None:
    """An export button under /paper saved: the presser's saved papers as a file in its format."""
    bot: PaperBot = interaction.client
    try:
        papers = await bot.services.feedback.saved_papers(interaction.user.id)
        if not papers:
            await interaction.response.send_message(NO_SAVED_PAPERS, ephemeral=True)
            return
        await interaction.response.send_message(
            **export_answer(papers, button.key, interaction.filesize_limit), ephemeral=True
        )
    except Exception as error:
        await report_item_error(interaction, error, f"export button {button.key}")


async def narrow_topic(interaction: discord.Interaction[Any], button: NarrowTopicButton) -> None:
    """A narrower topic's button under /paper interests add: followed in place of the broad one."""
    bot: PaperBot = interaction.client
    try:
        stored, replaced = await bot.services.profiles.narrow_topic(
            interaction.user.id, button.broad, button.narrower
        )
        shown = echo(stored)
        text = (
            f"Now following “{shown}” in place of “{echo(replaced)}”. `/paper recommend` uses it."
            if replaced is not None
            else added_line(stored)
        )
        await interaction.response.send_message(text, ephemeral=True)
    except Exception as error:
        await report_item_error(interaction, error, "narrower topic button", detail=repr(button.narrower))


async def narrow_by_paper(interaction: discord.Interaction[Any], button: NarrowByPaperButton) -> None:
    """A topic's button under /paper interests add paper:: the paper named is the part of it meant."""
    bot: PaperBot = interaction.client
    try:
        interest = await bot.services.recommender.narrow_with(
            interaction.user.id, button.topic, button.paper_id
        )
        await interaction.response.send_message(
            f"Your interest in {echo(interest.described)} is narrowed to the part like "
            f"“{echo(interest.narrowed_to or str(button.paper_id))}”: papers like it lead its picks now.",
            ephemeral=True,
        )
    except Exception as error:
        await report_item_error(interaction, error, "narrow-by-paper button", detail=repr(button.topic))


async def setup(bot: PaperBot) -> None:
    paper_group.add_to(bot)
    interests_group.add_to(bot)
    answer(bot, ExportButton, export_saved)
    answer(bot, NarrowTopicButton, narrow_topic)
    answer(bot, NarrowByPaperButton, narrow_by_paper)
