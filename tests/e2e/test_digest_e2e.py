"""Subscribing, the digest at local time and channel feeds, through the real discord.py client and the
local Discord server.

Time is controlled: the digest service's clock is a settable fake (patched in before the bot builds
its services), and a due job is fired through APScheduler itself (`job.modify(next_run_time=now)`),
after checking that APScheduler has it at the subscriber's local time. The digest then runs exactly
as at 09:00: claim → plan → DM header + one message per paper with its own 👍 👎 🔖 (buttons in a
DM, the bot's reactions in a channel).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MAX_INSTANCES, JobExecutionEvent
from builders import Clock, wait_idle

from bot.services.digests.subscriptions import subscription_schedule
from bot.services.digests.timing import make_schedule, next_delivery
from storage.leadership import FileLeaderLock

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

StartBot = Callable[..., contextlib.AbstractAsyncContextManager["E2E"]]

MONDAY = datetime(2026, 11, 30, tzinfo=UTC)
BERLIN_0900 = MONDAY + timedelta(hours=8)  # 09:00 CET on Monday 30 November 2026
TOPICS = "quantization, language models"


@pytest.fixture
def clock() -> Clock:
    """The digest service's clock (every bot started in the test reads it)."""
    return Clock(MONDAY + timedelta(hours=6))  # 07:00 in Berlin


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: StartBot) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:
        yield running


async def subscription_id(e2e: E2E, user_id: int) -> int:
    sub = await e2e.services.digests.subscriptions.for_user(user_id)
    assert sub is not None
    return sub.id


async def fire(e2e: E2E, sub_id: int) -> None:
    """APScheduler runs the subscription's job now (as it would at its trigger time); returns once that
    run is over, so a second fire is never skipped as overlapping the first."""
    jobs = e2e.bot.digest_jobs
    job = jobs.scheduler.get_job(f"digest:{sub_id}")
    assert job is not None, "the subscription has no scheduled job"
    over = asyncio.Event()

    def seen(event: JobExecutionEvent) -> None:
        if event.job_id == job.id:
            over.set()

    jobs.scheduler.add_listener(seen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MAX_INSTANCES)
    try:
        job.modify(next_run_time=datetime.now(UTC))
        jobs.scheduler.wakeup()
        await asyncio.wait_for(over.wait(), 30)
    finally:
        jobs.scheduler.remove_listener(seen)


def paper_messages(messages: list[SandboxMessage]) -> list[SandboxMessage]:
    return [m for m in messages if m.embeds]


RATINGS = ["👍", "👎", "🔖"]


def rating_buttons(message: SandboxMessage) -> list[str]:
    """The 👍 👎 🔖 buttons of a paper message, by emoji."""
    return [(b.get("emoji") or {}).get("name", "") for b in message.buttons]


def rated(message: SandboxMessage, bot_id: int) -> bool:
    """The paper's own 👍 👎 🔖: buttons in a DM, the bot's reactions in a channel."""
    if message.channel.is_dm:
        return rating_buttons(message)[:3] == RATINGS and not any(
            bot_id in u for u in message.reactions.values()
        )
    return all(bot_id in message.reactions.get(emoji, []) for emoji in RATINGS)


def text_messages(messages: list[SandboxMessage]) -> list[SandboxMessage]:
    return [m for m in messages if not m.embeds]


async def wait_for_papers(
    e2e: E2E, where: Callable[[], list[SandboxMessage]], total: int
) -> list[SandboxMessage]:
    """Wait until `total` paper messages are there, each with its own 👍 👎 🔖."""

    def done() -> bool:
        papers = paper_messages(where())
        return len(papers) >= total and all(rated(m, e2e.server.bot_user.id) for m in papers)

    await e2e.server.eventually(done, what=f"{total} paper messages with 👍 👎 🔖", timeout=10)
    await wait_idle(e2e.bot.digest_jobs)  # the run is recorded as finished after its last message
    await e2e.server.wait_quiet()
    return paper_messages(where())


async def posted_paper_ids(e2e: E2E, messages: list[SandboxMessage]) -> list[int]:
    ids = []
    for message in messages:
        paper = await e2e.services.messages.paper_for(message.id)
        assert paper is not None, f"message {message.id} was not recorded in posted_messages"
        ids.append(paper)
    return ids


def ephemeral_text(result: Any) -> str:
    return "\n".join(m.content for m in result.messages)


