"""The sandbox's world: application, users, guild, channels, messages and commands.

Everything here is plain data plus the functions that turn it into the JSON payloads Discord sends
(users, members, channels, guilds, messages). The REST and gateway layers (`server.py`,
`gateway.py`) mutate it; tests read it through `SandboxServer`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from .mentions import NONE as NO_MENTIONS
from .mentions import Mentions

JSON = dict[str, Any]

DISCORD_EPOCH_MS = 1_420_070_400_000
# Seeded objects get fixed ids "created" at 2024-01-01T00:00:00Z, so tests and docs can rely on them.
_SEED_EPOCH_MS = 1_704_067_200_000


def seed_id(n: int) -> int:
    return ((_SEED_EPOCH_MS - DISCORD_EPOCH_MS) << 22) + n


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).isoformat()


class Permissions:
    """The permission bits the sandbox checks or reports."""

    CREATE_INSTANT_INVITE = 1 << 0
    ADMINISTRATOR = 1 << 3
    MANAGE_CHANNELS = 1 << 4
    MANAGE_GUILD = 1 << 5
    ADD_REACTIONS = 1 << 6
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    MANAGE_MESSAGES = 1 << 13
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    MENTION_EVERYONE = 1 << 17
    USE_EXTERNAL_EMOJIS = 1 << 18
    CHANGE_NICKNAME = 1 << 26
    USE_APPLICATION_COMMANDS = 1 << 31
    MANAGE_THREADS = 1 << 34
    CREATE_PUBLIC_THREADS = 1 << 35
    CREATE_PRIVATE_THREADS = 1 << 36
    SEND_MESSAGES_IN_THREADS = 1 << 38
    SEND_POLLS = 1 << 49
    ALL = (1 << 51) - 1

    EVERYONE_DEFAULT = (
        CREATE_INSTANT_INVITE
        | ADD_REACTIONS
        | VIEW_CHANNEL
        | SEND_MESSAGES
        | EMBED_LINKS
        | ATTACH_FILES
        | READ_MESSAGE_HISTORY
        | MENTION_EVERYONE
        | USE_EXTERNAL_EMOJIS
        | CHANGE_NICKNAME
        | USE_APPLICATION_COMMANDS
        | CREATE_PUBLIC_THREADS
        | CREATE_PRIVATE_THREADS
        | SEND_MESSAGES_IN_THREADS
        | SEND_POLLS
    )
    BOT_DEFAULT = ADD_REACTIONS | VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | ATTACH_FILES
    BOT_DEFAULT |= READ_MESSAGE_HISTORY | USE_EXTERNAL_EMOJIS | SEND_MESSAGES_IN_THREADS
    BOT_DEFAULT |= CREATE_PUBLIC_THREADS | SEND_POLLS

    #: What a DM allows (Discord's fixed set for the bot in a DM).
    DM = VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | ATTACH_FILES | READ_MESSAGE_HISTORY | ADD_REACTIONS
    DM |= USE_EXTERNAL_EMOJIS | USE_APPLICATION_COMMANDS


class Intents:
    GUILDS = 1 << 0
    GUILD_MEMBERS = 1 << 1
    GUILD_PRESENCES = 1 << 8
    GUILD_MESSAGES = 1 << 9
    GUILD_MESSAGE_REACTIONS = 1 << 10
    GUILD_MESSAGE_TYPING = 1 << 11
    DIRECT_MESSAGES = 1 << 12
    DIRECT_MESSAGE_REACTIONS = 1 << 13
    DIRECT_MESSAGE_TYPING = 1 << 14
    MESSAGE_CONTENT = 1 << 15
    GUILD_MESSAGE_POLLS = 1 << 24
    DIRECT_MESSAGE_POLLS = 1 << 25
    PRIVILEGED = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT


class ChannelType:
    TEXT = 0
    DM = 1
    GROUP_DM = 3
    CATEGORY = 4
    ANNOUNCEMENT_THREAD = 10
    PUBLIC_THREAD = 11
    PRIVATE_THREAD = 12
    FORUM = 15
    THREADS = (ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD)


class SandboxClock:
    """Real time plus an adjustable offset: `advance()` makes deadlines pass without sleeping.

    The 3-second interaction deadline and the 15-minute token lifetime are measured with
    `monotonic()`; message timestamps and new snowflakes use `time()`.
    """

    def __init__(self) -> None:
        self._offset = 0.0

    def time(self) -> float:
        return time.time() + self._offset

    def monotonic(self) -> float:
        return time.monotonic() + self._offset

    def now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.time(), dt.UTC)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the sandbox clock only moves forward")
        self._offset += seconds

    @property
    def offset(self) -> float:
        return self._offset


class SnowflakeFactory:
    """New ids encode the sandbox clock's time and always increase."""

    def __init__(self, clock: SandboxClock) -> None:
        self._clock = clock
        self._last = seed_id(10_000)

    def next(self) -> int:
        candidate = (int(self._clock.time() * 1000) - DISCORD_EPOCH_MS) << 22
        if candidate <= self._last:
            candidate = self._last + 1
        self._last = candidate
        return candidate

    def next_on_shard(self, shard_id: int, shard_count: int) -> int:
        """The next id whose timestamp puts it on that shard (``(id >> 22) % shard_count == shard_id``):
        a later millisecond, if need be."""
        candidate = self.next()
        while (candidate >> 22) % shard_count != shard_id:
            candidate = ((candidate >> 22) + 1) << 22
        self._last = candidate
        return candidate


