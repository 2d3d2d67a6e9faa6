"""Digest jobs on a real APScheduler AsyncIOScheduler: rebuild, triggers, failures, pacing, recovery."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta

import pytest
from apscheduler.triggers.cron import CronTrigger
from builders import Clock, wait_idle
from digest_fakes import FakeSender, add_papers, make_service

from bot.services.digests import Digests
from bot.services.digests import jobs as jobs_module
from bot.services.digests.jobs import DigestScheduler, job_id, make_trigger
from bot.services.digests.timing import latest_due, make_schedule, next_delivery, occurrence
from storage.db import Database
from storage.models import Subscription


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
async def service(db: Database) -> Digests:
    await add_papers(db, range(1, 41))
    # Subscriptions are set up at 06:00 UTC on Monday 30 November 2026 unless a test says otherwise.
    return make_service(db, Clock(utc(2026, 11, 30, 6, 0)), {pid: 100.0 - pid for pid in range(1, 41)})


class Senders:
    """A sender factory that remembers one FakeSender per subscription."""

    def __init__(self) -> None:
        self.by_sub: dict[int, FakeSender] = {}
        self.failing: set[int] = set()

    def __call__(self, sub: Subscription) -> FakeSender:
        fail = {0: RuntimeError("Discord 500")} if sub.id in self.failing else {}
        sender = self.by_sub.setdefault(sub.id, FakeSender())
        sender.fail_at = fail
        return sender


async def _due_now(service: Digests, people: int) -> list[Subscription]:
    """``people`` subscriptions of one paper at 09:00 UTC, and the service's clock at that minute."""
    subs = [
        await service.subscriptions.subscribe(user, time="09:00", timezone="UTC", count=1)
        for user in range(1, people + 1)
    ]
    clock = service.clock
    assert isinstance(clock, Clock)
    clock.set(utc(2026, 11, 30, 9, 0))
    return subs


@pytest.fixture
async def jobs(service: Digests) -> AsyncIterator[DigestScheduler]:
    scheduler = DigestScheduler(service, Senders(), clock=service.clock)
    yield scheduler
    scheduler.shutdown()


async def test_jobs_are_rebuilt_from_the_database_with_stable_ids(
    service: Digests, jobs: DigestScheduler
) -> None:
    """At start every active subscription gets one job `digest:{id}` with the agreed options."""
    berlin = await service.subscriptions.subscribe(1, time="09:00", timezone="Europe/Berlin")
    tokyo = await service.subscriptions.subscribe(
        2, time="07:30", timezone="Asia/Tokyo", frequency="weekdays"
    )
    paused = await service.subscriptions.subscribe(3)
    await service.subscriptions.repository.pause(paused.id, "DMs closed")
    assert await jobs.start(recover=False) == 2
    ids = sorted(job.id for job in jobs.scheduler.get_jobs())
    assert ids == [job_id(berlin.id), job_id(tokyo.id)]
    job = jobs.scheduler.get_job(job_id(berlin.id))
    assert job is not None
    assert job.coalesce is True
    assert job.max_instances == 1
    assert 60 <= job.misfire_grace_time <= 6 * 3600
    assert isinstance(job.trigger, CronTrigger)
    assert str(job.trigger.timezone) == "Europe/Berlin"
    now = datetime.now(UTC)
    for sub in (berlin, tokyo):
        expected = service.subscriptions.next_delivery(sub, now).due_at
        assert jobs.next_run_time(sub.id) == expected
    # A second rebuild (restart) replaces rather than duplicates, and drops jobs of removed subscriptions.
    await service.subscriptions.unsubscribe(2)
    assert await jobs.sync_all() == 1
    assert [job.id for job in jobs.scheduler.get_jobs()] == [job_id(berlin.id)]


async def test_subscribe_and_unsubscribe_update_the_job_at_once(
    service: Digests, jobs: DigestScheduler
) -> None:
    """Changing the time moves the job; pausing or unsubscribing removes it."""
    await jobs.start(recover=False)
    sub = await service.subscriptions.subscribe(1, time="09:00", timezone="UTC")
    jobs.schedule(sub)
    before = jobs.next_run_time(sub.id)
    assert before is not None
    assert (before.hour, before.minute) == (9, 0)
    moved = await service.subscriptions.subscribe(1, time="18:45", timezone="America/Los_Angeles")
    jobs.schedule(moved)
    after = jobs.next_run_time(sub.id)
    assert after is not None
    assert after.astimezone(moved_zone := make_schedule(timezone="America/Los_Angeles").zone).hour == 18
    assert str(moved_zone) == "America/Los_Angeles"
    assert len(jobs.scheduler.get_jobs()) == 1
    assert jobs.unschedule(sub.id) is True
    assert jobs.scheduler.get_jobs() == []


