"""/paperadmin ingest (the bot's operators) and /paperadmin stats (Manage Server, this server's counts)."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserFacingError
from bot.exts._groups import Subcommands
from bot.log import interaction_ids
from bot.services.admin.operators import ApplicationOwnership, Operators, TeamMember, operators_of
from bot.services.admin.stats import AdminStats, gather_guild_stats
from bot.services.papers.arxiv_fetch import last_fetch
from bot.services.papers.ingest.runner import IngestSummary, ingest_bytes
from bot.services.search.snippets import echo
from bot.services.write_behind import DEAD_AFTER, DEAD_RETRY_EVERY, OutboxState
from bot.ui.embeds import CONTENT_LIMIT, FIELD_VALUE_LIMIT, TITLE_LIMIT
from bot.ui.format import counted, file_size, trim, trim_markdown
from storage.models import SourceFetch

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

paperadmin = Subcommands("paperadmin")

ADMIN_COLOUR = discord.Colour(0x64748B)
PROBLEMS_FILE = "rejected.txt"
FEEDS_SHOWN = 5


def _ownership(app: discord.AppInfo | None) -> ApplicationOwnership | None:
    if app is None:
        return None
    if app.team is None:
        return ApplicationOwnership(owner_id=app.owner.id)
    return ApplicationOwnership(
        owner_id=None,
        team_owner_id=app.team.owner_id,
        team_members=tuple(
            TeamMember(m.id, m.role.value, m.membership_state is discord.TeamMembershipState.accepted)
            for m in app.team.members
        ),
    )


async def current_operators(bot: PaperBot) -> Operators:
    """The operators as Discord says now (a team can change while the bot runs); if Discord cannot be
    asked, as it said at login."""
    try:
        app: discord.AppInfo | None = await bot.application_info()
    except discord.HTTPException as error:
        log.warning("could not fetch the application's owners (%s); using those seen at login", error)
        app = bot.application
    return operators_of(_ownership(app), bot.settings.operator_ids)


OPERATORS_SHOWN = 5


def operators_only(operators: Operators) -> str:
    """The refusal for someone who is not an operator: why, and who may do it."""
    ids = operators.ids()
    named = ", ".join(f"<@{user_id}>" for user_id in ids[:OPERATORS_SHOWN])
    if len(ids) > OPERATORS_SHOWN:
        named += f" and {len(ids) - OPERATORS_SHOWN} more"
    who = f" ({named})" if named else ""
    return (
        "Only paperbot's operators can load papers from Discord: the corpus is shared by every server and "
        "every DM digest, so a server's admins cannot change it. Operators are the owner of the bot's "
        "Discord application (or the admins and developers of its team) and the people its host lists in "
        f"PAPERBOT_OPERATORS{who}. Ask one of them, or the host can run `paperbot ingest` on the server."
    )


@paperadmin.command(
    name="ingest",
    description="Load papers from an attached file into the corpus every server shares (bot operators)",
)
@app_commands.describe(
    file="A paper list (.txt), JSON or JSONL records, or an arXiv API response; .gz accepted"
)
async def ingest_command(interaction: discord.Interaction[PaperBot], file: discord.Attachment) -> None:
    services = interaction.client.services
    await interaction.response.defer(ephemeral=True, thinking=True)
    operators = await current_operators(interaction.client)
    if not operators.allows(interaction.user.id):
        log.info("ingest refused: not an operator (%s)", interaction_ids(interaction))
        raise UserFacingError(operators_only(operators))
    limit = services.settings.max_ingest_bytes
    if file.size > limit:
        raise UserFacingError(
            f"{echo(file.filename)} is {file_size(file.size)}; I accept files up to {file_size(limit)} here. "
            "Split it, or load it with `paperbot ingest` on the server."
        )
    try:
        data = await file.read()
    except discord.HTTPException as error:
        raise UserFacingError(
            f"I could not download {echo(file.filename)} from Discord; try again."
        ) from error
    if len(data) > limit:  # the size Discord announced was wrong
        raise UserFacingError(f"{echo(file.filename)} is larger than {file_size(limit)}.")

    # Decompressed (within PAPERBOT_MAX_DECOMPRESSED_MB) and parsed in a worker thread: the bot goes
    # on answering everyone meanwhile.
    summary = await ingest_bytes(
        services.db, file.filename, data, max_bytes=services.settings.max_decompressed_bytes
    )
    indexed = await services.index.refresh()
    log.info(
        "ingest %s: added %d, merged %d, unchanged %d, rejected %d; %d papers (re)indexed (%s)",
        file.filename,
        summary.added,
        summary.merged,
        summary.unchanged,
        summary.rejected,
        indexed,
        interaction_ids(interaction),
    )
    text, problems_file = render_ingest_summary(file.filename, summary)
    if problems_file is None:
        await interaction.followup.send(text, ephemeral=True)
    else:
        await interaction.followup.send(text, ephemeral=True, file=problems_file)


def render_ingest_summary(filename: str, summary: IngestSummary) -> tuple[str, discord.File | None]:
    """The ephemeral answer (within Discord's 2000 characters) and, when the reasons do not all fit,
    a text file listing every rejected record."""
    name = echo(filename)
    head = (
        f"**{name}**: added **{summary.added}**, merged **{summary.merged}**, "
        f"unchanged {summary.unchanged}, rejected **{summary.rejected}**."
    )
    if summary.added or summary.merged:
        head += " New and updated papers are searchable now."
    elif not summary.rejected:
        head += " Nothing new: every paper was already there."
    problems = [str(problem) for problem in summary.problems]
    if not problems:
        return head, None
    lines = [head, "", "Rejected:"]
    budget = CONTENT_LIMIT - 120  # room for the "and N more" line
    shown = 0
    for problem in problems:
        line = f"• {discord.utils.escape_markdown(trim(problem, 300))}"
        if sum(len(x) + 1 for x in lines) + len(line) > budget:
            break
        lines.append(line)
        shown += 1
    if shown == len(problems):
        return "\n".join(lines), None
    lines.append(f"…and {len(problems) - shown} more: every reason is in the attached {PROBLEMS_FILE}.")
    attachment = discord.File(io.BytesIO(("\n".join(problems) + "\n").encode()), filename=PROBLEMS_FILE)
    return "\n".join(lines), attachment


@paperadmin.command(
    name="stats", description="This server's people, subscriptions, reactions and next digests; papers"
)
@app_commands.checks.has_permissions(manage_guild=True)
async def stats_command(interaction: discord.Interaction[PaperBot]) -> None:
    if interaction.guild_id is None:
        raise app_commands.NoPrivateMessage()
    await interaction.response.defer(ephemeral=True, thinking=True)
    services = interaction.client.services
    stats = await gather_guild_stats(
        services.db, interaction.guild_id, datetime.now(UTC), outbox=services.writes.state()
    )
    last_fetch = await _last_fetch_line(interaction.client)
    guild_name = interaction.guild.name if interaction.guild is not None else None
    embed = render_stats(
        stats,
        last_fetch=last_fetch,
        guild_id=interaction.guild_id,
        guild_name=guild_name,
        searchable=len(services.search),
    )
    await interaction.followup.send(embed=embed, ephemeral=True)


async def _last_fetch_line(bot: PaperBot) -> str:
    fetched = await last_fetch(bot.services.db)
    categories = " ".join(bot.services.settings.arxiv_categories)
    daily = (
        f"daily fetch of {categories} at {bot.services.settings.arxiv_fetch_time} UTC" if categories else ""
    )
    if fetched is None:
        return f"never ({daily} set up)" if daily else "never (no daily fetch set up)"
    try:
        when = _when(datetime.fromisoformat(fetched))
    except ValueError:
        when = fetched
    return f"{when}\n{daily}" if daily else when


def _when(moment: datetime) -> str:
    stamp = int(moment.timestamp())
    return f"<t:{stamp}:f> (<t:{stamp}:R>)"


def render_stats(
    stats: AdminStats, *, last_fetch: str, guild_id: int, guild_name: str | None, searchable: int
) -> discord.Embed:
    """One server's stats: its own people, subscriptions, reactions and digests, and the shared papers."""
    counts = stats.counts
    title = (
        f"paperbot stats for {discord.utils.escape_markdown(guild_name)}"
        if guild_name
        else "paperbot stats for this server"
    )
    embed = discord.Embed(title=trim(title, TITLE_LIMIT), colour=ADMIN_COLOUR)
    embed.set_footer(text="Counts of this server only; the papers are shared by every server.")
    papers = f"{counts.papers:,} ({searchable:,} searchable)"
    if counts.derived_titles:
        papers += f"\n{counts.derived_titles:,} with a derived title"
    embed.add_field(name="Papers (every server)", value=papers)
    embed.add_field(
        name="People here",
        value=(
            f"{counts.users:,} rated papers or set up a digest here\n"
            f"{counted(counts.feedback, 'reaction or save', 'reactions and saves')}"
        ),
    )
    embed.add_field(
        name="Subscriptions here",
        value=(
            f"{counted(counts.subscriptions, 'DM digest', 'DM digests')}\n"
            f"{counted(counts.channel_feeds, 'channel feed', 'channel feeds')}\n"
            f"{counts.paused_subscriptions:,} paused"
        ),
    )
    embed.add_field(name="Last arXiv fetch", value=trim(last_fetch, FIELD_VALUE_LIMIT), inline=False)
    if stats.sources:
        embed.add_field(name="Sources (every server)", value=_sources_value(stats.sources), inline=False)
    outlook = stats.digests
    if outlook.next is None:
        upcoming = "none scheduled"
    else:
        upcoming = f"next {_when(outlook.next.due_utc)}\n{outlook.due_within_day:,} in the next 24 hours"
    embed.add_field(
        name="Next digests here", value=f"{upcoming}\n{counts.digests_sent:,} sent so far", inline=False
    )
    feeds = outlook.feeds_of(guild_id)
    if feeds:
        lines = [f"<#{feed.channel_id}> {_when(feed.due_utc)}" for feed in feeds[:FEEDS_SHOWN]]
        if len(feeds) > FEEDS_SHOWN:
            lines.append(f"…and {len(feeds) - FEEDS_SHOWN} more (`/paperadmin feed list`)")
        embed.add_field(
            name="This server's feeds", value=trim_markdown("\n".join(lines), FIELD_VALUE_LIMIT), inline=False
        )
    if stats.outbox is not None:
        embed.add_field(
            name="Not stored yet (this bot process)", value=_outbox_line(stats.outbox), inline=False
        )
    return embed


def _source_line(fetch: SourceFetch) -> str:
    """One source: its last fetch and what it brought, its count in all, and a failure since."""
    name = discord.utils.escape_markdown(fetch.source)
    if fetch.last_fetch_at:
        try:
            when = _when(datetime.fromisoformat(fetch.last_fetch_at))
        except ValueError:
            when = fetch.last_fetch_at
        line = (
            f"`{name}` {when}: {fetch.last_records:,} read, {fetch.last_added:,} new; "
            f"{fetch.total_records:,} read, {fetch.total_added:,} new in all"
        )
    else:
        line = f"`{name}` never fetched in full"
    if fetch.cursor:
        line += " (an interrupted fetch resumes next run)"
    if fetch.last_error:
        line += f"\n  last attempt failed: {discord.utils.escape_markdown(fetch.last_error[:160])}"
    return line


def _sources_value(sources: Sequence[SourceFetch]) -> str:
    """Every source's line, as many as fit in a field (Discord: 1024 characters), then how many more."""
    lines: list[str] = []
    for shown, fetch in enumerate(sources):
        line = _source_line(fetch)
        more = f"\n…and {len(sources) - shown} more (`paperbot stats` lists them all)"
        if len("\n".join([*lines, line])) + len(more) > FIELD_VALUE_LIMIT:
            return "\n".join(lines) + more
        lines.append(line)
    return "\n".join(lines)


def _outbox_line(outbox: OutboxState) -> str:
    """What the process accepted (reactions, clicks, listings) and the store does not have yet."""
    line = f"{counted(outbox.waiting, 'write', 'writes')} (reactions, clicks, listings)"
    if outbox.refused_for is not None:
        line += f"; the store has refused writes for {outbox.refused_for:.0f} s"
    if outbox.dead:
        line += (
            f"\nIn the dead letter (refused for {DEAD_AFTER / 3600:g} h or more, tried every "
            f"{DEAD_RETRY_EVERY / 60:g} min until stored): {outbox.dead:,}"
        )
    return line


class CommandLog(commands.Cog):
    """Operations: one log line per completed slash command, with its ids (failures are logged by
    the command tree's error handler)."""

    @commands.Cog.listener()
    async def on_app_command_completion(
        self,
        interaction: discord.Interaction[PaperBot],
        command: app_commands.Command[commands.Cog, ..., object] | app_commands.ContextMenu,
    ) -> None:
        elapsed_ms = (discord.utils.utcnow() - interaction.created_at).total_seconds() * 1000
        log.info("command done in %.0f ms (%s)", elapsed_ms, interaction_ids(interaction))


async def setup(bot: PaperBot) -> None:
    paperadmin.add_to(bot)
    await bot.add_cog(CommandLog())