@pytest.mark.both_engines
async def test_subscribe_then_the_digest_arrives_at_local_time_and_learns_from_reactions(
    e2e: E2E, clock: Clock
) -> None:
    """Subscribe → next delivery in the user's zone → at 09:00 Berlin a DM digest (header + one message
    per paper with 👍 👎 🔖 and a reason) → react → the next day's digest differs and repeats nothing."""
    server = e2e.server
    alice = server.alice
    choices = await server.autocomplete("alice", "paper subscribe", "timezone", "berl")
    assert choices[0]["value"] == "Europe/Berlin"
    assert len(choices) <= 25

    answer = await server.run_command(
        "alice", "paper subscribe", topics=TOPICS, time="09:00", timezone="Europe/Berlin", count=3
    )
    assert answer.ephemeral
    text = ephemeral_text(answer)
    assert "daily at 09:00 Europe/Berlin" in text
    sub = await e2e.services.digests.subscriptions.for_user(alice.id)
    assert sub is not None
    # nothing else is due at 09:00: it comes at 09:00, as chosen
    assert "Monday 30 November 2026 at 09:00 CET" in text
    assert "yours comes at" not in text

    sub_id = sub.id
    job = e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}")
    assert job is not None
    assert str(job.trigger.timezone) == "Europe/Berlin"
    expected = next_delivery(make_schedule(time_local="09:00", timezone="Europe/Berlin"), datetime.now(UTC))
    assert job.next_run_time == expected.due_at
    assert f"{job.next_run_time:%H:%M:%S}" == "09:00:00"

    # A minute early nothing goes out (the 09:00 period has not come yet).
    clock.now = BERLIN_0900 - timedelta(minutes=1)
    await fire(e2e, sub_id)
    await server.wait_quiet(quiet=0.3)
    assert server.dm_messages("alice") == []

    clock.now = BERLIN_0900
    await fire(e2e, sub_id)
    first = await wait_for_papers(e2e, lambda: server.dm_messages("alice"), 3)
    assert len(first) == 3
    (header,) = text_messages(server.dm_messages("alice"))
    assert "Monday 30 November (Europe/Berlin)" in header.content
    assert header.id < first[0].id
    first_ids = await posted_paper_ids(e2e, first)
    for message, paper_id in zip(first, first_ids, strict=True):
        # one call per paper: its own 👍 👎 🔖 come with it, no reaction to add after it
        assert rating_buttons(message)[:3] == RATINGS
        assert [b["custom_id"] for b in message.buttons[:3]] == [
            f"pb:{s}:{paper_id}" for s in ("like", "dislike", "save")
        ]
        assert not message.reactions
        lines = message.embeds[0]["description"].split("\n")
        assert lines[0] == "ICML 2024", "authors · venue year first (the seed lists name no authors)"
        assert lines[1].startswith("*for your interest in "), "then why it was picked"
    assert not server.requests_matching("PUT /channels/*/messages/*/reactions/**")
    fetches = [r for r in server.requests_matching("GET /users/*") if r.route == "/users/{user_id}"]
    assert not fetches, "the DM needs no user fetch"
    rows = await e2e.db.fetchall(
        "SELECT recipient_id, kind FROM posted_messages WHERE paper_id IN (?, ?, ?)", first_ids
    )
    assert {tuple(r) for r in rows} == {(alice.id, "digest")}

    saved = await server.click("alice", first[2], "🔖")  # the paper's own button, answered privately
    assert saved.ephemeral
    await server.react("alice", first[0], "👍")  # a reaction of her own counts too
    await server.react("alice", first[1], "👎")
    await server.eventually(
        lambda: _count(e2e, "SELECT COUNT(*) FROM feedback WHERE user_id = ?", (alice.id,), 3),
        what="alice's button press and reactions stored",
    )
    await server.wait_quiet()

    # The same period fired again (a double fire) sends nothing.
    await fire(e2e, sub_id)
    await server.wait_quiet(quiet=0.3)
    assert len(paper_messages(server.dm_messages("alice"))) == 3

    clock.now = BERLIN_0900 + timedelta(days=1)
    await fire(e2e, sub_id)
    both = await wait_for_papers(e2e, lambda: server.dm_messages("alice"), 6)
    second_ids = await posted_paper_ids(e2e, both[3:])
    assert len(second_ids) == 3
    assert not set(second_ids) & set(first_ids), "a paper was sent twice"
    headers = text_messages(server.dm_messages("alice"))
    assert "Tuesday 1 December (Europe/Berlin)" in headers[-1].content
    e2e.check()


