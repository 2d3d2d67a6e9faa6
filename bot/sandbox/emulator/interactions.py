"""Interactions as a Discord client creates them, and what the bot answered.

`build_command_data` turns ``("paper search", {"query": "kv cache", "limit": 3})`` into the
``data`` of an INTERACTION_CREATE exactly as Discord would, from the command definitions the bot
synced (subcommands, groups, typed options, ``resolved`` users/channels/attachments), refusing
what a real client would not let a person send. `InteractionRecord` tracks one interaction on the
server side; `InteractionResult` is the live view tests read.
"""

from __future__ import annotations

import asyncio
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .recorder import Changes, ClientRefused, RecordedRequest
from .state import (
    ChannelType,
    Permissions,
    SandboxAttachment,
    SandboxChannel,
    SandboxMessage,
    SandboxRole,
    SandboxUser,
    World,
)

if TYPE_CHECKING:
    from .state import SandboxGuild

JSON = dict[str, Any]

APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 2, 3, 4, 5
#: application command types (``data.type`` of an APPLICATION_COMMAND interaction)
CHAT_INPUT_COMMAND, USER_COMMAND, MESSAGE_COMMAND = 1, 2, 3

#: callback types each interaction type accepts
ALLOWED_CALLBACKS: dict[int, set[int]] = {
    APPLICATION_COMMAND: {4, 5, 9},
    MESSAGE_COMPONENT: {4, 5, 6, 7, 9},
    AUTOCOMPLETE: {8},
    MODAL_SUBMIT: {4, 5, 6, 7},
}

STRING, INTEGER, BOOLEAN, USER, CHANNEL, ROLE, MENTIONABLE, NUMBER, ATTACHMENT = 3, 4, 5, 6, 7, 8, 9, 10, 11


@dataclass(frozen=True)
class Upload:
    """A file a user attaches to an `attachment` option (or pass a Path, a path string, or (filename, bytes))."""

    filename: str
    data: bytes
    content_type: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> Upload:
        if isinstance(value, Upload):
            return value
        if isinstance(value, str):  # a file path, as typed in the console
            value = Path(value).expanduser()
            if not value.is_file():
                raise ClientRefused(f"no such file to attach: {value}")
        if isinstance(value, Path):
            return cls(value.name, value.read_bytes(), mimetypes.guess_type(value.name)[0])
        if isinstance(value, tuple) and len(value) in (2, 3) and isinstance(value[1], bytes | str):
            data = value[1].encode() if isinstance(value[1], str) else value[1]
            content_type = value[2] if len(value) == 3 else mimetypes.guess_type(value[0])[0]
            return cls(str(value[0]), data, content_type)
        raise ClientRefused(f"an attachment option takes a Path, (filename, bytes) or Upload, not {value!r}")


@dataclass(eq=False)
class InteractionRecord:
    """The server's view of one interaction: what was sent, and every answer to it."""

    id: int
    token: str
    type: int
    user: SandboxUser
    channel: SandboxChannel
    payload: JSON
    created: float  # sandbox clock (monotonic)
    label: str
    source_message: SandboxMessage | None = None
    command_kind: int = 1
    callback_type: int | None = None
    callback_at: float | None = None
    original: SandboxMessage | None = None
    awaiting_first_followup: bool = False
    followups: list[SandboxMessage] = field(default_factory=list)
    choices: list[JSON] | None = None
    modal: JSON | None = None
    rejected: list[RecordedRequest] = field(default_factory=list)
    late_callback_age: float | None = None
    last_activity: float = 0.0

    @property
    def acknowledged(self) -> bool:
        return self.callback_type is not None


