"""The slash-command groups, made afresh for each bot, and how an extension adds its commands to them.

`/paper` (with `/paper interests`) and `/paperadmin` (with `/paperadmin feed`) belong to the bot
(`PaperBot.command_groups`). An extension collects its commands at import with `Subcommands`,
decorated as a group's own commands would be, and adds them to its bot's groups in ``setup(bot)``.
discord.py runs an extension's module afresh for every load, so another bot in the same process, or
a reload, gets commands of its own; nothing is shared between bots and nothing is reloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import discord
from discord import app_commands
from discord.app_commands.commands import CommandCallback

AnyCommand = app_commands.Command[Any, ..., Any]

#: `/paper` and the message commands: for a server that added the bot and for a person who installed
#: the app to their account, in servers (with or without the bot), the bot's DMs, DMs and group DMs.
#: `/paperadmin` is the server's own: installed with the bot, in that server only.
ANYWHERE_INSTALLS = app_commands.AppInstallationType(guild=True, user=True)
ANYWHERE_CONTEXTS = app_commands.AppCommandContext(guild=True, dm_channel=True, private_channel=True)


@dataclass(frozen=True)
class CommandGroups:
    paper: app_commands.Group
    interests: app_commands.Group
    paperadmin: app_commands.Group
    feed: app_commands.Group
    club: app_commands.Group
    club_admin: app_commands.Group

    @property
    def top_level(self) -> tuple[app_commands.Group, ...]:
        """What the bot adds to its command tree."""
        return (self.paper, self.paperadmin)

    def at(self, path: tuple[str, ...]) -> app_commands.Group:
        """The group named by its path, e.g. ("paper",) or ("paperadmin", "feed")."""
        for group in (self.paper, self.interests, self.club, self.paperadmin, self.feed, self.club_admin):
            if tuple(group.qualified_name.split()) == path:
                return group
        raise KeyError(f"there is no /{' '.join(path)} group")


def make_groups() -> CommandGroups:
    """Fresh, empty groups (subgroups first, so they come first in /paper and /paperadmin)."""
    paper = app_commands.Group(
        name="paper",
        description="Find, follow and rate research papers",
        allowed_installs=ANYWHERE_INSTALLS,
        allowed_contexts=ANYWHERE_CONTEXTS,
    )
    interests = app_commands.Group(
        name="interests", description="See and steer what paperbot learned about you", parent=paper
    )
    paperadmin = app_commands.Group(
        name="paperadmin",
        description="Server set-up for paperbot: channel feeds, stats; loading papers (bot operators)",
        # Hidden from members without Manage Server (server admins can change who sees them);
        # each command also checks the permission when it runs.
        default_permissions=discord.Permissions(manage_guild=True),
        allowed_installs=app_commands.AppInstallationType(guild=True, user=False),
        allowed_contexts=app_commands.AppCommandContext(guild=True, dm_channel=False, private_channel=False),
    )
    club = app_commands.Group(name="club", description="This channel's reading group", parent=paper)
    feed = app_commands.Group(name="feed", description="A channel's own paper feed", parent=paperadmin)
    club_admin = app_commands.Group(
        name="club", description="A channel's weekly reading group: poll, winner, thread", parent=paperadmin
    )
    return CommandGroups(
        paper=paper, interests=interests, paperadmin=paperadmin, feed=feed, club=club, club_admin=club_admin
    )


class Subcommands:
    """The commands one extension adds to one group: ``paper = Subcommands("paper")``, then
    ``@paper.command(name=..., description=...)`` on each, and ``paper.add_to(bot)`` in ``setup``."""

    def __init__(self, *path: str) -> None:
        self.path = path
        self.commands: list[AnyCommand] = []

    def command(self, **options: Any) -> Callable[[CommandCallback[Any, ..., Any]], AnyCommand]:
        """Like ``app_commands.Group.command``, but the command joins a group only in ``add_to``."""
        make = app_commands.command(**options)

        def decorator(callback: CommandCallback[Any, ..., Any]) -> AnyCommand:
            command: AnyCommand = make(callback)
            self.commands.append(command)
            return command

        return decorator

    def add_to(self, bot: discord.Client) -> None:
        """Add the commands to ``bot``'s group. A command this extension added before (a reload) is
        replaced; a name another extension took is an error."""
        groups = getattr(bot, "command_groups", None)
        if not isinstance(groups, CommandGroups):
            raise TypeError("extensions add their commands to a PaperBot's command_groups")
        group = groups.at(self.path)
        for command in self.commands:
            existing = group.get_command(command.name)
            if existing is not None and getattr(existing, "module", None) != command.module:
                raise app_commands.CommandAlreadyRegistered(command.qualified_name, guild_id=None)
            group.add_command(command, override=True)