async def _count(e2e: E2E, sql: str, params: tuple[Any, ...], expected: int) -> bool:
    return bool(await e2e.db.fetchval(sql, params) == expected)


async def test_digest_now_goes_to_dms_and_never_repeats(e2e: E2E) -> None:
    """/paper digest sends now (ephemeral note of where it went); a second one has other papers."""
    server = e2e.server
    await server.run_command("bob", "paper subscribe", topics="reinforcement learning", count=2)
    note = await server.run_command("bob", "paper digest")
    assert note.ephemeral
    assert "Sent 2 papers to your DMs" in ephemeral_text(note)
    first = await wait_for_papers(e2e, lambda: server.dm_messages("bob"), 2)
    assert "(on demand)" in text_messages(server.dm_messages("bob"))[0].content
    await server.run_command("bob", "paper digest")
    both = await wait_for_papers(e2e, lambda: server.dm_messages("bob"), 4)
    ids = await posted_paper_ids(e2e, both)
    assert len(set(ids)) == 4
    assert first[0].id == both[0].id


@pytest.mark.both_engines
async def test_restart_mid_digest_sends_the_rest_once_and_catches_up_a_missed_period(
    clock: Clock, start_paperbot: StartBot, tmp_path: Path
) -> None:
    """Stopped after 2 of 4 papers: the next start sends the other 2 (no header, no repeats). Down at
    09:00 the next day: the start at 10:30 sends that digest once; a further restart sends nothing."""
    async with start_paperbot() as first:
        server = first.server
        await server.run_command(
            "alice", "paper subscribe", topics=TOPICS, time="09:00", timezone="Europe/Berlin", count=4
        )
        sub_id = await subscription_id(first, server.alice.id)

        def stop_after_two(kind: str, message: SandboxMessage) -> None:
            if kind == "create" and message.embeds and len(paper_messages(server.dm_messages("alice"))) == 2:
                first.services.digests.delivery.request_stop()  # as SIGTERM would, mid-digest

        unsubscribe = server.subscribe(stop_after_two)
        clock.now = BERLIN_0900
        await fire(first, sub_id)
        await wait_for_papers(first, lambda: server.dm_messages("alice"), 2)
        unsubscribe()
        run = await first.services.digests.repository.run_for(sub_id, "2026-11-30")
        assert run is not None
        assert run.status == "claimed"
    assert len(paper_messages(server.dm_messages("alice"))) == 2

    clock.now = BERLIN_0900 + timedelta(minutes=20)
    async with start_paperbot() as second:
        papers = await wait_for_papers(second, lambda: server.dm_messages("alice"), 4)
        ids = await posted_paper_ids(second, papers)
        assert len(ids) == len(set(ids)) == 4
        assert len(text_messages(server.dm_messages("alice"))) == 1  # one header for the whole digest
        run = await second.services.digests.repository.run_for(sub_id, "2026-11-30")
        assert run is not None
        assert run.status == "sent"

    # Down over Tuesday 09:00; back at 10:30 Berlin (within the 6 h grace): caught up once.
    clock.now = BERLIN_0900 + timedelta(days=1, hours=1, minutes=30)
    async with start_paperbot() as third:
        papers = await wait_for_papers(third, lambda: server.dm_messages("alice"), 8)
        ids = await posted_paper_ids(third, papers)
        assert len(set(ids)) == 8
    clock.now += timedelta(minutes=10)
    async with start_paperbot() as fourth:
        await wait_idle(fourth.bot.digest_jobs)
        await server.wait_quiet(quiet=0.3)
        assert len(paper_messages(server.dm_messages("alice"))) == 8
        assert len(text_messages(server.dm_messages("alice"))) == 2

    # Down over Wednesday 09:00 until 17:00 (beyond the grace): skipped and logged, nothing sent late.
    clock.now = BERLIN_0900 + timedelta(days=2, hours=8)
    async with start_paperbot() as fifth:
        await wait_idle(fifth.bot.digest_jobs)
        await server.wait_quiet(quiet=0.3)
        assert len(paper_messages(server.dm_messages("alice"))) == 8
        run = await fifth.services.digests.repository.run_for(sub_id, "2026-12-02")
        assert run is not None
        assert run.status == "skipped"


