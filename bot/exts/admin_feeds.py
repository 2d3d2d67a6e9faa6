"""/paperadmin feed set|clear|list|mute|unmute — a channel's own topic feed on a schedule, and the
topics it never posts (Manage Server).

Same exactly-once rules as DM digests (a period is claimed before posting; a paper is never posted
twice to the same channel). Paper messages are recorded with no recipient, so a reaction in the
channel trains the person who reacted, not the channel.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.exts._autocomplete import timezone_autocomplete
from bot.exts._groups import Subcommands
from bot.services.search.snippets import echo
from bot.ui.digests import Frequency, Weekday, describe_subscription
from bot.ui.embeds import CONTENT_LIMIT
from bot.ui.format import trim
from bot.ui.profile_views import muted_line, unmuted_line

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

feed = Subcommands("paperadmin", "feed")

#: a text channel, a thread, or a forum post (a thread whose parent is the forum)
FeedChannel = discord.TextChannel | discord.Thread
NEEDED = ("view_channel", "send_messages", "embed_links", "read_message_history")


def _missing_permissions(channel: FeedChannel) -> list[str]:
    """What the bot lacks in the channel (empty when unknown: the first post will tell). In a thread,
    posting takes Send Messages in Threads instead of Send Messages."""
    me = channel.guild.me
    if me is None:
        return []
    allowed = channel.permissions_for(me)
    needed = [
        "send_messages_in_threads"
        if name == "send_messages" and isinstance(channel, discord.Thread)
        else name
        for name in NEEDED
    ]
    return [name.replace("_", " ").title() for name in needed if not getattr(allowed, name)]


def _may_react(channel: FeedChannel) -> bool:
    me = channel.guild.me
    return me is None or channel.permissions_for(me).add_reactions


def _guild_id(interaction: discord.Interaction[PaperBot]) -> int:
    if interaction.guild_id is None:  # guarded by guild_only; kept for type narrowing
        raise app_commands.NoPrivateMessage()
    return interaction.guild_id


@feed.command(name="set", description="Give a channel its own paper feed on a schedule")
@app_commands.describe(
    channel="Where the papers are posted: a channel, a thread or a forum post",
    topics="Comma-separated topics the feed picks papers by (needed for a new feed)",
    time="Local time HH:MM, 24-hour (default 09:00)",
    timezone="IANA timezone of that time, e.g. Europe/Berlin (default UTC); start typing to search",
    frequency="daily, weekdays (Mon-Fri) or weekly (default daily)",
    count="Papers per post, 1-10 (default 5)",
    weekday="Day of the week for a weekly feed (default Monday)",
)
@app_commands.autocomplete(timezone=timezone_autocomplete)
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def feed_set_command(
    interaction: discord.Interaction[PaperBot],
    channel: FeedChannel,
    topics: app_commands.Range[str, 1, 500] | None = None,
    time: app_commands.Range[str, 1, 20] | None = None,
    timezone: app_commands.Range[str, 1, 64] | None = None,
    frequency: Frequency | None = None,
    count: app_commands.Range[int, 1, 10] | None = None,
    weekday: Weekday | None = None,
) -> None:
    bot = interaction.client
    service = bot.services.digests.subscriptions
    guild_id = _guild_id(interaction)
    missing = _missing_permissions(channel)
    if missing:
        await interaction.response.send_message(
            f"I can't post a feed in {channel.mention}: I'm missing {', '.join(missing)} there. "
            "Give me those permissions and run this again.",
            ephemeral=True,
        )
        return
    sub = await service.set_feed(
        guild_id,
        channel.id,
        created_by=interaction.user.id,
        topics=topics,
        time=time,
        timezone=timezone,
        frequency=frequency,
        count=count,
        weekday=weekday,
    )
    bot.digest_jobs.schedule(sub)
    await service.take_notice(interaction.user.id)  # a "feed paused" notice is answered by this
    text = f"✅ Feed for {channel.mention}: " + describe_subscription(sub, await service.arrival(sub))
    text += "\nReactions there (👍 👎 🔖) train the person who reacts. `/paperadmin feed clear` stops it."
    if not _may_react(channel):
        notice = await bot.services.permission_notices.reactions_missing(channel.id)
        text += "\n⚠️ " + (notice or "I may not add reactions there: its papers get 👍 👎 🔖 buttons instead.")
    await interaction.response.send_message(text, ephemeral=True)


@feed.command(name="clear", description="Stop a channel's paper feed")
@app_commands.describe(channel="The channel whose feed to stop")
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def feed_clear_command(interaction: discord.Interaction[PaperBot], channel: FeedChannel) -> None:
    bot = interaction.client
    removed = await bot.services.digests.subscriptions.clear_feed(_guild_id(interaction), channel.id)
    if removed is None:
        await interaction.response.send_message(f"{channel.mention} has no paper feed.", ephemeral=True)
        return
    bot.digest_jobs.unschedule(removed.id)
    await interaction.response.send_message(
        f"✅ The paper feed in {channel.mention} is stopped.", ephemeral=True
    )


@feed.command(name="list", description="This server's paper feeds and when they post next")
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def feed_list_command(interaction: discord.Interaction[PaperBot]) -> None:
    service = interaction.client.services.digests.subscriptions
    feeds = await service.list_feeds(_guild_id(interaction))
    if not feeds:
        await interaction.response.send_message(
            "No paper feeds here yet. `/paperadmin feed set` gives a channel one.", ephemeral=True
        )
        return
    lines = [f"**Paper feeds ({len(feeds)})**"]
    arrivals = await service.arrivals([sub for sub in feeds if sub.active])
    for sub in feeds:
        if sub.active:
            status = describe_subscription(sub, arrivals[sub.id]).replace("\n", " ")
        else:
            status = (
                f"⏸ paused ({sub.paused_reason or 'no reason recorded'}); `/paperadmin feed set` resumes it."
            )
        muted = f" 🔇 muted: {', '.join(echo(m) for m in sub.mutes)}" if sub.mutes else ""
        lines.append(f"• <#{sub.channel_id}> — {status}{muted}")
    text = "\n".join(lines)
    if len(text) > CONTENT_LIMIT:
        text = text[: CONTENT_LIMIT - 10].rsplit("\n", 1)[0] + "\n…"
    await interaction.response.send_message(text, ephemeral=True)


@feed.command(name="mute", description="Never post papers that say a phrase in a channel's feed")
@app_commands.describe(
    channel="The channel whose feed to mute a topic in",
    topic="A short phrase, e.g. reinforcement learning: papers saying it are never posted there",
)
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def feed_mute_command(
    interaction: discord.Interaction[PaperBot], channel: FeedChannel, topic: app_commands.Range[str, 1, 100]
) -> None:
    await interaction.response.defer(ephemeral=True, thinking=True)  # a new phrase reads its papers' texts
    done = await interaction.client.services.mutes.feed_mute(_guild_id(interaction), channel.id, topic)
    await interaction.followup.send(muted_line(done, feed=True), ephemeral=True)


async def _feed_mute_autocomplete(
    interaction: discord.Interaction[PaperBot], current: str
) -> list[app_commands.Choice[str]]:
    """The muted topics of the feed the `channel` option names (every feed's here, before it is chosen)."""
    services = interaction.client.services
    channel = getattr(interaction.namespace, "channel", None)
    feeds = await services.digests.subscriptions.list_feeds(_guild_id(interaction))
    chosen = [f for f in feeds if channel is None or f.channel_id == getattr(channel, "id", None)]
    needle = current.casefold()
    phrases = dict.fromkeys(phrase for chosen_feed in chosen for phrase in chosen_feed.mutes)
    return [app_commands.Choice(name=trim(p, 100), value=p[:100]) for p in phrases if needle in p.casefold()][
        :25
    ]


@feed.command(name="unmute", description="Let a channel's feed post papers on a topic it muted again")
@app_commands.describe(channel="The channel whose feed to unmute a topic in", topic="One of its muted topics")
@app_commands.autocomplete(topic=_feed_mute_autocomplete)
@app_commands.checks.has_permissions(manage_guild=True)
@app_commands.guild_only()
async def feed_unmute_command(
    interaction: discord.Interaction[PaperBot], channel: FeedChannel, topic: app_commands.Range[str, 1, 100]
) -> None:
    removed = await interaction.client.services.mutes.feed_unmute(_guild_id(interaction), channel.id, topic)
    await interaction.response.send_message(unmuted_line(removed, feed=True), ephemeral=True)


async def setup(bot: commands.Bot) -> None:
    feed.add_to(bot)