@pytest.mark.parametrize(
    ("zone", "hhmm"),
    [
        ("Europe/Berlin", "09:00"),
        ("Europe/Berlin", "02:30"),  # skipped in March, doubled in October
        ("America/New_York", "01:30"),  # doubled in November
        ("America/New_York", "02:30"),  # skipped in March
        ("Australia/Lord_Howe", "02:15"),  # a 30-minute DST shift
        ("Asia/Kolkata", "23:59"),
        ("Pacific/Chatham", "03:00"),
    ],
)
def test_cron_trigger_agrees_with_next_delivery_for_a_year(zone: str, hhmm: str) -> None:
    """Every period APScheduler fires is one of ours, first fire at our due time; a doubled fire maps
    to the period already fired (so the claim turns it into a no-op)."""
    schedule = make_schedule(time_local=hhmm, timezone=zone)
    trigger = CronTrigger(timezone=schedule.zone, **schedule.cron_fields())
    start = utc(2026, 1, 1)
    fires: list[datetime] = []
    previous = None
    now = start
    while True:
        fire = trigger.get_next_fire_time(previous, now)
        assert fire is not None
        if fire >= utc(2027, 1, 1):
            break
        fires.append(fire)
        previous, now = fire, fire
    first_fire: dict[str, datetime] = {}
    for fire in fires:
        period = latest_due(schedule, fire)
        first_fire.setdefault(period.key, fire)
    expected = {}
    day = next_delivery(schedule, start)
    while day.due_at < utc(2027, 1, 1):
        expected[day.key] = day.due_at
        day = next_delivery(schedule, day.due_at)
    assert {k: v.astimezone(UTC) for k, v in first_fire.items()} == {
        k: v.astimezone(UTC) for k, v in expected.items()
    }
    assert len(fires) - len(first_fire) <= 1  # at most one doubled (fall-back) fire a year


async def test_ambiguous_time_double_fire_delivers_once(service: Digests, jobs: DigestScheduler) -> None:
    """CronTrigger fires 02:30 twice on the fall-back night; the second fire sends nothing."""
    clock = service.clock
    assert isinstance(clock, Clock)
    clock.set(utc(2026, 10, 20, 12, 0))
    sub = await service.subscriptions.subscribe(1, time="02:30", timezone="Europe/Berlin", count=2)
    trigger = make_trigger(sub)
    first = trigger.get_next_fire_time(None, utc(2026, 10, 24, 12))
    second = trigger.get_next_fire_time(first, first)
    assert second.astimezone(UTC) - first.astimezone(UTC) == timedelta(hours=1)
    clock.set(first)
    one = await jobs.run_job(sub.id)
    clock.set(second)
    two = await jobs.run_job(sub.id)
    assert one is not None
    assert two is not None
    assert (one.status, two.status) == ("sent", "already")
    assert one.period_key == two.period_key == "2026-10-25"


async def test_the_scheduler_fires_the_job_and_the_digest_goes_out(
    service: Digests, jobs: DigestScheduler
) -> None:
    """Through APScheduler itself: when the job's time comes, the period is delivered once."""
    sub = await service.subscriptions.subscribe(1, time="09:00", timezone="Europe/Berlin", count=3)
    clock = service.clock
    assert isinstance(clock, Clock)
    await jobs.start(recover=False)
    due = occurrence(make_schedule(time_local="09:00", timezone="Europe/Berlin"), date(2026, 11, 30))
    clock.set(due.due_utc)
    job = jobs.scheduler.get_job(job_id(sub.id))
    assert job is not None
    job.modify(next_run_time=datetime.now(UTC))
    senders = jobs.sender_for
    assert isinstance(senders, Senders)
    for _ in range(1000):  # up to 10 s: APScheduler runs the job in a task of its own
        if sub.id in senders.by_sub and len(senders.by_sub[sub.id].papers) == 3:
            break
        await asyncio.sleep(0.01)
    await wait_idle(jobs)  # the run is finished after its last message is recorded
    assert senders.by_sub[sub.id].paper_ids == [1, 2, 3]
    run = await service.repository.run_for(sub.id, due.key)
    assert run is not None
    assert run.status == "sent"


