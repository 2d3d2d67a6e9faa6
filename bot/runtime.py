"""The composition root: every object of the process is built here, once, and handed to what uses it.

`open_services` opens the store and builds the services (one clock for every service that reads the
time), `build_digests` the digest parts, `build_bot` the Discord client with what it shares (the
pacer, the process scheduler, the Discord sending adapter and the digest jobs that use it), and
`discord_senders` that adapter for any logged-in client (`paperbot digest --user` reuses it). Nothing
else builds a service; nothing but this module (and the entry points that call it) imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import logging
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from threadpoolctl import threadpool_limits

from bot.clock import Clock, utc_now
from bot.discord_limits import BULK_CALLS_PER_MINUTE
from bot.services.admin.permission_notices import PermissionNotices
from bot.services.club import ClubService
from bot.services.digests import DEFAULT_GRACE, Digests
from bot.services.digests.delivery import RESEND_DELAYS, DigestDelivery
from bot.services.digests.leases import DEFAULT_LEASE, Leases
from bot.services.digests.planning import DigestPlanner, FollowedLike, MutesLike, PaperLookup, RecommenderLike
from bot.services.digests.recovery import DigestRecovery
from bot.services.digests.retention import DEFAULT_HISTORY_DAYS, DigestHistory
from bot.services.digests.subscriptions import (
    DEFAULT_FEEDS_PER_SERVER,
    InterestsLookup,
    StoredInterests,
    SubscriptionService,
)
from bot.services.papers.arxiv_lookup import ArxivLookup
from bot.services.papers.ingest.runner import ensure_shipped_corpus
from bot.services.papers.linked import LinkedPapers
from bot.services.people.authors import AuthorDirectory
from bot.services.people.feedback import FeedbackService
from bot.services.people.follows import FollowService
from bot.services.people.library import LibraryImporter, LibraryMatcher
from bot.services.people.limits import PersonLimits
from bot.services.people.mutes import MuteMatcher, MuteService
from bot.services.people.privacy import PrivacyService
from bot.services.people.ratings import Ratings
from bot.services.recommend.interests import InterestService
from bot.services.recommend.recommender import Recommender
from bot.services.search.listings import SearchService
from bot.services.search.live_index import LiveIndex
from bot.services.search.query_repair import QueryRepair
from bot.services.write_behind import WriteBehind
from bot.settings import Settings
from paperindex import bulk_terms, compiled, prepare
from paperindex.engine import SearchEngine
from paperindex.index import BM25Index, warm_up
from storage.db import Database
from storage.repositories.clubs import ClubRepository
from storage.repositories.digests import DigestRepository
from storage.repositories.feedback import FeedbackRepository
from storage.repositories.interests import InterestRepository
from storage.repositories.library_texts import LibraryTextRepository
from storage.repositories.messages import PostedMessageRepository
from storage.repositories.papers import PaperRepository
from storage.repositories.searches import SearchRepository
from storage.repositories.state import StateRepository
from storage.repositories.subscriptions import SubscriptionRepository
from storage.repositories.users import ForgetCounts, UserRepository
from storage.store import open_database

if TYPE_CHECKING:
    import discord

    from bot.app import PaperBot
    from bot.digest_sender import DiscordSenders
    from bot.discord_limits import RequestPacer

log = logging.getLogger(__name__)


#: How often the running bot looks for papers another process committed (`Database.data_version`: no
#: papers are read unless something was committed).
STORE_POLL_SECONDS = 2.0


@dataclass
class Services:
    """Everything the Discord layer and the CLI use; built once per process."""

    settings: Settings
    db: Database
    papers: PaperRepository
    #: the search engine, kept level with the store (``index.engine``)
    index: LiveIndex
    #: the one clock every service that reads the time reads (a test passes its own)
    clock: Clock = utc_now
    # reactions, profiles, recommendations, forget-me: built from db and search
    messages: PostedMessageRepository = field(init=False)
    feedback: FeedbackService = field(init=False)
    recommender: Recommender = field(init=False)
    profiles: InterestService = field(init=False)
    #: muted topics of people and channel feeds, and the papers they hide
    mutes: MuteService = field(init=False)
    privacy: PrivacyService = field(init=False)
    #: the author names on the indexed papers, and the authors people follow
    authors: AuthorDirectory = field(init=False)
    follows: FollowService = field(init=False)
    #: digests and channel feeds: subscriptions, planning, delivery, recovery
    digests: Digests = field(init=False)
    #: reactions, rating clicks, listings and posted-message notes, stored behind the answers
    writes: WriteBehind = field(init=False)
    #: where every 👍 👎 🔖 enters (reactions, buttons, message commands)
    ratings: Ratings = field(init=False)
    #: /paper search, show and similar: listings, their pages, paper references
    search_service: SearchService = field(init=False)
    #: the paper a message's or a pasted link points to (fetched from arXiv when the store lacks it)
    linked: LinkedPapers = field(init=False)
    #: `/paper interests add file:`: a person's library as their 👍
    library: LibraryImporter = field(init=False)
    #: telling an admin, once per channel, that the bot may not add reactions there
    permission_notices: PermissionNotices = field(init=False)
    #: how often each person may run the costly commands, and their /paper digest in flight
    limits: PersonLimits = field(init=False)
    #: channels' reading groups: their polls, winners, threads, reminders and proposals
    club: ClubService = field(init=False)
    _placing: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)

    @property
    def search(self) -> SearchEngine:
        return self.index.engine

    def __post_init__(self) -> None:
        self.messages = PostedMessageRepository(self.db)
        self.feedback = FeedbackService(self.db)
        self.profiles = InterestService(self.db, clock=self.clock)
        self.mutes = MuteService(self.db, MuteMatcher(self.search.index, self.papers), clock=self.clock)
        self.recommender = Recommender(
            self.db,
            self.search,
            self.search.index,
            clock=self.clock,
            profiles=self.profiles,
            mutes=self.mutes,
            library=LibraryTextRepository(self.db),
        )
        self.privacy = PrivacyService(
            self.db, clock=self.clock, search_retention_days=self.settings.search_retention_days
        )
        self.authors = AuthorDirectory(self.search, self.papers)
        self.follows = FollowService(self.db, self.authors, papers=self.papers, clock=self.clock)
        self.digests = build_digests(
            self.db,
            clock=self.clock,
            papers=self.papers,
            recommender=self.recommender,
            grace=timedelta(hours=self.settings.digest_grace_hours),
            spread=timedelta(minutes=self.settings.digest_spread_minutes),
            calls_per_minute=BULK_CALLS_PER_MINUTE,
            lease=timedelta(seconds=self.settings.takeover_seconds),
            followed=self.follows,
            history_days=self.settings.digest_history_days,
            feeds_per_server=self.settings.feeds_per_server,
            interests=StoredInterests(self.db),
            mutes=self.mutes,
        )
        searches = SearchRepository(self.db)
        self.writes = WriteBehind(
            self.settings.local_file(".pending") or Path(":memory:"),
            feedback=FeedbackRepository(self.db),
            searches=searches,
            messages=self.messages,
            wall=self.clock,
        )
        self.ratings = Ratings(self.feedback, self.writes)
        url = self.settings.arxiv_lookup_url
        arxiv = ArxivLookup(self.db, url=url) if url else None  # one per process: its requests take turns
        self.linked = LinkedPapers(self.papers, arxiv=arxiv, on_stored=self.index.refresh)
        self.library = LibraryImporter(
            LibraryMatcher(
                self.papers, title_lookup=lambda text: self.index.engine.autocomplete(text), arxiv=arxiv
            ),
            self.ratings,
            LibraryTextRepository(self.db),
            on_fetched=self.index.refresh,
        )
        self.search_service = SearchService(
            self.search,
            self.papers,
            searches,
            self.writes,
            personal_order=self.recommender.personal_order,
            repair=QueryRepair(self.authors),
            muted=self.mutes.count_muted,
        )
        self.permission_notices = PermissionNotices(StateRepository(self.db), SubscriptionRepository(self.db))
        self.limits = PersonLimits(enabled=self.settings.person_limits)
        self.club = ClubService(
            ClubRepository(self.db),
            papers=self.papers,
            messages=self.messages,
            feeds=SubscriptionRepository(self.db),
            search=lambda: self.index.engine,
            clock=self.clock,
        )

    async def forget_user(self, user_id: int) -> ForgetCounts:
        """`/paper forget-me`: nothing about the user still waiting to be stored is stored after it."""
        await self.writes.discard_user(user_id)
        return await self.privacy.forget(user_id)

    async def place_papers(self) -> None:
        """Give newly indexed papers their place in the paper space the learned models use: at the first
        call, the space saved beside the database when it was computed over this index, else computed
        (in a thread: seconds at 100k papers); once the corpus has outgrown the space's basis,
        recomputed. A space that placed new papers is saved again, for the next start."""
        space = self.recommender.space
        if self._placing.locked() or (
            space.ready and not space.stale and space.placed == self.search.index.n_slots
        ):
            return
        async with self._placing:
            saved = space_path(self.settings)
            store = self.index.position.store_id
            try:
                if not space.ready and saved is not None:
                    await asyncio.to_thread(space.load, saved, store)
                before = space.placed
                rebuilt = space.stale
                if rebuilt:
                    started = time.perf_counter()
                    await asyncio.to_thread(space.rebuild)
                    log.info(
                        "paper space: %d papers in %.2fs", len(self.search), time.perf_counter() - started
                    )
                else:
                    await asyncio.to_thread(space.follow)
                if saved is not None and (rebuilt or space.placed != before):
                    await asyncio.to_thread(space.save, saved, store)
            except OSError as error:
                log.warning("could not save the paper space %s: %s", saved, error)
            except Exception:  # the topic ranking stands in until the next try (after the next ingest)
                log.exception("could not compute the paper space")

    async def follow_store(self, *, every: float = STORE_POLL_SECONDS) -> None:
        """Run until cancelled: index what any connection commits, seconds after it commits.

        Every `every` seconds, one `data_version()` (no papers read) says whether anything was
        committed since the last look; if so the index follows the change sequence. When a look finds
        the store quiet and the index ahead of its snapshot, the snapshot is saved (once a burst of
        ingest batches is over, not after each batch).
        """
        version: int | None = None
        changed = True  # at first: whatever was committed between the index build and now
        while True:
            try:
                now = await self.db.data_version()
                if now != version:
                    version, changed = now, True
                if changed:
                    await self.index.refresh()
                    changed = False
                else:  # quiet: the work a burst of ingest batches should not wait for, once
                    await self.index.save_snapshot()
                    await self.place_papers()
                    await self.authors.refresh()
            except Exception:
                log.exception("could not index the papers committed to the store; trying again shortly")
            await asyncio.sleep(every)


def build_digests(
    db: Database,
    *,
    papers: PaperLookup,
    recommender: RecommenderLike,
    clock: Clock = utc_now,
    grace: timedelta = DEFAULT_GRACE,
    spread: timedelta = timedelta(0),
    calls_per_minute: int = 0,
    min_score: float = 0.0,
    resend_delays: Sequence[float] = RESEND_DELAYS,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    owner: str | None = None,
    lease: timedelta = DEFAULT_LEASE,
    lease_wall: Callable[[], float] = time.time,
    followed: FollowedLike | None = None,
    history_days: int = DEFAULT_HISTORY_DAYS,
    feeds_per_server: int = DEFAULT_FEEDS_PER_SERVER,
    interests: InterestsLookup | None = None,
    mutes: MutesLike | None = None,
) -> Digests:
    """The digest parts of one store on one clock: a missed period is still sent within ``grace``;
    this process (``owner``) holds the runs it sends for ``lease`` at a time; finished runs are kept
    ``history_days``."""
    repository = DigestRepository(db)
    leases = Leases(repository, owner=owner, duration=lease, wall=lease_wall)
    subscriptions = SubscriptionService(
        SubscriptionRepository(db),
        clock=clock,
        spread=spread,
        calls_per_minute=calls_per_minute,
        feeds_per_server=feeds_per_server,
        interests=interests,
        interest_store=InterestRepository(db),
    )
    planner = DigestPlanner(
        repository,
        papers=papers,
        recommender=recommender,
        clock=clock,
        min_score=min_score,
        followed=followed,
        mutes=mutes,
    )
    delivery = DigestDelivery(
        repository,
        subscriptions=subscriptions,
        planner=planner,
        papers=papers,
        clock=clock,
        leases=leases,
        resend_delays=resend_delays,
        sleep=sleep,
    )
    recovery = DigestRecovery(
        repository, subscriptions=subscriptions, clock=clock, grace=grace, leases=leases
    )
    history = DigestHistory(
        repository, PostedMessageRepository(db), clock=clock, keep=timedelta(days=history_days)
    )
    return Digests(clock, grace, repository, leases, subscriptions, planner, delivery, recovery, history)


def discord_senders(client: discord.Client, services: Services, pacer: RequestPacer) -> DiscordSenders:
    """The Discord sending adapter of one logged-in client: what every digest, feed post and paper
    message of that client shares (the pace under Discord's global limit, the reaction bucket per
    channel, each person's DM channel), and a sender per subscription or person."""
    from bot.digest_sender import DiscordSenders, Sending
    from bot.discord_limits import ChannelSpacer
    from bot.dm_channels import DMChannels

    dm_channels = DMChannels(client, UserRepository(services.db))
    return DiscordSenders(client, Sending(dm_channels, pacer, ChannelSpacer(), services.permission_notices))


def build_bot(settings: Settings, services: Services, **options: Any) -> PaperBot:
    """The Discord client on `services`, with the pacer, the process scheduler, the sending adapter
    and the digest jobs it runs (a worker sends over REST as soon as it logged in; a gateway process
    once connected)."""
    from bot.app import PaperBot
    from bot.discord_limits import DIGEST_CONCURRENCY, RequestPacer
    from bot.scheduler import ProcessScheduler
    from bot.services.digests.jobs import DigestScheduler

    pacer, scheduler = RequestPacer(), ProcessScheduler()
    bot = PaperBot(settings=settings, services=services, pacer=pacer, scheduler=scheduler, **options)
    senders = discord_senders(bot, services, pacer)
    jobs = DigestScheduler(
        services.digests,
        senders,
        wait_until_ready=bot.wait_until_ready if settings.connects_gateway else None,
        scheduler=scheduler.jobs,
        concurrency=DIGEST_CONCURRENCY,
        on_idle=release_free_memory,  # what a run of digests freed, given back once it is over
        busy_for=bot.foreground.busy_for,
    )
    bot.attach(senders=senders, digest_jobs=jobs)
    return bot


def snapshot_path(settings: Settings) -> Path | None:
    """Where the search index is saved between runs: beside a SQLite file, in the state folder for
    PostgreSQL (None for an in-memory database)."""
    return settings.local_file(".search-index")


async def then_release_free_memory(*work: Awaitable[object]) -> None:
    """Run ``work`` side by side, then give the memory their temporaries freed back to the system."""
    try:
        await asyncio.gather(*work)
    finally:
        release_free_memory()


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; nothing elsewhere).

    The start's temporaries (the snapshot's text decoded and split, the store's rows read in pages)
    are freed in among objects that live on, so the C allocator keeps their pages: 23 MB of the
    resident memory after a start at 100k papers, which ``malloc_trim(0)`` gives back; a run of
    digests leaves ~30 MB more at 100k (the digest scheduler calls this once its deliveries are over)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once (finding the C library runs ``ldconfig``: a fork)."""
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] | None = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): its allocator does as it does
        return None
    return trim


def space_path(settings: Settings) -> Path | None:
    """Where the learned models' paper space is saved between runs, beside the search snapshot."""
    return settings.local_file(".paper-space")


