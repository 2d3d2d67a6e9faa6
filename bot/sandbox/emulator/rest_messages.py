"""REST: channels, messages (with ``enforce_nonce``), typing, reactions, and the attachment "CDN"."""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web

from . import limits
from .addresses import API_PREFIX
from .effects import Effects
from .polls import validate_poll
from .rest import (
    ApiError,
    Routes,
    cannot_message_user,
    json_response,
    no_content,
    not_in_dm,
    unknown_message,
    unknown_user,
)
from .state import Permissions, SandboxMessage, World, emoji_key
from .threads import Threads


class MessageRoutes(Routes):
    def __init__(self, world: World, *, effects: Effects, threads: Threads) -> None:
        super().__init__(world)
        self.effects = effects
        self.threads = threads

    def register(self, app: web.Application) -> None:
        r = app.router
        p = API_PREFIX
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

    def register_attachments(self, app: web.Application) -> None:
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self.get_attachment)

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
            self.threads.check_post(channel, self.world.bot_permissions(channel))
        payload = self.body(request) or {}
        files = self.files(request)
        if files and not channel.is_dm:
            self._require(channel, Permissions.ATTACH_FILES)
        self.effects.validate_message_body(payload, files)
        nonce_errors = limits.FormErrors()
        limits.validate_create_nonce(payload, nonce_errors)
        if "poll" in payload:
            validate_poll(payload["poll"], nonce_errors)
            if not nonce_errors and not channel.is_dm:
                self._require(channel, Permissions.SEND_POLLS)
        if nonce_errors:
            raise ApiError.form(nonce_errors)
        nonce = payload.get("nonce")
        if nonce is not None and payload.get("enforce_nonce") is True:
            earlier = self.effects.nonces.recall(self.world.bot_user.id, nonce)
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
        message = self.effects.post_bot_message(channel, payload, files, referenced=referenced)
        return self.created_out(message)

    async def edit_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if message.author is not self.world.bot_user:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        self.threads.check_active(channel)
        payload = self.body(request) or {}
        if isinstance(payload, dict) and payload.get("poll") is not None:
            raise ApiError(400, 520003, "Cannot edit a poll message")
        files = self.files(request)
        self.effects.validate_message_body(payload, files, editing=message)
        self.effects.edit_message(message, payload, files)
        return self.message_out(message)

    async def delete_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if message.author is not self.world.bot_user:
            if channel.is_dm:
                raise not_in_dm()
            self._require(channel, Permissions.MANAGE_MESSAGES)
        self.effects.delete_message(message)
        return no_content()

    async def typing(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if channel.is_dm and channel.recipient is not None and not channel.recipient.dms_open:
            raise cannot_message_user()
        self.effects.dispatch_typing(channel, self.world.bot_user)
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
        self.threads.check_active(channel)
        if key not in message.reactions:
            self._require(channel, Permissions.ADD_REACTIONS)
            if len([k for k, users in message.reactions.items() if users]) >= 20:
                raise ApiError(400, 30010, "Maximum number of reactions reached (20)")
        self.effects.add_reaction(message, self.world.bot_user, key)
        return no_content()

    async def remove_own_reaction(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        self.threads.check_active(channel)
        self.effects.remove_reaction(message, self.world.bot_user, self._emoji(request))
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
        self.effects.remove_reaction(message, user, key)
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
        self.effects.clear_reactions(message, self._emoji(request))
        return no_content()

    async def clear_reactions(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        self._require(channel, Permissions.MANAGE_MESSAGES)
        self.effects.clear_reactions(message, None)
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