async def test_a_digest_goes_out_at_the_minute_chosen_when_little_else_is_due_then(db: Database) -> None:
    """Three people at 09:00 with room to spare under Discord's limits: each job fires at 09:00 (the
    time the confirmation names) and delivers the 09:00 period; subscribing after 09:00 keeps it for
    tomorrow."""
    await add_papers(db, range(1, 11))
    service = make_service(
        db,
        Clock(utc(2026, 11, 30, 6, 0)),
        {p: 1.0 for p in range(1, 11)},
        spread=timedelta(minutes=60),
        calls_per_minute=2700,
    )
    jobs = DigestScheduler(service, Senders(), clock=service.clock)
    try:
        subs = [
            await service.subscriptions.subscribe(u, topics="x", time="09:00", count=1) for u in (1, 2, 3)
        ]
        await jobs.start(recover=False)
        due = utc(2026, 11, 30, 9, 0)
        for sub in subs:
            job = jobs.scheduler.get_job(job_id(sub.id))
            assert job is not None
            assert job.trigger.get_next_fire_time(None, utc(2026, 11, 30, 6, 0)) == due
            arrival = await service.subscriptions.arrival(sub)
            assert (arrival.at, arrival.moved, arrival.due_together) == (due, timedelta(0), 3)
        clock = service.clock
        assert isinstance(clock, Clock)
        clock.set(due)
        outcomes = [await jobs.run_job(sub.id) for sub in subs]
        assert [(o.status, o.period_key) for o in outcomes if o is not None] == [("sent", "2026-11-30")] * 3
        clock.set(due + timedelta(minutes=1))  # subscribing at 09:01: today's 09:00 is not this one's
        late = await service.subscriptions.subscribe(4, topics="x", time="09:00", count=1)
        assert (await service.subscriptions.arrival(late)).at.date() == date(2026, 12, 1)
    finally:
        jobs.shutdown()


async def test_only_what_does_not_fit_in_its_minute_moves_to_the_next(db: Database) -> None:
    """Discord's limits allow 4 requests a minute here (a one-paper DM digest costs 2): of three
    digests due at 09:00 the two set up first go out at 09:00, the third at 09:01 — its confirmation
    says so, and its job, firing at 09:00, sends it at 09:01, once."""
    await add_papers(db, range(1, 11))
    clock = Clock(utc(2026, 11, 30, 6, 0))
    service = make_service(
        db, clock, {p: 1.0 for p in range(1, 11)}, spread=timedelta(minutes=10), calls_per_minute=4
    )
    senders = Senders()
    jobs = DigestScheduler(service, senders, clock=service.clock)
    try:
        subs = []
        for user in (1, 2, 3):
            subs.append(await service.subscriptions.subscribe(user, topics="x", time="09:00", count=1))
            clock.set(clock() + timedelta(seconds=1))
        await jobs.start(recover=False)
        due = utc(2026, 11, 30, 9, 0)
        arrivals = [await service.subscriptions.arrival(sub) for sub in subs]
        assert [a.moved for a in arrivals] == [timedelta(0), timedelta(0), timedelta(minutes=1)]
        assert arrivals[2].at == due + timedelta(minutes=1)
        clock.set(due)
        outcomes = [await jobs.run_job(sub.id) for sub in subs]
        assert [o.status if o else None for o in outcomes] == ["sent", "sent", None]
        later = jobs.scheduler.get_job(f"digest-later:{subs[2].id}")
        assert later is not None
        assert later.next_run_time == due + timedelta(minutes=1)
        assert subs[2].id not in senders.by_sub, "nothing of the third went out at 09:00"
        clock.set(due + timedelta(minutes=1))
        outcome = await jobs.later_job(*later.args)
        assert outcome is not None
        assert (outcome.status, outcome.period_key) == ("sent", "2026-11-30")
        await jobs.run_job(subs[2].id)  # a second fire (at 09:01) finds the period delivered
        assert len(senders.by_sub[subs[2].id].papers) == 1
    finally:
        jobs.shutdown()


