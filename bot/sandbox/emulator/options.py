"""How a sandbox behaves: where it listens, its token, limits, timings and what the "developer portal" allows."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import limits
from .nonces import DEFAULT_WINDOW
from .ratelimits import RateRules
from .state import Intents, World


@dataclass
class SandboxOptions:
    host: str = "127.0.0.1"
    port: int = 0  # 0: an ephemeral port
    token: str = World.TOKEN
    heartbeat_interval_ms: int = 41_250
    #: a HEARTBEAT_ACK comes this long after the heartbeat, as over a network. discord.py notes when it
    #: sent a heartbeat only once its thread sees the send done: an ACK handled before that reads as
    #: the whole interval late ("Can't keep up, websocket is 41.3s behind") and ``bot.latency`` says 41 s
    heartbeat_ack_delay: float = 0.05
    #: compress gateway frames when the client asks for zlib-stream (text frames when False)
    zlib_stream: bool = False
    #: privileged intents "enabled in the developer portal"; asking for others closes with 4014
    privileged_intents: int = Intents.PRIVILEGED
    #: (requests, per seconds) per route bucket; the headers say so and a burst past it gets a 429
    rate_limit: tuple[int, float] = (50, 1.0)
    #: Discord's limits beyond the route buckets (global, per-channel messages and reactions, DM opens,
    #: invalid requests); ``ratelimits.DISCORD_RATES`` enforces Discord's own figures
    rates: RateRules = field(default_factory=RateRules)
    #: guilds one gateway session may hold: an IDENTIFY whose shard would hold more closes with 4011
    #: "Sharding required" (Discord: 2500)
    max_guilds_per_shard: int = 2500
    #: GET /gateway/bot's ``max_concurrency``: IDENTIFYs a bot may start per 5 s (Discord: 1 below
    #: 150,000 guilds); discord.py's AutoShardedBot waits between shards accordingly
    max_concurrency: int = 1
    attachment_size_limit: int = limits.DEFAULT_ATTACHMENT_SIZE_LIMIT
    #: how long a message nonce is remembered for ``enforce_nonce`` (Discord: "a few minutes")
    nonce_window: float = DEFAULT_WINDOW
    interaction_deadline: float = 3.0
    token_lifetime: float = 15 * 60.0
    #: how long run_command waits for quiet after the answer (follow-ups that come right after)
    settle: float = 0.15