@dataclass(eq=False)
class SandboxUser:
    id: int
    username: str
    global_name: str | None = None
    bot: bool = False
    #: False: the user blocked the bot or closed DMs from server members (sending answers 50007).
    dms_open: bool = True

    @property
    def name(self) -> str:
        return self.username

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"

    def payload(self) -> JSON:
        data: JSON = {
            "id": str(self.id),
            "username": self.username,
            "global_name": self.global_name,
            "discriminator": "0",
            "avatar": None,
            "public_flags": 0,
            "flags": 0,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
        }
        if self.bot:
            data["bot"] = True
        return data

    def __repr__(self) -> str:
        return f"<SandboxUser {self.username} id={self.id}>"


@dataclass(eq=False)
class SandboxRole:
    id: int
    name: str
    permissions: int
    position: int = 0
    managed: bool = False
    bot_id: int | None = None

    def payload(self) -> JSON:
        data: JSON = {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
            "hoist": False,
            "icon": None,
            "unicode_emoji": None,
            "managed": self.managed,
            "mentionable": False,
            "flags": 0,
        }
        if self.bot_id is not None:
            data["tags"] = {"bot_id": str(self.bot_id)}
        return data


@dataclass(eq=False)
class SandboxMember:
    user: SandboxUser
    role_ids: list[int] = field(default_factory=list)
    nick: str | None = None
    joined_at: dt.datetime = field(default_factory=lambda: dt.datetime(2024, 1, 1, tzinfo=dt.UTC))

    def payload(self, *, permissions: int | None = None) -> JSON:
        data: JSON = {
            "user": self.user.payload(),
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "roles": [str(r) for r in self.role_ids],
            "joined_at": iso(self.joined_at),
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": None,
        }
        if permissions is not None:
            data["permissions"] = str(permissions)
        return data


@dataclass
class Overwrite:
    id: int
    type: int  # 0 role, 1 member
    allow: int = 0
    deny: int = 0

    def payload(self) -> JSON:
        return {"id": str(self.id), "type": self.type, "allow": str(self.allow), "deny": str(self.deny)}


@dataclass
class ThreadState:
    """What only a thread has (Discord's ``thread_metadata`` and friends); a forum post is a thread too."""

    owner_id: int
    created: dt.datetime
    archived: bool = False
    locked: bool = False
    auto_archive_duration: int = 1440  # minutes
    archive_timestamp: dt.datetime | None = None
    #: who joined (a private thread is visible to them and to thread moderators only)
    members: set[int] = field(default_factory=set)
    message_count: int = 0

    def metadata(self) -> JSON:
        return {
            "archived": self.archived,
            "auto_archive_duration": self.auto_archive_duration,
            "archive_timestamp": iso(self.archive_timestamp or self.created),
            "locked": self.locked,
            "create_timestamp": iso(self.created),
        }


