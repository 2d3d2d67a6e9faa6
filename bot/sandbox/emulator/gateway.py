"""The gateway websocket: HELLO, heartbeats, IDENTIFY/READY/GUILD_CREATE, RESUME, dispatch, shards.

Each IDENTIFY opens a *session* holding every event dispatched to it, numbered by `s`. A
connection sends the session's events in order; when it drops, the session keeps collecting, and
a RESUME on a new connection replays what the client missed and then sends RESUMED — as Discord
does. Events are filtered by the session's intents here, because the client does not filter.

Sharding as Discord documents it: IDENTIFY carries ``shard: [shard_id, num_shards]`` (0 <= shard_id <
num_shards, else close 4010); a session gets the events and interactions of the guilds with
``(guild_id >> 22) % num_shards == shard_id``, and everything without a guild (DMs) goes to shard 0
only; a shard that would hold more than ``max_guilds_per_shard`` guilds closes with 4011. Sessions
may share a ``[shard_id, num_shards]`` or use different ``num_shards``: each gets what its own
formula routes to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import secrets
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from .recorder import GatewayRecord
from .state import Intents, SandboxMember

if TYPE_CHECKING:
    from .addresses import Addresses
    from .options import SandboxOptions
    from .recorder import Changes, Recorder
    from .state import World

log = logging.getLogger(__name__)

JSON = dict[str, Any]

DISPATCH, HEARTBEAT, IDENTIFY, PRESENCE, VOICE_STATE = 0, 1, 2, 3, 4
RESUME, RECONNECT, REQUEST_MEMBERS, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 6, 7, 8, 9, 10, 11

# Close codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes)
UNKNOWN_OPCODE, DECODE_ERROR, NOT_AUTHENTICATED, AUTHENTICATION_FAILED = 4001, 4002, 4003, 4004
ALREADY_AUTHENTICATED, INVALID_SHARD, SHARDING_REQUIRED = 4005, 4010, 4011
INVALID_INTENTS, DISALLOWED_INTENTS = 4013, 4014

# event -> (intent in a guild, intent in a DM); None: always sent.
_EVENT_INTENTS: dict[str, tuple[int | None, int | None]] = {
    "GUILD_CREATE": (Intents.GUILDS, None),
    "GUILD_UPDATE": (Intents.GUILDS, None),
    "GUILD_DELETE": (Intents.GUILDS, None),
    "GUILD_ROLE_CREATE": (Intents.GUILDS, None),
    "GUILD_ROLE_UPDATE": (Intents.GUILDS, None),
    "GUILD_ROLE_DELETE": (Intents.GUILDS, None),
    "CHANNEL_CREATE": (Intents.GUILDS, None),
    "CHANNEL_UPDATE": (Intents.GUILDS, None),
    "CHANNEL_DELETE": (Intents.GUILDS, None),
    "THREAD_CREATE": (Intents.GUILDS, None),
    "THREAD_UPDATE": (Intents.GUILDS, None),
    "THREAD_DELETE": (Intents.GUILDS, None),
    "GUILD_MEMBER_ADD": (Intents.GUILD_MEMBERS, None),
    "GUILD_MEMBER_UPDATE": (Intents.GUILD_MEMBERS, None),
    "GUILD_MEMBER_REMOVE": (Intents.GUILD_MEMBERS, None),
    "PRESENCE_UPDATE": (Intents.GUILD_PRESENCES, None),
    "MESSAGE_CREATE": (Intents.GUILD_MESSAGES, Intents.DIRECT_MESSAGES),
    "MESSAGE_UPDATE": (Intents.GUILD_MESSAGES, Intents.DIRECT_MESSAGES),
    "MESSAGE_DELETE": (Intents.GUILD_MESSAGES, Intents.DIRECT_MESSAGES),
    "MESSAGE_REACTION_ADD": (Intents.GUILD_MESSAGE_REACTIONS, Intents.DIRECT_MESSAGE_REACTIONS),
    "MESSAGE_REACTION_REMOVE": (Intents.GUILD_MESSAGE_REACTIONS, Intents.DIRECT_MESSAGE_REACTIONS),
    "MESSAGE_REACTION_REMOVE_ALL": (Intents.GUILD_MESSAGE_REACTIONS, Intents.DIRECT_MESSAGE_REACTIONS),
    "MESSAGE_REACTION_REMOVE_EMOJI": (Intents.GUILD_MESSAGE_REACTIONS, Intents.DIRECT_MESSAGE_REACTIONS),
    "TYPING_START": (Intents.GUILD_MESSAGE_TYPING, Intents.DIRECT_MESSAGE_TYPING),
    "MESSAGE_POLL_VOTE_ADD": (Intents.GUILD_MESSAGE_POLLS, Intents.DIRECT_MESSAGE_POLLS),
    "MESSAGE_POLL_VOTE_REMOVE": (Intents.GUILD_MESSAGE_POLLS, Intents.DIRECT_MESSAGE_POLLS),
}
_CONTENT_FIELDS = ("content", "embeds", "attachments", "components", "poll")


@dataclass
class GatewaySession:
    session_id: str
    intents: int
    shard: tuple[int, int]
    events: list[JSON] = field(default_factory=list)  # full payloads {"op":0,"t","s","d"}
    seq: int = 0
    connection: GatewayConnection | None = None
    invalidated: bool = False

    def owns_guild(self, guild_id: int | None) -> bool:
        shard_id, count = self.shard
        if guild_id is None:
            return shard_id == 0
        return (guild_id >> 22) % count == shard_id

    def wants(self, event: str, guild_id: int | None) -> bool:
        needed = _EVENT_INTENTS.get(event)
        if needed is None:
            return True
        intent = needed[0] if guild_id is not None else needed[1]
        return intent is None or bool(self.intents & intent)

    def append(self, event: str, data: JSON) -> int:
        self.seq += 1
        self.events.append({"op": DISPATCH, "t": event, "s": self.seq, "d": data})
        if self.connection is not None:
            self.connection.wake.set()
        return self.seq


class GatewayConnection:
    def __init__(self, number: int, ws: web.WebSocketResponse, path: str, compress: bool) -> None:
        self.number = number
        self.ws = ws
        self.path = path
        self.compressor = zlib.compressobj() if compress else None
        self.session: GatewaySession | None = None
        self.sent_index = 0
        self.wake = asyncio.Event()
        self.lock = asyncio.Lock()
        self.writer: asyncio.Task[None] | None = None
        self.heartbeats = 0
        self.closed_by_server: int | None = None


class Gateway:
    def __init__(
        self,
        world: World,
        options: SandboxOptions,
        recorder: Recorder,
        changes: Changes,
        addresses: Addresses,
    ) -> None:
        self.world = world
        self.options = options
        self.recorder = recorder
        self.changes = changes
        self.addresses = addresses
        self.sessions: dict[str, GatewaySession] = {}
        self.connections: list[GatewayConnection] = []
        self._numbers = itertools.count(1)
        self._acks: set[asyncio.Task[None]] = set()  # heartbeat ACKs on their way

    # -- state for tests --------------------------------------------------------------------------

    @property
    def live_sessions(self) -> list[GatewaySession]:
        return [s for s in self.sessions.values() if not s.invalidated]

    @property
    def connected(self) -> bool:
        return any(s.connection is not None for s in self.live_sessions)

    def session_for(self, guild_id: int | None) -> GatewaySession | None:
        """Where Discord sends this guild's interactions: a connected session first, newest first."""
        candidates = [s for s in reversed(self.live_sessions) if s.owns_guild(guild_id)]
        connected = [s for s in candidates if s.connection is not None]
        pool = connected or candidates
        return pool[0] if pool else None

    # -- dispatch ---------------------------------------------------------------------------------

    def dispatch(
        self, event: str, data: JSON, *, guild_id: int | None, only: GatewaySession | None = None
    ) -> int:
        """Queue `event` for every session that should get it; returns how many do. Of a server the bot
        is not in, only interactions (people's user installs) reach it."""
        if (
            event != "INTERACTION_CREATE"
            and guild_id in self.world.guilds
            and not self.world.bot_in(guild_id)
        ):
            return 0
        delivered = 0
        for session in [only] if only is not None else self.live_sessions:
            if session.invalidated or not session.owns_guild(guild_id) or not session.wants(event, guild_id):
                continue
            session.append(event, self._shape(session, event, data, guild_id))
            delivered += 1
        return delivered

    def announce_guild(self, guild_id: int) -> int:
        """GUILD_CREATE for a guild the bot was just added to (shaped per session, as at IDENTIFY)."""
        delivered = 0
        for session in self.live_sessions:
            if (
                session.invalidated
                or not session.owns_guild(guild_id)
                or not session.wants("GUILD_CREATE", guild_id)
            ):
                continue
            session.append("GUILD_CREATE", self.guild_create_payload(session, guild_id))
            delivered += 1
        return delivered

    def _shape(self, session: GatewaySession, event: str, data: JSON, guild_id: int | None) -> JSON:
        """Blank message content for sessions without MESSAGE_CONTENT, with Discord's exceptions."""
        if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE") or session.intents & Intents.MESSAGE_CONTENT:
            return data
        bot_id = str(self.world.bot_user.id)
        author = (data.get("author") or {}).get("id")
        mentioned = any(m.get("id") == bot_id for m in data.get("mentions") or [])
        if guild_id is None or author == bot_id or mentioned:
            return data
        shaped = dict(data)
        for key in _CONTENT_FIELDS:
            if key in shaped:
                shaped[key] = "" if key == "content" else []
        return shaped

    # -- connection handling ----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await ws.prepare(request)
        encoding = request.query.get("encoding", "json")
        compress = request.query.get("compress") == "zlib-stream" and self.options.zlib_stream
        conn = GatewayConnection(next(self._numbers), ws, request.path, compress)
        self.connections.append(conn)
        self.changes.notify()
        try:
            if encoding != "json":
                await self._close(conn, DECODE_ERROR)
                return ws
            await self._send(
                conn,
                {
                    "op": HELLO,
                    "d": {"heartbeat_interval": self.options.heartbeat_interval_ms},
                    "s": None,
                    "t": None,
                },
            )
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    try:
                        payload = json.loads(message.data)
                    except ValueError:
                        await self._close(conn, DECODE_ERROR)
                        break
                    await self._received(conn, payload)
                elif message.type is WSMsgType.BINARY:
                    await self._close(conn, DECODE_ERROR)
                    break
                else:
                    break
        finally:
            log.debug("gateway connection %s closed with %s", conn.number, ws.close_code)
            await self._detach(conn, ws.close_code)
        return ws

    async def _detach(self, conn: GatewayConnection, close_code: int | None) -> None:
        if conn.writer is not None:
            conn.writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await conn.writer
        session = conn.session
        if session is not None and session.connection is conn:
            session.connection = None
            # A clean close by the client (1000/1001) ends the session; anything else may resume.
            if conn.closed_by_server is None and close_code in (1000, 1001):
                session.invalidated = True
        with contextlib.suppress(ValueError):
            self.connections.remove(conn)
        self.changes.notify()

    async def _received(self, conn: GatewayConnection, payload: Any) -> None:
        op = payload.get("op") if isinstance(payload, dict) else None
        data = payload.get("d") if isinstance(payload, dict) else None
        self._record("recv", conn, op if isinstance(op, int) else -1, None, None, _redact(op, data))
        if op == HEARTBEAT:
            conn.heartbeats += 1
            ack = asyncio.create_task(self._ack_heartbeat(conn))
            self._acks.add(ack)
            ack.add_done_callback(self._acks.discard)
        elif op == IDENTIFY:
            await self._identify(conn, data or {})
        elif op == RESUME:
            await self._resume(conn, data or {})
        elif conn.session is None:
            await self._close(conn, NOT_AUTHENTICATED)
        elif op == REQUEST_MEMBERS:
            self._request_members(conn.session, data or {})
        elif op in (PRESENCE, VOICE_STATE):
            pass  # accepted and recorded
        else:
            await self._close(conn, UNKNOWN_OPCODE)

    async def _ack_heartbeat(self, conn: GatewayConnection) -> None:
        """HEARTBEAT_ACK after ``heartbeat_ack_delay`` (see :class:`SandboxOptions`); none on a connection
        closed meanwhile."""
        await asyncio.sleep(self.options.heartbeat_ack_delay)
        with contextlib.suppress(ConnectionResetError):
            await self._send(conn, {"op": HEARTBEAT_ACK, "d": None, "s": None, "t": None})

    async def _identify(self, conn: GatewayConnection, data: JSON) -> None:
        if conn.session is not None:
            await self._close(conn, ALREADY_AUTHENTICATED)
            return
        if data.get("token") != self.options.token:
            await self._close(conn, AUTHENTICATION_FAILED)
            return
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0 or intents >= 1 << 26:
            await self._close(conn, INVALID_INTENTS)
            return
        if intents & Intents.PRIVILEGED & ~self.options.privileged_intents:
            await self._close(conn, DISALLOWED_INTENTS)
            return
        shard = data.get("shard") or [0, 1]
        if not (
            isinstance(shard, list)
            and len(shard) == 2
            and all(isinstance(part, int) and not isinstance(part, bool) for part in shard)
            and 0 <= shard[0] < shard[1]
        ):
            await self._close(conn, INVALID_SHARD)
            return
        session = GatewaySession(secrets.token_hex(16), intents, (int(shard[0]), int(shard[1])))
        if (
            sum(session.owns_guild(guild.id) for guild in self.world.bot_guilds())
            > self.options.max_guilds_per_shard
        ):
            await self._close(conn, SHARDING_REQUIRED)  # "you are required to shard your connection"
            return
        self.world.session_starts += 1
        for old in self.live_sessions:
            # A client identifying afresh for this shard has given up its disconnected session
            # (discord.py closes with 4000, which would otherwise leave it resumable).
            if old.shard == session.shard and old.connection is None:
                old.invalidated = True
        self.sessions[session.session_id] = session
        self._attach(conn, session, start_index=0)
        world = self.world
        guilds = [g for g in world.bot_guilds() if session.owns_guild(g.id)]
        bot = world.bot_user.payload() | {"verified": True, "mfa_enabled": False, "email": None, "flags": 0}
        ready = {
            "v": 10,
            "user": bot,
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.addresses.resume_gateway_url,
            "shard": list(session.shard),
            "application": {"id": str(world.application.id), "flags": world.application.payload()["flags"]},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "auth": {},
            "_trace": ['["sandbox-gateway"]'],
        }
        session.append("READY", ready)
        for guild in guilds:
            if session.wants("GUILD_CREATE", guild.id):
                session.append("GUILD_CREATE", self.guild_create_payload(session, guild.id))
        self.changes.notify()

    def guild_create_payload(self, session: GatewaySession, guild_id: int) -> JSON:
        world = self.world
        guild = world.guilds[guild_id]
        members: list[SandboxMember]
        if session.intents & Intents.GUILD_MEMBERS:
            members = list(guild.members.values())
        else:
            members = [guild.members[world.bot_user.id]]
        presences: list[JSON] = []
        if session.intents & Intents.GUILD_PRESENCES:
            presences = [
                _presence(user_id, status)
                for user_id, status in world.presences.items()
                if user_id in guild.members
            ]
        return guild.create_payload(me=world.bot_user, members=members, presences=presences)

    async def _resume(self, conn: GatewayConnection, data: JSON) -> None:
        session = self.sessions.get(str(data.get("session_id")))
        if conn.session is not None:
            await self._close(conn, ALREADY_AUTHENTICATED)
            return
        if data.get("token") != self.options.token:
            await self._close(conn, AUTHENTICATION_FAILED)
            return
        seq = data.get("seq")
        if session is None or session.invalidated or not isinstance(seq, int) or seq > session.seq:
            await self._send(conn, {"op": INVALID_SESSION, "d": False, "s": None, "t": None})
            return
        if session.connection is not None and session.connection is not conn:
            old = session.connection
            session.connection = None
            await self._close(old, 4000, detach_session=False)
        start = next((i for i, e in enumerate(session.events) if e["s"] > seq), len(session.events))
        self._attach(conn, session, start_index=start)
        session.append("RESUMED", {"_trace": ['["sandbox-gateway"]']})
        self.changes.notify()

    def _request_members(self, session: GatewaySession, data: JSON) -> None:
        world = self.world
        guild = world.guilds.get(int(data.get("guild_id") or 0))
        if guild is None:
            return
        members = list(guild.members.values())
        if user_ids := data.get("user_ids"):
            wanted = {int(u) for u in (user_ids if isinstance(user_ids, list) else [user_ids])}
            members = [m for m in members if m.user.id in wanted]
        elif query := data.get("query"):
            members = [m for m in members if m.user.username.lower().startswith(str(query).lower())]
        elif not session.intents & Intents.GUILD_MEMBERS:
            members = []
        if limit := data.get("limit"):
            members = members[: int(limit)]
        chunk: JSON = {
            "guild_id": str(guild.id),
            "members": [m.payload() for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
        }
        if data.get("nonce"):
            chunk["nonce"] = data["nonce"]
        if data.get("presences"):
            chunk["presences"] = [
                _presence(m.user.id, world.presences.get(m.user.id, "offline")) for m in members
            ]
        session.append("GUILD_MEMBERS_CHUNK", chunk)

    def _attach(self, conn: GatewayConnection, session: GatewaySession, *, start_index: int) -> None:
        conn.session = session
        conn.sent_index = start_index
        session.connection = conn
        conn.writer = asyncio.get_running_loop().create_task(
            self._write(conn), name=f"sandbox-gateway-writer-{conn.number}"
        )
        conn.wake.set()

    async def _write(self, conn: GatewayConnection) -> None:
        while True:
            await conn.wake.wait()
            conn.wake.clear()
            session = conn.session
            while (
                session is not None and session.connection is conn and conn.sent_index < len(session.events)
            ):
                payload = session.events[conn.sent_index]
                conn.sent_index += 1
                try:
                    await self._send(conn, payload)
                except ConnectionError:
                    return

    async def _send(self, conn: GatewayConnection, payload: JSON) -> None:
        if conn.ws.closed:
            raise ConnectionResetError("gateway connection closed")
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        async with conn.lock:
            if conn.compressor is not None:
                blob = conn.compressor.compress(text.encode()) + conn.compressor.flush(zlib.Z_SYNC_FLUSH)
                await conn.ws.send_bytes(blob)
            else:
                await conn.ws.send_str(text)
        session_id = conn.session.session_id if conn.session else None
        self._record(
            "send", conn, payload["op"], payload.get("t"), payload.get("s"), payload.get("d"), session_id
        )

    async def _close(self, conn: GatewayConnection, code: int, *, detach_session: bool = True) -> None:
        conn.closed_by_server = code
        if (
            detach_session
            and conn.session is not None
            and code in (AUTHENTICATION_FAILED, INVALID_INTENTS, DISALLOWED_INTENTS)
        ):
            conn.session.invalidated = True
        await conn.ws.close(code=code, message=b"")

    def _record(
        self,
        direction: str,
        conn: GatewayConnection,
        op: int,
        t: str | None,
        s: int | None,
        d: Any,
        session_id: str | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        sid = session_id or (conn.session.session_id if conn.session else None)
        self.recorder.add_gateway(GatewayRecord(direction, op, t, s, d, sid, conn.number, loop.time()))

    # -- controls for tests -----------------------------------------------------------------------

    async def drop(self, code: int = 4000) -> int:
        """Close every live connection with `code` (sessions stay resumable unless the code ends them)."""
        conns = [s.connection for s in self.live_sessions if s.connection is not None]
        for conn in conns:
            await self._close(conn, code)
        return len(conns)

    async def send_reconnect(self) -> None:
        for session in self.live_sessions:
            if session.connection is not None:
                await self._send(session.connection, {"op": RECONNECT, "d": None, "s": None, "t": None})

    async def invalidate(self, *, resumable: bool = False) -> None:
        for session in self.live_sessions:
            conn = session.connection
            if not resumable:
                session.invalidated = True
            if conn is not None:
                await self._send(conn, {"op": INVALID_SESSION, "d": resumable, "s": None, "t": None})

    async def close_all(self) -> None:
        for conn in list(self.connections):
            if not conn.ws.closed:
                conn.closed_by_server = 1001
                await conn.ws.close(code=1001, message=b"sandbox shutting down")
            if conn.writer is not None:
                conn.writer.cancel()


def _presence(user_id: int, status: str) -> JSON:
    return {
        "user": {"id": str(user_id)},
        "status": status,
        "activities": [],
        "client_status": {"desktop": status} if status != "offline" else {},
    }


def _redact(op: Any, data: Any) -> Any:
    if op in (IDENTIFY, RESUME) and isinstance(data, dict) and "token" in data:
        return {**data, "token": "<redacted>"}
    return data
