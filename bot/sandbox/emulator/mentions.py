"""Whom a message pings, worked out as Discord does: from the mentions written in its content (never its
embeds: an embed pings no one), as far as its ``allowed_mentions`` lets them through.

Discord's allowed mentions object: ``parse`` lists the kinds of mention parsed from the content
(``"users"``, ``"roles"``, ``"everyone"`` — the last for both @everyone and @here), ``users`` and
``roles`` name at most 100 ids each that may be pinged. It is always checked against the content (no
"phantom" ping: an id listed but not written pings no one). Without ``allowed_mentions`` every mention
written in the content is parsed; ``{"parse": []}`` parses none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .limits import FormErrors, Path

JSON = dict[str, Any]

#: <@id> and <@!id> (a user), <@&id> (a role), @everyone and @here
_MENTION_RE: Final = re.compile(r"<@!?(\d+)>|<@&(\d+)>|@(everyone|here)\b")
PARSE_KINDS: Final = ("users", "roles", "everyone")
IDS_MAX: Final = 100


@dataclass(frozen=True, slots=True)
class Mentions:
    """Who a message pinged: everyone (@everyone or @here), these users, these roles."""

    everyone: bool = False
    users: tuple[int, ...] = ()
    roles: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return self.everyone or bool(self.users) or bool(self.roles)


NONE = Mentions()


def resolve(content: str, allowed: JSON | None) -> Mentions:
    """The mentions ``content`` makes under ``allowed`` (a validated allowed mentions object, or None)."""
    if not content:
        return NONE
    parse = set(PARSE_KINDS) if allowed is None else set(allowed.get("parse") or ())
    listed_users = set() if allowed is None else {int(i) for i in allowed.get("users") or ()}
    listed_roles = set() if allowed is None else {int(i) for i in allowed.get("roles") or ()}
    everyone = False
    users: dict[int, None] = {}
    roles: dict[int, None] = {}
    for match in _MENTION_RE.finditer(content):
        user, role, broadcast = match.groups()
        if user is not None and ("users" in parse or int(user) in listed_users):
            users[int(user)] = None
        elif role is not None and ("roles" in parse or int(role) in listed_roles):
            roles[int(role)] = None
        elif broadcast is not None and "everyone" in parse:
            everyone = True
    return Mentions(everyone=everyone, users=tuple(users), roles=tuple(roles))


def validate_allowed_mentions(payload: JSON, errors: FormErrors, prefix: Path = ()) -> None:
    """Discord's checks of a body's ``allowed_mentions``: an object whose ``parse`` holds only the three
    kinds, and at most 100 ids in ``users`` and in ``roles``."""
    if "allowed_mentions" not in payload or payload["allowed_mentions"] is None:
        return
    allowed = payload["allowed_mentions"]
    path = (*prefix, "allowed_mentions")
    if not isinstance(allowed, dict):
        errors.add(path, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return
    parse = allowed.get("parse")
    if parse is not None:
        if not isinstance(parse, list):
            errors.add((*path, "parse"), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        else:
            for index, kind in enumerate(parse):
                if kind not in PARSE_KINDS:
                    errors.add(
                        (*path, "parse", index),
                        "BASE_TYPE_CHOICES",
                        f"Value must be one of {set(PARSE_KINDS)}.",
                    )
    for key in ("users", "roles"):
        ids = allowed.get(key)
        if ids is None:
            continue
        if not isinstance(ids, list):
            errors.add((*path, key), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
            continue
        errors.max_length((*path, key), ids, IDS_MAX)
        for index, value in enumerate(ids):
            if not str(value).isdigit():
                errors.add((*path, key, index), "NUMBER_TYPE_COERCE", f'Value "{value}" is not snowflake.')