@dataclass(eq=False)
class SandboxChannel:
    id: int
    type: int
    name: str | None = None
    guild_id: int | None = None
    position: int = 0
    topic: str | None = None
    parent_id: int | None = None
    overwrites: list[Overwrite] = field(default_factory=list)
    recipient: SandboxUser | None = None  # the bot's DMs
    participants: tuple[SandboxUser, ...] = ()  # group DMs (the bot is never one of them)
    last_message_id: int | None = None
    deleted: bool = False
    thread: ThreadState | None = None  # threads and forum posts

    @property
    def is_dm(self) -> bool:
        """A private channel, outside every server: the bot's DM with someone, or a group DM."""
        return self.type in (ChannelType.DM, ChannelType.GROUP_DM)

    @property
    def is_group_dm(self) -> bool:
        return self.type == ChannelType.GROUP_DM

    def has_participant(self, user: SandboxUser) -> bool:
        return user is self.recipient or user in self.participants

    @property
    def is_thread(self) -> bool:
        return self.thread is not None

    @property
    def is_forum(self) -> bool:
        return self.type == ChannelType.FORUM

    @property
    def mention(self) -> str:
        return f"<#{self.id}>"

    def label(self) -> str:
        if self.is_group_dm:
            return f"group DM {self.name or ''} ({', '.join(u.username for u in self.participants)})"
        if self.is_dm and self.recipient is not None:
            return f"DM with {self.recipient.username}"
        return f"#{self.name}"

    def payload(self, *, me: SandboxUser | None = None, permissions: int | None = None) -> JSON:
        data: JSON = {
            "id": str(self.id),
            "type": self.type,
            "last_message_id": str(self.last_message_id) if self.last_message_id else None,
            "flags": 0,
        }
        if self.is_group_dm:
            data["name"] = self.name
            data["owner_id"] = str(self.participants[0].id)
            data["recipients"] = [u.payload() for u in self.participants if me is None or u.id != me.id]
            return data
        if self.is_dm:
            data["recipients"] = [self.recipient.payload()] if self.recipient else []
            if me is not None:
                data["recipients"] = [u for u in data["recipients"] if u["id"] != str(me.id)]
            return data
        data.update(
            {
                "guild_id": str(self.guild_id),
                "name": self.name,
                "parent_id": str(self.parent_id) if self.parent_id else None,
                "nsfw": False,
            }
        )
        if self.thread is not None:
            data.update(
                {
                    "owner_id": str(self.thread.owner_id),
                    "thread_metadata": self.thread.metadata(),
                    "message_count": self.thread.message_count,
                    "total_message_sent": self.thread.message_count,
                    "member_count": min(50, len(self.thread.members)),
                    "rate_limit_per_user": 0,
                    "last_pin_timestamp": None,
                }
            )
        else:
            data.update(
                {"position": self.position, "permission_overwrites": [o.payload() for o in self.overwrites]}
            )
        if self.type == ChannelType.TEXT:
            data.update({"topic": self.topic, "rate_limit_per_user": 0, "last_pin_timestamp": None})
        if self.is_forum:
            data.update(
                {
                    "topic": self.topic,
                    "rate_limit_per_user": 0,
                    "available_tags": [],
                    "default_reaction_emoji": None,
                    "default_thread_rate_limit_per_user": 0,
                    "default_sort_order": None,
                    "default_forum_layout": 0,
                }
            )
        if permissions is not None:
            data["permissions"] = str(permissions)
        return data

    def __repr__(self) -> str:
        return f"<SandboxChannel {self.label()} id={self.id}>"


