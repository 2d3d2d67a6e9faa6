"""The REST API under /api/v10: what every route shares — Discord's error shapes, JSON answers, reading a
body with its uploads, and the look-ups and checks of :class:`Routes`. The routes themselves are in
``rest_users`` (gateway, users, the application, guilds), ``rest_commands``, ``rest_messages``
(channels, messages, reactions, attachments) and ``rest_interactions`` (callbacks and webhooks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

from . import limits
from .state import Permissions, SandboxChannel, SandboxGuild, SandboxMessage, World

JSON = dict[str, Any]


@dataclass
class UploadedFile:
    index: int
    filename: str
    data: bytes
    content_type: str | None


#: the parsed request body and uploads, read once by the router (``routing``) before the route runs
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


class Routes:
    """A group of routes over one world: the look-ups and permission checks every route makes."""

    def __init__(self, world: World) -> None:
        self.world = world

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
        if channel.is_group_dm or (
            not channel.is_dm and not self.world.bot_permissions(channel) & Permissions.VIEW_CHANNEL
        ):
            raise missing_access()  # a group DM (the bot is in none), or a channel it cannot see
        return channel

    def _message(self, request: web.Request, channel: SandboxChannel) -> SandboxMessage:
        message = self.world.message(self._snowflake(request, "message_id"))
        if message is None or message.channel is not channel or message.ephemeral:
            raise unknown_message()
        return message

    def _guild(self, request: web.Request) -> SandboxGuild:
        guild = self.world.guilds.get(self._snowflake(request, "guild_id"))
        if guild is None:
            raise ApiError(404, 10004, "Unknown Guild")
        if not self.world.bot_in(guild.id):
            raise missing_access()  # a server the bot is not in
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