def nth_paper_post(n: int) -> Callable[[str, str, Any], bool]:
    """A fault filter: the n-th (1-based) distinct paper message the bot creates (repeats of it match too)."""
    nonces: list[str] = []

    def matches(method: str, path: str, body: Any) -> bool:
        if not (isinstance(body, dict) and body.get("embeds")):
            return False
        if body["nonce"] not in nonces:
            nonces.append(body["nonce"])
        return nonces.index(body["nonce"]) == n - 1

    return matches


def is_header_post(method: str, path: str, body: Any) -> bool:
    return isinstance(body, dict) and str(body.get("content", "")).startswith("📚")


async def assert_one_message_per_paper_and_one_header(e2e: E2E, user: str, papers: int) -> None:
    dms = e2e.server.dm_messages(user)
    assert len(text_messages(dms)) == 1, [m.content for m in text_messages(dms)]
    posted = paper_messages(dms)
    assert len(posted) == papers
    ids = await posted_paper_ids(e2e, posted)
    assert len(set(ids)) == papers, "a paper went out twice"
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM posted_messages") == papers


async def test_a_send_whose_answer_is_lost_after_discord_took_it_goes_out_once(
    e2e: E2E, clock: Clock
) -> None:
    """Discord creates the header and the second paper, then the answers are lost (as after a timeout);
    the third paper gets a 503. The bot sends each again with the same nonce, Discord returns the
    message it made, and the DM has one header and one message per paper, each with 👍 👎 🔖."""
    server = e2e.server
    e2e.services.digests.delivery.resend_delays = (0.05, 0.05, 0.05)
    await server.run_command(
        "alice", "paper subscribe", topics=TOPICS, time="09:00", timezone="Europe/Berlin"
    )
    sub_id = await subscription_id(e2e, server.alice.id)
    server.faults.add("POST /channels/*/messages", "drop_response", when=is_header_post)
    server.faults.add("POST /channels/*/messages", "drop_response", when=nth_paper_post(2))
    server.faults.add("POST /channels/*/messages", "503", when=nth_paper_post(3))
    clock.now = BERLIN_0900
    await fire(e2e, sub_id)
    await wait_for_papers(e2e, lambda: server.dm_messages("alice"), 5)
    await assert_one_message_per_paper_and_one_header(e2e, "alice", 5)
    posts = server.requests_matching("POST /channels/*/messages")
    dropped = [r for r in posts if r.fault == "drop_response"]
    assert len(dropped) == 2
    for lost in dropped:
        (repeat,) = [r for r in posts if r.fault is None and r.json["nonce"] == lost.json["nonce"]]
        assert repeat.json["enforce_nonce"] is True
        assert repeat.response["id"] == lost.response["id"], "Discord answered with the same message"
    (unavailable,) = [r for r in posts if r.fault == "503"]
    assert [r.status for r in posts if r.json["nonce"] == unavailable.json["nonce"]] == [503, 200]
    run = await e2e.services.digests.repository.run_for(sub_id, "2026-11-30")
    assert run is not None
    assert run.status == "sent"


@pytest.mark.both_engines
async def test_a_retry_after_sends_that_never_answered_sends_no_paper_or_header_twice(
    e2e: E2E, clock: Clock
) -> None:
    """Every attempt at the second paper loses its answer: the delivery fails and stays open; the
    scheduler's retry a minute later sends it again with its nonce (Discord returns it) and the rest,
    never the header again."""
    server = e2e.server
    jobs = e2e.bot.digest_jobs
    jobs.retry_delay = timedelta(days=30)  # the test runs the retry itself, below
    e2e.services.digests.delivery.resend_delays = (0.05, 0.05, 0.05)
    e2e.allow_error("failed")  # the scheduler logs the failed delivery before retrying it
    await server.run_command(
        "alice", "paper subscribe", topics=TOPICS, time="09:00", timezone="Europe/Berlin", count=3
    )
    sub_id = await subscription_id(e2e, server.alice.id)
    attempts = 1 + len(e2e.services.digests.delivery.resend_delays)
    fault = server.faults.add(
        "POST /channels/*/messages", "drop_response", times=attempts, when=nth_paper_post(2)
    )
    clock.now = BERLIN_0900
    await fire(e2e, sub_id)
    await server.eventually(
        lambda: fault.exhausted and len(paper_messages(server.dm_messages("alice"))) == 2,
        what="paper 2 created, every answer about it lost",
    )
    await wait_idle(jobs)
    run = await e2e.services.digests.repository.run_for(sub_id, "2026-11-30")
    assert run is not None
    assert run.status == "claimed"
    assert jobs.scheduler.get_job(f"digest-retry:{sub_id}") is not None

    clock.now = BERLIN_0900 + timedelta(minutes=1)
    await jobs.retry_job(sub_id)  # what APScheduler runs at the retry time
    await wait_for_papers(e2e, lambda: server.dm_messages("alice"), 3)
    await assert_one_message_per_paper_and_one_header(e2e, "alice", 3)
    run = await e2e.services.digests.repository.run_for(sub_id, "2026-11-30")
    assert run is not None
    assert run.status == "sent"


