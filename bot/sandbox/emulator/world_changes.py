"""What admins and Discord change while the bot runs — people, servers, channels, roles, permissions, DMs,
the application's team — each with the gateway event Discord sends."""

from __future__ import annotations

from collections.abc import Mapping

from .effects import Effects
from .gateway import Gateway
from .lookup import Lookup
from .recorder import Changes
from .state import (
    TEAM_ROLES,
    Overwrite,
    SandboxChannel,
    SandboxGuild,
    SandboxMember,
    SandboxRole,
    SandboxTeam,
    SandboxUser,
    TeamMembership,
    World,
)


class WorldChanges:
    def __init__(
        self, world: World, *, lookup: Lookup, effects: Effects, gateway: Gateway, changes: Changes
    ) -> None:
        self.world = world
        self.lookup = lookup
        self.effects = effects
        self.gateway = gateway
        self.changes = changes

    def add_user(
        self, username: str, *, manage_guild: bool = False, dms_open: bool = True, in_guild: bool = True
    ) -> SandboxUser:
        roles = [self.world.moderators_role.id] if manage_guild else []
        user = self.world.add_user(username, roles=roles, in_guild=in_guild, dms_open=dms_open)
        if in_guild:
            member = self.world.guild.members[user.id].payload()
            self.effects.dispatch(
                "GUILD_MEMBER_ADD", {**member, "guild_id": str(self.world.guild.id)}, self.world.guild.id
            )
        return user

    def add_guild(
        self,
        name: str,
        *,
        members: Mapping[str, bool] | None = None,
        shard: tuple[int, int] | None = None,
        with_bot: bool = True,
    ) -> SandboxGuild:
        """The bot is added to another server (GUILD_CREATE to a connected bot). ``members``: username →
        Manage Server (through that server's Moderators role); a name no one has yet becomes a new user.
        Its one channel is #general (``server.guild_channel(guild, "general")``). ``shard=(shard_id,
        shard_count)``: its id routes it to that shard. ``with_bot=False``: a server the bot is not in
        (no event of it reaches the bot; people who installed the app to their account use it there)."""
        guild = self.world.add_guild(name, shard=shard, with_bot=with_bot)
        for username, manage_guild in (members or {}).items():
            user = self.world.user_named(username) or self.world.add_user(username, in_guild=False)
            self.add_to_guild(guild, user, manage_guild=manage_guild, announce=False)
        if with_bot:
            self.gateway.announce_guild(guild.id)
        self.changes.notify()
        return guild

    def group_dm(
        self, owner: SandboxUser | str, *others: SandboxUser | str, name: str | None = None
    ) -> SandboxChannel:
        """A group DM `owner` starts with `others` (the bot is never in one: only user installs reach it)."""
        return self.world.group_dm(self.lookup.user(owner), [self.lookup.user(o) for o in others], name)

    def install_app(self, user: SandboxUser | str) -> None:
        """`user` adds the application to their own account (a user install, Discord's "Add App" →
        "Try it now"): its commands that allow user installs are theirs in every server and DM."""
        self.world.user_installs.add(self.lookup.user(user).id)
        self.changes.notify()

    def add_to_guild(
        self,
        guild: SandboxGuild,
        user: SandboxUser | str,
        *,
        manage_guild: bool = False,
        announce: bool = True,
    ) -> SandboxMember:
        """`user` joins `guild` (GUILD_MEMBER_ADD)."""
        user = self.lookup.user(user)
        roles = [self.world.moderators_of(guild).id] if manage_guild else []
        member = self.world.add_member(user, roles=roles, guild=guild)
        if announce:
            self.effects.dispatch(
                "GUILD_MEMBER_ADD", {**member.payload(), "guild_id": str(guild.id)}, guild.id
            )
        return member

    def set_application_team(
        self,
        owner: SandboxUser | str,
        members: Mapping[str, str] | None = None,
        *,
        invited: Mapping[str, str] | None = None,
    ) -> SandboxTeam:
        """A developer team now owns the application: `owner` (listed as an admin member, as Discord
        does), ``members`` (username → "admin", "developer" or "read_only") who accepted, and ``invited``
        ones who did not yet. The application's ``owner`` becomes the team's pseudo-user."""
        team_owner = self.lookup.user(owner)
        memberships = [TeamMembership(team_owner, "admin")]
        for accepted, listed in ((True, members or {}), (False, invited or {})):
            for username, role in listed.items():
                if role not in TEAM_ROLES:
                    raise ValueError(f"a team member's role is one of {', '.join(TEAM_ROLES)}, not {role!r}")
                memberships.append(TeamMembership(self.lookup.user(username), role, accepted=accepted))
        team = SandboxTeam(
            self.world.snowflakes.next(), f"{self.world.application.name} team", team_owner, memberships
        )
        self.world.application.team = team
        return team

    def remove_member(self, user: SandboxUser | str) -> None:
        user = self.lookup.user(user)
        self.world.guild.members.pop(user.id, None)
        self.effects.dispatch(
            "GUILD_MEMBER_REMOVE",
            {"guild_id": str(self.world.guild.id), "user": user.payload()},
            self.world.guild.id,
        )

    def set_manage_guild(self, user: SandboxUser | str, allowed: bool) -> None:
        """Give or take the Moderators role (Manage Server)."""
        user = self.lookup.user(user)
        member = self.world.guild.members[user.id]
        role = self.world.moderators_role.id
        if allowed and role not in member.role_ids:
            member.role_ids.append(role)
        elif not allowed and role in member.role_ids:
            member.role_ids.remove(role)
        self.effects.dispatch(
            "GUILD_MEMBER_UPDATE",
            {**member.payload(), "guild_id": str(self.world.guild.id)},
            self.world.guild.id,
        )

    def close_dms(self, user: SandboxUser | str) -> None:
        """The user blocks the bot / closes DMs: the bot's next DM gets 403 50007."""
        self.lookup.user(user).dms_open = False

    def open_dms(self, user: SandboxUser | str) -> None:
        self.lookup.user(user).dms_open = True

    def add_channel(self, name: str, *, topic: str | None = None) -> SandboxChannel:
        channel = self.world.add_channel(name, topic=topic)
        self.effects.dispatch("CHANNEL_CREATE", channel.payload(), self.world.guild.id)
        return channel

    def delete_channel(self, channel: SandboxChannel | str) -> None:
        """Delete a channel (CHANNEL_DELETE); the bot's next post there gets 404 10003."""
        channel = self.lookup.channel(channel)
        channel.deleted = True
        self.effects.dispatch("CHANNEL_DELETE", channel.payload(), channel.guild_id)

    def set_permissions(
        self,
        channel: SandboxChannel | str,
        target: SandboxUser | SandboxRole | str,
        *,
        allow: int = 0,
        deny: int = 0,
    ) -> None:
        """Set a channel permission overwrite (e.g. deny the bot SEND_MESSAGES: posts get 50013)."""
        channel = self.lookup.channel(channel)
        if isinstance(target, SandboxRole):
            target_id, kind = target.id, 0
        else:
            target_id, kind = self.lookup.user(target).id, 1
        channel.overwrites = [o for o in channel.overwrites if o.id != target_id]
        if allow or deny:
            channel.overwrites.append(Overwrite(target_id, kind, allow, deny))
        self.effects.dispatch("CHANNEL_UPDATE", channel.payload(), channel.guild_id)

    def set_presence(self, user: SandboxUser | str, status: str = "online") -> None:
        """PRESENCE_UPDATE (only sessions with the GUILD_PRESENCES intent get it)."""
        user = self.lookup.user(user)
        self.world.presences[user.id] = status
        self.effects.dispatch(
            "PRESENCE_UPDATE",
            {
                "user": {"id": str(user.id)},
                "guild_id": str(self.world.guild.id),
                "status": status,
                "activities": [],
                "client_status": {"desktop": status} if status != "offline" else {},
            },
            self.world.guild.id,
        )
