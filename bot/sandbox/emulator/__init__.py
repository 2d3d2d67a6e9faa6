"""A Discord emulator: REST /api/v10 and the gateway, as the unmodified discord.py client sees them.

It knows nothing of paperbot (it imports only the standard library, aiohttp and itself): any
discord.py bot can run against it. The modules, by concern:

| module | holds |
|---|---|
| ``server`` | ``SandboxServer``: options, start and stop, addresses, reading the world; what people do and the waits, delegated |
| ``state`` | the world: users, guilds, channels, roles, permissions, messages, the application and its commands |
| ``effects`` | what a change does in Discord: messages posted, edited, deleted and reacted to, with their gateway events |
| ``actions`` | what people do: slash commands, autocomplete, clicks, menus, modals, reactions, messages |
| ``waits`` | waiting for the bot: its next message, a request, a dispatch, quiet, a condition |
| ``world_changes`` | what admins and Discord change: users, servers, channels, permissions, DMs, teams |
| ``threads`` | threads and forum posts: making and archiving them, and Discord's rules inside them |
| ``routing`` | every REST request recorded, authenticated, faulted or rate limited, then answered |
| ``rest``, ``rest_*`` | the REST routes, in Discord's shapes and error codes |
| ``gateway`` | the websocket: IDENTIFY, RESUME, heartbeats, intents, dispatches |
| ``interactions`` | interaction payloads, options as Discord's client builds them, their records and results |
| ``limits`` | Discord's documented limits, answered as Discord answers them (50035 and friends) |
| ``ratelimits`` | Discord's rate limits: route buckets and their headers; the global limit, per-channel messages and reactions, DM opens (40003), invalid requests (opt-in) |
| ``recorder``, ``faults``, ``nonces``, ``addresses`` | the request and gateway log, injected faults, ``enforce_nonce`` memory, where it listens |
"""

from .faults import Fault, Faults
from .interactions import InteractionResult, Upload
from .options import SandboxOptions
from .ratelimits import DISCORD_RATES, RateRules
from .recorder import (
    ClientRefused,
    GatewayRecord,
    InteractionFailed,
    RecordedRequest,
    SandboxError,
    SandboxTimeout,
)
from .server import SandboxServer
from .state import (
    Intents,
    Permissions,
    SandboxChannel,
    SandboxClock,
    SandboxGuild,
    SandboxMessage,
    SandboxUser,
)

__all__ = [
    "DISCORD_RATES",
    "ClientRefused",
    "Fault",
    "Faults",
    "GatewayRecord",
    "Intents",
    "InteractionFailed",
    "InteractionResult",
    "Permissions",
    "RateRules",
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