async def test_closed_dms_pause_the_digest_and_the_next_command_says_how_to_fix_it(
    e2e: E2E, clock: Clock
) -> None:
    """50007 on the DM → subscription paused, job removed; bob's next command tells him why and how."""
    server = e2e.server
    bob = server.bob
    await server.run_command("bob", "paper subscribe", topics=TOPICS, time="09:00", timezone="Europe/Berlin")
    sub_id = await subscription_id(e2e, bob.id)
    server.close_dms("bob")
    clock.now = BERLIN_0900
    await fire(e2e, sub_id)
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT active = 0 FROM subscriptions WHERE id = ?", (sub_id,)),
        what="the subscription paused",
    )
    await wait_idle(e2e.bot.digest_jobs)
    assert e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}") is None
    assert server.dm_messages("bob") == []

    answer = await server.run_command("bob", "paper search", query="quantization")
    notice = "\n".join(m.content for m in answer.followups)
    assert "paused" in notice
    assert "Direct Messages" in notice
    assert "/paper subscribe" in notice
    assert all(m.ephemeral for m in answer.followups)
    again = await server.run_command("bob", "paper search", query="quantization")
    assert again.followups == [], "the notice is shown once"

    server.open_dms("bob")
    resumed = await server.run_command("bob", "paper subscribe")
    assert "Resumed" in ephemeral_text(resumed)
    assert e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}") is not None


async def test_unsubscribe_stops_the_digest_and_keeps_the_interests(e2e: E2E) -> None:
    """/paper unsubscribe: the digest's job and row go, its topics stay as interests; a second one says
    there is nothing to stop."""
    server = e2e.server
    await server.run_command("bob", "paper subscribe", topics="reinforcement learning", time="09:00")
    sub_id = await subscription_id(e2e, server.bob.id)
    assert e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}") is not None

    done = await server.run_command("bob", "paper unsubscribe")
    assert done.ephemeral
    assert "Unsubscribed: no more digests" in ephemeral_text(done)
    assert e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}") is None
    assert await e2e.services.digests.subscriptions.for_user(server.bob.id) is None
    shown = await server.run_command("bob", "paper interests show")
    assert "reinforcement learning" in str(shown.embeds[0].get("description", ""))

    again = await server.run_command("bob", "paper unsubscribe")
    assert "You have no digest subscription" in ephemeral_text(again)


async def test_digest_now_with_closed_dms_says_so(e2e: E2E) -> None:
    """/paper digest to closed DMs answers with the fix, not a generic error."""
    await e2e.server.run_command("carol", "paper interests add", topic="language models")
    e2e.server.close_dms("carol")
    answer = await e2e.server.run_command("carol", "paper digest")
    assert "can't send you direct messages" in ephemeral_text(answer)


async def test_digest_now_for_someone_it_knows_nothing_about_asks_for_a_topic_and_sends_nothing(
    e2e: E2E,
) -> None:
    """No topics, reactions or follows: /paper digest sent a DM saying only "Nothing new above the bar";
    it now says what to give it, as /paper recommend does, and sends nothing. A topic is enough."""
    server = e2e.server
    answer = await server.run_command("carol", "paper digest")
    assert answer.ephemeral
    assert "I don't know your interests yet" in ephemeral_text(answer)
    assert "/paper interests add topic:" in ephemeral_text(answer)
    assert server.dm_messages("carol") == []
    await server.run_command("carol", "paper interests add", topic="language models")
    sent = await server.run_command("carol", "paper digest")
    assert "to your DMs" in ephemeral_text(sent)
    assert paper_messages(await wait_for_papers(e2e, lambda: server.dm_messages("carol"), 1))


