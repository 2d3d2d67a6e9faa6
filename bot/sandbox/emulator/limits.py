"""Discord's payload limits, checked and answered the way Discord answers them.

Discord rejects an invalid body with HTTP 400 and::

    {"code": 50035, "message": "Invalid Form Body",
     "errors": {"embeds": {"0": {"title": {"_errors": [
         {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 256 or fewer in length."}]}}}}}

discord.py flattens that into ``HTTPException.text`` ("In embeds.0.title: Must be 256 or fewer in
length.") and ``HTTPException.code == 50035``. The validators below collect every problem in one
`FormErrors`, with the same paths and codes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

JSON = dict[str, Any]
Path = tuple[str | int, ...]

CONTENT_MAX = 2000
EMBEDS_MAX = 10
EMBED_TITLE_MAX = 256
EMBED_DESCRIPTION_MAX = 4096
EMBED_FIELDS_MAX = 25
EMBED_FIELD_NAME_MAX = 256
EMBED_FIELD_VALUE_MAX = 1024
EMBED_FOOTER_MAX = 2048
EMBED_AUTHOR_NAME_MAX = 256
EMBED_TOTAL_MAX = 6000
ACTION_ROWS_MAX = 5
ROW_WIDTH = 5
CUSTOM_ID_MAX = 100
BUTTON_LABEL_MAX = 80
SELECT_OPTIONS_MAX = 25
SELECT_PLACEHOLDER_MAX = 150
AUTOCOMPLETE_CHOICES_MAX = 25
CHOICE_NAME_MAX = 100
CHOICE_STRING_VALUE_MAX = 100
MODAL_TITLE_MAX = 45
FILES_MAX = 10
NONCE_MAX = 25
DEFAULT_ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024
COMMAND_DESCRIPTION_MAX = 100
COMMAND_OPTIONS_MAX = 25
COMMAND_CHOICES_MAX = 25
COMMANDS_MAX = 100
#: how many commands of each type an application may have in one scope (global, or one guild):
#: 100 slash commands, 15 user commands and 15 message commands
COMMANDS_MAX_BY_TYPE = {1: COMMANDS_MAX, 2: 15, 3: 15}
COMMAND_TYPE_NAMES = {1: "CHAT_INPUT", 2: "USER", 3: "MESSAGE"}

_COMMAND_NAME = re.compile(r"^[-_'\w]{1,32}$", re.UNICODE)

# Message flags a bot may set when sending (SUPPRESS_EMBEDS, EPHEMERAL, SUPPRESS_NOTIFICATIONS,
# IS_COMPONENTS_V2); the others are Discord's own.
SENDABLE_FLAGS = (1 << 2) | (1 << 6) | (1 << 12) | (1 << 15)
COMPONENTS_V2 = 1 << 15


class FormErrors:
    """Problems found in one request body, keyed by their path in it."""

    def __init__(self) -> None:
        self.items: list[tuple[Path, str, str]] = []

    def add(self, path: Path, code: str, message: str) -> None:
        self.items.append((path, code, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def body(self) -> JSON:
        tree: JSON = {}
        for path, code, message in self.items:
            node = tree
            for part in path:
                node = node.setdefault(str(part), {})
            node.setdefault("_errors", []).append({"code": code, "message": message})
        return {"code": 50035, "errors": tree, "message": "Invalid Form Body"}

    def describe(self) -> str:
        return "; ".join(f"{'.'.join(map(str, p)) or '(body)'}: {m}" for p, _, m in self.items)

    # shared checks --------------------------------------------------------------------------------

    def max_length(self, path: Path, value: Any, limit: int) -> None:
        if isinstance(value, str | list) and len(value) > limit:
            self.add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")

    def bad_length(self, path: Path, value: Any, low: int, high: int) -> None:
        if not isinstance(value, str | list) or not low <= len(value) <= high:
            self.add(path, "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length.")

    def required(self, path: Path, value: Any) -> bool:
        if value is None or value == "":
            self.add(path, "BASE_TYPE_REQUIRED", "This field is required")
            return False
        return True

    def string(self, path: Path, value: Any) -> bool:
        if value is not None and not isinstance(value, str):
            self.add(path, "STRING_TYPE_CONVERT", "Could not interpret the value as a string.")
            return False
        return True

    def url(self, path: Path, value: Any, *, schemes: Iterable[str] = ("http", "https")) -> None:
        if value is None:
            return
        parsed = urlparse(str(value))
        if parsed.scheme not in set(schemes) or (parsed.scheme != "attachment" and not parsed.netloc):
            self.add(path, "URL_TYPE_INVALID_URL", "Not a well formed URL.")


def validate_message(
    payload: JSON,
    *,
    files: int = 0,
    prefix: Path = (),
    errors: FormErrors | None = None,
) -> FormErrors:
    """A message body (create, edit, interaction response data, follow-up)."""
    errors = errors if errors is not None else FormErrors()
    content = payload.get("content")
    if errors.string((*prefix, "content"), content):
        errors.max_length((*prefix, "content"), content, CONTENT_MAX)

    flags = payload.get("flags")
    if flags is not None and (not isinstance(flags, int) or flags & ~SENDABLE_FLAGS):
        errors.add((*prefix, "flags"), "MESSAGE_FLAGS_INVALID", "Invalid message flags.")
    components_v2 = isinstance(flags, int) and bool(flags & COMPONENTS_V2)

    embeds = payload.get("embeds")
    if embeds is not None:
        if not isinstance(embeds, list):
            errors.add((*prefix, "embeds"), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        else:
            if components_v2 and embeds:
                errors.add(
                    (*prefix, "embeds"),
                    "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
                    "The 'embeds' field cannot be used when using MessageFlags.IS_COMPONENTS_V2",
                )
            errors.max_length((*prefix, "embeds"), embeds, EMBEDS_MAX)
            total = 0
            for index, embed in enumerate(embeds):
                total += _validate_embed(errors, (*prefix, "embeds", index), embed)
            if total > EMBED_TOTAL_MAX:
                errors.add(
                    (*prefix, "embeds"),
                    "MAX_EMBED_SIZE_EXCEEDED",
                    f"Embed size exceeds maximum size of {EMBED_TOTAL_MAX}",
                )

    if components_v2 and content:
        errors.add(
            (*prefix, "content"),
            "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
            "The 'content' field cannot be used when using MessageFlags.IS_COMPONENTS_V2",
        )

    components = payload.get("components")
    if components is not None:
        validate_components(errors, (*prefix, "components"), components, v2=components_v2)

    if files > FILES_MAX:
        errors.add((*prefix, "files"), "BASE_TYPE_MAX_LENGTH", f"Must be {FILES_MAX} or fewer in length.")
    return errors


def validate_create_nonce(payload: JSON, errors: FormErrors) -> None:
    """Create Message's ``nonce``: an integer or a string of up to 25 characters."""
    errors.max_length(("nonce",), payload.get("nonce"), NONCE_MAX)


