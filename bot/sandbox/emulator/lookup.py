"""Finding what a test or a console line names: a user, a channel, "dm", a server's channel."""

from __future__ import annotations

from .recorder import ClientRefused
from .state import SandboxChannel, SandboxGuild, SandboxUser, World


class Lookup:
    """Names (``"bob"``, ``"papers"``, ``"dm"``), ids or the objects themselves, to the world's objects;
    ``ClientRefused`` (listing what there is) for a name the world does not know."""

    def __init__(self, world: World) -> None:
        self.world = world

    @property
    def guild(self) -> SandboxGuild:
        return self.world.guild

    def user(self, who: SandboxUser | str | int) -> SandboxUser:
        if isinstance(who, SandboxUser):
            return who
        user = self.world.users.get(who) if isinstance(who, int) else self.world.user_named(str(who))
        if user is None:
            raise ClientRefused(
                f"no sandbox user {who!r}; users: {', '.join(u.username for u in self.world.humans())}"
            )
        return user

    def channel(self, which: SandboxChannel | str | int) -> SandboxChannel:
        if isinstance(which, SandboxChannel):
            return which
        channel = (
            self.world.channel(which) if isinstance(which, int) else self.guild.channel_named(str(which))
        )
        if channel is None:
            names = ", ".join(f"#{c.name}" for c in self.guild.text_channels())
            raise ClientRefused(f"no channel {which!r}; channels: {names}")
        return channel

    def dm_channel(self, user: SandboxUser | str) -> SandboxChannel:
        return self.world.dm_channel(self.user(user))

    def guild_channel(self, guild: SandboxGuild, name: str) -> SandboxChannel:
        channel = guild.channel_named(name)
        if channel is None:
            raise ClientRefused(f"no channel #{name} in {guild.name}")
        return channel

    def where(self, where: SandboxChannel | str | int | None, user: SandboxUser) -> SandboxChannel:
        if where is None:
            return self.guild.text_channels()[0]
        if isinstance(where, str) and where.lower() in ("dm", "dms", "@me"):
            return self.world.dm_channel(user)
        return self.channel(where)
