"""`SandboxServer`: a local Discord (REST /api/v10 + gateway) for tests and `paperbot sandbox`.

    async with SandboxServer() as server:
        settings = Settings(discord_token=server.token, api_base=server.api_base,
                            gateway_url=server.gateway_url, dev_guild_id=server.guild.id, ...)
        ...start the bot...
        result = await server.run_command(server.alice, "paper search", query="kv cache", limit=3)
        assert "KV" in result.text

See tests/README.md ("The sandbox") for the whole user-side API.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from . import limits
from .faults import Faults
from .gateway import Gateway
from .interactions import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    InteractionRecord,
    InteractionResult,
    OptionBuilder,
    check_can_use,
    find_command,
    interaction_payload,
    nest_options,
    split_command_path,
)
from .nonces import DEFAULT_WINDOW, NonceMemory
from .recorder import (
    Changes,
    ClientRefused,
    GatewayRecord,
    InteractionFailed,
    RecordedRequest,
    Recorder,
    SandboxTimeout,
    route_matcher,
)
from .rest import (
    API_PREFIX,
    BODY_KEY,
    FILES_KEY,
    ApiError,
    RestApi,
    UploadedFile,
    json_response,
    read_body,
)
from .state import (
    TEAM_ROLES,
    Intents,
    Overwrite,
    Permissions,
    SandboxAttachment,
    SandboxChannel,
    SandboxClock,
    SandboxGuild,
    SandboxMember,
    SandboxMessage,
    SandboxRole,
    SandboxTeam,
    SandboxUser,
    TeamMembership,
    World,
    emoji_key,
    emoji_payload,
    iter_components,
)

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MessageListener = Callable[[str, SandboxMessage], None]

_UNAUTHENTICATED_PREFIXES = ("/interactions/", "/webhooks/", "/gateway")
_KEPT_FLAGS = (1 << 2) | (1 << 12) | (1 << 15)  # SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_COMPONENTS_V2


@dataclass
class SandboxOptions:
    host: str = "127.0.0.1"
    port: int = 0  # 0: an ephemeral port
    token: str = World.TOKEN
    heartbeat_interval_ms: int = 41_250
    #: compress gateway frames when the client asks for zlib-stream (text frames when False)
    zlib_stream: bool = False
    #: privileged intents "enabled in the developer portal"; asking for others closes with 4014
    privileged_intents: int = Intents.PRIVILEGED
    #: (requests, per seconds) per route bucket; the headers say so and a burst past it gets a 429
    rate_limit: tuple[int, float] = (50, 1.0)
    attachment_size_limit: int = limits.DEFAULT_ATTACHMENT_SIZE_LIMIT
    #: how long a message nonce is remembered for ``enforce_nonce`` (Discord: "a few minutes")
    nonce_window: float = DEFAULT_WINDOW
    interaction_deadline: float = 3.0
    token_lifetime: float = 15 * 60.0
    #: how long run_command waits for quiet after the answer (follow-ups that come right after)
    settle: float = 0.15


class _RateLimiter:
    """Per-bucket windows; every API answer carries the full set of X-RateLimit headers."""

    def __init__(self, limit: int, per: float) -> None:
        self.limit = limit
        self.per = per
        self._windows: dict[str, tuple[float, int]] = {}

    def take(self, bucket: str, major: str) -> tuple[bool, dict[str, str]]:
        now = time.monotonic()
        key = f"{bucket}:{major}"
        start, used = self._windows.get(key, (now, 0))
        if now - start >= self.per:
            start, used = now, 0
        reset_after = max(0.0, self.per - (now - start))
        allowed = used < self.limit
        if allowed:
            used += 1
        self._windows[key] = (start, used)
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(0, self.limit - used)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": secrets.token_hex(8) if not bucket else _bucket_hash(bucket),
        }
        return allowed, headers


def _bucket_hash(route: str) -> str:
    return hashlib.sha1(route.encode()).hexdigest()[:16]  # noqa: S324 - a label, not security


class SandboxServer:
    """A local Discord: seeded world, REST, gateway, recorder, faults and a user-side API."""

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
        self.gateway = Gateway(self)
        self.interactions: dict[int, InteractionRecord] = {}
        self.interactions_by_token: dict[str, InteractionRecord] = {}
        self._rate_limiter = _RateLimiter(*self.options.rate_limit)
        self._outbox: list[SandboxMessage] = []
        self._taken: set[int] = set()
        self._listeners: list[MessageListener] = []
        self._runner: web.AppRunner | None = None
        self._port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> SandboxServer:
        @web.middleware
        async def api_middleware(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            return await self._handle_api(request, handler)

        app = web.Application(middlewares=[api_middleware], client_max_size=64 * 1024 * 1024)
        RestApi(self).register(app)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/gateway-resume", self.gateway.handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        await site.start()
        self._port = int(self._runner.addresses[0][1])
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
        return f"http://{self.options.host}:{self._port}"

    @property
    def api_base(self) -> str:
        """For `DISCORD_API_BASE` / `discord.http.Route.BASE`."""
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        """For `DISCORD_GATEWAY_URL` / `DiscordWebSocket.DEFAULT_GATEWAY`."""
        return f"ws://{self.options.host}:{self._port}/gateway"

    @property
    def gateway_base(self) -> str:
        return self.gateway_url

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://{self.options.host}:{self._port}/gateway-resume"

    @property
    def token(self) -> str:
        return self.options.token

    def attachment_url(self, channel_id: int, attachment_id: int, filename: str) -> str:
        return f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}"

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

    def messages_in(
        self, channel: SandboxChannel | str | int, *, include_ephemeral: bool = False
    ) -> list[SandboxMessage]:
        return self.world.messages_in(self.channel(channel), include_ephemeral=include_ephemeral)

    def dm_messages(self, user: SandboxUser | str) -> list[SandboxMessage]:
        """Every message in the DM between the bot and `user` (oldest first)."""
        user = self.user(user)
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

    def subscribe(self, listener: MessageListener) -> Callable[[], None]:
        """Call `listener(kind, message)` for every message created/updated/deleted; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- world changes, with their gateway events --------------------------------------------------------

    def add_user(
        self, username: str, *, manage_guild: bool = False, dms_open: bool = True, in_guild: bool = True
    ) -> SandboxUser:
        roles = [self.world.moderators_role.id] if manage_guild else []
        user = self.world.add_user(username, roles=roles, in_guild=in_guild, dms_open=dms_open)
        if in_guild:
            member = self.guild.members[user.id].payload()
            self._dispatch("GUILD_MEMBER_ADD", {**member, "guild_id": str(self.guild.id)}, self.guild.id)
        return user

    def add_guild(self, name: str, *, members: Mapping[str, bool] | None = None) -> SandboxGuild:
        """The bot is added to another server (GUILD_CREATE to a connected bot). ``members``: username →
        Manage Server (through that server's Moderators role); a name no one has yet becomes a new user.
        Its one channel is #general (``server.guild_channel(guild, "general")``)."""
        guild = self.world.add_guild(name)
        for username, manage_guild in (members or {}).items():
            user = self.world.user_named(username) or self.world.add_user(username, in_guild=False)
            self.add_to_guild(guild, user, manage_guild=manage_guild, announce=False)
        self.gateway.announce_guild(guild.id)
        self.changes.notify()
        return guild

    def add_to_guild(
        self,
        guild: SandboxGuild,
        user: SandboxUser | str,
        *,
        manage_guild: bool = False,
        announce: bool = True,
    ) -> SandboxMember:
        """`user` joins `guild` (GUILD_MEMBER_ADD)."""
        user = self.user(user)
        roles = [self.world.moderators_of(guild).id] if manage_guild else []
        member = self.world.add_member(user, roles=roles, guild=guild)
        if announce:
            self._dispatch("GUILD_MEMBER_ADD", {**member.payload(), "guild_id": str(guild.id)}, guild.id)
        return member

    def guild_channel(self, guild: SandboxGuild, name: str) -> SandboxChannel:
        channel = guild.channel_named(name)
        if channel is None:
            raise ClientRefused(f"no channel #{name} in {guild.name}")
        return channel

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
        team_owner = self.user(owner)
        memberships = [TeamMembership(team_owner, "admin")]
        for accepted, listed in ((True, members or {}), (False, invited or {})):
            for username, role in listed.items():
                if role not in TEAM_ROLES:
                    raise ValueError(f"a team member's role is one of {', '.join(TEAM_ROLES)}, not {role!r}")
                memberships.append(TeamMembership(self.user(username), role, accepted=accepted))
        team = SandboxTeam(
            self.world.snowflakes.next(), f"{self.world.application.name} team", team_owner, memberships
        )
        self.world.application.team = team
        return team

    def remove_member(self, user: SandboxUser | str) -> None:
        user = self.user(user)
        self.guild.members.pop(user.id, None)
        self._dispatch(
            "GUILD_MEMBER_REMOVE", {"guild_id": str(self.guild.id), "user": user.payload()}, self.guild.id
        )

    def set_manage_guild(self, user: SandboxUser | str, allowed: bool) -> None:
        """Give or take the Moderators role (Manage Server)."""
        user = self.user(user)
        member = self.guild.members[user.id]
        role = self.world.moderators_role.id
        if allowed and role not in member.role_ids:
            member.role_ids.append(role)
        elif not allowed and role in member.role_ids:
            member.role_ids.remove(role)
        self._dispatch(
            "GUILD_MEMBER_UPDATE", {**member.payload(), "guild_id": str(self.guild.id)}, self.guild.id
        )

    def close_dms(self, user: SandboxUser | str) -> None:
        """The user blocks the bot / closes DMs: the bot's next DM gets 403 50007."""
        self.user(user).dms_open = False

    def open_dms(self, user: SandboxUser | str) -> None:
        self.user(user).dms_open = True

    def add_channel(self, name: str, *, topic: str | None = None) -> SandboxChannel:
        channel = self.world.add_channel(name, topic=topic)
        self._dispatch("CHANNEL_CREATE", channel.payload(), self.guild.id)
        return channel

    def delete_channel(self, channel: SandboxChannel | str) -> None:
        """Delete a channel (CHANNEL_DELETE); the bot's next post there gets 404 10003."""
        channel = self.channel(channel)
        channel.deleted = True
        self._dispatch("CHANNEL_DELETE", channel.payload(), channel.guild_id)

    def set_permissions(
        self,
        channel: SandboxChannel | str,
        target: SandboxUser | SandboxRole | str,
        *,
        allow: int = 0,
        deny: int = 0,
    ) -> None:
        """Set a channel permission overwrite (e.g. deny the bot SEND_MESSAGES: posts get 50013)."""
        channel = self.channel(channel)
        if isinstance(target, SandboxRole):
            target_id, kind = target.id, 0
        else:
            target_id, kind = self.user(target).id, 1
        channel.overwrites = [o for o in channel.overwrites if o.id != target_id]
        if allow or deny:
            channel.overwrites.append(Overwrite(target_id, kind, allow, deny))
        self._dispatch("CHANNEL_UPDATE", channel.payload(), channel.guild_id)

    def set_presence(self, user: SandboxUser | str, status: str = "online") -> None:
        """PRESENCE_UPDATE (only sessions with the GUILD_PRESENCES intent get it)."""
        user = self.user(user)
        self.world.presences[user.id] = status
        self._dispatch(
            "PRESENCE_UPDATE",
            {
                "user": {"id": str(user.id)},
                "guild_id": str(self.guild.id),
                "status": status,
                "activities": [],
                "client_status": {"desktop": status} if status != "offline" else {},
            },
            self.guild.id,
        )

    # -- what users do ----------------------------------------------------------------------------------

    def _where(self, where: SandboxChannel | str | int | None, user: SandboxUser) -> SandboxChannel:
        if where is None:
            return self.guild.text_channels()[0]
        if isinstance(where, str) and where.lower() in ("dm", "dms", "@me"):
            return self.world.dm_channel(user)
        return self.channel(where)

    async def run_command(
        self,
        user: SandboxUser | str,
        command: str,
        /,
        *,
        where: SandboxChannel | str | int | None = None,
        options: dict[str, Any] | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109
        check: bool = True,
        force: bool = False,
        locale: str = "en-US",
        **values: Any,
    ) -> InteractionResult:
        """Use a slash command as `user` and return what the bot answered.

        `command` is the full name ("paper search", "paperadmin feed set"); option values come
        as keywords (or in `options=` for names that clash: where, options, timeout, check, force,
        locale). `where`: a channel (object, name or id) or "dm"; default #general.
        Waits for the answer (and a deferred answer's edit), then for a short quiet spell.
        Raises ClientRefused for what Discord's client would not send (unknown command or option,
        missing required option, no permission) unless force=True, and InteractionFailed when
        the bot did not answer properly (unless check=False; then see `result.failure`).
        """
        user = self.user(user)
        channel = self._where(where, user)
        parts = command.strip().lstrip("/").split()
        if not parts:
            raise ClientRefused("no command given")
        guild = self.world.guilds.get(channel.guild_id) if channel.guild_id else None
        definition = find_command(self.world, parts[0], guild=guild)
        if not force:
            check_can_use(self.world, definition, user, channel)
        chain, leaf_definitions, label = split_command_path(self.world, definition, parts[1:])
        builder = OptionBuilder(self.world, user, channel, self.attachment_url)
        leaf = builder.build(label, leaf_definitions, {**values, **(options or {})})
        data: JSON = {
            "id": definition["id"],
            "name": definition["name"],
            "type": 1,
            "options": nest_options(chain, leaf),
        }
        if definition.get("guild_id"):
            data["guild_id"] = definition["guild_id"]
        if builder.resolved:
            data["resolved"] = builder.resolved
        record = self._create_interaction(APPLICATION_COMMAND, user, channel, data, label, locale=locale)
        return await self._await_result(record, timeout=timeout, check=check)

    async def autocomplete(
        self,
        user: SandboxUser | str,
        command: str,
        option: str,
        typed: str,
        /,
        *,
        where: SandboxChannel | str | int | None = None,
        options: dict[str, Any] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
        check: bool = True,
        **values: Any,
    ) -> list[JSON]:
        """Type `typed` into `option` of `command`; returns the bot's choices ([{"name", "value"}])."""
        user = self.user(user)
        channel = self._where(where, user)
        parts = command.strip().lstrip("/").split()
        guild = self.world.guilds.get(channel.guild_id) if channel.guild_id else None
        definition = find_command(self.world, parts[0], guild=guild)
        check_can_use(self.world, definition, user, channel)
        chain, leaf_definitions, label = split_command_path(self.world, definition, parts[1:])
        builder = OptionBuilder(self.world, user, channel, self.attachment_url)
        leaf = builder.build(
            label, leaf_definitions, {**values, **(options or {}), option: typed}, focused=option
        )
        data: JSON = {
            "id": definition["id"],
            "name": definition["name"],
            "type": 1,
            "options": nest_options(chain, leaf),
        }
        if definition.get("guild_id"):
            data["guild_id"] = definition["guild_id"]
        record = self._create_interaction(
            AUTOCOMPLETE, user, channel, data, f"autocomplete {label} {option}:{typed!r}"
        )
        result = await self._await_result(record, timeout=timeout, check=check)
        return result.choices

    async def click(
        self,
        user: SandboxUser | str,
        message: SandboxMessage | InteractionResult,
        button: int | str = 1,
        /,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        check: bool = True,
    ) -> InteractionResult:
        """Click a button: `button` is its 1-based position, its custom_id, its label or its emoji."""
        user = self.user(user)
        target = self._message_for_component(user, message)
        component = _pick_button(target, button)
        if component.get("style") == 5:
            raise ClientRefused(
                f"button {button!r} is a link to {component.get('url')}: clicking opens a browser, no interaction"
            )
        if component.get("disabled"):
            raise ClientRefused(f"button {button!r} is disabled")
        data = {"custom_id": component["custom_id"], "component_type": 2}
        label = f"click {component.get('label') or _emoji_text(component)!r} ({component['custom_id']})"
        record = self._create_interaction(
            MESSAGE_COMPONENT, user, target.channel, data, label, message=target
        )
        return await self._await_result(record, timeout=timeout, check=check)

    async def select(
        self,
        user: SandboxUser | str,
        message: SandboxMessage | InteractionResult,
        values: list[str],
        /,
        *,
        menu: int | str = 1,
        timeout: float = 10.0,  # noqa: ASYNC109
        check: bool = True,
    ) -> InteractionResult:
        """Pick `values` in a select menu (`menu`: 1-based position or custom_id)."""
        user = self.user(user)
        target = self._message_for_component(user, message)
        selects = target.selects
        component = (
            selects[menu - 1]
            if isinstance(menu, int) and 0 < menu <= len(selects)
            else next((s for s in selects if s.get("custom_id") == menu), None)
        )
        if component is None:
            raise ClientRefused(f"message {target.id} has no select menu {menu!r} ({len(selects)} menus)")
        if component.get("disabled"):
            raise ClientRefused(f"select menu {menu!r} is disabled")
        low, high = component.get("min_values", 1), component.get("max_values", 1)
        if not low <= len(values) <= high:
            raise ClientRefused(
                f"select menu {component['custom_id']!r} takes {low}-{high} values, got {len(values)}"
            )
        data: JSON = {
            "custom_id": component["custom_id"],
            "component_type": component["type"],
            "values": list(values),
        }
        if component["type"] == 3:
            allowed = [o["value"] for o in component.get("options") or []]
            bad = [v for v in values if v not in allowed]
            if bad:
                raise ClientRefused(
                    f"select menu {component['custom_id']!r} has no option(s) {bad}; options: {allowed}"
                )
        else:
            builder = OptionBuilder(self.world, user, target.channel, self.attachment_url)
            kind = {5: 6, 6: 8, 7: 9, 8: 7}[component["type"]]
            data["values"] = [builder.convert("select", {"name": "value", "type": kind}, v) for v in values]
            data["resolved"] = builder.resolved
        record = self._create_interaction(
            MESSAGE_COMPONENT,
            user,
            target.channel,
            data,
            f"select {values} in {component['custom_id']}",
            message=target,
        )
        return await self._await_result(record, timeout=timeout, check=check)

    async def submit_modal(
        self,
        user: SandboxUser | str,
        shown: InteractionResult,
        values: dict[str, str],
        /,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        check: bool = True,
    ) -> InteractionResult:
        """Fill in and submit the modal the bot showed in answer to `shown` (text inputs by custom_id)."""
        user = self.user(user)
        modal = shown.modal
        if modal is None:
            raise ClientRefused(f"{shown.record.label} did not open a modal")
        unknown = set(values) - {
            c.get("custom_id") for c in iter_components(modal.get("components") or []) if c.get("type") == 4
        }
        if unknown:
            raise ClientRefused(f"the modal has no text input(s) {sorted(unknown)}")

        def fill(components: list[JSON]) -> list[JSON]:
            filled: list[JSON] = []
            for component in components:
                if component.get("type") == 1:
                    filled.append({"type": 1, "components": fill(component.get("components") or [])})
                elif component.get("type") == 18 and isinstance(component.get("component"), dict):
                    filled.append({"type": 18, "component": fill([component["component"]])[0]})
                elif component.get("type") == 4:
                    custom_id = component["custom_id"]
                    value = values.get(custom_id, component.get("value") or "")
                    if component.get("required", True) and not value:
                        raise ClientRefused(f"text input {custom_id!r} is required")
                    low, high = component.get("min_length", 0), component.get("max_length", 4000)
                    if value and not low <= len(value) <= high:
                        raise ClientRefused(
                            f"text input {custom_id!r} takes {low}-{high} characters, got {len(value)}"
                        )
                    filled.append({"type": 4, "custom_id": custom_id, "value": value})
            return filled

        data = {"custom_id": modal["custom_id"], "components": fill(modal.get("components") or [])}
        source = shown.record.source_message
        record = self._create_interaction(
            MODAL_SUBMIT,
            user,
            shown.record.channel,
            data,
            f"submit modal {modal['custom_id']}",
            message=source,
        )
        return await self._await_result(record, timeout=timeout, check=check)

    async def react(
        self, user: SandboxUser | str, message: SandboxMessage | InteractionResult, emoji: str
    ) -> None:
        """`user` adds a reaction (MESSAGE_REACTION_ADD goes to the bot)."""
        user = self.user(user)
        target = self._visible_message(user, message)
        key = emoji_key(emoji)
        if (
            key not in target.reactions
            and not self.world.user_permissions(target.channel, user) & Permissions.ADD_REACTIONS
        ):
            raise ClientRefused(f"{user.username} cannot add reactions in {target.channel.label()}")
        if not self.add_reaction(target, user, key):
            raise ClientRefused(f"{user.username} already reacted {emoji} on message {target.id}")

    async def unreact(
        self, user: SandboxUser | str, message: SandboxMessage | InteractionResult, emoji: str
    ) -> None:
        """`user` removes their reaction (MESSAGE_REACTION_REMOVE goes to the bot)."""
        user = self.user(user)
        target = self._visible_message(user, message)
        if not self.remove_reaction(target, user, emoji_key(emoji)):
            raise ClientRefused(f"{user.username} has no {emoji} reaction on message {target.id}")

    async def send_message(
        self, user: SandboxUser | str, where: SandboxChannel | str | int, content: str
    ) -> SandboxMessage:
        """`user` posts `content` in a channel or ("dm") in their DM with the bot."""
        user = self.user(user)
        channel = self._where(where, user)
        if not channel.is_dm and not self.world.user_permissions(channel, user) & Permissions.SEND_MESSAGES:
            raise ClientRefused(f"{user.username} cannot send messages in {channel.label()}")
        errors = limits.validate_message({"content": content})
        if errors or not content:
            raise ClientRefused(f"Discord would not send that message: {errors.describe() or 'empty'}")
        message = self.world.new_message(channel, user, content=content, origin="user")
        self._dispatch("MESSAGE_CREATE", self._message_event(message), channel.guild_id)
        self._notify_listeners("create", message)
        return message

    # -- waiting ----------------------------------------------------------------------------------------

    async def next_message(
        self,
        *,
        channel: SandboxChannel | str | int | None = None,
        dm_of: SandboxUser | str | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
        predicate: Callable[[SandboxMessage], bool] | None = None,
        include_interactions: bool = False,
    ) -> SandboxMessage:
        """The next message the bot posts in `channel` (or the DM with `dm_of`) not returned before.

        Messages are queued as they come, so one sent just before this call is still "next".
        Interaction answers are left out unless include_interactions=True (run_command returns them).
        """
        if (channel is None) == (dm_of is None):
            raise ValueError("pass exactly one of channel= or dm_of=")
        target = self.channel(channel) if channel is not None else self.world.dm_channel(self.user(dm_of))  # type: ignore[arg-type]

        def find() -> SandboxMessage | None:
            pool = (
                self._outbox
                if not include_interactions
                else [m for m in self.world.messages.values() if m.author is self.world.bot_user]
            )
            for message in pool:
                if (
                    message.channel is target
                    and message.id not in self._taken
                    and (predicate is None or predicate(message))
                ):
                    self._taken.add(message.id)
                    return message
            return None

        return await self.changes.wait_for(
            find,
            timeout=timeout,
            what=f"a bot message in {target.label()}",
            context=lambda: self.recorder.recent(),
        )

    async def wait_for_request(
        self,
        pattern: str,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        predicate: Callable[[RecordedRequest], bool] | None = None,
        after: int = 0,
    ) -> RecordedRequest:
        """The first recorded request (from index `after`) matching `pattern` (see requests_matching)."""
        match = route_matcher(pattern)

        def find() -> RecordedRequest | None:
            return next(
                (
                    r
                    for r in self.recorder.requests[after:]
                    if match(r.method, r.path) and (predicate is None or predicate(r))
                ),
                None,
            )

        return await self.changes.wait_for(
            find, timeout=timeout, what=f"a request {pattern}", context=lambda: self.recorder.recent()
        )

    async def wait_for_dispatch(
        self,
        event: str,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        after: int = 0,
        predicate: Callable[[GatewayRecord], bool] | None = None,
    ) -> GatewayRecord:
        """The first gateway dispatch `event` sent to the bot (from gateway_events index `after`)."""

        def find() -> GatewayRecord | None:
            return next(
                (
                    g
                    for g in self.recorder.gateway[after:]
                    if g.direction == "send" and g.t == event and (predicate is None or predicate(g))
                ),
                None,
            )

        return await self.changes.wait_for(find, timeout=timeout, what=f"gateway dispatch {event}")

    async def wait_until_connected(self, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Until a bot identified and got READY plus its GUILD_CREATEs."""

        def ready() -> bool:
            return any(
                s.connection is not None and s.connection.sent_index >= len(s.events) and s.events
                for s in self.gateway.live_sessions
            )

        await self.changes.wait_for(
            ready,
            timeout=timeout,
            what="the bot to connect to the gateway",
            context=lambda: self.recorder.recent(),
        )

    async def wait_quiet(self, *, quiet: float = 0.2, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """Until no REST request arrived for `quiet` seconds (the bot finished reacting)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            last = self.recorder.requests[-1].at if self.recorder.requests else 0.0
            idle = loop.time() - last
            if idle >= quiet:
                return
            if loop.time() >= deadline:
                raise SandboxTimeout(
                    f"the bot kept making requests for {timeout:g}s\n{self.recorder.recent()}"
                )
            await asyncio.sleep(min(quiet - idle, max(0.01, deadline - loop.time())))

    async def eventually(
        self,
        condition: Callable[[], Any] | Callable[[], Awaitable[Any]],
        *,
        timeout: float = 5.0,  # noqa: ASYNC109
        what: str = "a condition",
        interval: float = 0.02,
    ) -> Any:
        """Poll `condition` (sync or async) until it returns something truthy; returns it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            if loop.time() >= deadline:
                raise SandboxTimeout(
                    f"timed out after {timeout:g}s waiting for {what}\n{self.recorder.recent()}"
                )
            await asyncio.sleep(interval)

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

    # -- shared by REST handlers and the user-side API -----------------------------------------------

    def _dispatch(self, event: str, data: JSON, guild_id: int | None) -> None:
        self.gateway.dispatch(event, data, guild_id=guild_id)
        self.changes.notify()

    def _notify_listeners(self, kind: str, message: SandboxMessage) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, message)
            except Exception:
                log.exception("sandbox message listener failed")

    def _message_event(self, message: SandboxMessage) -> JSON:
        data = message.payload(me_id=None)
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
            member = self.world.guilds[message.guild_id].members.get(message.author.id)
            if member is not None:
                member_data = member.payload()
                member_data.pop("user", None)
                data["member"] = member_data
        return data

    def validate_message_body(
        self,
        payload: Any,
        files: list[UploadedFile],
        *,
        prefix: tuple[str, ...] = (),
        editing: SandboxMessage | None = None,
    ) -> None:
        if not isinstance(payload, dict):
            raise ApiError(400, 50109, "The request body contains invalid JSON.")
        errors = limits.validate_message(payload, files=len(files), prefix=prefix)
        if errors:
            raise ApiError.form(errors)
        for upload in files:
            if len(upload.data) > self.options.attachment_size_limit:
                raise ApiError(413, 40005, "Request entity too large")
        if editing is None:
            if limits.message_is_empty(payload, files=len(files)):
                raise ApiError(400, 50006, "Cannot send an empty message")
        else:
            merged = {
                "content": payload.get("content", editing.content),
                "embeds": payload.get("embeds", editing.embeds),
                "components": payload.get("components", editing.components),
            }
            kept = len(payload["attachments"]) if "attachments" in payload else len(editing.attachments)
            if (
                limits.message_is_empty(merged, files=len(files), kept_attachments=kept)
                and not editing.loading
            ):
                raise ApiError(400, 50006, "Cannot send an empty message")

    def _store_files(
        self, channel: SandboxChannel, payload: JSON, files: list[UploadedFile], *, ephemeral: bool = False
    ) -> list[SandboxAttachment]:
        described = {
            int(a["id"]): a
            for a in payload.get("attachments") or []
            if str(a.get("id", "")).isdigit() and int(a["id"]) < 100
        }
        stored = []
        for upload in files:
            meta = described.get(upload.index, {})
            attachment_id = self.world.snowflakes.next()
            filename = str(meta.get("filename") or upload.filename)
            attachment = SandboxAttachment(
                id=attachment_id,
                filename=filename,
                data=upload.data,
                content_type=upload.content_type
                if upload.content_type not in (None, "application/octet-stream")
                else None,
                url=self.attachment_url(channel.id, attachment_id, filename),
                description=meta.get("description"),
                ephemeral=ephemeral,
            )
            self.world.attachments[attachment_id] = attachment
            stored.append(attachment)
        return stored

    def post_bot_message(
        self,
        channel: SandboxChannel,
        payload: JSON,
        files: list[UploadedFile],
        *,
        referenced: SandboxMessage | None = None,
    ) -> SandboxMessage:
        """A message the bot created by REST (Create Message), announced with MESSAGE_CREATE."""
        nonce = payload.get("nonce")
        message = self.world.new_message(
            channel,
            self.world.bot_user,
            content=payload.get("content") or "",
            embeds=_normalise_embeds(payload.get("embeds")),
            components=list(payload.get("components") or []),
            attachments=self._store_files(channel, payload, files),
            flags=int(payload.get("flags") or 0) & _KEPT_FLAGS,
            type=19 if referenced is not None else 0,
            message_reference=(
                {
                    "type": 0,
                    "message_id": str(referenced.id),
                    "channel_id": str(channel.id),
                    **({"guild_id": str(channel.guild_id)} if channel.guild_id else {}),
                }
                if referenced is not None
                else None
            ),
            origin="channel",
            nonce=nonce,
        )
        if nonce is not None:
            self.nonces.remember(message.author.id, nonce, message)
        self._outbox.append(message)
        event = self._message_event(message)
        if nonce is not None:
            event["nonce"] = nonce
        self._dispatch("MESSAGE_CREATE", event, channel.guild_id)
        self._notify_listeners("create", message)
        return message

    def post_interaction_message(
        self,
        record: InteractionRecord,
        payload: JSON,
        files: list[UploadedFile],
        *,
        origin: str,
        allow_loading: bool = False,
    ) -> SandboxMessage:
        keep = _KEPT_FLAGS | SandboxMessage.EPHEMERAL | (SandboxMessage.LOADING if allow_loading else 0)
        flags = int(payload.get("flags") or 0) & keep
        bot = self.world.bot_user
        metadata: JSON = {
            "id": str(record.id),
            "type": record.type,
            "user": record.user.payload(),
            "authorizing_integration_owners": record.payload.get("authorizing_integration_owners", {}),
        }
        if record.type == APPLICATION_COMMAND:
            metadata["name"] = record.label.lstrip("/")
            metadata["command_type"] = record.command_kind
        if origin == "followup" and record.original is not None:
            metadata["original_response_message_id"] = str(record.original.id)
        if record.source_message is not None:
            metadata["interacted_message_id"] = str(record.source_message.id)
        message = self.world.new_message(
            record.channel,
            bot,
            content=payload.get("content") or "",
            embeds=_normalise_embeds(payload.get("embeds")),
            components=list(payload.get("components") or []),
            attachments=self._store_files(
                record.channel, payload, files, ephemeral=bool(flags & SandboxMessage.EPHEMERAL)
            ),
            flags=flags,
            type=20 if record.type == APPLICATION_COMMAND and origin == "response" else 0,
            webhook_id=self.world.application.id,
            application_id=self.world.application.id,
            interaction_metadata=metadata,
            interaction_id=record.id,
            origin=origin,
        )
        if origin == "response":
            record.original = message
        else:
            record.followups.append(message)
        if not message.ephemeral:
            self._dispatch("MESSAGE_CREATE", self._message_event(message), message.guild_id)
        self._notify_listeners("create", message)
        return message

    def edit_message(
        self,
        message: SandboxMessage,
        payload: JSON,
        files: list[UploadedFile],
        *,
        clear_loading: bool = False,
    ) -> None:
        was_loading = message.loading
        message.history.append(
            {"content": message.content, "embeds": message.embeds, "components": message.components}
        )
        if "content" in payload:
            message.content = payload["content"] or ""
        if "embeds" in payload:
            message.embeds = _normalise_embeds(payload["embeds"])
        if "components" in payload:
            message.components = list(payload["components"] or [])
        new_files = self._store_files(message.channel, payload, files, ephemeral=message.ephemeral)
        if "attachments" in payload:
            keep = {str(a.get("id")) for a in payload["attachments"] or []}
            message.attachments = [a for a in message.attachments if str(a.id) in keep] + new_files
        else:
            message.attachments += new_files
        if "flags" in payload and payload["flags"] is not None:
            suppress = 1 << 2
            message.flags = (message.flags & ~suppress) | (int(payload["flags"]) & suppress)
        if clear_loading:
            message.flags &= ~SandboxMessage.LOADING
        if not was_loading:
            message.edited_at = self.clock.now()
        if not message.ephemeral:
            self._dispatch("MESSAGE_UPDATE", self._message_event(message), message.guild_id)
        self._notify_listeners("update", message)

    def delete_message(self, message: SandboxMessage) -> None:
        message.deleted = True
        if not message.ephemeral:
            data: JSON = {"id": str(message.id), "channel_id": str(message.channel.id)}
            if message.guild_id is not None:
                data["guild_id"] = str(message.guild_id)
            self._dispatch("MESSAGE_DELETE", data, message.guild_id)
        self._notify_listeners("delete", message)

    def dispatch_typing(self, channel: SandboxChannel, user: SandboxUser) -> None:
        data: JSON = {
            "channel_id": str(channel.id),
            "user_id": str(user.id),
            "timestamp": int(self.clock.time()),
        }
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
            data["member"] = self.world.guilds[channel.guild_id].members[user.id].payload()
        self._dispatch("TYPING_START", data, channel.guild_id)

    def _reaction_event(self, message: SandboxMessage, user: SandboxUser, key: str, *, add: bool) -> JSON:
        data: JSON = {
            "user_id": str(user.id),
            "channel_id": str(message.channel.id),
            "message_id": str(message.id),
            "emoji": emoji_payload(key),
            "burst": False,
            "type": 0,
        }
        if add:
            data["message_author_id"] = str(message.author.id)
            data["burst_colors"] = []
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
            member = self.world.guilds[message.guild_id].members.get(user.id)
            if add and member is not None:
                data["member"] = member.payload()
        return data

    def add_reaction(self, message: SandboxMessage, user: SandboxUser, key: str) -> bool:
        users = message.reactions.setdefault(key, [])
        if user.id in users:
            return False
        users.append(user.id)
        self._dispatch(
            "MESSAGE_REACTION_ADD", self._reaction_event(message, user, key, add=True), message.guild_id
        )
        self._notify_listeners("update", message)
        return True

    def remove_reaction(self, message: SandboxMessage, user: SandboxUser, key: str) -> bool:
        users = message.reactions.get(key, [])
        if user.id not in users:
            return False
        users.remove(user.id)
        if not users:
            del message.reactions[key]
        self._dispatch(
            "MESSAGE_REACTION_REMOVE", self._reaction_event(message, user, key, add=False), message.guild_id
        )
        self._notify_listeners("update", message)
        return True

    def clear_reactions(self, message: SandboxMessage, key: str | None) -> None:
        data: JSON = {"channel_id": str(message.channel.id), "message_id": str(message.id)}
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
        if key is None:
            message.reactions.clear()
            self._dispatch("MESSAGE_REACTION_REMOVE_ALL", data, message.guild_id)
        else:
            message.reactions.pop(key, None)
            self._dispatch(
                "MESSAGE_REACTION_REMOVE_EMOJI", {**data, "emoji": emoji_payload(key)}, message.guild_id
            )
        self._notify_listeners("update", message)

    def touch(self, record: InteractionRecord) -> None:
        record.activity += 1
        record.last_activity = asyncio.get_running_loop().time()
        self.changes.notify()

    # -- interactions ------------------------------------------------------------------------------

    def _create_interaction(
        self,
        kind: int,
        user: SandboxUser,
        channel: SandboxChannel,
        data: JSON,
        label: str,
        *,
        message: SandboxMessage | None = None,
        locale: str = "en-US",
    ) -> InteractionRecord:
        session = self.gateway.session_for(channel.guild_id)
        if session is None:
            raise ClientRefused(
                "the bot is not connected to the sandbox gateway (no live session): start it first"
            )
        interaction_id = self.world.snowflakes.next()
        token = "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48)
        payload = interaction_payload(
            self.world,
            interaction_id=interaction_id,
            token=token,
            kind=kind,
            user=user,
            channel=channel,
            data=data,
            attachment_size_limit=self.options.attachment_size_limit,
            message=message,
            locale=locale,
        )
        record = InteractionRecord(
            id=interaction_id,
            token=token,
            type=kind,
            user=user,
            channel=channel,
            payload=payload,
            created=self.clock.monotonic(),
            label=label,
            source_message=message,
            last_activity=asyncio.get_running_loop().time(),
        )
        self.interactions[interaction_id] = record
        self.interactions_by_token[token] = record
        self.gateway.dispatch("INTERACTION_CREATE", payload, guild_id=channel.guild_id, only=session)
        self.changes.notify()
        return record

    async def _await_result(
        self,
        record: InteractionRecord,
        *,
        timeout: float,  # noqa: ASYNC109
        check: bool,
    ) -> InteractionResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        failure: str | None = None
        deadline = self.options.interaction_deadline

        def answered() -> bool:
            # An autocomplete answer Discord refused is final: the person just sees no suggestions.
            refused_autocomplete = record.type == AUTOCOMPLETE and bool(record.rejected)
            return record.acknowledged or record.late_callback_age is not None or refused_autocomplete

        # Phase 1: the first response, due within the 3 s deadline (measured on the sandbox clock).
        remaining = max(0.0, deadline - (self.clock.monotonic() - record.created)) + 1.0
        waited = min(timeout, remaining)
        try:
            await self.changes.wait_for(answered, timeout=waited, what="the first response")
        except SandboxTimeout:
            failure = f"the bot did not answer {record.label} within {min(waited, deadline):g}s"
            if waited >= deadline:
                failure += " (Discord shows 'The application did not respond')"
        if record.type == AUTOCOMPLETE and record.rejected and not record.acknowledged:
            failure = f"Discord refused the bot's suggestions for {record.label}"
        if record.late_callback_age is not None and not record.acknowledged:
            failure = (
                f"the bot answered {record.label} after {record.late_callback_age:.2f}s, past Discord's "
                f"{deadline:g}s deadline: Discord refused it with 10062 Unknown interaction"
            )
        # Phase 2: a deferred answer must be filled in (edit of @original or the first follow-up).
        if failure is None and record.callback_type == 5:
            try:
                await self.changes.wait_for(
                    lambda: record.original is None or record.original.deleted or not record.original.loading,
                    timeout=max(0.1, timeout - (loop.time() - started)),
                    what="the deferred answer",
                )
            except SandboxTimeout:
                failure = f"the bot deferred {record.label} but never sent the answer (still 'thinking' after {timeout:g}s)"
        # Phase 3: a short quiet spell so follow-ups sent right after are included.
        if failure is None and record.type != AUTOCOMPLETE:
            await self._settle(record, until=started + timeout)
        if failure is not None and record.rejected:
            failure += "\nDiscord refused the bot's requests:\n" + "\n".join(
                f"  {r.describe()}" for r in record.rejected
            )
        if failure is not None and check:
            raise InteractionFailed(f"{record.user.username}: {failure}\n{self.recorder.recent()}")
        return InteractionResult(record, failure)

    async def _settle(self, record: InteractionRecord, *, until: float) -> None:
        """Wait until nothing happened to `record` for `options.settle` seconds (or `until`)."""
        loop = asyncio.get_running_loop()
        settle = self.options.settle
        for _ in range(10_000):
            idle = loop.time() - record.last_activity
            if idle >= settle or loop.time() >= until:
                return
            await asyncio.sleep(settle - idle)

    def _message_for_component(
        self, user: SandboxUser, message: SandboxMessage | InteractionResult
    ) -> SandboxMessage:
        target = message.message if isinstance(message, InteractionResult) else message
        if target is None:
            raise ClientRefused("that interaction produced no message")
        current = self.world.message(target.id)
        if current is None:
            raise ClientRefused(f"message {target.id} was deleted")
        if current.ephemeral:
            record = self.interactions.get(current.interaction_id or 0)
            if record is None or record.user is not user:
                raise ClientRefused(f"message {current.id} is ephemeral: only its recipient sees it")
        elif (
            not current.channel.is_dm
            and not self.world.user_permissions(current.channel, user) & Permissions.VIEW_CHANNEL
        ):
            raise ClientRefused(f"{user.username} cannot see {current.channel.label()}")
        if current.channel.is_dm and current.channel.recipient is not user:
            raise ClientRefused(f"message {current.id} is in someone else's DM")
        return current

    def _visible_message(
        self, user: SandboxUser, message: SandboxMessage | InteractionResult
    ) -> SandboxMessage:
        current = self._message_for_component(user, message)
        if current.ephemeral:
            raise ClientRefused("ephemeral messages cannot be reacted to")
        return current

    # -- the API middleware: record, authenticate, inject faults, rate-limit -------------------------

    async def _handle_api(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        loop = asyncio.get_running_loop()
        path = request.path[len(API_PREFIX) :] or "/"
        record = RecordedRequest(
            method=request.method, path=path, query=dict(request.query), route=None, at=loop.time()
        )
        auth = request.headers.get("Authorization")
        record.authorized = auth == f"Bot {self.token}"
        response: web.StreamResponse
        try:
            body, files = await read_body(request)
        except ValueError:
            body, files = None, []
            response = json_response(
                {"message": "The request body contains invalid JSON.", "code": 50109}, status=400
            )
        else:
            request[BODY_KEY] = body
            request[FILES_KEY] = files
            record.json = body
            record.files = [(f.filename, len(f.data)) for f in files]
            response = await self._route(request, handler, record, path, auth)
        record.status = response.status
        if (
            isinstance(response, web.Response)
            and response.content_type == "application/json"
            and isinstance(response.body, bytes)
        ):
            import json

            record.response = json.loads(response.body)
        record.at = loop.time()
        self._attach_to_interaction(request, record)
        self.recorder.add_request(record)
        return response

    async def _route(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        record: RecordedRequest,
        path: str,
        auth: str | None,
    ) -> web.StreamResponse:
        match_info = request.match_info
        if match_info.http_exception is not None:
            status = match_info.http_exception.status
            log.warning(
                "sandbox: no route for %s %s (the bot called an endpoint the sandbox does not implement)",
                request.method,
                path,
            )
            return json_response(
                {"message": f"{status}: {'Not Found' if status == 404 else 'Method Not Allowed'}", "code": 0},
                status=status,
            )
        canonical = match_info.route.resource.canonical if match_info.route.resource is not None else ""
        record.route = canonical[len(API_PREFIX) :]
        if not record.route.startswith(_UNAUTHENTICATED_PREFIXES) and not record.authorized:
            return json_response({"message": "401: Unauthorized", "code": 0}, status=401)
        allowed, headers = self._rate_limiter.take(f"{request.method} {record.route}", _major(request))
        fault = self.faults.take(request.method, path, record.json)
        if fault is not None:
            record.fault = fault.kind
        if fault is not None and fault.drops_response:
            response = await self._answer(request, handler, path, allowed, headers)
            if request.transport is not None:
                request.transport.close()  # handled, but the client never hears the answer
            return response
        if fault is not None:
            status, body, extra = fault.response()
            if status == 429:
                headers["X-RateLimit-Remaining"] = "0"
                headers["X-RateLimit-Reset-After"] = f"{fault.retry_after:.3f}"
            return json_response(body, status=status, headers={**headers, **extra})
        return await self._answer(request, handler, path, allowed, headers)

    async def _answer(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        path: str,
        allowed: bool,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        """The route's answer: a 429 past the bucket, else the handler's (Discord's error shape on refusal)."""
        if not allowed:
            retry_after = float(headers["X-RateLimit-Reset-After"])
            return json_response(
                {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
                status=429,
                headers={
                    **headers,
                    "Retry-After": str(max(1, round(retry_after))),
                    "X-RateLimit-Scope": "user",
                    "Via": "1.1 google",
                },
            )
        try:
            response = await handler(request)
        except ApiError as error:
            return json_response(error.body, status=error.status, headers=headers)
        except Exception:
            log.exception("sandbox: %s %s crashed (a sandbox bug)", request.method, path)
            return json_response(
                {"message": "500: Internal Server Error", "code": 0}, status=500, headers=headers
            )
        response.headers.update(headers)
        return response

    def _attach_to_interaction(self, request: web.Request, record: RecordedRequest) -> None:
        """Remember refused requests about an interaction, to explain a failed run_command."""
        if record.status < 400:
            return
        info = request.match_info
        interaction: InteractionRecord | None = None
        if "interaction_id" in info and info["interaction_id"].isdigit():
            interaction = self.interactions.get(int(info["interaction_id"]))
        elif "webhook_token" in info:
            interaction = self.interactions_by_token.get(info["webhook_token"])
        if interaction is not None:
            interaction.rejected.append(record)
            self.changes.notify()


def _normalise_embeds(embeds: Any) -> list[JSON]:
    """Discord stores embeds with `type: rich` unless given."""
    return [
        {"type": "rich", **e} if "type" not in e else dict(e) for e in embeds or [] if isinstance(e, dict)
    ]


def _emoji_text(component: JSON) -> str:
    emoji = component.get("emoji") or {}
    return str(emoji.get("name") or "")


def _pick_button(message: SandboxMessage, button: int | str) -> JSON:
    buttons = message.buttons
    if isinstance(button, int):
        if not 1 <= button <= len(buttons):
            raise ClientRefused(
                f"message {message.id} has {len(buttons)} button(s); there is no button {button}"
            )
        return buttons[button - 1]
    for matcher in (
        lambda b: b.get("custom_id") == button,
        lambda b: str(b.get("label") or "").casefold() == button.casefold(),
        lambda b: _emoji_text(b) == button,
    ):
        found = [b for b in buttons if matcher(b)]
        if found:
            return found[0]
    shown = ", ".join(
        f"{i}: {b.get('label') or _emoji_text(b)} ({b.get('custom_id') or b.get('url')})"
        for i, b in enumerate(buttons, 1)
    )
    raise ClientRefused(f"message {message.id} has no button {button!r}; buttons: {shown or 'none'}")


def _major(request: web.Request) -> str:
    info = request.match_info
    return "+".join(
        info[k]
        for k in (
            "channel_id",
            "guild_id",
            "webhook_id",
            "webhook_token",
            "interaction_id",
            "interaction_token",
        )
        if k in info
    )
