"""The REST API under /api/v10: what discord.py calls, answered in Discord's shapes and codes."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aiohttp import BodyPartReader, web

from . import limits
from .interactions import ALLOWED_CALLBACKS, AUTOCOMPLETE, InteractionRecord
from .state import (
    Permissions,
    SandboxChannel,
    SandboxMessage,
    emoji_key,
)

if TYPE_CHECKING:
    from .server import SandboxServer

JSON = dict[str, Any]
API_PREFIX = "/api/v10"


@dataclass
class UploadedFile:
    index: int
    filename: str
    data: bytes
    content_type: str | None


#: the parsed request body and uploads, read once by the server's middleware
BODY_KEY = web.RequestKey("sandbox_body", object)
FILES_KEY = web.RequestKey("sandbox_files", list)


class ApiError(Exception):
    """An error answer in Discord's shape: `{"message": ..., "code": ...}` (+ `errors`)."""

    def __init__(self, status: int, code: int, message: str, errors: JSON | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.body: JSON = {"message": message, "code": code}
        if errors is not None:
            self.body["errors"] = errors

    @classmethod
    def form(cls, errors: limits.FormErrors) -> ApiError:
        body = errors.body()
        return cls(400, 50035, body["message"], body["errors"])

    @classmethod
    def invalid_field(cls, field: str, code: str, message: str) -> ApiError:
        """400 Invalid Form Body with one problem at the top-level `field` (e.g. `limit`, NUMBER_TYPE_MAX)."""
        errors = limits.FormErrors()
        errors.add((field,), code, message)
        return cls.form(errors)


def unknown_channel() -> ApiError:
    return ApiError(404, 10003, "Unknown Channel")


def unknown_message() -> ApiError:
    return ApiError(404, 10008, "Unknown Message")


def missing_permissions() -> ApiError:
    return ApiError(403, 50013, "Missing Permissions")


def missing_access() -> ApiError:
    return ApiError(403, 50001, "Missing Access")


def unknown_webhook() -> ApiError:
    return ApiError(404, 10015, "Unknown Webhook")


def unknown_user() -> ApiError:
    return ApiError(404, 10013, "Unknown User")


def cannot_message_user() -> ApiError:
    return ApiError(403, 50007, "Cannot send messages to this user")


def not_in_dm() -> ApiError:
    return ApiError(403, 50003, "Cannot execute action on a DM channel")


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON with `Content-Type: application/json` exactly: discord.py compares the whole header."""
    response = web.Response(
        body=json.dumps(body, ensure_ascii=False).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    return response


def no_content() -> web.Response:
    return web.Response(status=204)


async def read_body(request: web.Request) -> tuple[Any, list[UploadedFile]]:
    """JSON, or multipart with `payload_json` and `files[n]` (as discord.py sends uploads)."""
    if request.content_type == "multipart/form-data":
        payload: Any = None
        files: list[UploadedFile] = []
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if not isinstance(part, BodyPartReader):
                continue
            name = part.name or ""
            if name == "payload_json":
                payload = json.loads(await part.text())
            elif name.startswith("files[") and name.endswith("]"):
                index = int(name[6:-1])
                data = bytes(await part.read(decode=False))
                files.append(
                    UploadedFile(
                        index, part.filename or f"file{index}", data, part.headers.get("Content-Type")
                    )
                )
            elif name.startswith("file"):
                data = bytes(await part.read(decode=False))
                files.append(
                    UploadedFile(len(files), part.filename or name, data, part.headers.get("Content-Type"))
                )
        return payload, files
    raw = await request.read()
    if not raw:
        return None, []
    return json.loads(raw), []


class RestApi:
    """Route handlers; every one reads/writes the server's world and dispatches gateway events."""

    def __init__(self, server: SandboxServer) -> None:
        self.server = server
        self.world = server.world

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
        # commands
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
        # channels and messages
        r.add_get(p + "/channels/{channel_id}", self.get_channel)
        r.add_get(p + "/channels/{channel_id}/messages", self.list_messages)
        r.add_post(p + "/channels/{channel_id}/messages", self.create_message)
        r.add_get(p + "/channels/{channel_id}/messages/{message_id}", self.get_message)
        r.add_patch(p + "/channels/{channel_id}/messages/{message_id}", self.edit_message)
        r.add_delete(p + "/channels/{channel_id}/messages/{message_id}", self.delete_message)
        r.add_post(p + "/channels/{channel_id}/typing", self.typing)
        reactions = "/channels/{channel_id}/messages/{message_id}/reactions"
        r.add_put(p + reactions + "/{emoji}/@me", self.add_own_reaction)
        r.add_delete(p + reactions + "/{emoji}/@me", self.remove_own_reaction)
        r.add_delete(p + reactions + "/{emoji}/{user_id}", self.remove_user_reaction)
        r.add_get(p + reactions + "/{emoji}", self.list_reactions)
        r.add_delete(p + reactions + "/{emoji}", self.clear_emoji)
        r.add_delete(p + reactions, self.clear_reactions)
        # guilds
        r.add_get(p + "/guilds/{guild_id}", self.get_guild)
        r.add_get(p + "/guilds/{guild_id}/channels", self.guild_channels)
        r.add_get(p + "/guilds/{guild_id}/roles", self.guild_roles)
        r.add_get(p + "/guilds/{guild_id}/members", self.list_members)
        r.add_get(p + "/guilds/{guild_id}/members/{user_id}", self.get_member)
        # interactions and their webhooks
        r.add_post(
            p + "/interactions/{interaction_id}/{interaction_token}/callback", self.interaction_callback
        )
        hook = "/webhooks/{webhook_id}/{webhook_token}"
        r.add_post(p + hook, self.execute_webhook)
        r.add_get(p + hook + "/messages/{message_id}", self.get_webhook_message)
        r.add_patch(p + hook + "/messages/{message_id}", self.edit_webhook_message)
        r.add_delete(p + hook + "/messages/{message_id}", self.delete_webhook_message)
        # the "CDN" for attachments
        r.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self.get_attachment)

    # -- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def body(request: web.Request) -> Any:
        return request.get(BODY_KEY)

    @staticmethod
    def files(request: web.Request) -> list[UploadedFile]:
        files: list[UploadedFile] = request.get(FILES_KEY) or []
        return files

    def _snowflake(self, request: web.Request, name: str) -> int:
        raw = request.match_info[name]
        if not raw.isdigit():
            raise ApiError.invalid_field(name, "NUMBER_TYPE_COERCE", f'Value "{raw}" is not snowflake.')
        return int(raw)

    def _channel(self, request: web.Request) -> SandboxChannel:
        channel = self.world.channel(self._snowflake(request, "channel_id"))
        if channel is None:
            raise unknown_channel()
        if not channel.is_dm and not self.world.bot_permissions(channel) & Permissions.VIEW_CHANNEL:
            raise missing_access()
        return channel

    def _message(self, request: web.Request, channel: SandboxChannel) -> SandboxMessage:
        message = self.world.message(self._snowflake(request, "message_id"))
        if message is None or message.channel is not channel or message.ephemeral:
            raise unknown_message()
        return message

    def _guild(self, request: web.Request) -> Any:
        guild = self.world.guilds.get(self._snowflake(request, "guild_id"))
        if guild is None:
            raise ApiError(404, 10004, "Unknown Guild")
        return guild

    def _check_app(self, request: web.Request) -> None:
        if request.match_info.get("application_id") != str(self.world.application.id):
            raise missing_access()

    def _require(self, channel: SandboxChannel, bits: int) -> None:
        if self.world.bot_permissions(channel) & bits != bits:
            raise missing_permissions()

    def message_out(self, message: SandboxMessage) -> web.Response:
        return json_response(message.payload(me_id=self.world.bot_user.id))

    def created_out(self, message: SandboxMessage) -> web.Response:
        """Create Message's answer: the message, with the nonce it was created with."""
        data = message.payload(me_id=self.world.bot_user.id)
        if message.nonce is not None:
            data["nonce"] = message.nonce
        return json_response(data)

    # -- gateway, users, application ----------------------------------------------------------------

    async def get_gateway(self, request: web.Request) -> web.Response:
        return json_response({"url": self.server.gateway_base})

    async def get_gateway_bot(self, request: web.Request) -> web.Response:
        return json_response(
            {
                "url": self.server.gateway_base,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14400000,
                    "max_concurrency": 1,
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
        self.server.changes.notify()
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
        commands[key] = self._store_command(scope, body, commands)
        self.server.changes.notify()
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
        self.server.changes.notify()
        return json_response(stored)

    async def delete_command(self, request: web.Request) -> web.Response:
        scope, key, _ = self._command(request)
        del self.world.commands[scope][key]
        self.server.changes.notify()
        return no_content()

    async def command_permissions(self, request: web.Request) -> web.Response:
        self._scope(request)
        return json_response([])

    # -- channels and messages --------------------------------------------------------------------------

    async def get_channel(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        return json_response(channel.payload(me=self.world.bot_user))

    async def list_messages(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        self._require(channel, Permissions.READ_MESSAGE_HISTORY)
        try:
            limit = int(request.query.get("limit", "50"))
        except ValueError:
            limit = 50
        if not 1 <= limit <= 100:
            raise ApiError.invalid_field(
                "limit", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100."
            )
        messages = sorted(self.world.messages_in(channel), key=lambda m: m.id, reverse=True)
        if before := request.query.get("before"):
            messages = [m for m in messages if m.id < int(before)]
        if after := request.query.get("after"):
            messages = sorted((m for m in messages if m.id > int(after)), key=lambda m: m.id)[:limit]
            messages.reverse()
        if around := request.query.get("around"):
            pivot = int(around)
            messages.sort(key=lambda m: abs(m.id - pivot))
            messages = sorted(messages[:limit], key=lambda m: m.id, reverse=True)
        return json_response([m.payload(me_id=self.world.bot_user.id) for m in messages[:limit]])

    async def get_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        self._require(channel, Permissions.READ_MESSAGE_HISTORY)
        return self.message_out(self._message(request, channel))

    async def create_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if channel.is_dm:
            recipient = channel.recipient
            if recipient is None or recipient.bot or not recipient.dms_open:
                raise cannot_message_user()
        else:
            self._require(channel, Permissions.SEND_MESSAGES)
        payload = self.body(request) or {}
        files = self.files(request)
        if files and not channel.is_dm:
            self._require(channel, Permissions.ATTACH_FILES)
        self.server.validate_message_body(payload, files)
        nonce_errors = limits.FormErrors()
        limits.validate_create_nonce(payload, nonce_errors)
        if nonce_errors:
            raise ApiError.form(nonce_errors)
        nonce = payload.get("nonce")
        if nonce is not None and payload.get("enforce_nonce") is True:
            earlier = self.server.nonces.recall(self.world.bot_user.id, nonce)
            if earlier is not None:
                if earlier.deleted:
                    raise unknown_message()  # created with this nonce, deleted since: not created again
                return self.created_out(earlier)
        reference = payload.get("message_reference")
        referenced: SandboxMessage | None = None
        if reference:
            referenced = self.world.message(int(reference.get("message_id", 0)))
            if referenced is None or referenced.channel is not channel:
                if reference.get("fail_if_not_exists", True):
                    raise ApiError.invalid_field(
                        "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                    )
                referenced = None
        message = self.server.post_bot_message(channel, payload, files, referenced=referenced)
        return self.created_out(message)

    async def edit_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if message.author is not self.world.bot_user:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        payload = self.body(request) or {}
        files = self.files(request)
        self.server.validate_message_body(payload, files, editing=message)
        self.server.edit_message(message, payload, files)
        return self.message_out(message)

    async def delete_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if message.author is not self.world.bot_user:
            if channel.is_dm:
                raise not_in_dm()
            self._require(channel, Permissions.MANAGE_MESSAGES)
        self.server.delete_message(message)
        return no_content()

    async def typing(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if channel.is_dm and channel.recipient is not None and not channel.recipient.dms_open:
            raise cannot_message_user()
        self.server.dispatch_typing(channel, self.world.bot_user)
        return no_content()

    # -- reactions --------------------------------------------------------------------------------------

    def _emoji(self, request: web.Request) -> str:
        key = emoji_key(unquote(request.match_info["emoji"]))
        if ":" in key:
            raise ApiError(400, 10014, "Unknown Emoji")  # the sandbox guild has no custom emojis
        if (
            not key
            or (any(c.isascii() and c.isalnum() for c in key) and "\u20e3" not in key)
            or len(key) > 16
        ):
            raise ApiError(400, 10014, "Unknown Emoji")
        return key

    async def add_own_reaction(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        key = self._emoji(request)
        self._require(channel, Permissions.READ_MESSAGE_HISTORY)
        if key not in message.reactions:
            self._require(channel, Permissions.ADD_REACTIONS)
            if len([k for k, users in message.reactions.items() if users]) >= 20:
                raise ApiError(400, 30010, "Maximum number of reactions reached (20)")
        self.server.add_reaction(message, self.world.bot_user, key)
        return no_content()

    async def remove_own_reaction(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        self.server.remove_reaction(message, self.world.bot_user, self._emoji(request))
        return no_content()

    async def remove_user_reaction(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        key = self._emoji(request)
        user = self.world.users.get(self._snowflake(request, "user_id"))
        if user is None:
            raise unknown_user()
        if user is not self.world.bot_user:
            if channel.is_dm:
                raise not_in_dm()
            self._require(channel, Permissions.MANAGE_MESSAGES)
        self.server.remove_reaction(message, user, key)
        return no_content()

    async def list_reactions(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        key = self._emoji(request)
        limit = max(1, min(100, int(request.query.get("limit", "25"))))
        after = int(request.query.get("after", "0"))
        users = [self.world.users[u] for u in sorted(message.reactions.get(key, [])) if u > after]
        return json_response([u.payload() for u in users[:limit]])

    async def clear_emoji(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        self._require(channel, Permissions.MANAGE_MESSAGES)
        self.server.clear_reactions(message, self._emoji(request))
        return no_content()

    async def clear_reactions(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        self._require(channel, Permissions.MANAGE_MESSAGES)
        self.server.clear_reactions(message, None)
        return no_content()

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
        return json_response([c.payload() for c in guild.channels if not c.deleted])

    async def guild_roles(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        return json_response([r.payload() for r in guild.roles])

    async def list_members(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        if not self.server.options.privileged_intents & 2:
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

    # -- interactions -------------------------------------------------------------------------------

    async def interaction_callback(self, request: web.Request) -> web.Response:
        server = self.server
        record = (
            server.interactions.get(int(request.match_info["interaction_id"]))
            if request.match_info["interaction_id"].isdigit()
            else None
        )
        if record is None or not secrets.compare_digest(
            record.token, request.match_info["interaction_token"]
        ):
            raise ApiError(404, 10062, "Unknown interaction")
        age = server.clock.monotonic() - record.created
        if record.acknowledged:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        if age > server.options.interaction_deadline:
            record.late_callback_age = age
            server.touch(record)
            raise ApiError(404, 10062, "Unknown interaction")
        body = self.body(request) or {}
        files = self.files(request)
        kind = body.get("type")
        if kind not in ALLOWED_CALLBACKS.get(record.type, set()):
            raise ApiError.invalid_field(
                "type",
                "INTERACTION_CALLBACK_TYPE_INVALID",
                f"Interaction callback type {kind} is not valid for this interaction.",
            )
        data = body.get("data") or {}
        message: SandboxMessage | None = None
        if kind == 4:
            server.validate_message_body(data, files, prefix=("data",))
            message = server.post_interaction_message(record, data, files, origin="response")
        elif kind == 5:
            flags = int(data.get("flags") or 0) & SandboxMessage.EPHEMERAL
            message = server.post_interaction_message(
                record,
                {"content": "", "flags": flags | SandboxMessage.LOADING},
                [],
                origin="response",
                allow_loading=True,
            )
            record.awaiting_first_followup = True
        elif kind in (6, 7):
            source = record.source_message
            if source is None or source.deleted:
                raise ApiError.invalid_field(
                    "type", "INTERACTION_CALLBACK_TYPE_INVALID", "This interaction has no message to update."
                )
            if kind == 7:
                server.validate_message_body(data, files, prefix=("data",), editing=source)
                server.edit_message(source, data, files)
            record.original = source
            message = source if kind == 7 else None
        elif kind == 8:
            errors = limits.validate_choices(data)
            if errors:
                raise ApiError.form(errors)
            record.choices = list(data["choices"])
        elif kind == 9:
            errors = limits.validate_modal(data)
            if errors:
                raise ApiError.form(errors)
            record.modal = dict(data)
        record.callback_type = int(kind)
        record.callback_at = server.clock.monotonic()
        server.touch(record)
        with_response = request.query.get("with_response", "false").lower() in ("1", "true")
        if not with_response:
            return no_content()
        response: JSON = {
            "interaction": {
                "id": str(record.id),
                "type": record.type,
                "activity_instance_id": None,
                "response_message_id": str(message.id) if message is not None else None,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(message is not None and message.ephemeral),
            }
        }
        if message is not None and kind in (4, 5, 7):
            response["resource"] = {"type": kind, "message": message.payload(me_id=self.world.bot_user.id)}
        return json_response(response)

    def _webhook_record(self, request: web.Request) -> InteractionRecord:
        server = self.server
        if request.match_info["webhook_id"] != str(self.world.application.id):
            raise unknown_webhook()
        record = server.interactions_by_token.get(request.match_info["webhook_token"])
        if record is None:
            raise unknown_webhook()
        if server.clock.monotonic() - record.created > server.options.token_lifetime:
            raise ApiError(401, 50027, "Invalid Webhook Token")
        if not record.acknowledged:
            raise unknown_webhook()
        return record

    def _webhook_message(self, request: web.Request, record: InteractionRecord) -> SandboxMessage:
        wanted = request.match_info["message_id"]
        if wanted == "@original":
            if record.original is None or record.original.deleted or record.callback_type in (8, 9):
                raise unknown_message()
            return record.original
        message = next(
            (m for m in [record.original, *record.followups] if m is not None and str(m.id) == wanted), None
        )
        if message is None or message.deleted:
            raise unknown_message()
        return message

    async def execute_webhook(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        if record.type == AUTOCOMPLETE:
            raise unknown_webhook()
        payload = self.body(request) or {}
        files = self.files(request)
        self.server.validate_message_body(payload, files)
        if record.awaiting_first_followup and record.original is not None and not record.original.deleted:
            # Discord fills the deferred "thinking" message with the first follow-up.
            message = record.original
            record.awaiting_first_followup = False
            fill = dict(payload)
            fill["flags"] = message.flags & SandboxMessage.EPHEMERAL
            self.server.edit_message(message, fill, files, clear_loading=True)
        else:
            message = self.server.post_interaction_message(record, payload, files, origin="followup")
        self.server.touch(record)
        if request.query.get("wait", "false").lower() in ("1", "true"):
            return self.message_out(message)
        return no_content()

    async def get_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        return self.message_out(self._webhook_message(request, record))

    async def edit_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        message = self._webhook_message(request, record)
        payload = self.body(request) or {}
        files = self.files(request)
        self.server.validate_message_body(payload, files, editing=message)
        if message.loading:
            record.awaiting_first_followup = False
        self.server.edit_message(message, payload, files, clear_loading=True)
        self.server.touch(record)
        return self.message_out(message)

    async def delete_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        message = self._webhook_message(request, record)
        self.server.delete_message(message)
        self.server.touch(record)
        return no_content()

    # -- attachments ----------------------------------------------------------------------------------

    async def get_attachment(self, request: web.Request) -> web.Response:
        raw = request.match_info["attachment_id"]
        attachment = self.world.attachments.get(int(raw)) if raw.isdigit() else None
        if attachment is None or attachment.filename != request.match_info["filename"]:
            return web.Response(status=404, text="Not Found")
        return web.Response(
            body=attachment.data, content_type=attachment.content_type or "application/octet-stream"
        )