@pytest.mark.both_engines
async def test_channel_feed_posts_in_its_channel_and_reactions_train_the_reactor(
    e2e: E2E, clock: Clock
) -> None:
    """/paperadmin feed set gives a channel its own feed; it posts there on schedule, exactly once;
    a reaction there trains the person who reacted; a deleted channel pauses the feed."""
    server = e2e.server
    channel = server.add_channel("daily-papers")
    refused = await server.run_command(
        "bob", "paperadmin feed set", channel=channel, topics="reinforcement learning", force=True
    )
    assert "Manage Server" in ephemeral_text(refused)
    server.set_manage_guild("alice", True)
    answer = await server.run_command(
        "alice",
        "paperadmin feed set",
        channel=channel,
        topics="reinforcement learning, robotics",
        time="09:00",
        timezone="Europe/Berlin",
        frequency="weekdays",
        count=2,
    )
    assert "weekdays (Mon–Fri) at 09:00 Europe/Berlin" in ephemeral_text(answer)
    listing = await server.run_command("alice", "paperadmin feed list")
    assert f"<#{channel.id}>" in ephemeral_text(listing)
    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    assert subscription_schedule(feed).frequency == "weekdays"

    clock.now = BERLIN_0900
    await fire(e2e, feed.id)
    papers = await wait_for_papers(e2e, lambda: server.messages_in(channel), 2)
    assert "Paper feed" in text_messages(server.messages_in(channel))[0].content
    rows = await e2e.db.fetchall(
        "SELECT recipient_id, kind FROM posted_messages WHERE channel_id = ?", (channel.id,)
    )
    assert {tuple(r) for r in rows} == {(None, "feed")}
    await fire(e2e, feed.id)  # same period again: nothing
    await server.wait_quiet(quiet=0.3)
    assert len(paper_messages(server.messages_in(channel))) == 2

    await server.react("bob", papers[0], "👍")
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.bob.id,)),
        what="bob's like stored for bob",
    )

    server.delete_channel(channel)
    clock.now = BERLIN_0900 + timedelta(days=1)
    await fire(e2e, feed.id)
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT active = 0 FROM subscriptions WHERE id = ?", (feed.id,)),
        what="the feed paused",
    )
    await wait_idle(e2e.bot.digest_jobs)
    answer = await server.run_command("alice", "paperadmin feed list")
    assert "paused" in ephemeral_text(answer)
    notice = "\n".join(m.content for m in answer.followups)
    assert f"<#{channel.id}>" in notice


async def test_invalid_schedule_is_refused_and_nothing_is_stored(e2e: E2E) -> None:
    """A bad time or timezone gets one clear line; no subscription or job appears."""
    bad_time = await e2e.server.run_command("carol", "paper subscribe", time="25:00")
    assert "HH:MM" in ephemeral_text(bad_time)
    bad_zone = await e2e.server.run_command("carol", "paper subscribe", timezone="Berlin")
    assert "Europe/Berlin" in ephemeral_text(bad_zone)
    assert await e2e.services.digests.subscriptions.for_user(e2e.server.carol.id) is None
    assert [j.id for j in e2e.bot.digest_jobs.scheduler.get_jobs() if j.id.startswith("digest:")] == []


async def test_feed_without_permission_to_post_is_refused_then_paused_when_permission_goes(
    e2e: E2E, clock: Clock
) -> None:
    """feed set checks the bot can post there; if Send Messages is taken away later (50013), the feed
    pauses instead of failing every day."""
    server = e2e.server
    server.set_manage_guild("alice", True)
    locked = server.add_channel("locked-papers")
    server.set_permissions(locked, server.bot_user, deny=1 << 11)  # SEND_MESSAGES
    refused = await server.run_command(
        "alice", "paperadmin feed set", channel=locked, topics="graph neural networks"
    )
    assert "Send Messages" in ephemeral_text(refused)
    assert await e2e.services.digests.subscriptions.for_channel(locked.id) is None

    open_channel = server.add_channel("open-papers")
    await server.run_command(
        "alice", "paperadmin feed set", channel=open_channel, topics="graph neural networks", time="09:00"
    )
    feed = await e2e.services.digests.subscriptions.for_channel(open_channel.id)
    assert feed is not None
    server.set_permissions(open_channel, server.bot_user, deny=1 << 11)
    clock.now = MONDAY + timedelta(hours=9)
    await fire(e2e, feed.id)
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT paused_reason FROM subscriptions WHERE id = ?", (feed.id,)),
        what="the feed paused",
    )
    await wait_idle(e2e.bot.digest_jobs)
    reason = await e2e.db.fetchval("SELECT paused_reason FROM subscriptions WHERE id = ?", (feed.id,))
    assert "50013" in reason
    assert server.messages_in(open_channel) == []


