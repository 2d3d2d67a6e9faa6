"""/paper subscribe, /paper unsubscribe, /paper digest — and the notice a paused digest leaves.

Thin: validation, scheduling rules and delivery live in ``bot.services.digests``; the Discord sender
in ``bot.digest_sender``; the option types and descriptions in ``bot.ui.digests``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import discord
from discord import app_commands
from discord.ext import commands

from bot.exts._autocomplete import timezone_autocomplete
from bot.exts._groups import Subcommands
from bot.services.digests.delivery import DeliveryOutcome, DigestInterruptedError, RecipientUnreachableError
from bot.services.digests.subscriptions import NOTHING_TO_DIGEST_BY
from bot.services.recommend.topic_breadth import Breadth, TitledIndex, breadth
from bot.ui.digests import Frequency, Weekday, describe_subscription
from bot.ui.embeds import CONTENT_LIMIT
from bot.ui.format import counted
from bot.ui.profile_views import breadth_note

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

MAX_BREADTH_NOTES: Final = 3  # notes on broad topics in one answer (each ~300 characters)

paper = Subcommands("paper")

DIGEST_RESUMES = (
    "⏸️ I had to stop sending your digest partway (I'm restarting). What's not in your DMs yet "
    "follows shortly, and nothing comes twice."
)
DIGEST_STOPPED = (
    "⏸️ I had to stop sending your digest partway (I'm restarting). Run `/paper digest` again in a minute "
    "for the rest: papers already in your DMs won't come again."
)
DIGEST_FAILED = (
    "⚠️ I couldn't finish sending your digest: Discord or my database did not answer. Papers already in "
    "your DMs won't come again; if you have a subscription the rest follows once they answer, otherwise "
    "run `/paper digest` again in a few minutes."
)
DMS_CLOSED_HELP = (
    "I can't send you direct messages. Allow DMs from this server's members (right-click the server → "
    "Privacy Settings → Direct Messages), then try again."
)

DIGEST_GOING_OUT = "Another digest of yours is going out right now; check your DMs in a moment."


@paper.command(name="subscribe", description="Get a paper digest by DM at your own local time")
@app_commands.describe(
    topics="Comma-separated, e.g. kv cache, quantization (default: your interests)",
    time="Local time HH:MM, 24-hour (default 09:00)",
    timezone="Your IANA timezone, e.g. Europe/Berlin (default UTC); start typing to search",
    frequency="daily, weekdays (Mon-Fri) or weekly (default daily)",
    count="Papers per digest, 1-10 (default 5)",
    weekday="Day of the week for a weekly digest (default Monday)",
)
@app_commands.autocomplete(timezone=timezone_autocomplete)
async def subscribe_command(
    interaction: discord.Interaction[PaperBot],
    topics: app_commands.Range[str, 1, 500] | None = None,
    time: app_commands.Range[str, 1, 20] | None = None,
    timezone: app_commands.Range[str, 1, 64] | None = None,
    frequency: Frequency | None = None,
    count: app_commands.Range[int, 1, 10] | None = None,
    weekday: Weekday | None = None,
) -> None:
    bot = interaction.client
    bot.services.limits.take("subscribe", interaction.user.id)
    if topics is not None:  # the broad topics among them are looked for in a thread: answered after
        await interaction.response.defer(ephemeral=True, thinking=True)
    service = bot.services.digests.subscriptions
    had = await service.for_user(interaction.user.id)
    sub = await service.subscribe(
        interaction.user.id,
        topics=topics,
        time=time,
        timezone=timezone,
        frequency=frequency,
        count=count,
        weekday=weekday,
        guild_id=interaction.guild_id,
    )
    bot.digest_jobs.schedule(sub)
    seen_in = interaction.channel_id if interaction.guild_id is None else None
    bot.digest_jobs.spawn(
        bot.sending.dm_channels.learn(interaction.user.id, seen_in=seen_in), name="dm-channel"
    )
    await service.take_notice(interaction.user.id)  # a "paused" notice is answered by resubscribing
    verb = "Resumed" if had is not None and not had.active else ("Updated" if had else "Subscribed")
    text = f"✅ {verb}: " + describe_subscription(sub, await service.arrival(sub))
    if sub.timezone == "UTC" and timezone is None and had is None:
        text += "\nTimes are in UTC: add `timezone:` (e.g. Europe/Berlin) to get it at your local time."
    text += "\nIt comes by DM. `/paper digest` sends one now; `/paper unsubscribe` stops it."
    if topics is None:
        await interaction.response.send_message(text, ephemeral=True)
        return
    # broad topics just given: say so, with narrower ones (as many as fit)
    for t, found in await asyncio.to_thread(_broad_topics, bot.services.search, sub.topics):
        note = "\n" + breadth_note(t, found, buttons=False)
        if len(text) + len(note) <= CONTENT_LIMIT:
            text += note
    await interaction.followup.send(text, ephemeral=True)


def _broad_topics(search: TitledIndex, topics: Sequence[str]) -> list[tuple[str, Breadth]]:
    """The first :data:`MAX_BREADTH_NOTES` broad ones of ``topics``, each with its breadth: a tenth
    of a second or more each at 36k papers, so it runs in a thread, off the event loop."""
    found: list[tuple[str, Breadth]] = []
    for topic in topics:
        if len(found) < MAX_BREADTH_NOTES and (broad := breadth(search, topic)) is not None:
            found.append((topic, broad))
    return found


@paper.command(name="unsubscribe", description="Stop your paper digest")
async def unsubscribe_command(interaction: discord.Interaction[PaperBot]) -> None:
    bot = interaction.client
    removed = await bot.services.digests.subscriptions.unsubscribe(interaction.user.id)
    if removed is None:
        await interaction.response.send_message(
            "You have no digest subscription. `/paper subscribe` starts one.", ephemeral=True
        )
        return
    bot.digest_jobs.unschedule(removed.id)
    await bot.services.digests.subscriptions.take_notice(interaction.user.id)
    await interaction.response.send_message(
        "✅ Unsubscribed: no more digests. Your interests and ratings are kept "
        "(`/paper forget-me` deletes them).",
        ephemeral=True,
    )


@paper.command(name="digest", description="Send me my paper digest by DM now")
async def digest_command(interaction: discord.Interaction[PaperBot]) -> None:
    bot = interaction.client
    limits, user_id = bot.services.limits, interaction.user.id
    if not await bot.services.digests.subscriptions.can_pick_for(user_id):
        # (a DM saying only "nothing new above the bar" would be all a newcomer got)
        await interaction.response.send_message(NOTHING_TO_DIGEST_BY, ephemeral=True)
        return
    # one at a time, and a few in a row: every digest's messages share one pace under Discord's limits
    with limits.one_at_a_time("digest", user_id, busy=DIGEST_GOING_OUT):
        limits.take("digest", user_id)
        await interaction.response.defer(ephemeral=True, thinking=True)
        sender = bot.senders.to_person(user_id)
        try:
            outcome = await bot.services.digests.delivery.deliver_now(
                user_id, sender, stopping=bot.shutting_down
            )
        except RecipientUnreachableError:
            outcome = DeliveryOutcome("unreachable")
        except DigestInterruptedError as stopped:
            log.info("/paper digest for user %s: %s", user_id, stopped)
            note = DIGEST_RESUMES if stopped.resumes else DIGEST_STOPPED
            await interaction.followup.send(note, ephemeral=True)
            return
        except Exception:
            # Whatever failed (Discord, the store), the person gets a line that says what happens next;
            # the run was let go of, and the process running the digests sends the rest.
            log.exception("/paper digest for user %s failed", user_id)
            await interaction.followup.send(DIGEST_FAILED, ephemeral=True)
            return
    await interaction.followup.send(await _digest_note(interaction, outcome), ephemeral=True)


async def _digest_note(interaction: discord.Interaction[PaperBot], outcome: DeliveryOutcome) -> str:
    bot = interaction.client
    service = bot.services.digests.subscriptions
    if outcome.status == "unreachable":
        sub = await service.for_user(interaction.user.id)
        if sub is not None:
            bot.digest_jobs.unschedule(sub.id)
        await service.take_notice(interaction.user.id)  # said here, not again at the next command
        paused = " Your scheduled digest is paused until you run `/paper subscribe` again." if sub else ""
        return f"⚠️ {DMS_CLOSED_HELP}{paused}"
    if outcome.status == "empty":
        return "📭 Sent to your DMs: nothing new above the bar right now (I said so there too)."
    if outcome.status == "sent":
        papers = counted(outcome.sent, "paper", "papers")
        return f"📬 Sent {papers} to your DMs. Rate them there with 👍 👎 🔖 to tune the next digest."
    return DIGEST_GOING_OUT


class DigestNotices(commands.Cog):
    """Tells a user, after their next command, why their digest or feed was paused and how to fix it."""

    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    @commands.Cog.listener()
    async def on_app_command_completion(
        self, interaction: discord.Interaction[PaperBot], command: object
    ) -> None:
        notice = await self.bot.services.digests.subscriptions.take_notice(interaction.user.id)
        if notice is None:
            return
        try:
            if interaction.response.is_done():
                await interaction.followup.send(f"⚠️ {notice}", ephemeral=True)
            else:
                await interaction.response.send_message(f"⚠️ {notice}", ephemeral=True)
        except discord.HTTPException:
            log.warning("could not show user %s their pending notice; keeping it", interaction.user.id)
            await self.bot.services.digests.subscriptions.keep_notice(interaction.user.id, notice)


async def setup(bot: commands.Bot) -> None:
    paper.add_to(bot)
    await bot.add_cog(DigestNotices(bot))  # type: ignore[arg-type]
