"""What people do in Discord, as Discord's client would send it: slash commands (built from the definitions
the bot synced), autocomplete, button clicks, select menus, modals, reactions and messages.

Each interaction is dispatched to the bot's gateway session and waited for as Discord waits: the first
response within 3 s (on the sandbox clock), a deferred answer filled in, then a short quiet spell for
follow-ups. ``ClientRefused`` is what Discord's client would not let a person send;
``InteractionFailed`` is the bot not answering properly.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from . import limits
from .addresses import Addresses
from .effects import Effects
from .gateway import Gateway
from .interactions import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    MESSAGE_COMMAND,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    InteractionRecord,
    InteractionResult,
    Interactions,
    OptionBuilder,
    check_can_use,
    find_command,
    interaction_payload,
    message_payload,
    nest_options,
    split_command_path,
)
from .lookup import Lookup
from .options import SandboxOptions
from .recorder import Changes, ClientRefused, InteractionFailed, Recorder, SandboxTimeout
from .state import (
    Permissions,
    SandboxChannel,
    SandboxClock,
    SandboxMessage,
    SandboxUser,
    World,
    emoji_key,
    iter_components,
)
from .threads import Threads

JSON = dict[str, Any]


class UserActions:
    def __init__(
        self,
        world: World,
        *,
        lookup: Lookup,
        effects: Effects,
        threads: Threads,
        gateway: Gateway,
        interactions: Interactions,
        changes: Changes,
        recorder: Recorder,
        clock: SandboxClock,
        options: SandboxOptions,
        addresses: Addresses,
    ) -> None:
        self.world = world
        self.lookup = lookup
        self.effects = effects
        self.threads = threads
        self.gateway = gateway
        self.interactions = interactions
        self.changes = changes
        self.recorder = recorder
        self.clock = clock
        self.options = options
        self.addresses = addresses

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
        user = self.lookup.user(user)
        channel = self.lookup.where(where, user)
        parts = command.strip().lstrip("/").split()
        if not parts:
            raise ClientRefused("no command given")
        guild = self.world.guilds.get(channel.guild_id) if channel.guild_id else None
        definition = find_command(self.world, parts[0], guild=guild)
        if not force:
            check_can_use(self.world, definition, user, channel)
        chain, leaf_definitions, label = split_command_path(self.world, definition, parts[1:])
        builder = OptionBuilder(self.world, user, channel, self.addresses.attachment_url)
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
        record = self._create_interaction(
            APPLICATION_COMMAND, user, channel, data, label, locale=locale, command=definition
        )
        return await self._await_result(record, timeout=timeout, check=check)

    async def message_command(
        self,
        user: SandboxUser | str,
        message: SandboxMessage | InteractionResult,
        name: str,
        /,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        check: bool = True,
    ) -> InteractionResult:
        """Right-click (or long-press) `message`, Apps → the message command `name` ("Save paper").

        Discord sends the message itself (``data.resolved.messages``) with the command, so the bot needs
        no message-content intent. Raises ClientRefused for what Discord's client would not offer: a
        command the bot did not sync, a message the person cannot see, an ephemeral message.
        """
        user = self.lookup.user(user)
        target = self._visible_message(user, message)
        channel = target.channel
        guild = self.world.guilds.get(channel.guild_id) if channel.guild_id else None
        definition = find_command(self.world, name, guild=guild, kind=MESSAGE_COMMAND)
        check_can_use(self.world, definition, user, channel)
        data: JSON = {
            "id": definition["id"],
            "name": definition["name"],
            "type": MESSAGE_COMMAND,
            "target_id": str(target.id),
            "resolved": {"messages": {str(target.id): message_payload(self.world, target)}},
        }
        if definition.get("guild_id"):
            data["guild_id"] = definition["guild_id"]
        record = self._create_interaction(
            APPLICATION_COMMAND, user, channel, data, f"Apps → {name}", command=definition
        )
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
        user = self.lookup.user(user)
        channel = self.lookup.where(where, user)
        parts = command.strip().lstrip("/").split()
        guild = self.world.guilds.get(channel.guild_id) if channel.guild_id else None
        definition = find_command(self.world, parts[0], guild=guild)
        check_can_use(self.world, definition, user, channel)
        chain, leaf_definitions, label = split_command_path(self.world, definition, parts[1:])
        builder = OptionBuilder(self.world, user, channel, self.addresses.attachment_url)
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
            AUTOCOMPLETE, user, channel, data, f"autocomplete {label} {option}:{typed!r}", command=definition
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
        user = self.lookup.user(user)
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
        user = self.lookup.user(user)
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
            builder = OptionBuilder(self.world, user, target.channel, self.addresses.attachment_url)
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
        user = self.lookup.user(user)
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
        user = self.lookup.user(user)
        target = self._visible_message(user, message)
        key = emoji_key(emoji)
        self._refuse_in_archived_thread(target.channel, "add reactions")
        if (
            key not in target.reactions
            and not self.world.user_permissions(target.channel, user) & Permissions.ADD_REACTIONS
        ):
            raise ClientRefused(f"{user.username} cannot add reactions in {target.channel.label()}")
        if not self.effects.add_reaction(target, user, key):
            raise ClientRefused(f"{user.username} already reacted {emoji} on message {target.id}")

    async def unreact(
        self, user: SandboxUser | str, message: SandboxMessage | InteractionResult, emoji: str
    ) -> None:
        """`user` removes their reaction (MESSAGE_REACTION_REMOVE goes to the bot)."""
        user = self.lookup.user(user)
        target = self._visible_message(user, message)
        self._refuse_in_archived_thread(target.channel, "remove reactions")
        if not self.effects.remove_reaction(target, user, emoji_key(emoji)):
            raise ClientRefused(f"{user.username} has no {emoji} reaction on message {target.id}")

    async def send_message(
        self, user: SandboxUser | str, where: SandboxChannel | str | int, content: str
    ) -> SandboxMessage:
        """`user` posts `content` in a channel or ("dm") in their DM with the bot."""
        user = self.lookup.user(user)
        channel = self.lookup.where(where, user)
        if not channel.is_dm:
            self.threads.check_user_post(channel, user)
        errors = limits.validate_message({"content": content})
        if errors or not content:
            raise ClientRefused(f"Discord would not send that message: {errors.describe() or 'empty'}")
        return self.effects.post_user_message(channel, user, content)

    @staticmethod
    def _refuse_in_archived_thread(channel: SandboxChannel, what: str) -> None:
        if channel.thread is not None and channel.thread.archived:
            raise ClientRefused(f"no one can {what} in {channel.label()}: the thread is archived")

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
        command: JSON | None = None,
    ) -> InteractionRecord:
        self._refuse_in_archived_thread(channel, "use the bot's commands or buttons")
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
            command=command,
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
        self.interactions.add(record)
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
        if current.channel.is_dm and not current.channel.has_participant(user):
            raise ClientRefused(f"message {current.id} is in someone else's DM")
        return current

    def _visible_message(
        self, user: SandboxUser, message: SandboxMessage | InteractionResult
    ) -> SandboxMessage:
        current = self._message_for_component(user, message)
        if current.ephemeral:
            raise ClientRefused("ephemeral messages cannot be reacted to")
        return current


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
