"""Slash-command errors become one friendly ephemeral line; unexpected ones are logged with context."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.errors import USER_FACING
from storage.repositories.interests import InterestLimitError

if TYPE_CHECKING:
    from bot.app import PaperBot

log = logging.getLogger(__name__)

GENERIC_FAILURE = "Something went wrong on my side; it has been logged. Please try again in a moment."


def friendly_message(error: Exception) -> str | None:
    """The line to show for an error the user can act on, or None for an unexpected one."""
    # discord.py wraps a command's own exception (``.original``); a user-facing error may also have
    # been raised from another one (its ``__cause__`` is then not what the user should read)
    for candidate in (getattr(error, "original", None), error, error.__cause__):
        if isinstance(candidate, USER_FACING):
            return str(candidate)
        if isinstance(candidate, InterestLimitError):  # several topics added at once, past the cap
            return f"You already follow {candidate.limit} interests; remove one with `/paper interests remove` first."
    if isinstance(error, app_commands.MissingPermissions):
        return "You need the Manage Server permission for this command."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command only works in a server channel."
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down a little: try again in {error.retry_after:.0f} s."
    if isinstance(error, app_commands.TransformerError):
        return f"I could not understand {error.value!r} for that option."
    if isinstance(error, app_commands.CheckFailure):
        return "You cannot use this command here."
    return None


def expired(error: Exception) -> bool:
    """Whether Discord refused an interaction's first response because it came after 3 s (10062)."""
    original = getattr(error, "original", error)
    return isinstance(original, discord.NotFound) and original.code == 10062


async def reply_ephemeral(interaction: discord.Interaction, message: str) -> None:
    """Send `message` ephemerally whether or not the interaction was already answered."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(message, ephemeral=True)
        else:
            await interaction.response.send_message(message, ephemeral=True)
    except discord.HTTPException:
        log.warning("could not tell user %s about an error", interaction.user.id, exc_info=True)


async def report_error(
    interaction: discord.Interaction,
    error: Exception,
    what: str,
    *,
    detail: str | None = None,
    logger: logging.Logger = log,
) -> None:
    """Answer a failed command or component: the friendly line for an error the user can act on; for
    an unexpected one, log ``what`` failed (with where and who) and apologise. ``what`` names the
    command or button only; ``detail`` — what the person was doing it with (a paper they rated, a topic
    they chose) — is logged at DEBUG only, as everything a person typed or rated."""
    if detail is not None:
        logger.debug("%s: %s (user=%s)", what, detail, interaction.user.id)
    if expired(error):
        # No first response within Discord's 3 s: any answer now is refused the same way, and a
        # traceback per late answer would only make a busy bot later still.
        logger.warning(
            "%s answered too late: Discord had expired the interaction (10062; guild=%s channel=%s user=%s)",
            what,
            interaction.guild_id,
            interaction.channel_id,
            interaction.user.id,
        )
        return
    message = friendly_message(error)
    if message is None:
        logger.error(
            "%s failed (guild=%s channel=%s user=%s)",
            what,
            interaction.guild_id,
            interaction.channel_id,
            interaction.user.id,
            exc_info=error,
        )
        message = GENERIC_FAILURE
    await reply_ephemeral(interaction, message)


class PaperTree(app_commands.CommandTree["PaperBot"]):
    async def on_error(
        self, interaction: discord.Interaction[PaperBot], error: app_commands.AppCommandError
    ) -> None:
        command = interaction.command.qualified_name if interaction.command else "?"
        await report_error(interaction, error, f"command /{command}")
