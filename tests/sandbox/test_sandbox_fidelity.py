"""The sandbox behaves like Discord for the unmodified discord.py client.

A small discord.py bot (defined here, independent of paperbot's features) runs against the
sandbox; each test checks one thing Discord does that a bot depends on, and would fail if the
sandbox got it wrong (the client would hang, crash, or not retry).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from bot.sandbox import ClientRefused, InteractionFailed, SandboxServer, Upload
from bot.sandbox.emulator.state import Intents, Permissions
from bot.sandbox.harness import ErrorCapture, capture_errors, running_client

pytestmark = pytest.mark.timeout(60)


class VoteButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"fid:vote:(?P<count>\d+)"):
    """A persistent button whose custom_id carries its state (survives a restart)."""

    def __init__(self, count: int) -> None:
        super().__init__(
            discord.ui.Button(label=f"Votes: {count}", custom_id=f"fid:vote:{count}", emoji="👍")
        )
        self.count = count

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> VoteButton:
        return cls(int(match["count"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(VoteButton(self.count + 1))
        await interaction.response.edit_message(content=f"{self.count + 1} votes", view=view)


class NoteModal(discord.ui.Modal, title="Add a note"):
    note: discord.ui.TextInput[Any] = discord.ui.TextInput(label="Note", custom_id="fid:note", max_length=50)
    extra: discord.ui.TextInput[Any] = discord.ui.TextInput(
        label="Extra", custom_id="fid:extra", required=False
    )

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(
            f"noted: {self.note.value} / {self.extra.value or '-'}", ephemeral=True
        )


class TopicMenu(discord.ui.View):
    @discord.ui.select(
        custom_id="fid:topics",
        placeholder="Topics",
        min_values=1,
        max_values=2,
        options=[discord.SelectOption(label=t.title(), value=t) for t in ("llm", "rl", "vision")],
    )
    async def topics(self, interaction: discord.Interaction, select: discord.ui.Select[Any]) -> None:
        await interaction.response.edit_message(content=f"topics: {', '.join(select.values)}", view=None)


class FidelityBot(commands.Bot):
    def __init__(self, guild_id: int, *, intents: discord.Intents | None = None) -> None:
        super().__init__(
            command_prefix="!",
            intents=intents or discord.Intents.default(),
            help_command=None,
            guild_ready_timeout=0.1,  # the sandbox sends every GUILD_CREATE right after READY
        )
        self.guild_id = guild_id
        self.raw_reactions: list[discord.RawReactionActionEvent] = []
        self.messages: list[discord.Message] = []
        self.presences: list[Any] = []
        self.release = asyncio.Event()
        self.late_errors: list[discord.HTTPException] = []
        self.followup_errors: list[discord.HTTPException] = []
        self.ready_count = 0
        self.resumed = asyncio.Event()

    async def setup_hook(self) -> None:
        self.add_dynamic_items(VoteButton)
        guild = discord.Object(self.guild_id)
        for group in build_commands(self):
            self.tree.add_command(group, guild=guild)
        await self.tree.sync(guild=guild)
        # one global command, usable in DMs too
        self.tree.add_command(fidping)
        await self.tree.sync()

    async def on_ready(self) -> None:
        self.ready_count += 1

    async def on_resumed(self) -> None:
        self.resumed.set()

    async def on_raw_reaction_add(self, event: discord.RawReactionActionEvent) -> None:
        self.raw_reactions.append(event)

    async def on_raw_reaction_remove(self, event: discord.RawReactionActionEvent) -> None:
        self.raw_reactions.append(event)

    async def on_message(self, message: discord.Message) -> None:
        self.messages.append(message)

    async def on_presence_update(self, before: Any, after: Any) -> None:
        self.presences.append(after)


def build_commands(bot: FidelityBot) -> tuple[app_commands.Group, app_commands.Group]:
    fid = app_commands.Group(name="fid", description="Sandbox fidelity commands")
    # default_member_permissions exists only on top-level commands (Discord's rule)
    admin = app_commands.Group(
        name="fidadmin",
        description="Needs Manage Server",
        default_permissions=discord.Permissions(manage_guild=True),
    )
    tools = app_commands.Group(name="tools", description="A subcommand group", parent=admin)

    @fid.command(name="echo", description="Echo, then follow up")
    async def echo(
        interaction: discord.Interaction, text: str, followups: app_commands.Range[int, 0, 3] = 1
    ) -> None:
        await interaction.response.send_message(f"echo: {text}")
        for n in range(followups):
            await interaction.followup.send(f"follow-up {n + 1}", ephemeral=n == 0)

    @fid.command(name="where", description="Say where it was used")
    async def where(interaction: discord.Interaction) -> None:
        channel = interaction.channel
        kind = type(channel).__name__
        parent = getattr(channel, "parent_id", None)
        await interaction.response.send_message(f"in {kind} {getattr(channel, 'name', '?')} parent={parent}")

    @fid.command(name="slow", description="Defer, then edit the original")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await asyncio.sleep(0.05)
        original = await interaction.original_response()
        assert original.flags.loading
        await interaction.edit_original_response(content="slow: done", embed=discord.Embed(title="Result"))
        extra = await interaction.followup.send("extra", wait=True)
        await extra.edit(content="extra, edited")

    @fid.command(name="wait", description="Answer only once released")
    async def wait(interaction: discord.Interaction) -> None:
        await bot.release.wait()
        try:
            await interaction.response.send_message("too late?")
        except discord.HTTPException as error:
            bot.late_errors.append(error)

    @fid.command(name="later", description="Answer now, follow up once released")
    async def later(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("now")
        await bot.release.wait()
        try:
            await interaction.followup.send("later")
        except discord.HTTPException as error:
            bot.followup_errors.append(error)

    @fid.command(name="pick", description="Autocomplete")
    async def pick(interaction: discord.Interaction, query: str) -> None:
        await interaction.response.send_message(f"picked {query}", ephemeral=True)

    @pick.autocomplete("query")
    async def pick_autocomplete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        count = 30 if current == "many" else 3
        return [app_commands.Choice(name=f"{current} {n}", value=f"{current}-{n}") for n in range(count)]

    @fid.command(name="vote", description="A persistent button")
    async def vote(interaction: discord.Interaction) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(VoteButton(0))
        await interaction.response.send_message("0 votes", view=view)

    @fid.command(name="upload", description="Read an attachment")
    async def upload(interaction: discord.Interaction, file: discord.Attachment) -> None:
        data = await file.read()
        await interaction.response.send_message(
            f"{file.filename}: {len(data)} bytes, starts {data[:5].decode()!r}"
        )

    @tools.command(name="ping", description="Admins only")
    async def ping(
        interaction: discord.Interaction, target: discord.Member, where: discord.TextChannel
    ) -> None:
        await interaction.response.send_message(f"pong {target.name} in {where.name}", ephemeral=True)

    @fid.command(name="form", description="Open a modal")
    async def form(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(NoteModal())

    @fid.command(name="menu", description="A select menu")
    async def menu(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pick topics", view=TopicMenu())

    @fid.command(name="file", description="Answer with a file, defer first")
    async def file(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send(
            "your file", file=discord.File(io.BytesIO(b"@article{x}"), filename="saved.bib")
        )
        await interaction.followup.send("and a second message", ephemeral=True)

    return fid, admin


@app_commands.command(name="fidping", description="A global command")
async def fidping(interaction: discord.Interaction) -> None:
    where = "DM" if interaction.guild_id is None else "guild"
    await interaction.response.send_message(f"pong from a {where} to {interaction.user.name}")


@pytest.fixture
def start_bot(sandbox: SandboxServer) -> Callable[..., contextlib.AbstractAsyncContextManager[FidelityBot]]:
    """Run a FidelityBot against the sandbox; afterwards fail if it died or logged an error."""

    @contextlib.asynccontextmanager
    async def start(
        *, intents: discord.Intents | None = None, allow_errors: tuple[str, ...] = ()
    ) -> AsyncIterator[FidelityBot]:
        bot = FidelityBot(sandbox.guild.id, intents=intents)
        errors: ErrorCapture
        with capture_errors() as errors:
            for text in allow_errors:
                errors.allow(text)
            async with running_client(bot, sandbox) as running:
                yield bot
                death = running.death()
            assert death is None, death
            assert not running.problems, running.problems
            assert not errors.unexpected(), errors.describe(errors.unexpected())
        assert not sandbox.unhandled_requests, [r.key for r in sandbox.unhandled_requests]

    return start


# -- handshake and gateway --------------------------------------------------------------------------


async def test_handshake_reaches_on_ready_with_the_seeded_guild(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:
        assert bot.ready_count == 1
        assert bot.user is not None
        assert bot.user.id == sandbox.bot_user.id
        guild = bot.get_guild(sandbox.guild.id)
        assert guild is not None
        assert guild.name == "Paper Lab"
        assert {c.name for c in guild.text_channels} >= {"general", "papers"}
        assert guild.me is not None
        ready = sandbox.dispatched("READY")[0]
        assert ready.d["resume_gateway_url"] == sandbox.resume_gateway_url
        create = sandbox.dispatched("GUILD_CREATE")[0]
        # without the members intent only the bot's member is sent, but member_count is the real count
        assert create.d["member_count"] == len(sandbox.guild.members)
        identify = next(g for g in sandbox.gateway_events if g.direction == "recv" and g.op == 2)
        assert identify.d["intents"] == discord.Intents.default().value
        assert identify.d["token"] == "<redacted>"
        # the client heartbeats right after HELLO, and every heartbeat is acknowledged
        await sandbox.eventually(lambda: bot.latency != float("inf"), what="a heartbeat ACK")


async def test_a_heartbeat_ack_comes_as_over_a_network_so_the_latency_is_true(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ACK sent the instant the heartbeat arrived often beat discord.py's note of the send: the
    latency it measured was then the whole interval ("Can't keep up, websocket is 41.3s behind" at
    Discord's 41.25 s, every few idle intervals)."""
    measured: list[float] = []
    ack = discord.gateway.KeepAliveHandler.ack

    def noted(handler: discord.gateway.KeepAliveHandler) -> None:
        ack(handler)
        measured.append(handler.latency)

    monkeypatch.setattr(discord.gateway.KeepAliveHandler, "ack", noted)
    async with SandboxServer(heartbeat_interval_ms=400) as sandbox:
        bot = commands.Bot(command_prefix="!", intents=discord.Intents.default())
        async with running_client(bot, sandbox):
            await sandbox.eventually(lambda: len(measured) >= 8, what="eight heartbeat ACKs", timeout=10)
    assert max(measured) < 0.3, measured  # the ACK's delay, never the 0.4 s interval