def message_is_empty(payload: JSON, *, files: int = 0, kept_attachments: int = 0) -> bool:
    return not (
        payload.get("content")
        or payload.get("embeds")
        or payload.get("components")
        or payload.get("sticker_ids")
        or payload.get("poll")
        or files
        or kept_attachments
    )


def _validate_embed(errors: FormErrors, path: Path, embed: Any) -> int:
    if not isinstance(embed, dict):
        errors.add(path, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return 0
    size = 0
    title = embed.get("title")
    if errors.string((*path, "title"), title) and title is not None:
        errors.max_length((*path, "title"), title, EMBED_TITLE_MAX)
        size += len(title)
    description = embed.get("description")
    if errors.string((*path, "description"), description) and description is not None:
        errors.max_length((*path, "description"), description, EMBED_DESCRIPTION_MAX)
        size += len(description)
    errors.url((*path, "url"), embed.get("url"))
    if "color" in embed and embed["color"] is not None:
        color = embed["color"]
        if not isinstance(color, int) or not 0 <= color <= 0xFFFFFF:
            errors.add(
                (*path, "color"), "NUMBER_TYPE_MAX", "int value should be less than or equal to 16777215."
            )
    fields = embed.get("fields") or []
    errors.max_length((*path, "fields"), fields, EMBED_FIELDS_MAX)
    for index, field in enumerate(fields):
        fpath = (*path, "fields", index)
        name, value = field.get("name"), field.get("value")
        if errors.required((*fpath, "name"), name) and errors.string((*fpath, "name"), name):
            errors.max_length((*fpath, "name"), name, EMBED_FIELD_NAME_MAX)
            size += len(name)
        if errors.required((*fpath, "value"), value) and errors.string((*fpath, "value"), value):
            errors.max_length((*fpath, "value"), value, EMBED_FIELD_VALUE_MAX)
            size += len(value)
    footer = embed.get("footer")
    if isinstance(footer, dict):
        text = footer.get("text")
        if errors.required((*path, "footer", "text"), text) and errors.string(
            (*path, "footer", "text"), text
        ):
            errors.max_length((*path, "footer", "text"), text, EMBED_FOOTER_MAX)
            size += len(str(text))
        errors.url(
            (*path, "footer", "icon_url"), footer.get("icon_url"), schemes=("http", "https", "attachment")
        )
    author = embed.get("author")
    if isinstance(author, dict):
        name = author.get("name")
        if errors.required((*path, "author", "name"), name) and errors.string(
            (*path, "author", "name"), name
        ):
            errors.max_length((*path, "author", "name"), name, EMBED_AUTHOR_NAME_MAX)
            size += len(str(name))
        errors.url((*path, "author", "url"), author.get("url"))
        errors.url(
            (*path, "author", "icon_url"), author.get("icon_url"), schemes=("http", "https", "attachment")
        )
    for media in ("image", "thumbnail"):
        if isinstance(embed.get(media), dict):
            errors.url(
                (*path, media, "url"), embed[media].get("url"), schemes=("http", "https", "attachment")
            )
    return size


def validate_components(errors: FormErrors, path: Path, components: Any, *, v2: bool = False) -> None:
    if not isinstance(components, list):
        errors.add(path, "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        return
    custom_ids: dict[str, Path] = {}
    if not v2:
        errors.max_length(path, components, ACTION_ROWS_MAX)
        for index, row in enumerate(components):
            rpath = (*path, index)
            if not isinstance(row, dict) or row.get("type") != 1:
                errors.add(
                    (*rpath, "type"),
                    "UNION_TYPE_CHOICES",
                    'Value of field "type" must be one of (1,) at the top level without IS_COMPONENTS_V2.',
                )
                continue
            _validate_row(errors, rpath, row, custom_ids)
        return
    # Components v2: check ids and the interactive leaves wherever they sit.
    _walk_v2(errors, path, components, custom_ids)


def _walk_v2(errors: FormErrors, path: Path, components: list[Any], custom_ids: dict[str, Path]) -> None:
    for index, component in enumerate(components):
        cpath = (*path, index)
        if not isinstance(component, dict):
            errors.add(cpath, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
            continue
        if component.get("type") == 1:
            _validate_row(errors, cpath, component, custom_ids)
            continue
        if component.get("type") in (2, 3, 4, 5, 6, 7, 8):
            _validate_leaf(errors, cpath, component, custom_ids)
        if isinstance(component.get("components"), list):
            _walk_v2(errors, (*cpath, "components"), component["components"], custom_ids)
        if isinstance(component.get("accessory"), dict):
            _validate_leaf(errors, (*cpath, "accessory"), component["accessory"], custom_ids)


def _validate_row(errors: FormErrors, path: Path, row: JSON, custom_ids: dict[str, Path]) -> None:
    children = row.get("components")
    if not isinstance(children, list) or not 1 <= len(children) <= ROW_WIDTH:
        errors.add(
            (*path, "components"), "BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {ROW_WIDTH} in length."
        )
        children = children if isinstance(children, list) else []
    width = 0
    for index, child in enumerate(children):
        cpath = (*path, "components", index)
        if not isinstance(child, dict):
            errors.add(cpath, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
            continue
        width += 1 if child.get("type") == 2 else ROW_WIDTH
        _validate_leaf(errors, cpath, child, custom_ids)
    if width > ROW_WIDTH and len(children) <= ROW_WIDTH:
        errors.add(
            (*path, "components"),
            "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
            "The specified component exceeds the maximum width",
        )


def _validate_leaf(errors: FormErrors, path: Path, component: JSON, custom_ids: dict[str, Path]) -> None:
    kind = component.get("type")
    custom_id = component.get("custom_id")
    if kind == 2:
        style = component.get("style")
        if style not in (1, 2, 3, 4, 5, 6):
            errors.add((*path, "style"), "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6}.")
        if style == 5:
            if custom_id is not None:
                errors.add(
                    (*path, "custom_id"),
                    "BUTTON_COMPONENT_CUSTOM_ID_WITH_URL",
                    "A link button cannot have a custom_id",
                )
            if errors.required((*path, "url"), component.get("url")):
                errors.url((*path, "url"), component.get("url"), schemes=("http", "https", "discord"))
        elif style != 6 and errors.required((*path, "custom_id"), custom_id):
            errors.bad_length((*path, "custom_id"), custom_id, 1, CUSTOM_ID_MAX)
        label = component.get("label")
        if label is not None:
            errors.max_length((*path, "label"), label, BUTTON_LABEL_MAX)
        if not label and not component.get("emoji") and style != 6:
            errors.add(path, "BUTTON_COMPONENT_EMOJI_OR_LABEL_REQUIRED", "A label or an emoji is required")
    elif kind in (3, 5, 6, 7, 8):
        if errors.required((*path, "custom_id"), custom_id):
            errors.bad_length((*path, "custom_id"), custom_id, 1, CUSTOM_ID_MAX)
        placeholder = component.get("placeholder")
        if placeholder is not None:
            errors.max_length((*path, "placeholder"), placeholder, SELECT_PLACEHOLDER_MAX)
        if kind == 3:
            options = component.get("options")
            if not isinstance(options, list) or not 1 <= len(options) <= SELECT_OPTIONS_MAX:
                errors.add(
                    (*path, "options"),
                    "BASE_TYPE_BAD_LENGTH",
                    f"Must be between 1 and {SELECT_OPTIONS_MAX} in length.",
                )
                options = options if isinstance(options, list) else []
            seen: set[str] = set()
            for index, option in enumerate(options):
                opath = (*path, "options", index)
                if errors.required((*opath, "label"), option.get("label")):
                    errors.bad_length((*opath, "label"), option.get("label"), 1, 100)
                if errors.required((*opath, "value"), option.get("value")):
                    errors.bad_length((*opath, "value"), option.get("value"), 1, 100)
                    if option["value"] in seen:
                        errors.add(
                            (*opath, "value"),
                            "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED",
                            "Select component option values must be unique",
                        )
                    seen.add(option["value"])
                if option.get("description") is not None:
                    errors.max_length((*opath, "description"), option["description"], 100)
        low, high = component.get("min_values", 1), component.get("max_values", 1)
        if not (isinstance(low, int) and isinstance(high, int) and 0 <= low <= high <= SELECT_OPTIONS_MAX):
            errors.add(
                (*path, "max_values"),
                "NUMBER_TYPE_MAX",
                f"int value should be less than or equal to {SELECT_OPTIONS_MAX}.",
            )
    elif kind == 4 and errors.required((*path, "custom_id"), custom_id):
        errors.bad_length((*path, "custom_id"), custom_id, 1, CUSTOM_ID_MAX)
    if isinstance(custom_id, str) and custom_id:
        if custom_id in custom_ids:
            errors.add(
                (*path, "custom_id"),
                "COMPONENT_CUSTOM_ID_DUPLICATED",
                "Component custom id cannot be duplicated",
            )
        custom_ids[custom_id] = path


def validate_choices(data: Any, *, prefix: Path = ("data",)) -> FormErrors:
    """An autocomplete answer (callback type 8)."""
    errors = FormErrors()
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        errors.add((*prefix, "choices"), "BASE_TYPE_REQUIRED", "This field is required")
        return errors
    errors.max_length((*prefix, "choices"), choices, AUTOCOMPLETE_CHOICES_MAX)
    for index, choice in enumerate(choices):
        path = (*prefix, "choices", index)
        if errors.required((*path, "name"), choice.get("name")):
            errors.bad_length((*path, "name"), choice.get("name"), 1, CHOICE_NAME_MAX)
        value = choice.get("value")
        if value is None:
            errors.add((*path, "value"), "BASE_TYPE_REQUIRED", "This field is required")
        elif isinstance(value, str):
            errors.max_length((*path, "value"), value, CHOICE_STRING_VALUE_MAX)
    return errors


def validate_modal(data: Any, *, prefix: Path = ("data",)) -> FormErrors:
    errors = FormErrors()
    if not isinstance(data, dict):
        errors.add(prefix, "BASE_TYPE_REQUIRED", "This field is required")
        return errors
    if errors.required((*prefix, "title"), data.get("title")):
        errors.bad_length((*prefix, "title"), data["title"], 1, MODAL_TITLE_MAX)
    if errors.required((*prefix, "custom_id"), data.get("custom_id")):
        errors.bad_length((*prefix, "custom_id"), data["custom_id"], 1, CUSTOM_ID_MAX)
    components = data.get("components")
    if not isinstance(components, list) or not 1 <= len(components) <= 5:
        errors.add((*prefix, "components"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
    return errors


# -- application commands -----------------------------------------------------------------------


def validate_commands(commands: Any) -> FormErrors:
    """A bulk overwrite (PUT .../commands): each command, plus unique names per type."""
    errors = FormErrors()
    if not isinstance(commands, list):
        errors.add((), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        return errors
    kinds = [int(c.get("type", 1) or 1) for c in commands if isinstance(c, dict)]
    for kind, most in COMMANDS_MAX_BY_TYPE.items():
        if kinds.count(kind) > most:
            errors.add(
                (),
                "APPLICATION_COMMANDS_TOO_MANY",
                f"Maximum number of {COMMAND_TYPE_NAMES[kind]} application commands reached ({most})",
            )
    seen: set[tuple[str, int]] = set()
    for index, command in enumerate(commands):
        validate_command(command, prefix=(index,), errors=errors)
        key = (str(command.get("name", "")).lower(), int(command.get("type", 1) or 1))
        if key in seen:
            errors.add(
                (index, "name"),
                "APPLICATION_COMMANDS_DUPLICATE_NAME",
                "Application command names must be unique",
            )
        seen.add(key)
    return errors


def validate_command(command: Any, *, prefix: Path = (), errors: FormErrors | None = None) -> FormErrors:
    errors = errors if errors is not None else FormErrors()
    if not isinstance(command, dict):
        errors.add(prefix, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return errors
    kind = command.get("type", 1) or 1
    name = command.get("name")
    if kind == 1:
        _check_chat_name(errors, (*prefix, "name"), name)
        _check_description(errors, (*prefix, "description"), command.get("description"))
        _validate_options(errors, (*prefix, "options"), command.get("options") or [], depth=0)
    else:
        if errors.required((*prefix, "name"), name):
            errors.bad_length((*prefix, "name"), name, 1, 32)
        if command.get("description"):
            errors.add(
                (*prefix, "description"),
                "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION",
                "Context menu commands cannot have description",
            )
    size = _command_size(command)
    if size > 4000:
        errors.add(prefix, "APPLICATION_COMMAND_TOO_LARGE", "Command exceeds maximum size (4000)")
    return errors


def _check_chat_name(errors: FormErrors, path: Path, name: Any) -> None:
    if not errors.required(path, name) or not errors.string(path, name):
        return
    if not _COMMAND_NAME.match(name) or name != name.lower():
        errors.add(path, "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")


def _check_description(errors: FormErrors, path: Path, description: Any) -> None:
    if errors.required(path, description) and errors.string(path, description):
        errors.bad_length(path, description, 1, COMMAND_DESCRIPTION_MAX)


def _validate_options(errors: FormErrors, path: Path, options: Any, *, depth: int) -> None:
    if not isinstance(options, list):
        errors.add(path, "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        return
    errors.max_length(path, options, COMMAND_OPTIONS_MAX)
    names: set[str] = set()
    seen_optional = False
    kinds = {o.get("type") for o in options if isinstance(o, dict)}
    if kinds & {1, 2} and kinds - {1, 2}:
        errors.add(
            path,
            "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID",
            "Sub-command and sub-command group option types are mutually exclusive to all other types",
        )
    for index, option in enumerate(options):
        opath = (*path, index)
        kind = option.get("type")
        if kind not in range(1, 12):
            errors.add(
                (*opath, "type"),
                "BASE_TYPE_CHOICES",
                "Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}.",
            )
            continue
        _check_chat_name(errors, (*opath, "name"), option.get("name"))
        _check_description(errors, (*opath, "description"), option.get("description"))
        name = option.get("name")
        if name in names:
            errors.add(
                (*opath, "name"),
                "APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS",
                "Option name already exists",
            )
        names.add(name)
        if kind == 2:
            if depth > 0:
                errors.add(
                    (*opath, "type"),
                    "APPLICATION_COMMAND_OPTION_TYPE_INVALID",
                    "Sub-command groups cannot be nested",
                )
            _validate_options(errors, (*opath, "options"), option.get("options") or [], depth=depth + 1)
        elif kind == 1:
            if depth > 1:
                errors.add(
                    (*opath, "type"),
                    "APPLICATION_COMMAND_OPTION_TYPE_INVALID",
                    "Sub-commands cannot be nested this deep",
                )
            _validate_options(errors, (*opath, "options"), option.get("options") or [], depth=depth + 1)
        else:
            required = bool(option.get("required"))
            if required and seen_optional:
                errors.add(
                    (*opath, "required"),
                    "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                    "Required options must be placed before non-required options",
                )
            seen_optional = seen_optional or not required
            choices = option.get("choices") or []
            errors.max_length((*opath, "choices"), choices, COMMAND_CHOICES_MAX)
            if choices and option.get("autocomplete"):
                errors.add(
                    (*opath, "autocomplete"),
                    "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_WITH_CHOICES",
                    "Autocomplete cannot be set for options with choices",
                )
            for cindex, choice in enumerate(choices):
                if errors.required((*opath, "choices", cindex, "name"), choice.get("name")):
                    errors.bad_length(
                        (*opath, "choices", cindex, "name"), choice.get("name"), 1, CHOICE_NAME_MAX
                    )


def _command_size(command: JSON) -> int:
    """Discord's 4000-character cap over names, descriptions and choice names/values."""
    total = len(str(command.get("name", ""))) + len(str(command.get("description", "")))
    for option in command.get("options") or []:
        total += _command_size(option)
        for choice in option.get("choices") or []:
            total += len(str(choice.get("name", ""))) + len(str(choice.get("value", "")))
    return total