class Interactions:
    """Every interaction sent to the bot, by id (its callback route) and by token (its webhook routes)."""

    def __init__(self, changes: Changes) -> None:
        self._changes = changes
        self.by_id: dict[int, InteractionRecord] = {}
        self.by_token: dict[str, InteractionRecord] = {}

    def add(self, record: InteractionRecord) -> None:
        self.by_id[record.id] = record
        self.by_token[record.token] = record

    def get(self, interaction_id: int) -> InteractionRecord | None:
        return self.by_id.get(interaction_id)

    def for_token(self, token: str) -> InteractionRecord | None:
        return self.by_token.get(token)

    def touch(self, record: InteractionRecord) -> None:
        """Something happened to ``record`` (an answer, a follow-up, an edit): waiters look again."""
        record.last_activity = asyncio.get_running_loop().time()
        self._changes.notify()


class InteractionResult:
    """What a person sees after using a command, clicking, selecting or submitting a modal.

    It stays live: `message` reflects later edits. `message` is the original response (for a
    deferred one, once the bot filled it in; for a button answered by updating its message, that
    message). `followups` are the further messages. `failure` says why it did not work, if so.
    """

    def __init__(self, record: InteractionRecord, failure: str | None = None) -> None:
        self.record = record
        self.failure = failure

    def __repr__(self) -> str:
        return (
            f"<InteractionResult {self.record.label} callback={self.callback_type} failure={self.failure!r}>"
        )

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def callback_type(self) -> int | None:
        return self.record.callback_type

    @property
    def deferred(self) -> bool:
        return self.record.callback_type in (5, 6)

    @property
    def message(self) -> SandboxMessage | None:
        return self.record.original

    @property
    def followups(self) -> list[SandboxMessage]:
        return [m for m in self.record.followups if not m.deleted]

    @property
    def messages(self) -> list[SandboxMessage]:
        first = (
            [self.record.original]
            if self.record.original is not None and not self.record.original.deleted
            else []
        )
        return first + self.followups

    @property
    def ephemeral(self) -> bool:
        return self.message is not None and self.message.ephemeral

    @property
    def content(self) -> str:
        return self.message.content if self.message is not None else ""

    @property
    def embeds(self) -> list[JSON]:
        return self.message.embeds if self.message is not None else []

    @property
    def embed(self) -> JSON | None:
        return self.message.embed if self.message is not None else None

    @property
    def buttons(self) -> list[JSON]:
        return self.message.buttons if self.message is not None else []

    @property
    def text(self) -> str:
        """Every message's content and embed text (response first, then follow-ups)."""
        return "\n".join(m.text for m in self.messages)

    @property
    def choices(self) -> list[JSON]:
        return list(self.record.choices or [])

    @property
    def modal(self) -> JSON | None:
        return self.record.modal

    @property
    def rejected(self) -> list[RecordedRequest]:
        """The bot's requests about this interaction that Discord refused (4xx)."""
        return list(self.record.rejected)


# -- building interactions ----------------------------------------------------------------------


def find_command(world: World, name: str, *, guild: SandboxGuild | None, kind: int = 1) -> JSON:
    """The synced command a user can see here: the guild's own first, then the global one."""
    scopes: list[int | None] = ([guild.id] if guild is not None else []) + [None]
    for scope in scopes:
        command = world.commands.get(scope, {}).get((name, kind))
        if command is not None:
            return command
    where = f"in guild {guild.name}" if guild is not None else "in DMs"
    if guild is None:
        elsewhere = [
            world.guilds[scope].name
            for scope, synced in world.commands.items()
            if scope is not None and (name, kind) in synced and scope in world.guilds
        ]
        if elsewhere:
            raise ClientRefused(
                f"/{name} is a guild command (synced to {', '.join(elsewhere)} only): not available in DMs"
            )
    synced = sorted({f"/{n}" for scope in scopes for (n, k) in world.commands.get(scope, {}) if k == kind})
    raise ClientRefused(
        f"no command /{name} is registered {where}; the bot synced: {', '.join(synced) or 'nothing'}"
        + ("" if guild is None or world.commands.get(guild.id) else " (nothing synced to this guild)")
    )