async def warm_up_adding() -> None:
    """Beside the start: numba loading the compiled loops of adding papers
    (:func:`paperindex.bulk_terms.warm_up`), which holds the GIL, so that the first ingest after a
    snapshot load does not hold up the event loop meanwhile."""
    try:
        await asyncio.to_thread(bulk_terms.warm_up)
    except Exception:
        log.exception("could not prepare the compiled loops of adding papers")


async def ready_for_first_search() -> None:
    """Before the bot serves anyone: the compiled scoring loops, for every number of segments an index
    may hold (on small twins: the store's index need not be loaded yet, so the two go side by side).
    Loaded from numba's disk cache this takes well under a second; on the first start after an install
    they are compiled (a minute or more on 2 cores), which beside the start would hold the GIL against
    the first searches and make them miss Discord's 3 s."""
    started = time.perf_counter()
    stop = threading.Event()
    try:
        await asyncio.to_thread(warm_up, BM25Index(), stop)
    except asyncio.CancelledError:
        stop.set()  # a bot stopped meanwhile: the thread ends after the twin in progress
        raise
    except Exception:
        log.exception("could not prepare the compiled scoring loops ahead of the first search")
        return
    took = time.perf_counter() - started
    if took > 2:
        log.info("compiled the search loops in %.0fs (once after an install; later starts load them)", took)


