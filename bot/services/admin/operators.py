"""Who operates this paperbot: the people who may change what every server shares (the corpus).

A server's admins (Manage Server) run their own server: its channel feeds and its stats. The corpus is
shared by every server and every DM digest, so changing it from Discord is for the bot's operators:

* the owner of the bot's Discord application, or — when a team owns it — the team's owner and the
  members who accepted with the admin or developer role (the roles Discord lets act on the app; read-only
  members and pending invitations do not count, as in discord.py's ``Bot.is_owner``);
* the user ids the host lists in ``PAPERBOT_OPERATORS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Team member roles that operate the bot (Discord's roles are admin, developer and read_only).
OPERATING_TEAM_ROLES = frozenset({"admin", "developer"})


@dataclass(frozen=True, slots=True)
class TeamMember:
    user_id: int
    role: str  # "admin", "developer" or "read_only"
    accepted: bool  # False while the invitation is pending


@dataclass(frozen=True, slots=True)
class ApplicationOwnership:
    """Who owns the bot's Discord application, as its application info says."""

    owner_id: int | None  # the owning user; None when a team owns the application
    team_owner_id: int | None = None
    team_members: tuple[TeamMember, ...] = ()

    def operator_ids(self) -> frozenset[int]:
        if self.team_owner_id is None and not self.team_members:
            return frozenset() if self.owner_id is None else frozenset({self.owner_id})
        members = {m.user_id for m in self.team_members if m.accepted and m.role in OPERATING_TEAM_ROLES}
        return frozenset(members | ({self.team_owner_id} if self.team_owner_id is not None else set()))


@dataclass(frozen=True, slots=True)
class Operators:
    from_application: frozenset[int]
    configured: frozenset[int]

    def allows(self, user_id: int) -> bool:
        return user_id in self.from_application or user_id in self.configured

    def ids(self) -> list[int]:
        """Every operator, the application's first, each once."""
        ordered = sorted(self.from_application) + sorted(self.configured - self.from_application)
        return ordered


def operators_of(application: ApplicationOwnership | None, configured: Iterable[int]) -> Operators:
    """The operators: the application's (none when its info is unknown) and the configured ids."""
    owners = application.operator_ids() if application is not None else frozenset()
    return Operators(from_application=owners, configured=frozenset(configured))
