"""PaperBot: the discord.py client, given the services and the Discord parts `bot.runtime.build_bot` built."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final

import discord
import yarl
from discord.ext import commands

from bot.club_sender import DiscordClubSender
from bot.discord_limits import RequestPacer, global_limit_trace
from bot.exts import discover_extensions
from bot.exts._groups import make_groups
from bot.foreground import Foreground
from bot.health import HEARTBEAT_SECONDS, make_beat, write_beat
from bot.leadership import Leadership
from bot.scheduler import CLUB_EVERY_SECONDS, CLUB_JOB_ID, ProcessScheduler
from bot.services.papers.arxiv_daily import run_daily_fetch
from bot.services.papers.sources.daily import run_daily_sources
from bot.services.write_behind import WriteBehind
from bot.settings import Settings
from bot.tree import PaperTree
from bot.ui.views import ItemHandler
from storage.repositories.state import StateRepository

if TYPE_CHECKING:
    from bot.digest_sender import DiscordSenders, Sending
    from bot.runtime import Services
    from bot.services.digests.jobs import DigestScheduler

log = logging.getLogger(__name__)

#: discord.py's names for the tasks that run a command or a button's callback
ANSWER_TASKS = ("CommandTree-invoker", "discord-ui-view-dispatch")
#: how long close() lets them finish
ANSWER_PATIENCE = 5.0


#: How often the process running the digests looks for subscriptions other processes made or changed
#: (and, at least three times per takeover time, for runs a dead process left half sent).
SUBSCRIPTIONS_POLL_SECONDS = 5.0
DIGESTS_LOOP = "digests-follow-store"


def point_discord_at(settings: Settings) -> None:
    """Send REST and gateway traffic where the settings say (a rate-limit proxy or a local server).

    discord.py reads both from class attributes, so they are set here, when the bot starts, never at
    import time.
    """
    discord.http.Route.BASE = settings.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.gateway_url)


def global_sync_key(application_id: int | None) -> str:
    """Where the hash of the commands last synced globally is kept (app_state), per application."""
    return f"commands:global_hash:{application_id}"


def command_definitions_hash(tree: discord.app_commands.CommandTree[Any]) -> str:
    """A stable hash of the global command definitions, exactly as a sync would send them."""
    payload = sorted(
        (command.to_dict(tree) for command in tree.get_commands()),
        key=lambda command: (command.get("type", 1), command["name"]),
    )
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


#: How long discord.py waits after the last GUILD_CREATE of the stream that follows READY before it calls
#: the bot ready (its default: 2 s). Discord sends a shard's guilds one after the other right after READY;
#: a guild that comes later still arrives (as guild_available), and nothing here needs every guild
#: cached first (a digest's channel not cached is fetched). Commands are answered either way.
GUILD_READY_TIMEOUT: Final = 0.5


class PaperBot(commands.AutoShardedBot):
    """The bot on the shards the settings name (`PAPERBOT_SHARDS` of `PAPERBOT_SHARD_COUNT`; all of
    them by default), doing what its role says: `all`, `gateway` (no background work) or `worker` (the
    background work over REST, never connecting the gateway). Built by `bot.runtime.build_bot`, which
    gives it the pace of bulk sending and the process scheduler, then (`attach`) the Discord sending
    adapter and the digest jobs made on this client."""

    def __init__(
        self,
        *,
        settings: Settings,
        services: Services,
        pacer: RequestPacer,
        scheduler: ProcessScheduler,
        **options: Any,
    ) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_reactions = True
        intents.dm_reactions = True
        if settings.shard_ids is not None:
            options["shard_ids"] = list(settings.shard_ids)
        options.setdefault("guild_ready_timeout", GUILD_READY_TIMEOUT)
        #: the pace of bulk sending under Discord's global limit, held by every global 429 the client gets
        self.pacer = pacer
        options["http_trace"] = global_limit_trace(self.pacer)
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents,
            tree_cls=PaperTree,
            help_command=None,
            allowed_mentions=discord.AllowedMentions.none(),
            shard_count=settings.shard_count,
            **options,
        )
        self.settings = settings
        self.services = services
        #: /paper and /paperadmin with their subgroups; each extension adds its commands in setup()
        self.command_groups = make_groups()
        #: what a press of each button or menu class does; each extension registers its own in setup()
        self.item_handlers: dict[type, ItemHandler] = {}
        #: every timed job and loop of the process: digests, the arXiv fetch, the prune, the store
        self.scheduler = scheduler
        self._senders: DiscordSenders | None = None
        self._digest_jobs: DigestScheduler | None = None
        self.leadership: Leadership | None = None  # with a role that does the background work
        self._writes: WriteBehind | None = None  # started in setup_hook
        self._stopped = asyncio.Event()  # a worker runs until close()
        self._logged_in = asyncio.Event()
        self._beat_now = (
            asyncio.Event()
        )  # the heartbeat is written at once (ready, logged in) and every few s
        #: people's commands and presses being answered, which long background work steps aside for
        self.foreground = Foreground()

    def attach(self, *, senders: DiscordSenders, digest_jobs: DigestScheduler) -> None:
        """What the root made on this client: the sending adapter and the digest jobs using it."""
        self._senders, self._digest_jobs = senders, digest_jobs

    @property
    def senders(self) -> DiscordSenders:
        """The Discord sending adapter: a sender per subscription or person, sharing `sending`."""
        if self._senders is None:
            raise RuntimeError("PaperBot is built by bot.runtime.build_bot")
        return self._senders

    @property
    def sending(self) -> Sending:
        """Shared by every digest, feed post and paper message: the pace under Discord's global limit,
        the reaction bucket per channel, each person's DM channel."""
        return self.senders.sending

    @property
    def digest_jobs(self) -> DigestScheduler:
        """The digest jobs on the process scheduler (started while this process leads, stopped in
        close())."""
        if self._digest_jobs is None:
            raise RuntimeError("PaperBot is built by bot.runtime.build_bot")
        return self._digest_jobs

    async def login(self, token: str) -> None:
        point_discord_at(self.settings)
        await super().login(token)

    async def start(self, token: str, *, reconnect: bool = True) -> None:
        """Log in and connect the gateway shards; a worker logs in (REST only) and runs until close()."""
        if self.settings.connects_gateway:
            await super().start(token, reconnect=reconnect)
            return
        await self.login(token)
        self._logged_in.set()
        self._beat_now.set()
        await self._stopped.wait()

    def shutting_down(self) -> bool:
        """Whether close() began: work done for a person (a `/paper digest`) stops at its next step."""
        return self._stopped.is_set()

    async def wait_until_serving(self) -> None:
        """Until this process does its work: connected (ready), or for a worker logged in."""
        if self.settings.connects_gateway:
            await self.wait_until_ready()
        else:
            await self._logged_in.wait()

    async def load_commands(self) -> None:
        """Load every extension (each adds its own commands and listeners) and put the groups in the tree."""
        for extension in discover_extensions():
            await self.load_extension(extension)
        for group in self.command_groups.top_level:
            self.tree.add_command(group)

    async def setup_hook(self) -> None:
        self.scheduler.start()
        self.scheduler.loop("heartbeat", self.heartbeat)
        # papers another process (`paperbot ingest`, another bot process) commits become searchable
        # seconds later
        self.scheduler.loop("follow-store", self.services.follow_store)
        if self.settings.does_background_work:
            # the background work runs in one process of the bot at a time: the leader's
            self.leadership = Leadership(
                await self.services.db.leader_lock(),
                lead=self.start_background_work,
                step_down=self.stop_background_work,
                every=self.settings.takeover_seconds / 3,
            )
            await self.leadership.step()  # leading from the start unless another process does
            self.scheduler.loop("leadership", self.leadership.run)
        if self.settings.connects_gateway:
            await self.load_commands()
            # reactions, clicks and listings are stored behind the answers (and what a crash left, now)
            self._writes = self.services.writes
            await self._writes.start()
            await self.sync_commands()

    async def heartbeat(self) -> None:
        """Write this process's beat (`bot.health`) every few seconds until cancelled; then remove it, so
        a stopped process is not taken for a running one."""
        path = self.settings.local_file(".health")
        if path is None:
            return
        failed = False
        try:
            while True:
                problems = await self.health_problems()
                leading = self.leadership.leading if self.leadership is not None else None
                outbox = self._writes.state() if self._writes is not None else None
                beat = make_beat(
                    self.settings.role,
                    leading,
                    problems,
                    waiting=outbox.waiting if outbox else 0,
                    dead=outbox.dead if outbox else 0,
                )
                try:
                    await asyncio.to_thread(write_beat, path, beat)
                    failed = False
                except OSError as error:
                    if not failed:
                        log.warning("could not write the heartbeat %s: %s", path, error)
                    failed = True
                # (asyncio.timeout, not wait_for: a stop that cancels this as the event is set must
                # not be swallowed, or the stop would wait for this loop for ever)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(HEARTBEAT_SECONDS):
                        await self._beat_now.wait()
                self._beat_now.clear()
        finally:
            path.unlink(missing_ok=True)

    async def health_problems(self) -> list[str]:
        """What keeps this process from doing its work now (nothing: healthy)."""
        problems = []
        try:
            async with asyncio.timeout(HEARTBEAT_SECONDS):
                await self.services.db.data_version()
        except Exception as error:  # whatever it was, the store did not answer
            problems.append(f"the store does not answer ({type(error).__name__})")
        if self.settings.connects_gateway:
            down = sorted(shard_id for shard_id, shard in self.shards.items() if shard.is_closed())
            if not self.is_ready():
                problems.append("not connected to Discord's gateway")
            elif down:
                problems.append(f"gateway shards {', '.join(map(str, down))} not connected")
        elif not self._logged_in.is_set():
            problems.append("not logged in to Discord")
        if self._writes is not None:
            problems.extend(self._writes.state().problems())
        return problems

    async def start_background_work(self) -> None:
        """Digests, the daily prune of old searches and digest history and the daily arXiv fetch, on this
        process (while it leads)."""
        # jobs rebuilt from the subscriptions table in the background; catch-up once ready
        await self.digest_jobs.start(in_background=True)
        # subscriptions other processes made or changed, and runs a dead process left half sent
        every = min(SUBSCRIPTIONS_POLL_SECONDS, self.settings.takeover_seconds / 3)
        self.scheduler.loop(DIGESTS_LOOP, lambda: self.digest_jobs.follow_store(every=every))
        # searches, notes of forgettings and digest history past their retention go at start, then daily
        await self.prune()
        self.scheduler.daily_prune(self.prune)
        # reading groups: polls, winners, threads and reminders that fell due (each step stored)
        self.scheduler.every(CLUB_JOB_ID, self.run_clubs, seconds=CLUB_EVERY_SECONDS)
        if self.settings.arxiv_categories:
            self.scheduler.daily_fetch(
                lambda: run_daily_fetch(
                    self.services.db, self.settings.arxiv_categories, self.services.index.refresh
                ),
                time_utc=self.settings.arxiv_fetch_time,
            )
        if self.settings.sources:
            self.scheduler.daily_sources(
                lambda: run_daily_sources(
                    self.services.db, self.settings.sources, self.services.index.refresh
                ),
                time_utc=self.settings.arxiv_fetch_time,
            )

    async def run_clubs(self) -> int:
        """Every reading-group step that fell due (once serving); returns how many were taken."""
        await self.wait_until_serving()
        return await self.services.club.run_due(DiscordClubSender(self, self.sending))

    async def prune(self) -> None:
        """Delete what is past its retention: stored searches and notes of forgettings, digest history
        (never raises)."""
        await self.services.privacy.prune()
        await self.services.digests.history.prune()

    async def stop_background_work(self) -> None:
        """Another process leads now (or this one stops): digests stop between two papers (their runs
        are let go of, for the leader to resume), and the daily jobs come off the scheduler."""
        await self.scheduler.stop_loop(DIGESTS_LOOP)
        await self.digest_jobs.stop()
        self.scheduler.remove_daily_jobs()

    async def close(self) -> None:
        self._stopped.set()  # a /paper digest still sending stops at its next paper and says so
        await self._finish_answers()
        # (the leadership loop stops the background work as it ends: digests stop between papers and
        # resume at the next start, or at once in the process that leads next)
        await self.scheduler.stop_loops()
        await self.scheduler.stop()
        if self._writes is not None:
            await self._writes.stop()  # what is not stored yet stays in the outbox for the next start
        if not hasattr(self, "_AutoShardedClient__queue"):
            # Never connected (a worker): discord.py's AutoShardedClient.close() ends by queueing a
            # "clean close" on the event queue connect() would have made.
            self._AutoShardedClient__queue: asyncio.PriorityQueue[Any] = asyncio.PriorityQueue()
        await super().close()

    async def _finish_answers(self) -> None:
        """Commands and buttons still answering (a paper's reactions, added one per reaction bucket) finish
        before the HTTP session closes, instead of failing with "Session is closed" (bounded)."""
        answering = [
            task
            for task in asyncio.all_tasks()
            if task.get_name().startswith(ANSWER_TASKS)
            and not task.done()
            and task is not asyncio.current_task()
        ]
        if answering:
            await asyncio.wait(answering, timeout=ANSWER_PATIENCE)

    async def sync_commands(self) -> None:
        """Dev guild set: sync to it on every start. Otherwise sync globally only when the definitions
        changed since the last global sync (their hash is kept in app_state), never on every start."""
        if self.settings.dev_guild_id:
            guild = discord.Object(self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to dev guild %s", len(synced), self.settings.dev_guild_id)
            return
        state = StateRepository(self.services.db)
        key = global_sync_key(self.application_id)
        digest = command_definitions_hash(self.tree)
        if await state.get(key) == digest:
            log.info("command definitions unchanged since the last global sync: not syncing")
            return
        try:
            synced = await self.tree.sync()
        except discord.HTTPException:
            log.exception("global command sync failed; it will be retried on the next start")
            return
        await state.set(key, digest)
        log.info("command definitions changed: synced %d global commands", len(synced))

    async def on_shard_disconnect(self, shard_id: int) -> None:
        self._beat_now.set()

    async def on_shard_ready(self, shard_id: int) -> None:
        self._beat_now.set()

    async def on_shard_resumed(self, shard_id: int) -> None:
        self._beat_now.set()

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        self.foreground.seen()

    async def on_ready(self) -> None:
        self._beat_now.set()
        log.info("ready as %s (%s) in %d guilds", self.user, getattr(self.user, "id", "?"), len(self.guilds))

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("unhandled error in event %s", event_method)