@dataclass(eq=False)
class SandboxGuild:
    id: int
    name: str
    owner_id: int
    roles: list[SandboxRole] = field(default_factory=list)
    channels: list[SandboxChannel] = field(default_factory=list)
    members: dict[int, SandboxMember] = field(default_factory=dict)
    created: dt.datetime = field(default_factory=lambda: dt.datetime(2024, 1, 1, tzinfo=dt.UTC))

    def role(self, role_id: int) -> SandboxRole | None:
        return next((r for r in self.roles if r.id == role_id), None)

    @property
    def everyone(self) -> SandboxRole:
        role = self.role(self.id)
        assert role is not None
        return role

    def text_channels(self) -> list[SandboxChannel]:
        return [c for c in self.channels if c.type == ChannelType.TEXT and not c.deleted]

    def channel_by_id(self, channel_id: int | None) -> SandboxChannel | None:
        return next((c for c in self.channels if c.id == channel_id), None)

    def active_threads(self) -> list[SandboxChannel]:
        return [c for c in self.channels if c.thread is not None and not c.thread.archived and not c.deleted]

    def channel_named(self, name: str) -> SandboxChannel | None:
        name = name.lstrip("#")
        return next((c for c in self.channels if c.name == name and not c.deleted), None)

    def base_permissions(self, user_id: int) -> int:
        if user_id == self.owner_id:
            return Permissions.ALL
        member = self.members.get(user_id)
        if member is None:
            return 0
        perms = self.everyone.permissions
        for role_id in member.role_ids:
            role = self.role(role_id)
            if role is not None:
                perms |= role.permissions
        if perms & Permissions.ADMINISTRATOR:
            return Permissions.ALL
        return perms

    def permissions_in(self, channel: SandboxChannel, user_id: int) -> int:
        """Discord's algorithm: base permissions, then @everyone, role, then member overwrites. A thread
        has the permissions of its parent channel; a private one is seen only by its members and by
        those who may manage threads."""
        if channel.thread is not None:
            parent = self.channel_by_id(channel.parent_id)
            perms = self.permissions_in(parent, user_id) if parent is not None else 0
            private = channel.type == ChannelType.PRIVATE_THREAD
            if private and user_id not in channel.thread.members and not perms & Permissions.MANAGE_THREADS:
                return 0
            return perms
        base = self.base_permissions(user_id)
        if base == Permissions.ALL:
            return base
        member = self.members.get(user_id)
        perms = base
        by_id = {o.id: o for o in channel.overwrites}
        if (everyone := by_id.get(self.id)) is not None:
            perms = (perms & ~everyone.deny) | everyone.allow
        if member is not None:
            allow = deny = 0
            for role_id in member.role_ids:
                if (ow := by_id.get(role_id)) is not None and ow.type == 0:
                    allow |= ow.allow
                    deny |= ow.deny
            perms = (perms & ~deny) | allow
            if (own := by_id.get(user_id)) is not None and own.type == 1:
                perms = (perms & ~own.deny) | own.allow
        if not perms & Permissions.VIEW_CHANNEL:
            return 0
        return perms

    def create_payload(self, *, me: SandboxUser, members: list[SandboxMember], presences: list[JSON]) -> JSON:
        """The GUILD_CREATE payload (`member_count` is the full count, as Discord sends it)."""
        return {
            **self.payload(),
            "joined_at": iso(self.created),
            "large": len(self.members) > 250,
            "unavailable": False,
            "member_count": len(self.members),
            "voice_states": [],
            "members": [m.payload() for m in members],
            "channels": [c.payload() for c in self.channels if not c.deleted and c.thread is None],
            "threads": [
                t.payload()
                for t in self.active_threads()
                if self.permissions_in(t, me.id) & Permissions.VIEW_CHANNEL
            ],
            "presences": presences,
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def payload(self) -> JSON:
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(self.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [r.payload() for r in self.roles],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "vanity_url_code": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": "en-US",
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "max_members": 500000,
            "max_video_channel_users": 25,
        }


@dataclass(eq=False)
class SandboxAttachment:
    id: int
    filename: str
    data: bytes
    content_type: str | None
    url: str
    description: str | None = None
    ephemeral: bool = False

    @property
    def size(self) -> int:
        return len(self.data)

    def payload(self) -> JSON:
        data: JSON = {
            "id": str(self.id),
            "filename": self.filename,
            "size": self.size,
            "url": self.url,
            "proxy_url": self.url,
        }
        if self.content_type:
            data["content_type"] = self.content_type
        if self.description:
            data["description"] = self.description
        if self.ephemeral:
            data["ephemeral"] = True
        return data


@dataclass(eq=False)
class SandboxMessage:
    """A message as the sandbox stores it; it stays current (edits, reactions, deletion).

    `content`, `embeds`, `components` hold Discord's JSON shapes (dicts), so tests can assert on
    exactly what went over the wire.
    """

    id: int
    channel: SandboxChannel
    author: SandboxUser
    content: str = ""
    embeds: list[JSON] = field(default_factory=list)
    components: list[JSON] = field(default_factory=list)
    attachments: list[SandboxAttachment] = field(default_factory=list)
    flags: int = 0
    type: int = 0
    created_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    edited_at: dt.datetime | None = None
    webhook_id: int | None = None
    application_id: int | None = None
    interaction_metadata: JSON | None = None
    message_reference: JSON | None = None
    #: emoji key ("👍" or "name:id") -> user ids in reaction order
    reactions: dict[str, list[int]] = field(default_factory=dict)
    deleted: bool = False
    #: earlier versions: (content, embeds, components) before each edit
    history: list[JSON] = field(default_factory=list)
    #: the interaction that created it, if any
    interaction_id: int | None = None
    #: "channel" (REST), "response", "followup", "user"
    origin: str = "channel"
    #: the ``nonce`` it was created with (echoed in the create answer and MESSAGE_CREATE only)
    nonce: str | int | None = None
    #: whom it pinged: the mentions in its content its ``allowed_mentions`` let through (``mentions``)
    pings: Mentions = NO_MENTIONS
    #: the users of ``pings`` the world knows, as the message's ``mentions`` shows them
    pinged_users: list[SandboxUser] = field(default_factory=list)
    #: its poll (``polls.make_poll``: answers, expiry, each answer's voters, ended) and the clock
    #: that says whether it is over
    poll: JSON | None = None
    poll_clock: Any = None

    EPHEMERAL = 1 << 6
    LOADING = 1 << 7

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & self.EPHEMERAL)

    @property
    def loading(self) -> bool:
        return bool(self.flags & self.LOADING)

    @property
    def guild_id(self) -> int | None:
        return self.channel.guild_id

    @property
    def embed(self) -> JSON | None:
        return self.embeds[0] if self.embeds else None

    @property
    def buttons(self) -> list[JSON]:
        """Every button in the message, in display order (row by row)."""
        return [c for c in iter_components(self.components) if c.get("type") == 2]

    @property
    def selects(self) -> list[JSON]:
        return [c for c in iter_components(self.components) if c.get("type") in (3, 5, 6, 7, 8)]

    def reaction_users(self, emoji: str) -> list[int]:
        return list(self.reactions.get(emoji, []))

    @property
    def text(self) -> str:
        """Content and every embed's text, joined: handy for `assert "x" in message.text`."""
        parts = [self.content] if self.content else []
        for embed in self.embeds:
            parts.extend(embed_texts(embed))
        return "\n".join(parts)

    def payload(self, *, me_id: int | None = None, guild_member: JSON | None = None) -> JSON:
        data: JSON = {
            "id": str(self.id),
            "channel_id": str(self.channel.id),
            "type": self.type,
            "author": self.author.payload(),
            "content": self.content,
            "timestamp": iso(self.created_at),
            "edited_timestamp": iso(self.edited_at) if self.edited_at else None,
            "tts": False,
            "mention_everyone": self.pings.everyone,
            "mentions": [user.payload() for user in self.pinged_users],
            "mention_roles": [str(role) for role in self.pings.roles],
            "attachments": [a.payload() for a in self.attachments],
            "embeds": [dict(e) for e in self.embeds],
            "components": [dict(c) for c in self.components],
            "pinned": False,
            "flags": self.flags,
        }
        if self.reactions:
            data["reactions"] = [
                {
                    "emoji": emoji_payload(key),
                    "count": len(users),
                    "count_details": {"burst": 0, "normal": len(users)},
                    "me": me_id in users,
                    "me_burst": False,
                    "burst_colors": [],
                }
                for key, users in self.reactions.items()
                if users
            ]
        if self.poll is not None:
            data["poll"] = poll_payload(self.poll, now=self.poll_clock(), me_id=me_id)
        if self.webhook_id is not None:
            data["webhook_id"] = str(self.webhook_id)
        if self.application_id is not None:
            data["application_id"] = str(self.application_id)
        if self.interaction_metadata is not None:
            data["interaction_metadata"] = dict(self.interaction_metadata)
        if self.message_reference is not None:
            data["message_reference"] = dict(self.message_reference)
        if guild_member is not None:
            data["member"] = guild_member
        return data

    def __repr__(self) -> str:
        preview = (self.content or (self.embeds[0].get("title", "") if self.embeds else ""))[:40]
        return (
            f"<SandboxMessage id={self.id} in {self.channel.label()} by {self.author.username}: {preview!r}>"
        )