def check_can_use(world: World, command: JSON, user: SandboxUser, channel: SandboxChannel) -> None:
    """What Discord's client enforces before a person can even pick a command."""
    label = f"/{command['name']}" if command.get("type", 1) == CHAT_INPUT_COMMAND else f"“{command['name']}”"
    contexts = command.get("contexts")
    if channel.is_group_dm:
        if contexts is not None and PRIVATE_CHANNEL not in contexts:
            raise ClientRefused(f"{label} cannot be used in group DMs")
        if not user_installed(world, user, command):
            raise ClientRefused(
                f"{label} is not available in {channel.label()}: only a user install reaches a group DM, "
                f"and {user.username} has not installed the app to their account"
                if USER_INSTALL in command_installs(command)
                else f"{label} is not available in {channel.label()}: it cannot be installed to a person"
            )
        return
    if channel.is_dm:
        if command.get("guild_id"):
            raise ClientRefused(f"{label} is a guild command: it is not available in DMs")
        if command.get("dm_permission") is False or (contexts is not None and 1 not in contexts):
            raise ClientRefused(f"{label} is guild-only: it is not available in DMs")
        return
    if contexts is not None and 0 not in contexts:
        raise ClientRefused(f"{label} cannot be used in a server")
    guild = world.guilds[channel.guild_id or 0]
    if user.id not in guild.members:
        raise ClientRefused(f"{user.username} is not a member of {guild.name}")
    installs = command_installs(command)
    if not (world.bot_in(guild.id) and GUILD_INSTALL in installs):
        # the server has not added the app: only a user install brings its commands here
        if not user_installed(world, user, command):
            raise ClientRefused(
                f"{label} is not available in {guild.name}: the app is not in that server"
                + (
                    f" and {user.username} has not installed it to their account"
                    if USER_INSTALL in installs and not command.get("guild_id")
                    else " and the command cannot be installed to a person's account"
                )
            )
        return  # the server's command permissions and roles are for apps the server added
    if not world.user_permissions(channel, user) & Permissions.USE_APPLICATION_COMMANDS:
        raise ClientRefused(f"{user.username} cannot use application commands in {channel.label()}")
    required = command.get("default_member_permissions")
    if required is not None:
        needed = int(required)
        have = guild.base_permissions(user.id)
        if have != Permissions.ALL and (needed == 0 or have & needed != needed):
            raise ClientRefused(
                f"{user.username} cannot see {label}: it needs permissions {needed:#x} "
                f"(default_member_permissions) and they have {have:#x}"
            )


GUILD_INSTALL, USER_INSTALL = 0, 1
#: interaction contexts: a server, the bot's DM, another private channel (a group DM)
GUILD_CONTEXT, BOT_DM, PRIVATE_CHANNEL = 0, 1, 2
#: what an app may do in an interaction's response where only a person's user install brings it
#: (Discord: @everyone's permissions, limited to these)
USER_INSTALL_PERMISSIONS = (
    Permissions.ATTACH_FILES
    | Permissions.EMBED_LINKS
    | Permissions.MENTION_EVERYONE
    | Permissions.USE_EXTERNAL_EMOJIS
)


def command_installs(command: JSON) -> list[int]:
    """Where a command is available: a guild command only where the server added the app."""
    if command.get("guild_id"):
        return [GUILD_INSTALL]
    return [int(kind) for kind in command.get("integration_types") or [GUILD_INSTALL]]


def user_installed(world: World, user: SandboxUser, command: JSON | None) -> bool:
    """Whether `user` has the app installed to their account and (for a command) it allows that."""
    installs = [GUILD_INSTALL, USER_INSTALL] if command is None else command_installs(command)
    return user.id in world.user_installs and USER_INSTALL in installs


def authorizing_owners(
    world: World, user: SandboxUser, channel: SandboxChannel, command: JSON | None
) -> JSON:
    """``authorizing_integration_owners``: the installs that let this interaction happen (a component's
    interaction is taken as coming from a command available to both installs)."""
    installs = [GUILD_INSTALL, USER_INSTALL] if command is None else command_installs(command)
    owners: JSON = {}
    if GUILD_INSTALL in installs and not channel.is_group_dm:
        if channel.is_dm:
            owners["0"] = "0"
        elif world.bot_in(channel.guild_id):
            owners["0"] = str(channel.guild_id)
    if user_installed(world, user, command):
        owners["1"] = str(user.id)
    return owners


