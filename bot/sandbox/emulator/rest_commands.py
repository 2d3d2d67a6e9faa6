"""REST: application commands, global and per guild (what a command sync sends), checked as Discord does."""

from __future__ import annotations

from aiohttp import web

from . import limits
from .addresses import API_PREFIX
from .recorder import Changes
from .rest import JSON, ApiError, Routes, json_response, no_content
from .state import World


class CommandRoutes(Routes):
    def __init__(self, world: World, *, changes: Changes) -> None:
        super().__init__(world)
        self.changes = changes

    def register(self, app: web.Application) -> None:
        r = app.router
        p = API_PREFIX
        for base in (
            "/applications/{application_id}/commands",
            "/applications/{application_id}/guilds/{guild_id}/commands",
        ):
            r.add_get(p + base, self.list_commands)
            r.add_put(p + base, self.bulk_commands)
            r.add_post(p + base, self.upsert_command)
            r.add_get(p + base + "/{command_id}", self.get_command)
            r.add_patch(p + base + "/{command_id}", self.edit_command)
            r.add_delete(p + base + "/{command_id}", self.delete_command)
        r.add_get(
            p + "/applications/{application_id}/guilds/{guild_id}/commands/permissions",
            self.command_permissions,
        )

    # -- application commands -------------------------------------------------------------------------

    def _scope(self, request: web.Request) -> int | None:
        self._check_app(request)
        if "guild_id" not in request.match_info:
            return None
        guild = self._guild(request)
        return int(guild.id)

    async def list_commands(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        return json_response(list(self.world.commands.get(scope, {}).values()))

    async def bulk_commands(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        body = self.body(request)
        errors = limits.validate_commands(body)
        if errors:
            raise ApiError.form(errors)
        old = self.world.commands.get(scope, {})
        new: dict[tuple[str, int], JSON] = {}
        for definition in body:
            stored = self._store_command(scope, definition, old)
            new[(stored["name"], stored["type"])] = stored
        self.world.commands[scope] = new
        self.changes.notify()
        return json_response(list(new.values()))

    async def upsert_command(self, request: web.Request) -> web.Response:
        scope = self._scope(request)
        body = self.body(request)
        errors = limits.validate_command(body)
        if errors:
            raise ApiError.form(errors)
        commands = self.world.commands.setdefault(scope, {})
        key = (body["name"], int(body.get("type", 1) or 1))
        existed = key in commands
        most = limits.COMMANDS_MAX_BY_TYPE.get(key[1], limits.COMMANDS_MAX)
        if not existed and sum(1 for _, kind in commands if kind == key[1]) >= most:
            raise ApiError(400, 30032, f"Maximum number of application commands reached ({most})")
        commands[key] = self._store_command(scope, body, commands)
        self.changes.notify()
        return json_response(commands[key], status=200 if existed else 201)

    def _store_command(self, scope: int | None, definition: JSON, old: dict[tuple[str, int], JSON]) -> JSON:
        kind = int(definition.get("type", 1) or 1)
        previous = old.get((definition["name"], kind))
        permissions = definition.get("default_member_permissions")
        stored: JSON = {
            "id": previous["id"] if previous else str(self.world.snowflakes.next()),
            "application_id": str(self.world.application.id),
            "version": str(self.world.snowflakes.next()),
            "type": kind,
            "name": definition["name"],
            "description": definition.get("description", "") if kind == 1 else "",
            "default_member_permissions": None if permissions is None else str(permissions),
            "nsfw": bool(definition.get("nsfw", False)),
            "options": definition.get("options") or [],
        }
        if scope is not None:
            stored["guild_id"] = str(scope)
        else:
            stored["dm_permission"] = definition.get("dm_permission", True)
            stored["contexts"] = definition.get("contexts")
            stored["integration_types"] = definition.get("integration_types") or [0]
        for key in ("name_localizations", "description_localizations"):
            if definition.get(key):
                stored[key] = definition[key]
        return stored

    def _command(self, request: web.Request) -> tuple[int | None, tuple[str, int], JSON]:
        scope = self._scope(request)
        wanted = request.match_info["command_id"]
        for key, command in self.world.commands.get(scope, {}).items():
            if command["id"] == wanted:
                return scope, key, command
        raise ApiError(404, 10063, "Unknown application command")

    async def get_command(self, request: web.Request) -> web.Response:
        return json_response(self._command(request)[2])

    async def edit_command(self, request: web.Request) -> web.Response:
        scope, key, command = self._command(request)
        merged = {**command, **(self.body(request) or {})}
        errors = limits.validate_command(merged)
        if errors:
            raise ApiError.form(errors)
        commands = self.world.commands[scope]
        del commands[key]
        stored = self._store_command(scope, merged, {(merged["name"], key[1]): command})
        commands[(stored["name"], stored["type"])] = stored
        self.changes.notify()
        return json_response(stored)

    async def delete_command(self, request: web.Request) -> web.Response:
        scope, key, _ = self._command(request)
        del self.world.commands[scope][key]
        self.changes.notify()
        return no_content()

    async def command_permissions(self, request: web.Request) -> web.Response:
        self._scope(request)
        return json_response([])