def make_poll(poll: JSON, now: dt.datetime) -> JSON:
    """What the sandbox keeps of a poll created now (answer ids from 1, the expiry from ``duration``)."""
    hours = int(poll.get("duration", 24))
    return {
        "question": {"text": poll["question"]["text"]},
        "answers": [
            {"answer_id": index, "poll_media": dict(answer["poll_media"])}
            for index, answer in enumerate(poll["answers"], start=1)
        ],
        "expiry": now + dt.timedelta(hours=hours),
        "allow_multiselect": bool(poll.get("allow_multiselect", False)),
        "layout_type": 1,
        "votes": {index: [] for index in range(1, len(poll["answers"]) + 1)},
        "ended": False,
    }


def poll_is_over(poll: JSON, now: dt.datetime) -> bool:
    """Ended by its author, or past its expiry: its results are final."""
    return bool(poll["ended"]) or now >= poll["expiry"]


def poll_payload(poll: JSON, *, now: dt.datetime, me_id: int | None) -> JSON:
    """A poll as a message carries it, with its results (final once ended or expired)."""
    return {
        "question": dict(poll["question"]),
        "answers": [dict(a) for a in poll["answers"]],
        "expiry": iso(poll["expiry"]),
        "allow_multiselect": poll["allow_multiselect"],
        "layout_type": 1,
        "results": {
            "is_finalized": poll_is_over(poll, now),
            "answer_counts": [
                {"id": answer_id, "count": len(users), "me_voted": me_id in users}
                for answer_id, users in poll["votes"].items()
                if users
            ],
        },
    }


def iter_components(components: list[JSON]) -> list[JSON]:
    """Depth-first list of every component (rows, containers, sections and their children)."""
    found: list[JSON] = []
    for component in components:
        found.append(component)
        children = list(component.get("components") or [])
        if isinstance(component.get("accessory"), dict):
            children.append(component["accessory"])
        if isinstance(component.get("component"), dict):
            children.append(component["component"])
        found.extend(iter_components(children))
    return found


def embed_texts(embed: JSON) -> list[str]:
    texts: list[str] = []
    if author := (embed.get("author") or {}).get("name"):
        texts.append(author)
    for key in ("title", "description"):
        if embed.get(key):
            texts.append(str(embed[key]))
    for f in embed.get("fields") or []:
        texts.append(f"{f.get('name', '')}: {f.get('value', '')}")
    if footer := (embed.get("footer") or {}).get("text"):
        texts.append(footer)
    return texts


def emoji_key(emoji: str) -> str:
    """Normalise an emoji as Discord's URL form takes it: "👍", or "name:id" for custom ones."""
    emoji = emoji.strip()
    if emoji.startswith("<") and emoji.endswith(">"):
        parts = emoji.strip("<>").split(":")
        return f"{parts[-2]}:{parts[-1]}"
    return emoji