@contextlib.asynccontextmanager
async def another_process_leads(e2e: E2E) -> AsyncIterator[None]:
    """This process loses the store's leader lock to another one and stops the background work, as
    its leadership loop does when it finds the lock gone."""
    leadership = e2e.bot.leadership
    assert leadership is not None
    assert leadership.leading
    lock = leadership.lock
    assert isinstance(lock, FileLeaderLock)
    await lock.release()
    other = FileLeaderLock(lock.path)
    assert await other.acquire()
    try:
        await leadership.step()
        assert not leadership.leading
        yield
    finally:
        await other.release()


async def test_digest_now_works_in_a_process_that_stopped_leading(e2e: E2E) -> None:
    """Another process took the lead: /paper digest asked of this one still sends the digest (with a
    subscription and without one) and says so, never "Something went wrong"."""
    server = e2e.server
    await server.run_command("bob", "paper subscribe", topics="reinforcement learning", count=2)
    await server.run_command("carol", "paper interests add", topic="language models")
    async with another_process_leads(e2e):
        note = await server.run_command("bob", "paper digest")
        assert "Sent 2 papers to your DMs" in ephemeral_text(note)
        papers = await wait_for_papers(e2e, lambda: server.dm_messages("bob"), 2)
        assert len(set(await posted_paper_ids(e2e, papers))) == 2
        other = await server.run_command("carol", "paper digest")
        assert "to your DMs" in ephemeral_text(other)
        assert paper_messages(server.dm_messages("carol"))
    runs = await e2e.services.digests.repository.runs(await subscription_id(e2e, server.bob.id))
    assert [run.status for run in runs] == ["sent"], "the run is finished here, not left to the leader"


async def test_digest_now_stopped_by_a_shutdown_says_so_and_the_rest_arrives_once(e2e: E2E) -> None:
    """The process starts shutting down while bob's /paper digest goes out: it stops after the paper in
    flight and tells him the rest follows; the process running the digests next sends the rest —
    every paper once, one header."""
    server = e2e.server
    await server.run_command("bob", "paper subscribe", topics="reinforcement learning", count=3)
    closing = e2e.bot._stopped  # what PaperBot.close() sets first

    def shut_down_at_the_first_paper(kind: str, message: SandboxMessage) -> None:
        if kind == "create" and message.embeds and len(paper_messages(server.dm_messages("bob"))) == 1:
            closing.set()

    unsubscribe = server.subscribe(shut_down_at_the_first_paper)
    note = await server.run_command("bob", "paper digest")
    unsubscribe()
    assert "stop sending your digest partway" in ephemeral_text(note)
    assert "follows shortly" in ephemeral_text(note)
    assert len(paper_messages(server.dm_messages("bob"))) == 1

    closing.clear()  # the process running the digests next (here: this one, as if started again)
    papers = await wait_for_papers(e2e, lambda: server.dm_messages("bob"), 3)
    assert len(set(await posted_paper_ids(e2e, papers))) == 3
    assert len(text_messages(server.dm_messages("bob"))) == 1


def nth_reaction_on_paper(n: int, server: Any) -> Callable[[str, str, Any], bool]:
    """A fault filter: the bot's reactions on the n-th (1-based) paper message it posted."""

    def matches(method: str, path: str, body: Any) -> bool:
        papers = [m.id for m in server.messages_in("daily-papers") if m.embeds]
        return len(papers) >= n and f"/messages/{papers[n - 1]}/" in path

    return matches