def split_command_path(world: World, command: JSON, parts: list[str]) -> tuple[list[JSON], list[JSON], str]:
    """Walk "group sub" below the top-level command: returns (chain of option dicts, leaf options, label)."""
    chain: list[JSON] = []
    options: list[JSON] = command.get("options") or []
    label = f"/{command['name']}"
    for part in parts:
        sub = next((o for o in options if o.get("name") == part and o.get("type") in (1, 2)), None)
        if sub is None:
            names = [o["name"] for o in options if o.get("type") in (1, 2)]
            raise ClientRefused(
                f"{label} has no subcommand {part!r}" + (f" (it has: {', '.join(names)})" if names else "")
            )
        chain.append(sub)
        label += f" {part}"
        options = sub.get("options") or []
    if any(o.get("type") in (1, 2) for o in options):
        names = [o["name"] for o in options if o.get("type") in (1, 2)]
        raise ClientRefused(f"{label} needs a subcommand: one of {', '.join(names)}")
    return chain, options, label


class OptionBuilder:
    """Converts the values a test passes into Discord's option values and `resolved` data."""

    def __init__(self, world: World, user: SandboxUser, channel: SandboxChannel, attachment_url: Any) -> None:
        self.world = world
        self.user = user
        self.channel = channel
        self.guild = world.guilds.get(channel.guild_id or 0) if channel.guild_id else None
        self.resolved: JSON = {}
        self._attachment_url = attachment_url  # callable(channel_id, attachment_id, filename) -> str

    def build(
        self, label: str, definitions: list[JSON], values: dict[str, Any], *, focused: str | None = None
    ) -> list[JSON]:
        by_name = {d["name"]: d for d in definitions}
        unknown = [name for name in values if name not in by_name]
        if unknown:
            raise ClientRefused(
                f"{label} has no option {', '.join(map(repr, unknown))}; its options: {', '.join(by_name) or 'none'}"
            )
        missing = [
            d["name"]
            for d in definitions
            if d.get("required") and d["name"] not in values and d["name"] != focused
        ]
        if missing and focused is None:
            raise ClientRefused(f"{label} needs the required option(s) {', '.join(missing)}")
        built: list[JSON] = []
        for definition in definitions:  # Discord sends options in the definition's order
            name = definition["name"]
            if name not in values:
                continue
            if name == focused:
                if not definition.get("autocomplete"):
                    raise ClientRefused(f"option {name!r} of {label} has no autocomplete")
                built.append(
                    {"name": name, "type": definition["type"], "value": str(values[name]), "focused": True}
                )
                continue
            built.append(
                {
                    "name": name,
                    "type": definition["type"],
                    "value": self.convert(label, definition, values[name]),
                }
            )
        return built

    def convert(self, label: str, definition: JSON, value: Any) -> Any:
        kind = definition["type"]
        name = definition["name"]
        where = f"option {name!r} of {label}"
        choices = definition.get("choices") or []
        if choices:
            for choice in choices:
                if value == choice["value"] or (isinstance(value, str) and value == choice["name"]):
                    return choice["value"]
            shown = ", ".join(f"{c['name']}={c['value']!r}" for c in choices)
            raise ClientRefused(f"{where} must be one of its choices ({shown}), not {value!r}")
        if kind == STRING:
            text = str(value)
            low, high = definition.get("min_length", 0), definition.get("max_length", 6000)
            if not low <= len(text) <= high:
                raise ClientRefused(f"{where} must be {low}-{high} characters long, got {len(text)}")
            if not text.strip():
                raise ClientRefused(f"{where} cannot be blank (the client will not send it)")
            return text
        if kind in (INTEGER, NUMBER):
            number = _number(where, value, integer=kind == INTEGER)
            low, high = definition.get("min_value"), definition.get("max_value")
            if (low is not None and number < low) or (high is not None and number > high):
                raise ClientRefused(f"{where} must be between {low} and {high}, got {number}")
            return number
        if kind == BOOLEAN:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "yes", "1"):
                return True
            if str(value).lower() in ("false", "no", "0"):
                return False
            raise ClientRefused(f"{where} is a boolean, not {value!r}")
        if kind == USER:
            return str(self._resolve_user(where, value).id)
        if kind == CHANNEL:
            channel = self._resolve_channel(where, value)
            allowed = definition.get("channel_types")
            if allowed and channel.type not in allowed:
                raise ClientRefused(f"{where} takes channel types {allowed}, not {channel.type}")
            return str(channel.id)
        if kind == ROLE:
            return str(self._resolve_role(where, value).id)
        if kind == MENTIONABLE:
            try:
                return str(self._resolve_user(where, value).id)
            except ClientRefused:
                return str(self._resolve_role(where, value).id)
        if kind == ATTACHMENT:
            return str(self._resolve_attachment(Upload.coerce(value)).id)
        raise ClientRefused(f"{where} has an option type {kind} the sandbox does not know")

    def _resolve_user(self, where: str, value: Any) -> SandboxUser:
        user: SandboxUser | None
        if isinstance(value, SandboxUser):
            user = value
        elif isinstance(value, int) or (isinstance(value, str) and value.strip("<@!>").isdigit()):
            user = self.world.users.get(int(str(value).strip("<@!>")))
        else:
            user = self.world.user_named(str(value))
        if user is None:
            raise ClientRefused(f"{where}: no user {value!r}")
        self.resolved.setdefault("users", {})[str(user.id)] = user.payload()
        if self.guild is not None and user.id in self.guild.members:
            member = self.guild.members[user.id].payload(
                permissions=self.guild.permissions_in(self.channel, user.id)
            )
            member.pop("user", None)
            self.resolved.setdefault("members", {})[str(user.id)] = member
        return user

    def _resolve_channel(self, where: str, value: Any) -> SandboxChannel:
        channel: SandboxChannel | None
        if isinstance(value, SandboxChannel):
            channel = value
        elif isinstance(value, int) or (isinstance(value, str) and value.strip("<#>").isdigit()):
            channel = self.world.channel(int(str(value).strip("<#>")))
        else:
            channel = self.guild.channel_named(str(value)) if self.guild is not None else None
        if channel is None or channel.is_dm or (self.guild is not None and channel.guild_id != self.guild.id):
            raise ClientRefused(f"{where}: no channel {value!r} in this server")
        guild = self.world.guilds[channel.guild_id or 0]
        # a partial channel: a thread's comes with its thread_metadata, owner and counts
        self.resolved.setdefault("channels", {})[str(channel.id)] = {
            "position": channel.position,
            "topic": channel.topic,
            "rate_limit_per_user": 0,
            **channel.payload(permissions=guild.permissions_in(channel, self.user.id)),
        }
        self.resolved["channels"][str(channel.id)].pop("permission_overwrites", None)
        return channel

    def _resolve_role(self, where: str, value: Any) -> SandboxRole:
        if self.guild is None:
            raise ClientRefused(f"{where}: roles exist only in a server")
        role = (
            value
            if isinstance(value, SandboxRole)
            else next(
                (
                    r
                    for r in self.guild.roles
                    if str(r.id) == str(value).strip("<@&>") or r.name.lower() == str(value).lower()
                ),
                None,
            )
        )
        if role is None:
            raise ClientRefused(f"{where}: no role {value!r}")
        self.resolved.setdefault("roles", {})[str(role.id)] = role.payload()
        return role

    def _resolve_attachment(self, upload: Upload) -> SandboxAttachment:
        attachment_id = self.world.snowflakes.next()
        attachment = SandboxAttachment(
            id=attachment_id,
            filename=upload.filename,
            data=upload.data,
            content_type=upload.content_type or mimetypes.guess_type(upload.filename)[0],
            url=self._attachment_url(self.channel.id, attachment_id, upload.filename),
            ephemeral=True,
        )
        self.world.attachments[attachment_id] = attachment
        self.resolved.setdefault("attachments", {})[str(attachment_id)] = attachment.payload()
        return attachment