def emoji_payload(key: str) -> JSON:
    if ":" in key:
        name, _, emoji_id = key.partition(":")
        return {"id": emoji_id, "name": name, "animated": False}
    return {"id": None, "name": key}


#: User flag of the pseudo-user that stands for a team as an application's owner (TEAM_PSEUDO_USER).
TEAM_PSEUDO_USER = 1 << 10
TEAM_ROLES = ("admin", "developer", "read_only")


@dataclass
class TeamMembership:
    user: SandboxUser
    role: str  # "admin", "developer" or "read_only"
    accepted: bool = True  # False: invited, not accepted yet (membership_state 1)


@dataclass
class SandboxTeam:
    """A developer team owning the application (Discord's team object)."""

    id: int
    name: str
    owner: SandboxUser
    members: list[TeamMembership] = field(default_factory=list)

    def payload(self) -> JSON:
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "owner_user_id": str(self.owner.id),
            "members": [
                {
                    "membership_state": 2 if m.accepted else 1,
                    "permissions": ["*"],
                    "team_id": str(self.id),
                    "user": m.user.payload(),
                    "role": m.role,
                }
                for m in self.members
            ],
        }

    def owner_pseudo_user(self) -> JSON:
        """What Discord puts in an application's ``owner`` when a team owns it: a pseudo-user for the team."""
        return {
            "id": str(self.id),
            "username": f"team{self.id}",
            "global_name": None,
            "discriminator": "0000",
            "avatar": None,
            "public_flags": TEAM_PSEUDO_USER,
            "flags": TEAM_PSEUDO_USER,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
        }


@dataclass
class Application:
    id: int
    name: str
    owner: SandboxUser
    bot: SandboxUser
    description: str = "A local stand-in for a Discord application"
    #: When a team owns the application, ``owner`` in its payload is the team's pseudo-user.
    team: SandboxTeam | None = None

    def payload(self) -> JSON:
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "description": self.description,
            "summary": "",
            "type": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "owner": self.owner.payload() if self.team is None else self.team.owner_pseudo_user(),
            "team": None if self.team is None else self.team.payload(),
            "flags": (1 << 19) | (1 << 23),  # GATEWAY_MESSAGE_CONTENT_LIMITED, APPLICATION_COMMAND_BADGE
            "bot": self.bot.payload(),
            "interactions_endpoint_url": None,
            "redirect_uris": [],
            "tags": [],
            "approximate_guild_count": 1,
            # both installation contexts enabled in the Developer Portal: to servers, and to people
            "integration_types_config": {"0": {}, "1": {}},
            "install_params": None,
            "role_connections_verification_url": None,
            "terms_of_service_url": None,
            "privacy_policy_url": None,
            "custom_install_url": None,
            "rpc_origins": [],
            "guild_id": None,
            "primary_sku_id": None,
            "slug": None,
            "cover_image": None,
        }


