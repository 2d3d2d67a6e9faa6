"""/paperadmin club set|off — a channel's weekly reading group (Manage Server); /paper club
propose|history — its members' side. The weekly steps run in the process doing the background work
(``PaperBot.run_clubs``); the logic is ``bot.services.club``, the messages ``bot.ui.club``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.errors import UserFacingError
from bot.exts._autocomplete import paper_autocomplete, timezone_autocomplete
from bot.exts._groups import Subcommands
from bot.exts._items import answer
from bot.services.club import WEEKDAYS
from bot.ui import club as ui
from bot.ui.digests import Weekday

if TYPE_CHECKING:
    from bot.app import PaperBot

club_admin = Subcommands("paperadmin", "club")
club = Subcommands("paper", "club")

#: what the bot needs in a club's channel (and in the threads it starts there)
NEEDED = (
    "view_channel",
    "send_messages",
    "embed_links",
    "read_message_history",
    "create_public_threads",
    "send_messages_in_threads",
)


def _missing(channel: discord.TextChannel) -> list[str]:
    me = channel.guild.me
    if me is None:
        return []
    allowed = channel.permissions_for(me)
    return [name.replace("_", " ").title() for name in NEEDED if not getattr(allowed, name)]


def _guild_id(interaction: discord.Interaction[PaperBot]) -> int:
    if interaction.guild_id is None:
        raise UserFacingError("Reading groups live in a server's channels: run this there.")
    return interaction.guild_id


@club_admin.command(name="set", description="Start (or change) a channel's weekly reading group")
@app_commands.describe(
    channel="The channel whose reading group this is",
    day="The day the week's paper is announced (the group meets a week later)",
    time="Local time HH:MM, 24-hour, of the announcement",
    timezone="IANA timezone of that time, e.g. Europe/Berlin; start typing to search",
    topics="Comma-separated topics candidates come from (default: the channel feed's topics)",
)
@app_commands.autocomplete(timezone=timezone_autocomplete)
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def club_set_command(
    interaction: discord.Interaction[PaperBot],
    channel: discord.TextChannel,
    day: Weekday,
    time: app_commands.Range[str, 1, 20],
    timezone: app_commands.Range[str, 1, 64],
    topics: app_commands.Range[str, 1, 500] | None = None,
) -> None:
    missing = _missing(channel)
    if missing:
        await interaction.response.send_message(
            f"I can't run a reading group in {channel.mention}: I'm missing {', '.join(missing)} there. "
            "Give me those permissions and run this again.",
            ephemeral=True,
        )
        return
    service = interaction.client.services.club
    row, first = await service.set_club(
        channel_id=channel.id,
        guild_id=_guild_id(interaction),
        weekday=[d.lower() for d in WEEKDAYS].index(day),
        time=time,
        timezone=timezone,
        topics=topics,
        by=interaction.user.id,
    )
    text = ui.club_set(row, first)
    me = channel.guild.me
    if me is not None and not channel.permissions_for(me).send_polls:
        text += (
            "\n⚠️ I may not post Discord polls there (Send Polls): the poll will be buttons, one vote each."
        )
    await interaction.response.send_message(text, ephemeral=True)


@club_admin.command(name="off", description="Stop a channel's reading group (its history stays)")
@app_commands.describe(channel="The channel whose reading group to stop")
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def club_off_command(interaction: discord.Interaction[PaperBot], channel: discord.TextChannel) -> None:
    stopped = await interaction.client.services.club.turn_off(channel.id)
    text = (
        f"✅ The reading group in {channel.mention} is stopped: no more polls. `/paper club history` keeps its picks."
        if stopped
        else f"{channel.mention} has no reading group running."
    )
    await interaction.response.send_message(text, ephemeral=True)


async def _club_here(interaction: discord.Interaction[PaperBot]):  # type: ignore[no-untyped-def]
    _guild_id(interaction)
    channel = interaction.channel
    parent = getattr(channel, "parent_id", None)
    return await interaction.client.services.club.club_for(interaction.channel_id or 0, parent)


@club.command(name="propose", description="Put a paper forward for this channel's next reading-group poll")
@app_commands.describe(paper="Start typing a title, or give an arXiv/OpenReview id")
@app_commands.autocomplete(paper=paper_autocomplete)
async def club_propose_command(
    interaction: discord.Interaction[PaperBot], paper: app_commands.Range[str, 1, 200]
) -> None:
    services = interaction.client.services
    here = await _club_here(interaction)
    services.club.check_open(here)
    found = await services.search_service.resolve_paper(paper)
    chosen, announce_at = await services.club.propose(here, found.id, interaction.user.id)
    await interaction.response.send_message(ui.proposed(chosen, announce_at, here.timezone))


@club.command(name="history", description="The papers this channel's reading group picked")
async def club_history_command(interaction: discord.Interaction[PaperBot]) -> None:
    service = interaction.client.services.club
    here = await _club_here(interaction)
    await interaction.response.send_message(ui.history(await service.history(here), here), ephemeral=True)


async def vote(interaction: discord.Interaction[Any], button: ui.ClubVoteButton) -> None:
    """A poll's numbered button: the presser's vote, or taken back when pressed again."""
    bot: PaperBot = interaction.client
    outcome, paper = await bot.services.club.vote(
        button.channel_id, button.week, interaction.user.id, button.answer
    )
    await interaction.response.send_message(ui.vote_note(outcome, button.answer, paper), ephemeral=True)


async def setup(bot: PaperBot) -> None:
    club_admin.add_to(bot)
    club.add_to(bot)
    answer(bot, ui.ClubVoteButton, vote)
