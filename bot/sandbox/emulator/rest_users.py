"""REST: the gateway's address, users and DMs, the application, guilds, roles and members."""

from __future__ import annotations

from aiohttp import web

from .addresses import API_PREFIX, Addresses
from .options import SandboxOptions
from .rest import ApiError, Routes, cannot_message_user, json_response, missing_access, unknown_user
from .state import World

#: Discord recommends about one shard per this many guilds (each may hold at most 2500).
GUILDS_PER_RECOMMENDED_SHARD = 1000
#: IDENTIFYs a bot may start per day (Discord: 1000 below 150,000 guilds).
SESSION_STARTS_PER_DAY = 1000


class UserRoutes(Routes):
    def __init__(self, world: World, *, options: SandboxOptions, addresses: Addresses) -> None:
        super().__init__(world)
        self.options = options
        self.addresses = addresses

    def register(self, app: web.Application) -> None:
        r = app.router
        p = API_PREFIX
        r.add_get(p + "/gateway", self.get_gateway)
        r.add_get(p + "/gateway/bot", self.get_gateway_bot)
        r.add_get(p + "/users/@me", self.get_me)
        r.add_get(p + "/users/{user_id}", self.get_user)
        r.add_post(p + "/users/@me/channels", self.create_dm)
        r.add_get(p + "/oauth2/applications/@me", self.get_application)
        r.add_get(p + "/applications/@me", self.get_application)

    def register_guilds(self, app: web.Application) -> None:
        r = app.router
        p = API_PREFIX
        r.add_get(p + "/guilds/{guild_id}", self.get_guild)
        r.add_get(p + "/guilds/{guild_id}/channels", self.guild_channels)
        r.add_get(p + "/guilds/{guild_id}/roles", self.guild_roles)
        r.add_get(p + "/guilds/{guild_id}/members", self.list_members)
        r.add_get(p + "/guilds/{guild_id}/members/{user_id}", self.get_member)

    # -- gateway, users, application ----------------------------------------------------------------

    async def get_gateway(self, request: web.Request) -> web.Response:
        return json_response({"url": self.addresses.gateway_url})

    async def get_gateway_bot(self, request: web.Request) -> web.Response:
        """The recommended shard count (about one shard per 1000 guilds, as Discord recommends) and the
        session start limit, less the sessions started so far."""
        guilds = len(self.world.bot_guilds())
        return json_response(
            {
                "url": self.addresses.gateway_url,
                "shards": max(1, -(-guilds // GUILDS_PER_RECOMMENDED_SHARD)),
                "session_start_limit": {
                    "total": SESSION_STARTS_PER_DAY,
                    "remaining": max(0, SESSION_STARTS_PER_DAY - self.world.session_starts),
                    "reset_after": 14400000,
                    "max_concurrency": self.options.max_concurrency,
                },
            }
        )

    async def get_me(self, request: web.Request) -> web.Response:
        me = self.world.bot_user.payload() | {
            "verified": True,
            "mfa_enabled": False,
            "email": None,
            "locale": "en-US",
        }
        return json_response(me)

    async def get_user(self, request: web.Request) -> web.Response:
        user = self.world.users.get(self._snowflake(request, "user_id"))
        if user is None:
            raise unknown_user()
        return json_response(user.payload())

    async def create_dm(self, request: web.Request) -> web.Response:
        body = self.body(request) or {}
        raw = str(body.get("recipient_id", ""))
        user = self.world.users.get(int(raw)) if raw.isdigit() else None
        if user is None:
            raise unknown_user()
        if user.bot:
            raise cannot_message_user()
        channel = self.world.dm_channel(user)
        return json_response(channel.payload(me=self.world.bot_user))

    async def get_application(self, request: web.Request) -> web.Response:
        return json_response(self.world.application.payload())

    # -- guilds -------------------------------------------------------------------------------------

    async def get_guild(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        data = guild.payload()
        if request.query.get("with_counts") in ("true", "1", "True"):
            data["approximate_member_count"] = len(guild.members)
            data["approximate_presence_count"] = len(
                [u for u in self.world.presences.values() if u != "offline"]
            )
        return json_response(data)

    async def guild_channels(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        return json_response([c.payload() for c in guild.channels if not c.deleted and not c.is_thread])

    async def guild_roles(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        return json_response([r.payload() for r in guild.roles])

    async def list_members(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        if not self.options.privileged_intents & 2:
            raise missing_access()
        limit = max(1, min(1000, int(request.query.get("limit", "1"))))
        after = int(request.query.get("after", "0"))
        members = [m for uid, m in sorted(guild.members.items()) if uid > after]
        return json_response([m.payload() for m in members[:limit]])

    async def get_member(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        member = guild.members.get(self._snowflake(request, "user_id"))
        if member is None:
            raise ApiError(404, 10007, "Unknown Member")
        return json_response(member.payload())