class World:
    """The seeded world: one application with its bot user, one guild, some channels and people.

    Fixed ids (see `seed_id`). People:

    - ``alice``: has the "Moderators" role with Manage Server (can use `/paperadmin`).
    - ``bob`` and ``carol``: plain members.
    - ``owner``: owns the guild and the application (not used by tests, but Discord needs one).
    """

    TOKEN = "sandbox-bot-token.paperbot.local-only"  # noqa: S105 - a fixed, local-only token

    def __init__(self, clock: SandboxClock) -> None:
        self.clock = clock
        self.snowflakes = SnowflakeFactory(clock)
        ids = itertools.count(1)

        self.owner = SandboxUser(seed_id(next(ids)), "owner", "Guild Owner")
        self.bot_user = SandboxUser(seed_id(next(ids)), "paperbot", "paperbot", bot=True)
        self.application = Application(
            id=self.bot_user.id, name="paperbot", owner=self.owner, bot=self.bot_user
        )
        self.users: dict[int, SandboxUser] = {u.id: u for u in (self.owner, self.bot_user)}

        guild_id = seed_id(next(ids))
        self.guild = SandboxGuild(id=guild_id, name="Paper Lab", owner_id=self.owner.id)
        everyone = SandboxRole(guild_id, "@everyone", Permissions.EVERYONE_DEFAULT)
        moderators = SandboxRole(
            seed_id(next(ids)), "Moderators", Permissions.MANAGE_GUILD | Permissions.MANAGE_MESSAGES, 2
        )
        bot_role = SandboxRole(
            seed_id(next(ids)), "paperbot", Permissions.BOT_DEFAULT, 1, managed=True, bot_id=self.bot_user.id
        )
        self.guild.roles = [everyone, bot_role, moderators]
        self.moderators_role = moderators
        self.bot_role = bot_role
        self.guilds: dict[int, SandboxGuild] = {guild_id: self.guild}

        self.channels: dict[int, SandboxChannel] = {}
        for position, (name, topic) in enumerate(
            [
                ("general", "Anything"),
                ("papers", "Paper search and discussion"),
                ("daily-llm-papers", "A daily feed of LLM papers"),
            ]
        ):
            channel = SandboxChannel(
                seed_id(next(ids)), ChannelType.TEXT, name, guild_id, position=position, topic=topic
            )
            self.guild.channels.append(channel)
            self.channels[channel.id] = channel

        self.add_member(self.owner)
        self.add_member(self.bot_user, roles=[bot_role.id])
        self.alice = self.add_user("alice", "Alice", roles=[moderators.id], user_id=seed_id(next(ids)))
        self.bob = self.add_user("bob", "Bob", user_id=seed_id(next(ids)))
        self.carol = self.add_user("carol", "Carol", user_id=seed_id(next(ids)))

        self.messages: dict[int, SandboxMessage] = {}
        self.dm_channels: dict[int, SandboxChannel] = {}  # user id -> DM channel with the bot
        #: the people who installed the application to their own account (a user install): its
        #: commands that allow it follow them into servers without the bot
        self.user_installs: set[int] = set()
        self.attachments: dict[int, SandboxAttachment] = {}
        #: guild id (None = global) -> command name/type key -> command JSON as Discord returns it
        self.commands: dict[int | None, dict[tuple[str, int], JSON]] = {None: {}}
        self.presences: dict[int, str] = {}
        #: gateway sessions the bot started (IDENTIFYs): the session start limit counts them
        self.session_starts = 0

    # -- people ---------------------------------------------------------------------------------

    def add_user(
        self,
        username: str,
        global_name: str | None = None,
        *,
        roles: list[int] | None = None,
        in_guild: bool = True,
        user_id: int | None = None,
        dms_open: bool = True,
    ) -> SandboxUser:
        if self.user_named(username) is not None:
            raise ValueError(f"a sandbox user named {username!r} already exists")
        user = SandboxUser(
            user_id or self.snowflakes.next(), username, global_name or username.title(), dms_open=dms_open
        )
        self.users[user.id] = user
        if in_guild:
            self.add_member(user, roles=roles)
        return user

    def add_member(
        self, user: SandboxUser, *, roles: list[int] | None = None, guild: SandboxGuild | None = None
    ) -> SandboxMember:
        self.users[user.id] = user
        member = SandboxMember(user, list(roles or []))
        (guild or self.guild).members[user.id] = member
        return member

    def add_guild(
        self, name: str, *, shard: tuple[int, int] | None = None, with_bot: bool = True
    ) -> SandboxGuild:
        """Another server the bot is in, owned by the application's owner, with the roles of the first
        (@everyone, the bot's managed role, Moderators with Manage Server) and one #general channel.
        ``shard=(shard_id, shard_count)``: an id that shard's sessions get the events of. Without
        ``with_bot``, a server the bot was never added to (only people's user installs reach it)."""
        guild_id = self.snowflakes.next() if shard is None else self.snowflakes.next_on_shard(*shard)
        guild = SandboxGuild(id=guild_id, name=name, owner_id=self.owner.id)
        guild.roles = [
            SandboxRole(guild.id, "@everyone", Permissions.EVERYONE_DEFAULT),
            SandboxRole(
                self.snowflakes.next(),
                "paperbot",
                Permissions.BOT_DEFAULT,
                1,
                managed=True,
                bot_id=self.bot_user.id,
            ),
            SandboxRole(
                self.snowflakes.next(),
                "Moderators",
                Permissions.MANAGE_GUILD | Permissions.MANAGE_MESSAGES,
                2,
            ),
        ]
        channel = SandboxChannel(
            self.snowflakes.next(), ChannelType.TEXT, "general", guild.id, topic="Anything"
        )
        guild.channels.append(channel)
        self.channels[channel.id] = channel
        self.guilds[guild.id] = guild
        self.add_member(self.owner, guild=guild)
        if with_bot:
            self.add_member(self.bot_user, roles=[guild.roles[1].id], guild=guild)
        return guild

    def bot_guilds(self) -> list[SandboxGuild]:
        """The servers the bot is in: the only ones the gateway and the REST API tell it about."""
        return [g for g in self.guilds.values() if self.bot_user.id in g.members]

    def bot_in(self, guild_id: int | None) -> bool:
        """Whether the bot is a member of that server (False for a DM)."""
        guild = self.guilds.get(guild_id or 0)
        return guild is not None and self.bot_user.id in guild.members

    @staticmethod
    def moderators_of(guild: SandboxGuild) -> SandboxRole:
        role = next((r for r in guild.roles if r.name == "Moderators"), None)
        assert role is not None, f"guild {guild.name} has no Moderators role"
        return role

    def user_named(self, name: str) -> SandboxUser | None:
        name = name.lstrip("@").lower()
        return next((u for u in self.users.values() if u.username.lower() == name), None)

    def humans(self) -> list[SandboxUser]:
        return [u for u in self.users.values() if not u.bot]

    # -- channels ---------------------------------------------------------------------------------

    def add_channel(
        self, name: str, *, topic: str | None = None, kind: int = ChannelType.TEXT
    ) -> SandboxChannel:
        """A text channel (or, with ``kind=ChannelType.FORUM``, a forum: only posts can be made there)."""
        if self.guild.channel_named(name) is not None:
            raise ValueError(f"a channel named #{name} already exists")
        channel = SandboxChannel(
            self.snowflakes.next(),
            kind,
            name,
            self.guild.id,
            position=len(self.guild.channels),
            topic=topic,
        )
        self.guild.channels.append(channel)
        self.channels[channel.id] = channel
        return channel

    def add_thread(
        self,
        parent: SandboxChannel,
        name: str,
        owner: SandboxUser,
        *,
        private: bool = False,
        thread_id: int | None = None,
    ) -> SandboxChannel:
        """A thread in a text channel, or a post in a forum (a public thread whose parent is the forum);
        ``thread_id``: one started from a message (the message's id; its name need not be unique)."""
        if (
            parent.guild_id is None
            or parent.thread is not None
            or parent.type
            not in (
                ChannelType.TEXT,
                ChannelType.FORUM,
            )
        ):
            raise ValueError(f"{parent.label()} cannot hold threads")
        if private and parent.is_forum:
            raise ValueError("a forum post is always public")
        guild = self.guilds[parent.guild_id]
        if thread_id is None and guild.channel_named(name) is not None:
            raise ValueError(f"a channel or thread named {name!r} already exists")
        thread = SandboxChannel(
            thread_id or self.snowflakes.next(),
            ChannelType.PRIVATE_THREAD if private else ChannelType.PUBLIC_THREAD,
            name,
            guild.id,
            parent_id=parent.id,
            thread=ThreadState(owner_id=owner.id, created=self.clock.now(), members={owner.id}),
        )
        guild.channels.append(thread)
        self.channels[thread.id] = thread
        return thread

    def dm_channel(self, user: SandboxUser) -> SandboxChannel:
        """The DM channel between the bot and `user` (created on first use, as Discord does)."""
        channel = self.dm_channels.get(user.id)
        if channel is None:
            channel = SandboxChannel(self.snowflakes.next(), ChannelType.DM, recipient=user)
            self.dm_channels[user.id] = channel
            self.channels[channel.id] = channel
        return channel

    def group_dm(
        self, owner: SandboxUser, others: list[SandboxUser], name: str | None = None
    ) -> SandboxChannel:
        """A group DM `owner` started with `others` (the bot cannot be in one)."""
        channel = SandboxChannel(
            self.snowflakes.next(), ChannelType.GROUP_DM, name=name, participants=(owner, *others)
        )
        self.channels[channel.id] = channel
        return channel

    def channel(self, channel_id: int) -> SandboxChannel | None:
        channel = self.channels.get(channel_id)
        return None if channel is None or channel.deleted else channel

    def bot_permissions(self, channel: SandboxChannel) -> int:
        if channel.is_group_dm:
            return 0
        if channel.is_dm:
            return Permissions.DM
        return self.guilds[channel.guild_id or 0].permissions_in(channel, self.bot_user.id)

    def user_permissions(self, channel: SandboxChannel, user: SandboxUser) -> int:
        if channel.is_dm:
            return Permissions.DM if channel.has_participant(user) else 0
        return self.guilds[channel.guild_id or 0].permissions_in(channel, user.id)

    def member_payload(
        self, guild: SandboxGuild, user: SandboxUser, *, channel: SandboxChannel | None = None
    ) -> JSON:
        member = guild.members[user.id]
        permissions = guild.permissions_in(channel, user.id) if channel is not None else None
        return member.payload(permissions=permissions)

    # -- messages ---------------------------------------------------------------------------------

    def new_message(
        self, channel: SandboxChannel, author: SandboxUser, *, message_id: int | None = None, **fields: Any
    ) -> SandboxMessage:
        """A message (``message_id``: a forum post's first message has its thread's id)."""
        message_id = message_id or self.snowflakes.next()
        message = SandboxMessage(
            id=message_id, channel=channel, author=author, created_at=self.clock.now(), **fields
        )
        self.messages[message_id] = message
        if not message.ephemeral:
            channel.last_message_id = message_id
            if channel.thread is not None:
                channel.thread.message_count += 1
        return message

    def message(self, message_id: int) -> SandboxMessage | None:
        message = self.messages.get(message_id)
        return None if message is None or message.deleted else message

    def messages_in(
        self, channel: SandboxChannel, *, include_ephemeral: bool = False
    ) -> list[SandboxMessage]:
        return [
            m
            for m in self.messages.values()
            if m.channel is channel and not m.deleted and (include_ephemeral or not m.ephemeral)
        ]
