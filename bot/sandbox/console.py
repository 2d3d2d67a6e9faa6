"""`paperbot sandbox`: paperbot against a local Discord, driven from the terminal.

Type slash commands as in Discord (`/paper search query:"kv cache quantization" limit:3`), then
`click 2`, `react 👍`, `autocomplete /paper show paper:kv`, `as bob`, `dms`… (`help` lists them).
`--script FILE` runs such lines, echoing each, and exits non-zero at the first error.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shlex
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import discord

from bot.app import global_sync_key
from bot.sandbox.emulator.interactions import InteractionResult
from bot.sandbox.emulator.recorder import SandboxError
from bot.sandbox.emulator.server import SandboxServer
from bot.sandbox.emulator.state import SandboxChannel, SandboxMessage
from bot.sandbox.harness import ErrorCapture, capture_errors, running_paperbot
from bot.sandbox.papers import ArxivUnreachable, fetch_newest
from bot.sandbox.render import render_choices, render_message, render_modal
from bot.services.papers.arxiv_fetch import Transport
from bot.services.papers.ingest.runner import shipped_seed_files
from storage.repositories.state import StateRepository
from storage.store import StoreLocation, open_database

if TYPE_CHECKING:
    from bot.runtime import Services
    from bot.settings import Settings

log = logging.getLogger(__name__)

DEMO_SCRIPT = Path(__file__).with_name("demo.txt")

HELP = """\
Commands (you act as a member of the sandbox server "Paper Lab"):
  /paper search query:"kv cache quantization" limit:3     use a slash command (quote values with spaces;
                               a file option takes a path, a file beside the script, or a demo file:
                               demo_lab.jsonl holds a few invented papers with authors)
  autocomplete /paper show paper:kv                       see the suggestions for the last option
  click 2 [#5]                 click button 2 on the last message with buttons (or on message #5)
  select VALUE[,VALUE] [#5]    pick in the message's select menu
  modal FIELD=VALUE ...        fill in and submit the last form the bot opened
  react 👍 [#5]                react on the last single-paper message (or #5); also 👎 🔖
  unreact 👍 [#5]              take the reaction back
  say TEXT                     post a plain message in the current channel
  apps "Save paper" [#5]       right-click the last message here (or #5), Apps → a message command
                               ("Save paper", "Like paper": the paper a link in it points to)
  as bob                       act as another user (alice has Manage Server; bob, carol do not;
                               a new name creates a member)
  in #papers | in dm           where your commands run (now: {where})
  dms [USER]                   the DMs the bot sent you (or USER)
  read [#channel]              the channel's recent messages
  show #5                      show message #5 again, as it is now
  users | channels | commands  what is in the sandbox
  wait SECONDS                 let time pass (scheduled digests arrive as they come)
  help | quit                  ('# ' starts a comment, also after a command)"""


class ConsoleError(Exception):
    """A line the console cannot run (unknown command, bad arguments)."""


QUIT = ("quit", "exit", "q")


def without_comment(line: str, *, quotes: bool = True) -> str:
    """``line`` up to its comment: a ``#`` that starts a word and is followed by a space or ends the
    line, outside quotes (``click 2   # press…``; with ``quotes`` False, as in a message, "here's"
    opens none). ``#5`` (a message) and ``#papers`` (a channel) are words, not comments."""
    quote = ""
    for at, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif quotes and char in "\"'":
            quote = char
        elif (
            char == "#"
            and (at == 0 or line[at - 1].isspace())
            and (at + 1 == len(line) or line[at + 1].isspace())
        ):
            return line[:at].rstrip()
    return line.rstrip()


def parse_options(tokens: list[str]) -> tuple[list[str], dict[str, str]]:
    """["/paper", "search", "query:kv cache", "limit:3"] -> (["paper", "search"], {...}).

    As in Discord, a value may run over several words: `query:kv cache limit:3` works unquoted.
    """
    path: list[str] = []
    options: dict[str, str] = {}
    last: str | None = None
    for token in tokens:
        name, sep, value = token.partition(":")
        if sep and name and not name.startswith("/") and name.replace("-", "_").isidentifier():
            if name in options:
                raise ConsoleError(f"option {name!r} given twice")
            options[name] = value
            last = name
        elif last is not None:
            options[last] = f"{options[last]} {token}".strip()
        else:
            path.append(token.lstrip("/"))
    if not path or not path[0]:
        raise ConsoleError("no command name after /")
    return path, options


class Console:
    def __init__(
        self,
        server: SandboxServer,
        errors: ErrorCapture,
        out: IO[str] | None = None,
        *,
        bot: discord.Client | None = None,
        stored: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.server = server
        self.errors = errors
        self.out = out or sys.stdout
        #: the bot in the sandbox, and what waits until the store has what it accepted: a reaction's
        #: line ends once the bot has handled it and stored it, so the next line sees it
        self.bot = bot
        self.stored = stored
        self.user = server.alice
        self.where: SandboxChannel = server.channel("papers")
        self._numbers: dict[int, int] = {}
        self._by_number: dict[int, SandboxMessage] = {}
        self._last_with_buttons: SandboxMessage | None = None
        self._last_modal: InteractionResult | None = None
        #: the folder of the script being run: a file option may name a file there
        self._script_folder: Path | None = None
        self._errors_seen = 0
        self._unsubscribe = server.subscribe(self._on_message)
        self._commands: dict[str, Callable[[list[str]], Awaitable[None]]] = {
            "help": self._help,
            "?": self._help,
            "autocomplete": self._autocomplete,
            "click": self._click,
            "select": self._select,
            "modal": self._modal,
            "react": self._react,
            "unreact": self._unreact,
            "say": self._say,
            "apps": self._apps,
            "as": self._as,
            "in": self._in,
            "dms": self._dms,
            "read": self._read,
            "show": self._show,
            "users": self._users,
            "channels": self._channels,
            "commands": self._list_commands,
            "wait": self._wait,
        }

    def close(self) -> None:
        self._unsubscribe()

    # -- output -----------------------------------------------------------------------------------

    def print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def number(self, message: SandboxMessage) -> int:
        if message.id not in self._numbers:
            self._numbers[message.id] = len(self._numbers) + 1
            self._by_number[self._numbers[message.id]] = message
        return self._numbers[message.id]

    def show_message(self, message: SandboxMessage, *, prefix: str = "") -> None:
        if message.buttons and not message.deleted:
            self._last_with_buttons = message
        world = self.server.world
        names = {c.id: c.name for c in world.channels.values() if c.name} | {
            u.id: u.username for u in world.users.values()
        }
        text = render_message(message, number=self.number(message), viewer=self.user.username, names=names)
        self.print(prefix + text)

    def show_result(self, result: InteractionResult) -> None:
        if result.record.type == 4:
            self.print(render_choices(result.choices))
            return
        if result.modal is not None:
            self._last_modal = result
            self.print(render_modal(result.modal))
            self.print("  (fill it in with: modal FIELD=VALUE ...)")
        for index, message in enumerate(result.messages):
            updated = index == 0 and result.callback_type == 7
            self.show_message(message, prefix="updated " if updated else "")
        if not result.messages and result.modal is None:
            self.print("  (the bot acknowledged it without a message)")

    def _on_message(self, kind: str, message: SandboxMessage) -> None:
        """Messages the bot posts outside an interaction (digests, DMs, feeds) show as they come."""
        if kind != "create" or message.author is not self.server.bot_user or message.origin != "channel":
            return
        where = (
            f"DM for {message.channel.recipient.username}"
            if message.channel.recipient
            else message.channel.label()
        )
        self.print(f"\n📬 new message ({where})")
        self.show_message(message)

    # -- running lines ----------------------------------------------------------------------------

    @property
    def prompt(self) -> str:
        where = "dm" if self.where.is_dm else f"#{self.where.name}"
        return f"{self.user.username}@{where}> "

    async def execute(self, line: str) -> None:
        head, _, rest = line.strip().partition(" ")
        if head.lower() == "say":  # a message as typed: its apostrophes are no quotes to close
            text = without_comment(rest, quotes=False).strip()
            await self._say([text] if text else [])
            return
        line = without_comment(line).strip()
        if not line or line.startswith("#"):
            return
        try:
            tokens = shlex.split(line)
        except ValueError as error:
            raise ConsoleError(f"cannot read that line: {error}") from None
        head = tokens[0]
        if head.startswith("/"):
            await self._slash(tokens)
            return
        handler = self._commands.get(head.lower())
        if handler is None:
            raise ConsoleError(f"unknown command {head!r}; type 'help'")
        await handler(tokens[1:])

    def new_errors(self) -> list[str]:
        """ERROR lines the bot logged since the last call."""
        unexpected = self.errors.unexpected()
        fresh = unexpected[self._errors_seen :]
        self._errors_seen = len(unexpected)
        return [f"{r.levelname} {r.name}: {r.getMessage()}" for r in fresh]

    async def run_script(self, path: Path) -> int:
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
        self._script_folder = (await asyncio.to_thread(path.resolve)).parent
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            self.print(f"{self.prompt}{line.strip()}")
            if without_comment(line).strip().lower() in QUIT:
                break
            try:
                await self.execute(line)
                await self.server.wait_quiet(quiet=0.2, timeout=10)
            except (ConsoleError, SandboxError) as error:
                self.print(f"error (line {number}): {error}")
                return 1
            if errors := self.new_errors():
                self.print(f"error (line {number}): the bot logged errors:\n  " + "\n  ".join(errors))
                return 1
        return 0

    async def interactive(self) -> int:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401 - line editing and history for input()
        self.print("Type 'help' for the commands, 'quit' to leave.")
        while True:
            try:
                line = await asyncio.to_thread(input, self.prompt)
            except EOFError:
                self.print()
                return 0
            if without_comment(line).strip().lower() in QUIT:
                return 0
            try:
                await self.execute(line)
            except (ConsoleError, SandboxError) as error:
                self.print(f"error: {error}")
            for problem in self.new_errors():
                self.print(f"bot error: {problem}")

    # -- commands ---------------------------------------------------------------------------------

    async def _help(self, args: list[str]) -> None:
        self.print(HELP.format(where=self.where.label()))

    async def _slash(self, tokens: list[str]) -> None:
        path, options = parse_options(tokens)
        given: dict[str, str | Path] = {
            name: self._file_beside_script(value) for name, value in options.items()
        }
        result = await self.server.run_command(self.user, " ".join(path), where=self.where, options=given)
        self.show_result(result)

    def _file_beside_script(self, value: str) -> str | Path:
        """A file option may name a file beside the script being run, or one of the sandbox's demo
        files (``file:demo_lab.jsonl``: a few invented papers with authors)."""
        if Path(value).expanduser().is_file():
            return value
        for folder in (self._script_folder, DEMO_SCRIPT.parent):
            if folder is not None and (folder / value).is_file() and "/" not in value:
                return folder / value
        return value

    async def _autocomplete(self, args: list[str]) -> None:
        if not args or not args[0].startswith("/"):
            raise ConsoleError("usage: autocomplete /paper show paper:kv")
        path, options = parse_options(args)
        if not options:
            raise ConsoleError("say which option you are typing into, e.g. paper:kv")
        option, typed = list(options.items())[-1]
        others = {k: v for k, v in options.items() if k != option}
        choices = await self.server.autocomplete(
            self.user, " ".join(path), option, typed, where=self.where, options=others
        )
        self.print(render_choices(choices))

    def _target(
        self, args: list[str], *, default: SandboxMessage | None, what: str
    ) -> tuple[list[str], SandboxMessage]:
        rest = list(args)
        if rest and rest[-1].startswith("#") and rest[-1][1:].isdigit():
            number = int(rest.pop()[1:])
            message = self._by_number.get(number)
            if message is None:
                raise ConsoleError(f"no message #{number} has been shown")
            return rest, message
        if default is None:
            raise ConsoleError(f"no {what} yet; give a message number, e.g. #3")
        return rest, default

    def _with_button(self, name: str) -> SandboxMessage | None:
        """The last shown message with a button labelled ``name`` (its label or emoji, any case)."""
        wanted = name.casefold()
        for number in sorted(self._by_number, reverse=True):
            message = self._by_number[number]
            if message.deleted:
                continue
            for button in message.buttons:
                names = {str(button.get("label") or ""), str((button.get("emoji") or {}).get("name") or "")}
                if wanted in {n.casefold() for n in names if n}:
                    return message
        return None

    async def _click(self, args: list[str]) -> None:
        default = self._last_with_buttons
        if len(args) == 1 and not args[0].isdigit():  # a label: the last message that has it
            default = self._with_button(args[0]) or default
        rest, message = self._target(args, default=default, what="message with buttons")
        if len(rest) != 1:
            raise ConsoleError("usage: click N [#message]  (N: the button's number, or its label)")
        button: int | str = int(rest[0]) if rest[0].isdigit() else rest[0]
        self.show_result(await self.server.click(self.user, message, button))

    async def _select(self, args: list[str]) -> None:
        rest, message = self._target(args, default=self._last_with_buttons, what="message with a menu")
        if len(rest) != 1:
            raise ConsoleError("usage: select VALUE[,VALUE] [#message]")
        self.show_result(await self.server.select(self.user, message, rest[0].split(",")))

    async def _modal(self, args: list[str]) -> None:
        if self._last_modal is None:
            raise ConsoleError("the bot has not opened a form")
        values = {}
        for arg in args:
            name, sep, value = arg.partition("=")
            if not sep:
                raise ConsoleError("usage: modal FIELD=VALUE ...")
            values[name] = value
        shown, self._last_modal = self._last_modal, None
        self.show_result(await self.server.submit_modal(self.user, shown, values))

    def _single_paper_message(self) -> SandboxMessage | None:
        """The last single-paper message shown: one the bot marked with its own reactions (👍 👎 🔖),
        else the last one with a single embed and no buttons (listings have buttons)."""
        shown = [
            m
            for m in sorted(self._by_number.values(), key=lambda m: self._numbers[m.id], reverse=True)
            if m.author is self.server.bot_user and not m.ephemeral and not m.deleted
        ]
        bot_id = self.server.bot_user.id
        marked = next((m for m in shown if any(bot_id in users for users in m.reactions.values())), None)
        return marked or next((m for m in shown if len(m.embeds) == 1 and not m.buttons), None)

    async def _react(self, args: list[str]) -> None:
        rest, message = self._target(args, default=self._single_paper_message(), what="single-paper message")
        if len(rest) != 1:
            raise ConsoleError("usage: react 👍 [#message]")
        handled = self._handled("raw_reaction_add", message)
        await self.server.react(self.user, message, rest[0])
        await handled()
        self.print(f"  {self.user.username} reacted {rest[0]} on #{self.number(message)}")

    async def _unreact(self, args: list[str]) -> None:
        rest, message = self._target(args, default=self._single_paper_message(), what="single-paper message")
        if len(rest) != 1:
            raise ConsoleError("usage: unreact 👍 [#message]")
        handled = self._handled("raw_reaction_remove", message)
        await self.server.unreact(self.user, message, rest[0])
        await handled()
        self.print(f"  {self.user.username} removed {rest[0]} from #{self.number(message)}")

    def _handled(self, event: str, message: SandboxMessage) -> Callable[[], Awaitable[None]]:
        """What waits, after a reaction is sent, until the bot has handled it (its listeners done) and
        the store has what they accepted."""
        if self.bot is None:
            return _nothing
        user_id = self.user.id
        seen = asyncio.ensure_future(
            self.bot.wait_for(
                event, check=lambda p: p.message_id == message.id and p.user_id == user_id, timeout=5
            )
        )

        async def handled() -> None:
            try:
                await seen
            except TimeoutError:
                return  # the bot did not get it (e.g. no access): nothing to wait for
            listeners = [t for t in asyncio.all_tasks() if t.get_name() == f"discord.py: on_{event}"]
            if listeners:
                await asyncio.wait(listeners, timeout=5)
            if self.stored is not None:
                await self.stored()

        return handled

    async def _say(self, args: list[str]) -> None:
        if not args:
            raise ConsoleError("usage: say TEXT")
        self.show_message(await self.server.send_message(self.user, self.where, " ".join(args)))

    async def _apps(self, args: list[str]) -> None:
        visible = [m for m in self.server.world.messages_in(self.where) if not m.ephemeral and not m.deleted]
        rest, message = self._target(args, default=visible[-1] if visible else None, what="message here")
        if len(rest) != 1:
            raise ConsoleError('usage: apps "Save paper" [#message]')
        self.number(message)  # (so that the answer can point back at it)
        self.show_result(await self.server.message_command(self.user, message, rest[0], check=False))

    async def _as(self, args: list[str]) -> None:
        if len(args) != 1:
            raise ConsoleError("usage: as USER")
        name = args[0].lstrip("@")
        existing = self.server.world.user_named(name)
        if existing is None:
            if not name.isidentifier():
                raise ConsoleError(f"{name!r} is not a usable name")
            existing = self.server.add_user(name)
            self.print(f"  {name} joined Paper Lab")
        self.user = existing
        if self.where.is_dm:
            self.where = self.server.dm_channel(self.user)
        self.print(f"  you are now {self.user.username}")

    async def _in(self, args: list[str]) -> None:
        if len(args) != 1:
            raise ConsoleError("usage: in #channel | in dm")
        target = args[0]
        self.where = (
            self.server.dm_channel(self.user) if target.lower() == "dm" else self.server.channel(target)
        )
        self.print(f"  commands now run in {self.where.label()}")

    async def _dms(self, args: list[str]) -> None:
        user = self.server.user(args[0]) if args else self.user
        messages = self.server.dm_messages(user)
        if not messages:
            self.print(f"  no DMs for {user.username}")
        for message in messages:
            self.show_message(message)

    async def _read(self, args: list[str]) -> None:
        channel = self.server.channel(args[0]) if args else self.where
        messages = self.server.world.messages_in(channel)[-10:]
        if not messages:
            self.print(f"  {channel.label()} is empty")
        for message in messages:
            self.show_message(message)

    async def _show(self, args: list[str]) -> None:
        _, message = self._target(args, default=None, what="message")
        self.show_message(message)

    async def _users(self, args: list[str]) -> None:
        for user in self.server.world.humans():
            if user is self.server.world.owner:
                continue
            manage = self.server.guild.base_permissions(user.id) & (1 << 5)
            note = " (Manage Server)" if manage else ""
            dms = "" if user.dms_open else " (DMs closed)"
            self.print(f"  {user.username}{note}{dms}")

    async def _channels(self, args: list[str]) -> None:
        for channel in self.server.guild.text_channels():
            self.print(f"  #{channel.name}: {channel.topic or ''}")

    async def _list_commands(self, args: list[str]) -> None:
        for command in self.server.commands(self.server.guild) + self.server.commands():
            for line in _command_lines(command):
                self.print(f"  {line}")

    async def _wait(self, args: list[str]) -> None:
        try:
            seconds = float(args[0]) if args else 1.0
        except ValueError:
            raise ConsoleError("usage: wait SECONDS") from None
        if not 0 <= seconds <= 600:
            raise ConsoleError("wait between 0 and 600 seconds")
        await asyncio.sleep(seconds)


async def _nothing() -> None:
    return None


def _command_lines(command: dict[str, Any], prefix: str = "") -> Iterator[str]:
    name = f"{prefix}{command['name']}"
    if command.get("type") == 3:  # a message command has no description (Discord allows none)
        yield f'Apps → {name}  — on a message: apps "{name}" [#message]'
        return
    subs = [o for o in command.get("options") or [] if o.get("type") in (1, 2)]
    if subs:
        for sub in subs:
            yield from _command_lines(sub, prefix=name + " ")
        return
    options = " ".join(
        (f"{o['name']}:" if o.get("required") else f"[{o['name']}:]") for o in command.get("options") or []
    )
    yield f"/{name} {options}".rstrip() + f"  — {command.get('description', '')}"


@contextlib.contextmanager
def _console_logging(level: str) -> Iterator[None]:
    """Keep the bot's INFO chatter out of the console (unless asked for DEBUG)."""
    root = logging.getLogger()
    voice = logging.getLogger("discord.client")  # "PyNaCl is not installed": no voice here anyway
    previous = root.level, voice.level
    if level == "INFO":
        root.setLevel(logging.WARNING)
        voice.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(previous[0])
        voice.setLevel(previous[1])


def _progress(line: str) -> None:
    print(f"paperbot: {line}", flush=True)


async def run_console(
    settings: Settings,
    *,
    store: StoreLocation | Path | None,
    script: Path | None,
    arxiv: str | None = None,
    arxiv_http: Transport | None = None,
) -> int:
    """Start the sandbox server and paperbot, then the console (or run `script`). Returns an exit code.

    ``store``: the store to open (``PAPERBOT_DB``, ``--db``), else a temporary one; an empty store gets
    the shipped corpus. ``arxiv``: a category whose newest papers are fetched into the store first
    (``arxiv_http`` instead of the network, for tests); if arXiv cannot be reached the sandbox says so
    and starts on the shipped corpus."""
    if script is not None and not await asyncio.to_thread(script.is_file):
        print(f"paperbot sandbox: no such script: {script}", file=sys.stderr)
        return 2
    with (
        tempfile.TemporaryDirectory(prefix="paperbot-sandbox-") as scratch,
        _console_logging(settings.log_level),
    ):
        if isinstance(store, Path):
            store = StoreLocation(path=store)
        location = store if store is not None else StoreLocation(path=Path(scratch) / "paperbot.db")
        where = "a temporary database" if store is None else f"the store {location}"
        corpus = await _papers_for(location, arxiv, arxiv_http)
        async with SandboxServer() as server:
            await _commands_not_synced_yet(location, server)
            config = dataclasses.replace(
                settings,
                discord_token=server.token,
                store=location,
                dev_guild_id=None,  # synced globally, as on Discord: /paper in a DM too
                api_base=server.api_base,
                gateway_url=server.gateway_url,
                arxiv_categories=(),  # no scheduled arXiv fetches
            )
            print(
                f"paperbot sandbox: a local Discord at {server.base_url} (nothing you do there leaves "
                f"this machine); {where}."
            )
            with capture_errors() as errors:
                async with running_paperbot(server, config, progress=_progress) as running:
                    papers = len(running.services.search)
                    corpus = corpus or await _only_shipped(running.services)
                    print(
                        f"paperbot is online in the server 'Paper Lab' with {papers:,} "
                        f"{'paper' if papers == 1 else 'papers'}{corpus}. "
                        "You are alice."
                    )
                    console = Console(server, errors, bot=running.bot, stored=running.services.writes.drained)
                    try:
                        if script is not None:
                            return await console.run_script(script)
                        return await console.interactive()
                    finally:
                        console.close()
    return 0


async def _papers_for(location: StoreLocation, arxiv: str | None, http: Transport | None) -> str:
    """Fetch the newest papers of ``arxiv`` into the store, if asked; what the papers are, for the
    online line ("" for a store of the user's own)."""
    if arxiv is None:
        return ""
    _progress(f"fetching the newest {arxiv} papers from arXiv…")
    try:
        async with await open_database(location) as db:
            listing = await fetch_newest(db, arxiv, http=http)
    except ArxivUnreachable as error:
        _progress(f"could not reach arXiv ({error}): starting on the shipped corpus instead")
        return ""
    if not listing.papers:
        _progress(f"arXiv lists no {arxiv} papers: starting on the shipped corpus instead")
        return ""
    return f" ({listing.describe()})"


async def _commands_not_synced_yet(location: StoreLocation, server: SandboxServer) -> None:
    """Each run's local Discord starts without the bot's commands: forget the store's note that they
    were synced (from an earlier run on this store), so that the bot syncs them at its start."""
    async with await open_database(location) as db:
        await StateRepository(db).delete(global_sync_key(server.world.application.id))


async def _only_shipped(services: Services) -> str:
    """What the online line says of a store holding the shipped corpus alone ("" otherwise)."""
    seeds = [name for name, _ in shipped_seed_files()]
    if await services.papers.count_from_other_sources(seeds) > 0:
        return ""
    return (
        " (the shipped corpus: ICML 2024 abstracts, titles derived from them; with a network, "
        "`paperbot start --arxiv cs.LG` starts on arXiv's newest cs.LG papers instead)"
    )