async def compiled_in_background(child: subprocess.Popen[bytes], search: SearchEngine) -> None:
    """While the twins answer: wait for the child compiling the loops, then switch to them (the module
    it built ahead of time, or numba's cache: a second in a worker thread). If the child failed, the
    twins go on answering (exactly, more slowly on a large corpus) and the next start tries again."""
    started = time.perf_counter()
    stop = threading.Event()
    try:
        # (polled: an asyncio child would be killed when the loop closes; this one outlives a stop)
        while child.poll() is None:  # noqa: ASYNC110
            await asyncio.sleep(0.5)
        if child.returncode != 0:
            log.warning(
                "could not compile the search loops in the background (exit %s): %s; the numpy twins "
                "answer meanwhile",
                child.returncode,
                prepare.last_words() or "no message",
            )
            return
        if await asyncio.to_thread(prepare.switch_to_compiled, search.index, stop):
            log.info(
                "compiled the search loops in the background in %.0fs (once after an install); "
                "searches now use them",
                time.perf_counter() - started,
            )
    except asyncio.CancelledError:
        stop.set()  # a bot stopped meanwhile: the child goes on, so that the next start finds them
        raise
    except Exception:
        log.exception("could not switch to the compiled search loops; the numpy twins answer meanwhile")


def one_blas_thread() -> None:
    """Keep numpy's BLAS (OpenBLAS) to one thread for the rest of the process. The bot's matrices are
    small (a person's model fit on the event loop) or computed in a thread beside the event loop (the
    paper space); BLAS's own threads only spin against the event loop and each other on a busy machine.
    On the 2-core machine at load 5-8, a fit for `/paper interests show` took 13-15 s with the
    default threads and 3 ms with one; the paper space for 35,680 papers, 22-30 s and 19 s CPU
    against 9-11 s and 6.5 s CPU at load 4."""
    threadpool_limits(limits=1, user_api="blas")


