"""What a change does in Discord: a message posted, edited or deleted, a reaction, typing — each with the
gateway events Discord sends, the listeners told, and the bot's own posts kept in order.

The REST routes (what the bot does) and the user actions (what people do) both go through here, so a
message looks the same whoever made it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from . import limits, mentions
from .addresses import Addresses
from .gateway import Gateway
from .interactions import APPLICATION_COMMAND, InteractionRecord
from .nonces import NonceMemory
from .options import SandboxOptions
from .recorder import Changes
from .rest import ApiError, UploadedFile
from .state import (
    SandboxAttachment,
    SandboxChannel,
    SandboxClock,
    SandboxMessage,
    SandboxUser,
    World,
    emoji_payload,
    make_poll,
)

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MessageListener = Callable[[str, SandboxMessage], None]

_KEPT_FLAGS = (1 << 2) | (1 << 12) | (1 << 15)  # SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_COMPONENTS_V2


class Effects:
    def __init__(
        self,
        world: World,
        *,
        gateway: Gateway,
        changes: Changes,
        nonces: NonceMemory,
        options: SandboxOptions,
        addresses: Addresses,
        clock: SandboxClock,
    ) -> None:
        self.world = world
        self.gateway = gateway
        self.changes = changes
        self.nonces = nonces
        self.options = options
        self.addresses = addresses
        self.clock = clock
        #: the messages the bot posted by REST (not interaction answers), in order
        self.outbox: list[SandboxMessage] = []
        self._listeners: list[MessageListener] = []

    def subscribe(self, listener: MessageListener) -> Callable[[], None]:
        """Call `listener(kind, message)` for every message created/updated/deleted; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def dispatch(self, event: str, data: JSON, guild_id: int | None) -> None:
        channel = self.world.channel(int(data.get("channel_id") or 0))
        if channel is None or not channel.is_group_dm:  # the bot is in no group DM: it hears nothing there
            self.gateway.dispatch(event, data, guild_id=guild_id)
        self.changes.notify()

    def notify_listeners(self, kind: str, message: SandboxMessage) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, message)
            except Exception:
                log.exception("sandbox message listener failed")

    def message_event(self, message: SandboxMessage) -> JSON:
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
        mentions.validate_allowed_mentions(payload, errors, prefix)
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

    def _pings(self, content: str, payload: JSON) -> dict[str, Any]:
        """The ``pings`` and ``pinged_users`` of a message with this content, sent with this body."""
        allowed = payload.get("allowed_mentions")
        pinged = mentions.resolve(content, allowed if isinstance(allowed, dict) else None)
        users = [self.world.users[i] for i in pinged.users if i in self.world.users]
        return {"pings": pinged, "pinged_users": users}

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
                url=self.addresses.attachment_url(channel.id, attachment_id, filename),
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
            **self._pings(payload.get("content") or "", payload),
            poll=make_poll(payload["poll"], self.clock.now()) if payload.get("poll") else None,
            poll_clock=self.clock.now,
        )
        if nonce is not None:
            self.nonces.remember(message.author.id, nonce, message)
        self.outbox.append(message)
        event = self.message_event(message)
        if nonce is not None:
            event["nonce"] = nonce
        self.dispatch("MESSAGE_CREATE", event, channel.guild_id)
        self.notify_listeners("create", message)
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
            **self._pings(payload.get("content") or "", payload),
        )
        if origin == "response":
            record.original = message
        else:
            record.followups.append(message)
        if not message.ephemeral:
            self.dispatch("MESSAGE_CREATE", self.message_event(message), message.guild_id)
        self.notify_listeners("create", message)
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
        if "content" in payload or "allowed_mentions" in payload:
            pinged = self._pings(message.content, payload)
            message.pings, message.pinged_users = pinged["pings"], pinged["pinged_users"]
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
            self.dispatch("MESSAGE_UPDATE", self.message_event(message), message.guild_id)
        self.notify_listeners("update", message)

    def delete_message(self, message: SandboxMessage) -> None:
        message.deleted = True
        if not message.ephemeral:
            data: JSON = {"id": str(message.id), "channel_id": str(message.channel.id)}
            if message.guild_id is not None:
                data["guild_id"] = str(message.guild_id)
            self.dispatch("MESSAGE_DELETE", data, message.guild_id)
        self.notify_listeners("delete", message)

    def dispatch_typing(self, channel: SandboxChannel, user: SandboxUser) -> None:
        data: JSON = {
            "channel_id": str(channel.id),
            "user_id": str(user.id),
            "timestamp": int(self.clock.time()),
        }
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
            data["member"] = self.world.guilds[channel.guild_id].members[user.id].payload()
        self.dispatch("TYPING_START", data, channel.guild_id)

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
        self.dispatch(
            "MESSAGE_REACTION_ADD", self._reaction_event(message, user, key, add=True), message.guild_id
        )
        self.notify_listeners("update", message)
        return True

    def remove_reaction(self, message: SandboxMessage, user: SandboxUser, key: str) -> bool:
        users = message.reactions.get(key, [])
        if user.id not in users:
            return False
        users.remove(user.id)
        if not users:
            del message.reactions[key]
        self.dispatch(
            "MESSAGE_REACTION_REMOVE", self._reaction_event(message, user, key, add=False), message.guild_id
        )
        self.notify_listeners("update", message)
        return True

    def clear_reactions(self, message: SandboxMessage, key: str | None) -> None:
        data: JSON = {"channel_id": str(message.channel.id), "message_id": str(message.id)}
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
        if key is None:
            message.reactions.clear()
            self.dispatch("MESSAGE_REACTION_REMOVE_ALL", data, message.guild_id)
        else:
            message.reactions.pop(key, None)
            self.dispatch(
                "MESSAGE_REACTION_REMOVE_EMOJI", {**data, "emoji": emoji_payload(key)}, message.guild_id
            )
        self.notify_listeners("update", message)

    def post_user_message(self, channel: SandboxChannel, user: SandboxUser, content: str) -> SandboxMessage:
        """A person's message (MESSAGE_CREATE to the bot)."""
        message = self.world.new_message(
            channel, user, content=content, origin="user", **self._pings(content, {})
        )
        self.dispatch("MESSAGE_CREATE", self.message_event(message), channel.guild_id)
        self.notify_listeners("create", message)
        return message


def _normalise_embeds(embeds: Any) -> list[JSON]:
    """Discord stores embeds with `type: rich` unless given."""
    return [
        {"type": "rich", **e} if "type" not in e else dict(e) for e in embeds or [] if isinstance(e, dict)
    ]