async def test_members_intent_gets_every_member_and_no_chunk_wait(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    intents = discord.Intents.default()
    intents.members = True
    started = time.monotonic()
    async with start_bot(intents=intents) as bot:
        guild = bot.get_guild(sandbox.guild.id)
        assert guild is not None
        assert guild.chunked
        assert {m.name for m in guild.members} >= {"alice", "bob", "carol", "paperbot"}
        assert not [g for g in sandbox.gateway_events if g.direction == "recv" and g.op == 8]
    assert time.monotonic() - started < 10


async def test_auto_sharded_bot(sandbox: SandboxServer) -> None:
    bot = commands.AutoShardedBot(
        command_prefix="!", intents=discord.Intents.default(), shard_count=2, guild_ready_timeout=0.1
    )
    async with running_client(bot, sandbox):
        assert bot.shard_count == 2
        guild = bot.get_guild(sandbox.guild.id)
        assert guild is not None
        assert guild.shard_id == (sandbox.guild.id >> 22) % 2
        readies = sandbox.dispatched("READY")
        assert sorted(tuple(r.d["shard"]) for r in readies) == [(0, 2), (1, 2)]
        creates = sandbox.dispatched("GUILD_CREATE")
        assert len(creates) == 1  # only the shard that owns the guild gets it
    auto = commands.AutoShardedBot(
        command_prefix="!", intents=discord.Intents.default(), guild_ready_timeout=0.1
    )
    async with running_client(auto, sandbox):
        assert auto.shard_count == 1  # from GET /gateway/bot
    assert sandbox.requests_matching("GET /gateway/bot")


async def test_disallowed_privileged_intent_closes_with_4014(sandbox: SandboxServer) -> None:
    sandbox.options.privileged_intents = 0
    intents = discord.Intents.default()
    intents.message_content = True
    bot = FidelityBot(sandbox.guild.id, intents=intents)
    with pytest.raises(AssertionError, match="PrivilegedIntentsRequired"):
        async with running_client(bot, sandbox, ready_timeout=10):
            pass


async def test_resume_after_the_server_drops_the_socket_replays_missed_events(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:
        message = await sandbox.run_command(sandbox.bob, "fid echo", text="hi", followups=0)
        session_id = sandbox.dispatched("READY")[0].session_id
        await sandbox.drop_gateway(4000)
        # dispatched while the bot is disconnected: must arrive after the RESUME
        await sandbox.react(sandbox.bob, message, "👍")
        await asyncio.wait_for(bot.resumed.wait(), 10)
        await sandbox.eventually(lambda: bot.raw_reactions, what="the reaction replayed after RESUME")
        resume = next(g for g in sandbox.gateway_events if g.direction == "recv" and g.op == 6)
        assert resume.d["session_id"] == session_id
        assert [c for c in sandbox.gateway.connections if c.path == "/gateway-resume"], (
            "resumed on resume_gateway_url"
        )
        assert len(sandbox.dispatched("READY")) == 1, "resumed, not re-identified"
        assert bot.ready_count == 1
        # and the bot still works
        result = await sandbox.run_command(sandbox.bob, "fid echo", text="again", followups=0)
        assert result.content == "echo: again"


async def test_reconnect_opcode_and_invalid_session(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        await sandbox.send_reconnect()
        await asyncio.wait_for(bot.resumed.wait(), 10)
        await sandbox.invalidate_session(resumable=False)
        # discord.py waits 5 s (before_identify_hook) before identifying again
        await sandbox.eventually(
            lambda: len(sandbox.dispatched("READY")) == 2, timeout=10, what="a fresh IDENTIFY"
        )
        await sandbox.eventually(lambda: bot.ready_count == 2, what="on_ready after re-identifying")
        result = await sandbox.run_command(sandbox.bob, "fid echo", text="still here", followups=0)
        assert result.content == "echo: still here"


async def test_zlib_stream_frames() -> None:
    async with SandboxServer(zlib_stream=True) as server:
        bot = FidelityBot(server.guild.id)
        with capture_errors() as errors:
            async with running_client(bot, server):
                compressed = [c.compressor is not None for c in server.gateway.connections]
                result = await server.run_command(server.bob, "fid echo", text="zipped", followups=0)
        assert compressed == [True]  # discord.py asked for zlib-stream and got binary frames
        assert result.content == "echo: zipped"
        assert not errors.unexpected(), errors.describe()


async def test_intents_filtering_message_content_and_presences(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:  # default intents: messages, no message content, no presences
        await sandbox.send_message(sandbox.bob, "papers", "secret words")
        await sandbox.send_message(sandbox.bob, "dm", "hello in a DM")
        sandbox.set_presence(sandbox.bob, "online")
        await sandbox.eventually(lambda: len(bot.messages) == 2, what="both messages")
        guild_message, dm_message = bot.messages
        assert guild_message.content == ""  # no MESSAGE_CONTENT intent
        assert dm_message.content == "hello in a DM"  # DMs keep their content
        await asyncio.sleep(0.2)
        assert bot.presences == []
        assert not sandbox.dispatched("PRESENCE_UPDATE")

    intents = discord.Intents.default()
    intents.message_content = True
    intents.presences = True
    intents.members = True
    async with start_bot(intents=intents) as bot:
        await sandbox.send_message(sandbox.carol, "papers", "visible words")
        sandbox.set_presence(sandbox.carol, "idle")
        await sandbox.eventually(lambda: bot.messages and bot.presences, what="message and presence")
        assert bot.messages[-1].content == "visible words"

    none = discord.Intents.none()
    none.guilds = True
    async with start_bot(intents=none) as bot:
        await sandbox.send_message(sandbox.carol, "papers", "nobody hears this")
        await asyncio.sleep(0.2)
        assert bot.messages == []


# -- slash commands -----------------------------------------------------------------------------


async def test_commands_are_stored_as_synced_and_unknown_ones_refused(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot():
        assert [c["name"] for c in sandbox.commands()] == ["fidping"]
        fid, admin = sandbox.commands(sandbox.guild)
        assert fid["name"] == "fid"
        assert fid["guild_id"] == str(sandbox.guild.id)
        assert admin["default_member_permissions"] == str(Permissions.MANAGE_GUILD)
        assert admin["options"][0]["type"] == 2  # a subcommand group
        subcommands = {o["name"]: o for o in fid["options"]}
        text_option = subcommands["echo"]["options"][0]
        assert (text_option["name"], text_option["type"], text_option["required"]) == ("text", 3, True)
        with pytest.raises(ClientRefused, match="no command /nope"):
            await sandbox.run_command(sandbox.bob, "nope")
        with pytest.raises(ClientRefused, match="no subcommand 'nope'"):
            await sandbox.run_command(sandbox.bob, "fid nope")
        with pytest.raises(ClientRefused, match="required option"):
            await sandbox.run_command(sandbox.bob, "fid echo")
        with pytest.raises(ClientRefused, match="between 0 and 3"):
            await sandbox.run_command(sandbox.bob, "fid echo", text="x", followups=9)
        with pytest.raises(ClientRefused, match="guild command"):
            await sandbox.run_command(sandbox.bob, "fid echo", text="x", where="dm")


async def test_slash_command_response_and_followups(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        result = await sandbox.run_command(
            sandbox.bob, "fid echo", where="papers", text="kv cache", followups=2
        )
        assert result.callback_type == 4
        assert result.content == "echo: kv cache"
        assert not result.ephemeral
        assert [m.content for m in result.followups] == ["follow-up 1", "follow-up 2"]
        assert [m.ephemeral for m in result.followups] == [True, False]
        assert [m.content for m in sandbox.messages_in("papers")] == ["echo: kv cache", "follow-up 2"]
        callback = sandbox.requests_matching("POST /interactions/*/*/callback")[0]
        assert callback.query == {"with_response": "1"}
        assert not callback.authorized  # interaction callbacks carry no Authorization header
        followup = sandbox.requests_matching("POST /webhooks/*/*")[0]
        assert followup.query.get("wait") == "1"


async def test_defer_then_edit_original(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        result = await sandbox.run_command(sandbox.bob, "fid slow")
        assert result.callback_type == 5
        assert result.deferred
        assert result.message is not None
        assert not result.message.loading
        assert result.content == "slow: done"
        assert result.embed is not None
        assert result.embed["title"] == "Result"
        assert sandbox.requests_matching("GET /webhooks/*/*/messages/@original")[0].status == 200
        assert [m.content for m in result.followups] == ["extra, edited"]  # follow-up edit
        assert sandbox.requests_matching("PATCH /webhooks/*/*/messages/*")[-1].status == 200


async def test_subcommand_group_permissions_and_resolved_options(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot():
        with pytest.raises(ClientRefused, match="cannot see /fidadmin"):
            await sandbox.run_command(
                sandbox.bob,
                "fidadmin tools ping",
                target=sandbox.carol,
                where="papers",
                options={"where": "general"},
            )
        result = await sandbox.run_command(
            sandbox.alice,
            "fidadmin tools ping",
            target=sandbox.carol,
            where="papers",
            options={"where": "general"},
        )
        assert result.content == "pong carol in general"
        assert result.ephemeral


async def test_attachment_option_is_served_to_the_bot(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        result = await sandbox.run_command(
            sandbox.alice, "fid upload", file=Upload("papers.txt", b"hello papers")
        )
        assert result.content == "papers.txt: 12 bytes, starts 'hello'"


async def test_autocomplete_and_its_25_choice_limit(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot(allow_errors=("Ignoring exception in autocomplete",)):
        choices = await sandbox.autocomplete(sandbox.bob, "fid pick", "query", "kv")
        assert choices == [{"name": f"kv {n}", "value": f"kv-{n}"} for n in range(3)]
        with pytest.raises(InteractionFailed, match="BASE_TYPE_MAX_LENGTH"):
            await sandbox.autocomplete(sandbox.bob, "fid pick", "query", "many", timeout=3)


async def test_first_response_after_3_seconds_gets_10062(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        pending = asyncio.create_task(sandbox.run_command(sandbox.bob, "fid wait", check=False))
        await sandbox.wait_for_dispatch("INTERACTION_CREATE")
        sandbox.clock.advance(3.5)  # no real sleep: the sandbox clock passes the deadline
        bot.release.set()
        result = await pending
        assert result.failure is not None
        assert "10062" in result.failure
        assert [e.code for e in bot.late_errors] == [10062]
        assert isinstance(bot.late_errors[0], discord.NotFound)


async def test_followups_expire_after_15_minutes(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        result = await sandbox.run_command(sandbox.bob, "fid later")
        assert result.content == "now"
        sandbox.clock.advance(15 * 60 + 1)
        bot.release.set()
        await sandbox.eventually(lambda: bot.followup_errors, what="the expired follow-up")
        assert bot.followup_errors[0].status == 401
        assert bot.followup_errors[0].code == 50027


async def test_unanswered_interaction_fails_cleanly(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        started = time.monotonic()
        with pytest.raises(InteractionFailed, match="did not answer /fid wait"):
            await sandbox.run_command(sandbox.bob, "fid wait", timeout=1.5)
        assert time.monotonic() - started < 3
        sandbox.clock.advance(2)  # past the 3 s deadline: its late answer is refused
        bot.release.set()
        await sandbox.eventually(lambda: bot.late_errors, what="the late answer")


# -- components and reactions ------------------------------------------------------------------------


async def test_persistent_dynamic_button_survives_a_restart(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        result = await sandbox.run_command(sandbox.bob, "fid vote")
        assert result.buttons[0]["custom_id"] == "fid:vote:0"
        clicked = await sandbox.click(sandbox.carol, result, 1)
        assert clicked.callback_type == 7
        assert result.content == "1 votes"  # the same message, updated
        assert result.buttons[0]["custom_id"] == "fid:vote:1"
    async with start_bot():  # a new process: the button still works (DynamicItem)
        await sandbox.click(sandbox.bob, result, "Votes: 1")
        assert result.content == "2 votes"
        assert len(sandbox.messages_in("general")) == 1
        with pytest.raises(ClientRefused, match="no button 7"):
            await sandbox.click(sandbox.bob, result, 7)


async def test_reactions_reach_raw_events_and_the_bot_survives(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("papers").id)
        assert isinstance(channel, discord.TextChannel)
        sent = await channel.send("react to me")
        await sent.add_reaction("🔖")  # the bot's own reaction is dispatched too
        message = sandbox.message(sent.id)
        assert message is not None
        assert message.reaction_users("🔖") == [sandbox.bot_user.id]
        await sandbox.react(sandbox.alice, message, "👍")
        await sandbox.unreact(sandbox.alice, message, "👍")
        await sandbox.eventually(lambda: len(bot.raw_reactions) == 3, what="three raw reaction events")
        own, added, removed = bot.raw_reactions
        assert own.user_id == sandbox.bot_user.id
        assert (added.event_type, added.user_id, str(added.emoji), added.message_id) == (
            "REACTION_ADD",
            sandbox.alice.id,
            "👍",
            sent.id,
        )
        assert added.member is not None
        assert added.member.name == "alice"
        assert added.message_author_id == sandbox.bot_user.id
        assert removed.event_type == "REACTION_REMOVE"
        assert removed.guild_id == sandbox.guild.id
        # a DM reaction (no guild, no member)
        user = await bot.fetch_user(sandbox.bob.id)
        await user.send("a DM")
        await sandbox.react(sandbox.bob, await sandbox.next_message(dm_of=sandbox.bob), "👎")
        await sandbox.eventually(lambda: len(bot.raw_reactions) == 4, what="the DM reaction")
        assert bot.raw_reactions[-1].guild_id is None
        assert str(bot.raw_reactions[-1].emoji) == "👎"


async def test_select_menu_and_modal(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        shown = await sandbox.run_command(sandbox.carol, "fid menu")
        with pytest.raises(ClientRefused, match="no option"):
            await sandbox.select(sandbox.carol, shown, ["cooking"])
        with pytest.raises(ClientRefused, match="1-2 values"):
            await sandbox.select(sandbox.carol, shown, ["llm", "rl", "vision"])
        picked = await sandbox.select(sandbox.carol, shown, ["llm", "rl"])
        assert picked.callback_type == 7
        assert shown.content == "topics: llm, rl"
        assert shown.message is not None
        assert shown.message.components == []

        opened = await sandbox.run_command(sandbox.carol, "fid form")
        assert opened.callback_type == 9
        assert opened.modal is not None
        assert opened.modal["title"] == "Add a note"
        with pytest.raises(ClientRefused, match="required"):
            await sandbox.submit_modal(sandbox.carol, opened, {"fid:extra": "x"})
        submitted = await sandbox.submit_modal(sandbox.carol, opened, {"fid:note": "read later"})
        assert submitted.content == "noted: read later / -"
        assert submitted.ephemeral


async def test_files_after_a_defer_fill_the_thinking_message(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        result = await sandbox.run_command(sandbox.bob, "fid file")
        assert result.callback_type == 5
        # the first follow-up after a defer fills the "thinking" message, keeping its ephemerality
        assert result.message is not None
        assert result.content == "your file"
        assert result.ephemeral
        assert not result.message.loading
        (attachment,) = result.message.attachments
        assert (attachment.filename, attachment.data) == ("saved.bib", b"@article{x}")
        assert [m.content for m in result.followups] == ["and a second message"]
        async with aiohttp.ClientSession() as session, session.get(attachment.url) as response:
            assert await response.read() == b"@article{x}"


async def test_channel_messages_uploads_edits_deletes_and_history(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("papers").id)
        assert isinstance(channel, discord.TextChannel)
        first = await channel.send("first", file=discord.File(io.BytesIO(b"hello"), filename="a.txt"))
        assert first.attachments[0].filename == "a.txt"
        assert await first.attachments[0].read() == b"hello"
        second = await channel.send("second", embed=discord.Embed(title="T", url="https://example.org"))
        edited = await second.edit(content="second, edited")
        assert edited.edited_at is not None
        fetched = await channel.fetch_message(second.id)
        assert fetched.content == "second, edited"
        assert fetched.embeds[0].title == "T"
        reply = await first.reply("a reply")
        assert reply.reference is not None
        assert reply.reference.message_id == first.id
        assert [m.content async for m in channel.history(limit=10)] == ["a reply", "second, edited", "first"]
        await first.delete()
        with pytest.raises(discord.NotFound):
            await channel.fetch_message(first.id)
        assert [m.content for m in sandbox.messages_in("papers")] == ["second, edited", "a reply"]
        user_message = await sandbox.send_message(sandbox.bob, "papers", "mine")
        with pytest.raises(discord.Forbidden):
            await bot.http.edit_message(
                channel.id, user_message.id, params=discord.http.handle_message_parameters(content="x")
            )


async def test_global_command_in_a_dm(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot():
        assert [c["name"] for c in sandbox.commands()] == ["fidping"]
        result = await sandbox.run_command(sandbox.carol, "fidping", where="dm")
        assert result.content == "pong from a DM to carol"
        assert result.message is not None
        assert result.message.channel.is_dm
        interaction = sandbox.dispatched("INTERACTION_CREATE")[-1].d
        assert "user" in interaction
        assert "member" not in interaction
        assert interaction["context"] == 1
        in_guild = await sandbox.run_command(sandbox.carol, "fidping")
        assert in_guild.content == "pong from a guild to carol"


# -- REST fidelity: faults, limits, headers ------------------------------------------------------------


async def test_429_is_retried_by_discord_py(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        fault = sandbox.faults.add("POST /channels/*/messages", "429", retry_after=0.3)
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        started = time.monotonic()
        await channel.send("after a rate limit")
        assert time.monotonic() - started >= 0.3
        attempts = sandbox.requests_matching("POST /channels/*/messages")
        assert [r.status for r in attempts] == [429, 200]
        assert fault.hits == 1
        assert [m.content for m in sandbox.messages_in("general")] == ["after a rate limit"]


async def test_a_message_pings_only_what_its_content_writes_and_its_allowed_mentions_let_through(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """As Discord: without allowed_mentions every mention written in the content pings (the message's
    mention_everyone, mentions, mention_roles); ``AllowedMentions.none()`` pings no one; an escaped
    mention or one in an embed is text; an id listed but not written pings no one; more than 100 ids
    are refused with 50035."""
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        bob = sandbox.bob
        text = f"@everyone <@{bob.id}> look"
        loud = await channel.send(text, allowed_mentions=discord.AllowedMentions.all())
        assert loud.mention_everyone
        assert [u.id for u in loud.mentions] == [bob.id]
        stored = sandbox.message(loud.id)
        assert stored is not None
        assert stored.pings.everyone
        assert stored.pings.users == (bob.id,)
        quiet = await channel.send(text, allowed_mentions=discord.AllowedMentions.none())
        assert not quiet.mention_everyone
        assert not quiet.mentions
        escaped = await channel.send(
            discord.utils.escape_mentions(text), allowed_mentions=discord.AllowedMentions.all()
        )
        assert not escaped.mention_everyone
        assert not escaped.mentions
        in_embed = await channel.send(embed=discord.Embed(description=text))
        assert not in_embed.mention_everyone
        assert not in_embed.mentions
        carol = sandbox.carol
        listed = await channel.send(
            f"<@{bob.id}>", allowed_mentions=discord.AllowedMentions(users=[carol, bob], everyone=False)
        )
        assert [u.id for u in listed.mentions] == [bob.id], "carol was listed but not written"
        too_many = discord.AllowedMentions(users=[discord.Object(id=n) for n in range(1, 102)])
        with pytest.raises(discord.HTTPException) as caught:
            await channel.send("hi", allowed_mentions=too_many)
        assert caught.value.code == 50035
        assert "allowed_mentions.users" in caught.value.text


async def test_content_over_2000_characters_is_refused_with_50035(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        await channel.send("x" * 2000)
        with pytest.raises(discord.HTTPException) as caught:
            await channel.send("x" * 2001)
        assert caught.value.status == 400
        assert caught.value.code == 50035
        assert "content" in caught.value.text
        assert "2000 or fewer" in caught.value.text
        embed = discord.Embed(title="t" * 257, description="d" * 4097)
        for n in range(26):
            embed.add_field(name=f"f{n}", value="v")
        with pytest.raises(discord.HTTPException) as caught:
            await channel.send(embed=embed)
        text = caught.value.text
        assert "embeds.0.title" in text
        assert "embeds.0.description" in text
        assert "embeds.0.fields" in text
        big = [discord.Embed(description="d" * 4000), discord.Embed(description="d" * 2001)]
        with pytest.raises(discord.HTTPException, match="6000"):
            await channel.send(embeds=big)
        view = discord.ui.View()
        view.add_item(discord.ui.Button(label="x", custom_id="c" * 101))
        with pytest.raises(discord.HTTPException, match="custom_id"):
            await channel.send("buttons", view=view)
        with pytest.raises(discord.HTTPException) as caught:
            await channel.send(embed=discord.Embed(title="a", url="not a url"))
        assert "Not a well formed URL" in caught.value.text
        assert len(sandbox.messages_in("general")) == 1


async def test_50007_when_the_user_closed_dms(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        sandbox.close_dms(sandbox.bob)
        user = await bot.fetch_user(sandbox.bob.id)
        with pytest.raises(discord.Forbidden) as caught:
            await user.send("your digest")
        assert caught.value.code == 50007
        sandbox.open_dms(sandbox.bob)
        await user.send("your digest")
        message = await sandbox.next_message(dm_of=sandbox.bob)
        assert message.content == "your digest"


async def test_injected_errors_and_server_errors(sandbox: SandboxServer, start_bot: Any) -> None:
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        sandbox.faults.add("POST /channels/*/messages", "10003")
        with pytest.raises(discord.NotFound) as caught:
            await channel.send("gone")
        assert caught.value.code == 10003
        sandbox.faults.add("POST /channels/*/messages", "missing_permissions")
        with pytest.raises(discord.Forbidden) as forbidden:
            await channel.send("nope")
        assert forbidden.value.code == 50013
        sandbox.faults.add("POST /channels/*/messages", "500")  # discord.py retries a 500
        await channel.send("after a 500")
        assert [r.status for r in sandbox.requests_matching("POST /channels/*/messages")][-2:] == [500, 200]
        # the real conditions behind those codes
        sandbox.set_permissions("papers", sandbox.bot_user, deny=Permissions.SEND_MESSAGES)
        papers = bot.get_channel(sandbox.channel("papers").id)
        assert isinstance(papers, discord.TextChannel)
        with pytest.raises(discord.Forbidden, match="Missing Permissions"):
            await papers.send("denied")
        sandbox.delete_channel("papers")
        with pytest.raises(discord.NotFound, match="Unknown Channel"):
            await bot.http.send_message(papers.id, params=discord.http.handle_message_parameters(content="x"))


def created_with_nonce(sandbox: SandboxServer, nonce: str) -> list[Any]:
    return [e for e in sandbox.dispatched("MESSAGE_CREATE") if e.d.get("nonce") == nonce]


async def test_enforce_nonce_returns_the_message_already_created(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """discord.py sends `nonce` with `enforce_nonce: true`; Discord answers a repeat within a few minutes
    with the message it created, creates nothing, dispatches nothing; later the nonce is free again."""
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        first = await channel.send("digest header", nonce="d-header-1")
        again = await channel.send("digest header, sent again", nonce="d-header-1")
        assert again.id == first.id
        assert again.content == "digest header"  # that message, not the new text
        assert first.nonce == "d-header-1"
        assert [m.content for m in sandbox.messages_in("general")] == ["digest header"]
        assert len(created_with_nonce(sandbox, "d-header-1")) == 1
        (posted,) = [r for r in sandbox.requests_matching("POST /channels/*/messages")][-1:]
        assert posted.json["enforce_nonce"] is True
        assert posted.response["nonce"] == "d-header-1"
        # A nonce alone (no enforce_nonce) is only echoed back, not enforced.
        route = discord.http.Route("POST", "/channels/{channel_id}/messages", channel_id=channel.id)
        await bot.http.request(route, json={"content": "unenforced", "nonce": "d-header-1"})
        assert len(sandbox.messages_in("general")) == 2
        # Past the window Discord remembers the nonce no longer: a new message.
        sandbox.clock.advance(sandbox.options.nonce_window + 1)
        later = await channel.send("after the window", nonce="d-header-1")
        assert later.id != first.id
        assert len(sandbox.messages_in("general")) == 3


async def test_enforce_nonce_of_a_deleted_message_is_refused_and_long_nonces_too(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """A repeat of a nonce whose message was deleted since gets 404 Unknown Message (not a new message);
    a nonce over 25 characters gets 400 50035."""
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        message = await channel.send("a paper", nonce="d-paper-7")
        await message.delete()
        with pytest.raises(discord.NotFound) as caught:
            await channel.send("a paper", nonce="d-paper-7")
        assert caught.value.code == 10008
        assert sandbox.messages_in("general") == []
        await channel.send("exactly 25", nonce="n" * 25)
        with pytest.raises(discord.HTTPException) as refused:
            await channel.send("26 is too long", nonce="n" * 26)
        assert refused.value.status == 400
        assert refused.value.code == 50035
        assert "In nonce: Must be 25 or fewer in length." in refused.value.text
        assert [m.content for m in sandbox.messages_in("general")] == ["exactly 25"]


async def test_a_dropped_answer_hides_a_message_that_was_created(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """The drop_response fault: the message is created, the client gets no answer (as after a timeout);
    sending again with the same nonce returns that message."""
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        sandbox.faults.add("POST /channels/*/messages", "drop_response")
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await channel.send("lost answer", nonce="d-paper-9")
        (created,) = sandbox.messages_in("general")
        assert created.content == "lost answer"
        retried = await channel.send("lost answer", nonce="d-paper-9")
        assert retried.id == created.id
        assert len(sandbox.messages_in("general")) == 1
        assert [r.fault for r in sandbox.requests_matching("POST /channels/*/messages")] == [
            "drop_response",
            None,
        ]


async def test_a_dropped_request_is_not_carried_out(sandbox: SandboxServer, start_bot: Any) -> None:
    """The drop_request fault: the connection closes before the request is carried out, so the client
    gets the same error as for a lost answer but nothing happened; sending again does it. (aiohttp sends
    an idempotent request such as this PUT once more by itself on a reused connection: both dropped.)"""
    async with start_bot() as bot:
        channel = bot.get_channel(sandbox.channel("general").id)
        assert isinstance(channel, discord.TextChannel)
        message = await channel.send("react to me")
        sandbox.faults.add("PUT /channels/*/messages/*/reactions/**", "drop_request", times=2)
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await message.add_reaction("👍")
        assert sandbox.message(message.id).reactions == {}
        await message.add_reaction("👍")
        assert sandbox.message(message.id).reactions == {"👍": [sandbox.bot_user.id]}
        answers = [(r.fault, r.status) for r in sandbox.requests_matching("PUT /channels/**")]
        assert answers[-1] == (None, 204)
        assert set(answers[:-1]) == {("drop_request", 0)}


async def test_json_content_type_and_rate_limit_headers(sandbox: SandboxServer) -> None:
    async with aiohttp.ClientSession() as session:
        headers = {"Authorization": f"Bot {sandbox.token}"}
        async with session.get(sandbox.api_base + "/users/@me", headers=headers) as response:
            assert response.headers["Content-Type"] == "application/json"
            names = {
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "X-RateLimit-Reset-After",
                "X-RateLimit-Bucket",
            }
            assert names <= set(response.headers)
        async with session.get(sandbox.api_base + "/users/@me") as response:
            assert response.status == 401
        async with session.get(sandbox.api_base + "/no/such/route", headers=headers) as response:
            assert response.status == 404
        assert [r.key for r in sandbox.unhandled_requests] == ["GET /no/such/route"]


async def test_bursts_past_the_bucket_are_paced_not_refused() -> None:
    async with SandboxServer(rate_limit=(3, 0.5)) as server:
        bot = FidelityBot(server.guild.id)
        async with running_client(bot, server):
            channel = bot.get_channel(server.channel("general").id)
            assert isinstance(channel, discord.TextChannel)
            started = time.monotonic()
            for n in range(7):
                await channel.send(f"message {n}")
            elapsed = time.monotonic() - started
        sends = server.requests_matching("POST /channels/*/messages")
        assert [r.status for r in sends] == [200] * 7  # discord.py waited on the headers
        # a client that ignores the headers gets Discord's 429: JSON retry_after and a Via header
        async with aiohttp.ClientSession(headers={"Authorization": f"Bot {server.token}"}) as session:
            statuses = []
            for _ in range(4):
                async with session.get(server.api_base + "/users/@me") as response:
                    statuses.append(response.status)
                    if response.status == 429:
                        body = await response.json(content_type="application/json")
                        assert 0 < body["retry_after"] <= 0.5
                        assert response.headers["Via"]
                        assert response.headers["X-RateLimit-Remaining"] == "0"
        assert statuses == [200, 200, 200, 429]
        assert elapsed >= 0.9


def test_intent_bits_match_discord_py() -> None:
    assert discord.Intents(message_content=True).value == Intents.MESSAGE_CONTENT
    assert discord.Intents(presences=True).value == Intents.GUILD_PRESENCES
    assert discord.Intents(members=True).value == Intents.GUILD_MEMBERS
    assert discord.Intents(dm_reactions=True).value == Intents.DIRECT_MESSAGE_REACTIONS
    assert discord.Permissions(manage_guild=True).value == Permissions.MANAGE_GUILD
    assert discord.Permissions(send_messages=True).value == Permissions.SEND_MESSAGES


# -- application owners and teams, other guilds -------------------------------------------------------


async def test_application_info_names_the_owner_then_the_team(sandbox: SandboxServer, start_bot: Any) -> None:
    """GET /oauth2/applications/@me as Discord documents it: the owning user; once a team owns the app,
    the team (owner_user_id, members with role and membership_state) and a team pseudo-user as owner.
    discord.py's Bot.is_owner then accepts the team's admins and developers only. Without the bot's
    token the route is refused (401)."""
    async with start_bot() as bot:
        app = await bot.application_info()
        assert app.owner.id == sandbox.app_owner.id
        assert app.team is None
        assert await bot.is_owner(app.owner)

        sandbox.add_user("dave")
        sandbox.set_application_team(
            "carol", {"alice": "developer", "bob": "read_only"}, invited={"dave": "admin"}
        )
        app = await bot.application_info()
        assert app.team is not None
        assert app.team.owner_id == sandbox.carol.id
        roles = {m.name: (m.role.value, m.membership_state.value) for m in app.team.members}
        assert roles == {
            "carol": ("admin", 2),
            "alice": ("developer", 2),
            "bob": ("read_only", 2),
            "dave": ("admin", 1),
        }
        assert app.owner.id == app.team.id
        assert app.owner.public_flags.team_user
        bot.owner_id = bot.owner_ids = None  # is_owner caches what it fetched
        assert await bot.is_owner(discord.Object(sandbox.alice.id))  # type: ignore[arg-type]
        assert not await bot.is_owner(discord.Object(sandbox.bob.id))  # type: ignore[arg-type]
    async with (
        aiohttp.ClientSession() as session,
        session.get(sandbox.api_base + "/oauth2/applications/@me") as response,
    ):
        assert response.status == 401


async def test_a_second_guild_arrives_with_its_members_and_commands(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """The bot added to another server gets its GUILD_CREATE; a guild command synced to the first server
    is not there (Discord's client would not offer it), a global one is; permissions are that server's."""
    async with start_bot() as bot:
        other = sandbox.add_guild("Other Lab", members={"carol": True, "dave": False})
        await sandbox.eventually(lambda: bot.get_guild(other.id) is not None, what="the second GUILD_CREATE")
        guild = bot.get_guild(other.id)
        assert guild is not None
        assert guild.name == "Other Lab"
        assert [c.name for c in guild.text_channels] == ["general"]
        general = sandbox.guild_channel(other, "general")
        with pytest.raises(ClientRefused, match="no command /fid"):
            await sandbox.run_command("carol", "fid ping", where=general)
        pong = await sandbox.run_command("dave", "fidping", where=general)
        assert pong.content == "pong from a guild to dave"
        interaction = sandbox.dispatched("INTERACTION_CREATE")[-1].d
        assert interaction["guild_id"] == str(other.id)
        assert int(interaction["member"]["permissions"]) & Permissions.MANAGE_GUILD == 0
        assert sandbox.user("carol").id in other.members
        assert sandbox.alice.id not in other.members


# -- threads and forum posts ----------------------------------------------------------------------


async def test_threads_and_forums_arrive_with_the_guild_and_as_they_are_made(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    """GUILD_CREATE lists the active threads the bot can see (not a private one it is not in); a thread
    or forum post made later arrives as THREAD_CREATE."""
    papers = sandbox.channel("papers")
    early = sandbox.add_thread(papers, "reading-notes", by="alice")
    hidden = sandbox.add_thread(papers, "just-us", by="alice", private=True, members=("bob",))
    forum = sandbox.add_forum("paper-club")
    async with start_bot() as bot:
        thread = bot.get_channel(early.id)
        assert isinstance(thread, discord.Thread)
        assert thread.parent_id == papers.id
        assert thread.owner_id == sandbox.alice.id
        assert bot.get_channel(hidden.id) is None
        assert isinstance(bot.get_channel(forum.id), discord.ForumChannel)
        post = sandbox.add_forum_post(forum, "Is attention all you need?", "Discuss.", by="bob")
        await sandbox.eventually(
            lambda: isinstance(bot.get_channel(post.id), discord.Thread), what="THREAD_CREATE"
        )
        seen = bot.get_channel(post.id)
        assert isinstance(seen, discord.Thread)
        assert seen.parent_id == forum.id
        first = sandbox.message(post.id)
        assert first is not None
        assert first.content == "Discuss.", "a forum post's first message has the thread's id"


async def test_posting_in_a_thread_takes_send_messages_in_threads_and_a_forum_takes_only_posts(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    papers = sandbox.channel("papers")
    thread = sandbox.add_thread(papers, "reading-notes", by="alice")
    forum = sandbox.add_forum("paper-club")
    post = sandbox.add_forum_post(forum, "Weekly picks", "Here.", by="alice")
    async with start_bot() as bot:
        # SEND_MESSAGES has no effect in threads: denied on the parent, the thread still takes posts
        sandbox.set_permissions(papers, sandbox.bot_user, deny=Permissions.SEND_MESSAGES)
        in_thread = bot.get_channel(thread.id)
        assert isinstance(in_thread, discord.Thread)
        await in_thread.send("in the thread")
        with pytest.raises(discord.Forbidden):
            await bot.get_partial_messageable(papers.id).send("in the channel")
        sandbox.set_permissions(papers, sandbox.bot_user, deny=Permissions.SEND_MESSAGES_IN_THREADS)
        with pytest.raises(discord.Forbidden) as no_threads:
            await in_thread.send("again")
        assert no_threads.value.code == 50013
        with pytest.raises(discord.HTTPException) as in_forum:
            await bot.get_partial_messageable(forum.id).send("straight into the forum")
        assert in_forum.value.code == 40058
        in_post = bot.get_channel(post.id)
        assert isinstance(in_post, discord.Thread)
        reply = await in_post.send("a reply in the post")
        assert reply.channel.id == post.id
    assert [m.content for m in sandbox.messages_in(thread)] == ["in the thread"]


async def test_an_archived_thread_takes_no_reaction_and_a_message_unarchives_it(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    thread = sandbox.add_thread(sandbox.channel("papers"), "old-notes", by="alice")
    async with start_bot() as bot:
        channel = bot.get_channel(thread.id)
        assert isinstance(channel, discord.Thread)
        sent = await channel.send("before")
        sandbox.archive_thread(thread)
        await sandbox.eventually(lambda: channel.archived, what="THREAD_UPDATE (archived)")
        with pytest.raises(discord.HTTPException) as archived:
            await sent.add_reaction("👍")
        assert archived.value.code == 50083
        with pytest.raises(ClientRefused, match="archived"):
            await sandbox.run_command("alice", "fid where", where=thread)
        with pytest.raises(ClientRefused, match="archived"):
            await sandbox.react("alice", sandbox.message(sent.id), "👍")  # type: ignore[arg-type]
        await sandbox.wait_quiet()
        fetched = await bot.fetch_channel(thread.id)
        assert isinstance(fetched, discord.Thread)
        await fetched.send("this unarchives it")
        await sandbox.eventually(
            lambda: thread.thread is not None and not thread.thread.archived, what="unarchived"
        )
        await sent.add_reaction("👍")
        sandbox.archive_thread(thread, locked=True)
        with pytest.raises(discord.HTTPException) as locked:
            await fetched.send("locked")
        assert locked.value.code == 50083


async def test_a_command_and_a_reaction_in_a_thread_reach_the_bot_as_the_thread(
    sandbox: SandboxServer, start_bot: Any
) -> None:
    papers = sandbox.channel("papers")
    thread = sandbox.add_thread(papers, "reading-notes", by="alice")
    async with start_bot() as bot:
        result = await sandbox.run_command("bob", "fid where", where=thread)
        assert result.text == f"in Thread reading-notes parent={papers.id}"
        assert result.message is not None
        assert result.message.channel is thread
        await sandbox.react("bob", result.message, "👍")
        await sandbox.eventually(lambda: bot.raw_reactions, what="the raw reaction")
        event = bot.raw_reactions[-1]
        assert (event.channel_id, event.guild_id, event.user_id) == (
            thread.id,
            sandbox.guild.id,
            sandbox.bob.id,
        )
        private = sandbox.add_thread(papers, "just-us", by="alice", private=True)
        with pytest.raises(ClientRefused):
            await sandbox.run_command("bob", "fid where", where=private)  # bob cannot see it


async def test_at_most_15_message_commands_and_no_description_on_them(sandbox: SandboxServer) -> None:
    """Discord takes 100 slash commands but only 15 message (and 15 user) commands per scope, and a
    context-menu command has no description: the sandbox refuses the same, in bulk and one by one."""
    url = f"{sandbox.api_base}/applications/{sandbox.world.application.id}/commands"
    headers = {"Authorization": f"Bot {sandbox.token}"}
    menu = [{"name": f"Menu {n}", "type": 3} for n in range(16)]
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.put(url, json=menu) as response:
            assert response.status == 400
            assert "MESSAGE" in await response.text()
        async with session.put(
            url, json=[*menu[:15], {"name": "fidping", "description": "slash"}]
        ) as response:
            assert response.status == 200
        async with session.post(url, json=menu[15]) as response:
            assert response.status == 400
            assert (await response.json())["code"] == 30032
        async with session.post(url, json={"name": "Menu 0", "type": 3}) as response:
            assert response.status == 200  # the same name again is an edit, not a sixteenth
        async with session.post(url, json={"name": "Described", "type": 3, "description": "no"}) as response:
            assert response.status == 400