def start_compiling() -> subprocess.Popen[bytes] | None:
    """Where numba's cache does not hold the loops yet (the first start after an install, or after an
    upgrade): the numpy twins answer from now on, and a child process compiles the loops (about a
    minute of a core). None when the cache holds them, or where numba keeps no cache (then this process
    compiles them before it serves, as it must at each start)."""
    if compiled.using_twins() or prepare.stamp_path() is None or prepare.ready():
        return None
    try:
        child = prepare.compile_in_background()
    except OSError as error:
        log.warning("could not start compiling the search loops in the background: %s", error)
        return None
    compiled.use_twins(True)
    log.info(
        "compiling the search loops in the background (once after an install); the numpy twins answer meanwhile"
    )
    return child


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings,
    *,
    load_shipped_corpus: bool = True,
    beside_start: bool = True,
    clock: Clock = utc_now,
    progress: Callable[[str], None] | None = None,
) -> AsyncIterator[Services]:
    """Open the store (migrating it), load the shipped corpus into an empty one, build the index and
    every service (``clock``: the time they all read).

    ``beside_start=False`` leaves out what the learned models and ``/paper follow`` need (the paper
    space, the author directory), for a command that only searches (``paperbot search``).
    ``progress`` is told, in a line each, what takes time (the console prints them)."""
    say = progress or (lambda line: None)
    one_blas_thread()
    child = start_compiling()
    if child is not None:
        say(
            "preparing the search loops in the background (once after an install); answers meanwhile come from their numpy twins"
        )
    db = await open_database(settings.store)
    # the compiled loops loaded while the index loads (which mostly waits on its files)
    loading = asyncio.create_task(ready_for_first_search()) if child is None else None
    try:
        if load_shipped_corpus:
            summary = await ensure_shipped_corpus(db)
            if summary is not None:
                log.info("empty database: loaded the shipped corpus (%d papers)", summary.added)
        papers = PaperRepository(db)
        count = await papers.count()
        say(f"loading {count:,} {'paper' if count == 1 else 'papers'} into the search index…")
        index = await LiveIndex.open(papers, snapshot_path(settings), store=settings.store)
        release_free_memory()  # what a first start's build freed (its index is read in place now)
        services = Services(settings=settings, db=db, papers=papers, index=index, clock=clock)
        if loading is not None:
            await loading
        # beside the start: the loops of adding papers; the learned models' paper space (seconds at
        # 100k papers); the author names for /paper follow (a second at 100k)
        beside = (
            [
                asyncio.create_task(warm_up_adding() if child is None else asyncio.sleep(0)),
                asyncio.create_task(
                    then_release_free_memory(services.place_papers(), services.authors.refresh())
                ),
            ]
            if beside_start
            else []
        )
        switching = asyncio.create_task(compiled_in_background(child, index.engine)) if child else None
        try:
            yield services
        finally:
            await services.writes.stop()  # if the bot did not (a failed start)
            if switching is not None:
                switching.cancel()
                beside.append(switching)
            await asyncio.gather(*beside, return_exceptions=True)
    finally:
        if loading is not None and not loading.done():  # a start that failed before it was awaited
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
        await db.close()