def _number(where: str, value: Any, *, integer: bool) -> int | float:
    if isinstance(value, bool):
        raise ClientRefused(f"{where} is a number, not {value!r}")
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ClientRefused(f"{where} is {'an integer' if integer else 'a number'}, not {value!r}") from None
    if integer and isinstance(value, float) and not value.is_integer():
        raise ClientRefused(f"{where} is an integer, not {value!r}")
    if abs(number) > 2**53:
        raise ClientRefused(f"{where} is out of range")
    return number


def nest_options(chain: list[JSON], leaf: list[JSON]) -> list[JSON]:
    """Wrap leaf options in their subcommand/group options, as Discord nests them."""
    options = leaf
    for sub in reversed(chain):
        options = [{"name": sub["name"], "type": sub["type"], "options": options}]
    return options


def interaction_payload(
    world: World,
    *,
    interaction_id: int,
    token: str,
    kind: int,
    user: SandboxUser,
    channel: SandboxChannel,
    data: JSON,
    attachment_size_limit: int,
    message: SandboxMessage | None = None,
    locale: str = "en-US",
    command: JSON | None = None,
) -> JSON:
    """The INTERACTION_CREATE `d`, with every field discord.py reads (``command``: the synced definition
    an application command was built from)."""
    payload: JSON = {
        "id": str(interaction_id),
        "application_id": str(world.application.id),
        "type": kind,
        "data": data,
        "token": token,
        "version": 1,
        "locale": locale,
        "entitlements": [],
        "entitlement_sku_ids": [],
        "attachment_size_limit": attachment_size_limit,
        "app_permissions": str(world.bot_permissions(channel)),
        "channel_id": str(channel.id),
    }
    if channel.is_group_dm:
        payload["user"] = user.payload()
        payload["context"] = PRIVATE_CHANNEL
        payload["authorizing_integration_owners"] = authorizing_owners(world, user, channel, command)
        payload["app_permissions"] = str(
            Permissions.ATTACH_FILES | Permissions.EMBED_LINKS | Permissions.MENTION_EVERYONE
        )
        payload["channel"] = channel.payload()
    elif channel.is_dm:
        payload["user"] = user.payload()
        payload["context"] = 1
        payload["authorizing_integration_owners"] = authorizing_owners(world, user, channel, command)
        payload["channel"] = {
            "id": str(channel.id),
            "type": ChannelType.DM,
            "last_message_id": str(channel.last_message_id) if channel.last_message_id else None,
            "flags": 0,
            "recipients": [user.payload()],
        }
    else:
        guild = world.guilds[channel.guild_id or 0]
        payload["guild_id"] = str(guild.id)
        payload["guild_locale"] = "en-US"
        payload["guild"] = {"id": str(guild.id), "locale": "en-US", "features": []}
        payload["context"] = 0
        payload["authorizing_integration_owners"] = authorizing_owners(world, user, channel, command)
        if not world.bot_in(guild.id):  # only a user install: @everyone's, as far as a response uses
            payload["app_permissions"] = str(guild.everyone.permissions & USER_INSTALL_PERMISSIONS)
        payload["member"] = world.member_payload(guild, user, channel=channel)
        payload["channel"] = channel.payload(permissions=guild.permissions_in(channel, user.id))
    if message is not None:
        payload["message"] = message_payload(world, message)
    return payload


def message_payload(world: World, message: SandboxMessage) -> JSON:
    """A message as REST answers with it (no `member`; `guild_id` only via the gateway)."""
    return message.payload(me_id=world.bot_user.id)