async def test_one_failing_subscriber_never_stops_the_others(
    service: Digests, jobs: DigestScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    """A subscriber whose send fails is logged and retried; everyone else still gets their digest."""
    subs = [
        await service.subscriptions.subscribe(user, time="09:00", timezone="UTC", count=2)
        for user in range(1, 7)
    ]
    senders = jobs.sender_for
    assert isinstance(senders, Senders)
    senders.failing = {subs[2].id}
    await jobs.start(recover=False)
    clock = service.clock
    assert isinstance(clock, Clock)
    # far from the real date: APScheduler runs the retry on the real clock, which must not reach it
    clock.set(utc(2030, 12, 2, 9, 0))
    outcomes = await asyncio.gather(*(jobs.run_job(sub.id) for sub in subs))
    assert [o is not None and o.status for o in outcomes] == ["sent", "sent", False, "sent", "sent", "sent"]
    assert f"digest for subscription {subs[2].id}" in caplog.text
    retry = jobs.scheduler.get_job(f"digest-retry:{subs[2].id}")
    assert retry is not None
    # The retry resumes the open run once the problem is gone.
    senders.failing = set()
    await jobs.retry_job(subs[2].id)
    assert len(senders.by_sub[subs[2].id].papers) == 2


async def test_a_background_start_returns_at_once_and_schedules_every_subscription(
    service: Digests, jobs: DigestScheduler
) -> None:
    """setup_hook's start does not wait for thousands of jobs; they all appear shortly after."""
    subs = [
        await service.subscriptions.subscribe(user, time="08:15", timezone="Asia/Kolkata")
        for user in range(1, 451)
    ]
    assert await jobs.start(recover=False, in_background=True) == 0
    assert len(jobs.scheduler.get_jobs()) < len(subs)  # still being rebuilt
    await wait_idle(jobs)
    assert sorted(job.id for job in jobs.scheduler.get_jobs()) == sorted(job_id(sub.id) for sub in subs)


async def test_subscriptions_of_one_schedule_share_a_trigger_and_fire_when_their_own_would(
    service: Digests, jobs: DigestScheduler
) -> None:
    """The rebuild makes one trigger per schedule (time, zone, frequency, weekday), not per subscription."""
    a = await service.subscriptions.subscribe(1, time="09:00", timezone="Europe/Berlin")
    b = await service.subscriptions.subscribe(2, time="09:00", timezone="Europe/Berlin", count=3)
    c = await service.subscriptions.subscribe(3, time="09:00", timezone="Asia/Tokyo")
    await jobs.start(recover=False)
    job_a, job_b, job_c = (jobs.scheduler.get_job(job_id(sub.id)) for sub in (a, b, c))
    assert None not in (job_a, job_b, job_c)
    assert job_a is not None
    assert job_b is not None
    assert job_c is not None
    assert job_a.trigger is job_b.trigger
    assert job_c.trigger is not job_a.trigger
    now = datetime.now(UTC)
    for sub, job in ((a, job_a), (b, job_b), (c, job_c)):
        assert str(job.trigger) == str(make_trigger(sub))
        assert job.next_run_time == make_trigger(sub).get_next_fire_time(None, now)


async def test_the_rebuild_lets_the_event_loop_turn_every_few_milliseconds(
    service: Digests, jobs: DigestScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command answered while thousands of jobs are rebuilt waits at most one slice of the rebuild
    at each of its steps: with no time to spare, the loop turns after every subscription."""
    for user in range(1, 121):
        await service.subscriptions.subscribe(user, time="08:15", timezone="UTC")
    monkeypatch.setattr(jobs_module, "SYNC_SLICE", 0.0)
    seen: list[int] = []

    async def turns() -> None:
        while len(seen) < 2 or seen[-1] < 120:
            seen.append(len(jobs._scheduled))
            await asyncio.sleep(0)

    ticking = asyncio.create_task(turns())
    await jobs.start(recover=False)
    await ticking
    steps = [after - before for before, after in itertools.pairwise(seen)]
    assert max(steps) <= 1
    assert seen[-1] == 120


async def test_the_rebuild_steps_aside_while_a_command_is_answered_but_never_for_long(
    service: Digests, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command answered during the rebuild after a start runs alone (the rebuild waits while the
    bot's foreground says it is busy); a steady stream of commands delays the jobs, never stops them."""
    for user in range(1, 41):
        await service.subscriptions.subscribe(user, time="08:15", timezone="UTC")
    monkeypatch.setattr(jobs_module, "SYNC_SLICE", 0.0)
    jobs = DigestScheduler(service, Senders(), clock=service.clock, busy_for=lambda: 60.0)
    try:
        await jobs.start(recover=False, in_background=True)
        await asyncio.sleep(0.2)
        assert len(jobs.scheduler.get_jobs()) <= 1  # one slice, then it waits for the command
    finally:
        jobs.shutdown()
    monkeypatch.setattr(jobs_module, "SYNC_MOST_DEFERRED", 0.3)
    jobs = DigestScheduler(service, Senders(), clock=service.clock, busy_for=lambda: 60.0)
    try:
        began = asyncio.get_running_loop().time()
        await jobs.start(recover=False)  # busy all along: waits 0.3 s in all, then goes on
        assert 0.3 <= asyncio.get_running_loop().time() - began < 5
        assert len(jobs.scheduler.get_jobs()) == 40
    finally:
        jobs.shutdown()


async def test_a_background_start_rebuilds_the_jobs_once_the_client_is_ready(service: Digests) -> None:
    """Rebuilding thousands of jobs takes the event loop a second or two: not while the gateway
    handshake needs it, but once the client is ready."""
    subs = [await service.subscriptions.subscribe(user, time="08:15", timezone="UTC") for user in (1, 2, 3)]
    ready = asyncio.Event()
    jobs = DigestScheduler(service, Senders(), clock=service.clock, wait_until_ready=ready.wait)
    try:
        assert await jobs.start(recover=False, in_background=True) == 0
        for _ in range(20):
            await asyncio.sleep(0)
        assert jobs.scheduler.get_jobs() == []
        ready.set()
        await wait_idle(jobs)
        assert sorted(job.id for job in jobs.scheduler.get_jobs()) == sorted(job_id(sub.id) for sub in subs)
    finally:
        jobs.shutdown()


async def test_deliveries_are_bounded_by_the_semaphore(service: Digests) -> None:
    """Thousands due at once queue up: never more than `concurrency` digests in flight."""
    in_flight = 0
    peak = 0
    three_in_flight = asyncio.Event()

    class Slow(FakeSender):
        async def send_paper(self, paper, reason, *, nonce):  # type: ignore[no-untyped-def]
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            if in_flight >= 3:
                three_in_flight.set()
            # the first deliveries hold their slot until three are in flight (however slow the store
            # is on a loaded machine), so a fourth would be seen if the bound let it in
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(three_in_flight.wait(), timeout=5)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return await super().send_paper(paper, reason, nonce=nonce)

    jobs = DigestScheduler(service, lambda sub: Slow(), clock=service.clock, concurrency=3)
    subs = await _due_now(service, 12)
    outcomes = await jobs.deliver_many([(sub, None) for sub in subs])
    assert [o.status for o in outcomes] == ["sent"] * 12
    assert peak == 3


async def test_recover_resumes_then_catches_up_after_ready(service: Digests, db: Database) -> None:
    """At start: wait for the gateway, finish the interrupted run, deliver the missed period once."""
    clock = service.clock
    assert isinstance(clock, Clock)
    clock.set(utc(2026, 11, 30, 6, 0))
    interrupted = await service.subscriptions.subscribe(1, time="07:00", timezone="UTC", count=3)
    missed = await service.subscriptions.subscribe(2, time="08:00", timezone="UTC", count=2)
    clock.set(utc(2026, 11, 30, 7, 0))
    with pytest.raises(RuntimeError):
        await service.delivery.deliver_period(interrupted.id, FakeSender(fail_at={1: RuntimeError("killed")}))
    clock.set(utc(2026, 11, 30, 9, 30))  # the bot was down from 07:00 to 09:30
    service = make_service(db, clock, {pid: 100.0 - pid for pid in range(1, 41)})  # restarted

    ready = asyncio.Event()
    senders = Senders()
    jobs = DigestScheduler(service, senders, clock=clock, wait_until_ready=ready.wait)
    task = asyncio.create_task(jobs.recover())
    await asyncio.sleep(0.01)
    assert senders.by_sub == {}  # nothing before the client is ready
    ready.set()
    report = await task
    assert [o.status for o in report.resumed] == ["sent"]
    assert [(o.status, o.period_key) for o in report.caught_up] == [("sent", "2026-11-30")]
    assert senders.by_sub[interrupted.id].paper_ids == [2, 3]
    assert len(senders.by_sub[missed.id].papers) == 2
    again = await DigestScheduler(service, senders, clock=clock).recover()
    assert again.resumed == again.caught_up == []


async def test_job_for_a_removed_subscription_removes_itself(service: Digests, jobs: DigestScheduler) -> None:
    """A job whose subscription vanished (e.g. forget-me) cleans up instead of failing every day."""
    sub = await service.subscriptions.subscribe(1)
    await jobs.start(recover=False)
    await service.subscriptions.unsubscribe(1)
    assert await jobs.run_job(sub.id) is None
    assert jobs.scheduler.get_jobs() == []


async def test_a_fire_before_the_subscription_existed_sends_nothing(
    service: Digests, jobs: DigestScheduler
) -> None:
    """Subscribed at 10:00 for 09:00: a stray fire at 10:05 must not send "today's" digest."""
    clock = service.clock
    assert isinstance(clock, Clock)
    clock.set(utc(2026, 11, 30, 10, 0))
    sub = await service.subscriptions.subscribe(1, time="09:00", timezone="UTC")
    clock.set(utc(2026, 11, 30, 10, 5))
    assert await jobs.run_job(sub.id) is None
    senders = jobs.sender_for
    assert isinstance(senders, Senders)
    assert senders.by_sub == {}
    assert await service.repository.runs(sub.id) == []


async def test_graceful_stop_cuts_between_papers_and_the_next_start_finishes(
    service: Digests, db: Database
) -> None:
    """Shutting down mid-digest stops at a paper boundary (nothing in doubt); the next process resumes."""
    clock = service.clock
    assert isinstance(clock, Clock)
    sub = await service.subscriptions.subscribe(1, time="09:00", timezone="UTC", count=4)
    clock.set(utc(2026, 11, 30, 9, 0))
    jobs: DigestScheduler

    class StopsAfterTwo(FakeSender):
        async def send_paper(self, paper, reason, *, nonce):  # type: ignore[no-untyped-def]
            sent = await super().send_paper(paper, reason, nonce=nonce)
            if len(self.papers) == 2:
                asyncio.get_running_loop().create_task(jobs.stop())
                await asyncio.sleep(0)  # the stop request lands while this message is finishing
            return sent

    sender = StopsAfterTwo()
    jobs = DigestScheduler(service, lambda s: sender)
    await jobs.start(recover=False)
    assert await jobs.run_job(sub.id) is None
    assert sender.paper_ids == [1, 2]
    run = await service.repository.run_for(sub.id, "2026-11-30")
    assert run is not None
    assert run.status == "claimed"
    assert [i.paper_id for i in await service.repository.items(run.id) if i.in_doubt] == []

    # The next process (a fresh service on the same database) resumes the run with papers 3 and 4.
    restarted = make_service(db, clock, {pid: 100.0 - pid for pid in range(1, 41)})
    later = FakeSender()
    report = await DigestScheduler(restarted, lambda s: later).recover()
    assert [o.status for o in report.resumed] == ["sent"]
    assert later.headers == []
    assert later.paper_ids == [3, 4]


async def test_the_idle_hook_runs_once_after_a_run_of_digests(service: Digests) -> None:
    """The memory a run of digests freed is given back once it is over: once, not after each digest."""
    calls: list[int] = []
    jobs = DigestScheduler(
        service,
        Senders(),
        clock=service.clock,
        concurrency=2,
        on_idle=lambda: calls.append(jobs._active),
        idle_delay=0.05,
    )
    subs = await _due_now(service, 6)
    outcomes = await jobs.deliver_many([(sub, None) for sub in subs])
    assert [o.status for o in outcomes] == ["sent"] * 6
    assert calls == []  # not yet: the delay lets the next digest due start first
    await asyncio.sleep(0.3)
    assert calls == [0]
    jobs.shutdown()


async def test_shutdown_cancels_a_pending_idle_hook(service: Digests) -> None:
    calls: list[None] = []
    jobs = DigestScheduler(
        service, Senders(), clock=service.clock, on_idle=lambda: calls.append(None), idle_delay=0.05
    )
    (sub,) = await _due_now(service, 1)
    await jobs.deliver(sub)
    jobs.shutdown()
    await asyncio.sleep(0.2)
    assert calls == []