@pytest.mark.both_engines
async def test_a_feed_paper_whose_reactions_lose_the_connection_is_posted_once_and_recorded(
    e2e: E2E, clock: Clock
) -> None:
    """The connection drops while the bot adds 👍 to a feed's first paper (Discord added it, the answer
    is lost) and again before Discord gets the 👎 of the second: each paper is posted once, recorded
    (a reaction on it trains the reactor), and gets its 👍 👎 🔖; a retry long after Discord forgot the
    nonces posts nothing again."""
    server = e2e.server
    jobs = e2e.bot.digest_jobs
    jobs.retry_delay = timedelta(days=30)  # any retry is run by the test itself, below
    channel = server.add_channel("daily-papers")
    await server.run_command(
        "alice",
        "paperadmin feed set",
        channel=channel,
        topics="reinforcement learning",
        count=3,
        time="09:00",
        timezone="Europe/Berlin",
    )
    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    reactions = "PUT /channels/*/messages/*/reactions/**"
    # (twice: aiohttp sends a PUT once more by itself when a reused connection drops)
    server.faults.add(reactions, "drop_response", times=2, when=nth_reaction_on_paper(1, server))
    server.faults.add(reactions, "drop_request", times=2, when=nth_reaction_on_paper(2, server))
    clock.now = BERLIN_0900
    await fire(e2e, feed.id)
    papers = await wait_for_papers(e2e, lambda: server.messages_in(channel), 3)
    dropped = [r.fault for r in server.requests_matching(reactions) if r.fault]
    assert set(dropped) == {"drop_response", "drop_request"}
    assert len(set(await posted_paper_ids(e2e, papers))) == 3
    run = await e2e.services.digests.repository.run_for(feed.id, "2026-11-30")
    assert run is not None
    assert run.status == "sent"

    # Discord forgot the nonces (its window is a few minutes); whatever runs again posts nothing new
    server.clock.advance(10 * 60)
    clock.now = BERLIN_0900 + timedelta(minutes=10)
    await jobs.retry_job(feed.id)
    await fire(e2e, feed.id)
    await server.wait_quiet(quiet=0.3)
    assert len(paper_messages(server.messages_in(channel))) == 3

    await server.react("bob", papers[0], "👍")
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.bob.id,)),
        what="bob's 👍 on the first paper stored for bob",
    )


async def test_a_feed_paper_posted_without_any_answer_is_found_later_and_recorded_not_posted_again(
    e2e: E2E, clock: Clock
) -> None:
    """Every attempt at the feed's second paper loses its answer (Discord posted it once); the retry
    comes after Discord forgot the nonce: the bot finds the paper in the channel and records it — a 👍
    on it trains the reactor — and posts nothing twice."""
    server = e2e.server
    jobs = e2e.bot.digest_jobs
    jobs.retry_delay = timedelta(days=30)  # the test runs the retry itself, below
    e2e.services.digests.delivery.resend_delays = (0.05, 0.05, 0.05)
    e2e.allow_error("failed")  # the scheduler logs the failed delivery before retrying it
    channel = server.add_channel("daily-papers")
    await server.run_command(
        "alice",
        "paperadmin feed set",
        channel=channel,
        topics="reinforcement learning",
        count=3,
        time="09:00",
        timezone="Europe/Berlin",
    )
    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    attempts = 1 + len(e2e.services.digests.delivery.resend_delays)
    fault = server.faults.add(
        "POST /channels/*/messages", "drop_response", times=attempts, when=nth_paper_post(2)
    )
    clock.now = BERLIN_0900
    await fire(e2e, feed.id)
    await server.eventually(lambda: fault.exhausted, what="every answer about paper 2 lost")
    await wait_idle(jobs)
    second = paper_messages(server.messages_in(channel))[1]
    assert await e2e.services.messages.paper_for(second.id) is None

    server.clock.advance(10 * 60)  # past the few minutes Discord remembers a nonce
    clock.now = BERLIN_0900 + timedelta(minutes=10)
    await jobs.retry_job(feed.id)
    await server.wait_quiet()
    papers = paper_messages(server.messages_in(channel))
    assert len(papers) == 3
    assert len(set(await posted_paper_ids(e2e, papers))) == 3
    run = await e2e.services.digests.repository.run_for(feed.id, "2026-11-30")
    assert run is not None
    assert run.status == "sent"
    await server.react("bob", second, "👍")
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.bob.id,)),
        what="bob's 👍 on the paper found later stored for bob",
    )
