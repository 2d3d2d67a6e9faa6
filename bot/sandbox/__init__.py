"""A local Discord-compatible server (REST /api/v10 + gateway) for end-to-end tests and `paperbot sandbox`."""

from bot.sandbox.faults import Fault, Faults
from bot.sandbox.interactions import InteractionResult, Upload
from bot.sandbox.recorder import (
    ClientRefused,
    GatewayRecord,
    InteractionFailed,
    RecordedRequest,
    SandboxError,
    SandboxTimeout,
)
from bot.sandbox.server import SandboxOptions, SandboxServer
from bot.sandbox.state import (
    Intents,
    Permissions,
    SandboxChannel,
    SandboxClock,
    SandboxGuild,
    SandboxMessage,
    SandboxUser,
)

__all__ = [
    "ClientRefused",
    "Fault",
    "Faults",
    "GatewayRecord",
    "Intents",
    "InteractionFailed",
    "InteractionResult",
    "Permissions",
    "RecordedRequest",
    "SandboxChannel",
    "SandboxClock",
    "SandboxError",
    "SandboxGuild",
    "SandboxMessage",
    "SandboxOptions",
    "SandboxServer",
    "SandboxTimeout",
    "SandboxUser",
    "Upload",
]
