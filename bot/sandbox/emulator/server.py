"""`SandboxServer`: a local Discord (REST /api/v10 + gateway) for tests and `paperbot sandbox`.

    async with SandboxServer() as server:
        discord.http.Route.BASE = server.api_base          # REST to the sandbox
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(server.gateway_url)
        ...start any discord.py bot with server.token, sync its commands...
        result = await server.run_command(server.alice, "paper search", query="kv cache", limit=3)
        assert "KV" in result.text

`bot.sandbox.harness` does this for paperbot. See tests/README.md ("The sandbox") for the whole
user-side API.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .actions import UserActions
from .addresses import Addresses
from .effects import Effects
from .faults import Faults
from .gateway import Gateway
from .interactions import Interactions
from .lookup import Lookup
from .nonces import NonceMemory
from .options import SandboxOptions
from .polls import PollRoutes, PollVotes
from .ratelimits import RateLimits
from .recorder import Changes, ClientRefused, GatewayRecord, RecordedRequest, Recorder
from .rest_commands import CommandRoutes
from .rest_interactions import InteractionRoutes
from .rest_messages import MessageRoutes
from .rest_users import UserRoutes
from .routing import ApiRouter
from .state import SandboxChannel, SandboxClock, SandboxGuild, SandboxMessage, SandboxUser, World
from .threads import Threads
from .waits import Waits
from .world_changes import WorldChanges

log = logging.getLogger(__name__)

JSON = dict[str, Any]


class SandboxServer:
    """A local Discord: seeded world, REST, gateway, recorder, faults and a user-side API.

    The parts, each its own concern: ``world`` (the state), ``effects`` (what a change does, with its
    gateway events), ``actions`` (what people do), ``waits``, ``world_changes`` (what admins and
    Discord change), ``router`` and the REST routes, ``gateway``. The user-side API tests and the
    console use (tests/README.md, "The sandbox") is the parts' own methods, named here.
    """

    def __init__(self, options: SandboxOptions | None = None, **overrides: Any) -> None:
        self.options = options or SandboxOptions()
        for key, value in overrides.items():
            if not hasattr(self.options, key):
                raise TypeError(f"unknown sandbox option {key!r}")
            setattr(self.options, key, value)
        self.clock = SandboxClock()
        self.world = World(self.clock)
        self.changes = Changes()
        self.recorder = Recorder(self.changes)
        self.faults = Faults()
        self.nonces = NonceMemory(self.clock, self.options.nonce_window)
        self.rates = RateLimits(
            self.options.rate_limit, self.options.rates, now=self.clock.monotonic, wall=self.clock.time
        )
        self.addresses = Addresses(self.options.host, self.options.port)
        self.gateway = Gateway(self.world, self.options, self.recorder, self.changes, self.addresses)
        self.interactions = Interactions(self.changes)
        self.lookup = Lookup(self.world)
        self.effects = Effects(
            self.world,
            gateway=self.gateway,
            changes=self.changes,
            nonces=self.nonces,
            options=self.options,
            addresses=self.addresses,
            clock=self.clock,
        )
        self.router = ApiRouter(
            token=self.options.token,
            recorder=self.recorder,
            faults=self.faults,
            interactions=self.interactions,
            changes=self.changes,
            rates=self.rates,
        )
        self.threads = Threads(self.world, lookup=self.lookup, effects=self.effects)
        self.actions = UserActions(
            self.world,
            lookup=self.lookup,
            effects=self.effects,
            threads=self.threads,
            gateway=self.gateway,
            interactions=self.interactions,
            changes=self.changes,
            recorder=self.recorder,
            clock=self.clock,
            options=self.options,
            addresses=self.addresses,
        )
        self.waits = Waits(
            self.world,
            lookup=self.lookup,
            effects=self.effects,
            gateway=self.gateway,
            changes=self.changes,
            recorder=self.recorder,
        )
        self.world_changes = WorldChanges(
            self.world, lookup=self.lookup, effects=self.effects, gateway=self.gateway, changes=self.changes
        )
        self._runner: web.AppRunner | None = None

        # -- the user-side API: who and where
        self.user = self.lookup.user
        self.channel = self.lookup.channel
        self.dm_channel = self.lookup.dm_channel
        self.guild_channel = self.lookup.guild_channel
        # what users do
        self.run_command = self.actions.run_command
        self.autocomplete = self.actions.autocomplete
        self.message_command = self.actions.message_command
        self.click = self.actions.click
        self.select = self.actions.select
        self.submit_modal = self.actions.submit_modal
        self.react = self.actions.react
        self.unreact = self.actions.unreact
        self.send_message = self.actions.send_message
        # waiting
        self.next_message = self.waits.next_message
        self.wait_for_request = self.waits.wait_for_request
        self.wait_for_dispatch = self.waits.wait_for_dispatch
        self.wait_until_connected = self.waits.wait_until_connected
        self.wait_quiet = self.waits.wait_quiet
        self.eventually = self.waits.eventually
        # what admins and Discord change
        self.add_user = self.world_changes.add_user
        self.add_guild = self.world_changes.add_guild
        self.install_app = self.world_changes.install_app
        self.group_dm = self.world_changes.group_dm
        self.add_to_guild = self.world_changes.add_to_guild
        self.set_application_team = self.world_changes.set_application_team
        self.remove_member = self.world_changes.remove_member
        self.set_manage_guild = self.world_changes.set_manage_guild
        self.close_dms = self.world_changes.close_dms
        self.open_dms = self.world_changes.open_dms
        self.add_channel = self.world_changes.add_channel
        self.delete_channel = self.world_changes.delete_channel
        self.set_permissions = self.world_changes.set_permissions
        self.set_presence = self.world_changes.set_presence
        # threads and forum posts
        self.add_thread = self.threads.add_thread
        self.add_forum = self.threads.add_forum
        self.add_forum_post = self.threads.add_forum_post
        self.archive_thread = self.threads.archive
        # polls: vote(user, message, answer id | text), unvote(...)
        self.polls = PollVotes(self.world, lookup=self.lookup, effects=self.effects)
        self.vote = self.polls.vote
        self.unvote = self.polls.unvote
        # every message created, updated or deleted
        self.subscribe = self.effects.subscribe

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> SandboxServer:
        router = self.router

        @web.middleware
        async def api_middleware(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            return await router.handle(request, handler)

        app = web.Application(middlewares=[api_middleware], client_max_size=64 * 1024 * 1024)
        users = UserRoutes(self.world, options=self.options, addresses=self.addresses)
        messages = MessageRoutes(self.world, effects=self.effects, threads=self.threads)
        users.register(app)
        CommandRoutes(self.world, changes=self.changes).register(app)
        messages.register(app)
        PollRoutes(self.world, effects=self.effects).register(app)
        users.register_guilds(app)
        InteractionRoutes(
            self.world,
            effects=self.effects,
            interactions=self.interactions,
            clock=self.clock,
            options=self.options,
        ).register(app)
        messages.register_attachments(app)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/gateway-resume", self.gateway.handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        await site.start()
        self.addresses.port = int(self._runner.addresses[0][1])
        log.info("sandbox Discord listening on %s", self.base_url)
        return self

    async def close(self) -> None:
        await self.gateway.close_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SandboxServer:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- addresses ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self.addresses.base_url

    @property
    def api_base(self) -> str:
        """For `DISCORD_API_BASE` / `discord.http.Route.BASE`."""
        return self.addresses.api_base

    @property
    def gateway_url(self) -> str:
        """For `DISCORD_GATEWAY_URL` / `DiscordWebSocket.DEFAULT_GATEWAY`."""
        return self.addresses.gateway_url

    @property
    def resume_gateway_url(self) -> str:
        return self.addresses.resume_gateway_url

    @property
    def token(self) -> str:
        return self.options.token

    def attachment_url(self, channel_id: int, attachment_id: int, filename: str) -> str:
        return self.addresses.attachment_url(channel_id, attachment_id, filename)

    # -- the world, for tests -----------------------------------------------------------------------

    @property
    def bot_user(self) -> SandboxUser:
        return self.world.bot_user

    @property
    def application_id(self) -> int:
        return self.world.application.id

    @property
    def guild(self) -> SandboxGuild:
        return self.world.guild

    @property
    def app_owner(self) -> SandboxUser:
        """The user who owns the bot's application (and the guilds); a team's owner once a team owns it."""
        team = self.world.application.team
        return team.owner if team is not None else self.world.owner

    @property
    def alice(self) -> SandboxUser:
        """A member with Manage Server (through the Moderators role)."""
        return self.world.alice

    @property
    def bob(self) -> SandboxUser:
        """A member without special permissions."""
        return self.world.bob

    @property
    def carol(self) -> SandboxUser:
        return self.world.carol

    def messages_in(
        self, channel: SandboxChannel | str | int, *, include_ephemeral: bool = False
    ) -> list[SandboxMessage]:
        return self.world.messages_in(self.lookup.channel(channel), include_ephemeral=include_ephemeral)

    def dm_messages(self, user: SandboxUser | str) -> list[SandboxMessage]:
        """Every message in the DM between the bot and `user` (oldest first)."""
        user = self.lookup.user(user)
        channel = self.world.dm_channels.get(user.id)
        return self.world.messages_in(channel) if channel is not None else []

    def message(self, message_id: int) -> SandboxMessage | None:
        return self.world.message(message_id)

    def commands(self, guild: SandboxGuild | int | None = None) -> list[JSON]:
        """The commands the bot synced globally (guild=None) or to a guild, as Discord stored them."""
        scope = guild.id if isinstance(guild, SandboxGuild) else guild
        return list(self.world.commands.get(scope, {}).values())

    def command(self, name: str, *, guild: SandboxGuild | int | None = None) -> JSON | None:
        return next((c for c in self.commands(guild) if c["name"] == name), None)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.recorder.requests

    def requests_matching(self, pattern: str) -> list[RecordedRequest]:
        """Recorded requests matching "METHOD /path/*/pattern" (`*` one segment, `**` the rest)."""
        return self.recorder.requests_matching(pattern)

    @property
    def unhandled_requests(self) -> list[RecordedRequest]:
        return self.recorder.unhandled_requests()

    @property
    def gateway_events(self) -> list[GatewayRecord]:
        return self.recorder.gateway

    def dispatched(self, event: str | None = None) -> list[GatewayRecord]:
        """Dispatch payloads sent to the bot (optionally of one event type)."""
        return self.recorder.dispatched(event)

    # -- gateway controls --------------------------------------------------------------------------------

    async def drop_gateway(self, code: int = 4000) -> None:
        """Close the bot's gateway connection with `code`; discord.py then RESUMEs on resume_gateway_url."""
        if not await self.gateway.drop(code):
            raise ClientRefused("no gateway connection to drop")

    async def send_reconnect(self) -> None:
        """Send op 7 RECONNECT: the client closes and RESUMEs."""
        await self.gateway.send_reconnect()

    async def invalidate_session(self, *, resumable: bool = False) -> None:
        """Send op 9 INVALID_SESSION (not resumable: the client IDENTIFYs afresh)."""
        await self.gateway.invalidate(resumable=resumable)
