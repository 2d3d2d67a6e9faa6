"""Muted topics through the real client: `/paper interests mute topic:"reinforcement learning"` keeps
every paper that says it out of `/paper recommend` and the digest, while `/paper search` still lists
them and says how many were muted; `unmute` brings them back; a channel feed mutes on its own; bad input
is refused with the reason and stores nothing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from answers import answer_text
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, JobExecutionEvent
from builders import Clock, wait_idle

from storage.models import PaperRecord

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox import InteractionResult
    from bot.sandbox.emulator.state import SandboxMessage

MONDAY_0800 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)

RL = [
    (
        "Reinforcement learning for robot arm control",
        "A policy learned by reinforcement learning controls a robot arm.",
    ),
    (
        "Deep reinforcement learning of legged robot control",
        "Legged robot control from deep reinforcement learning.",
    ),
    ("Offline reinforcement learning for robot control", "Robot control policies from logged data, offline."),
    ("Reinforcement learning with safety for robot control", "Safe exploration for robot control."),
    ("Sim-to-real reinforcement learning in robot control", "Robot control transferred from simulation."),
    ("Reward shaping in reinforcement learning for robot control", "Shaped rewards speed up robot control."),
]
OTHER = [
    (
        "Model predictive control for robot arms",
        "Robot control by model predictive control with learned dynamics.",
    ),
    ("Impedance control of a robot hand", "Compliant robot control for grasping with impedance."),
    ("Robot control under delays", "Feedback robot control that tolerates communication delays."),
    ("Optimal control of soft robot actuators", "Soft robot control with an optimal control solver."),
    ("Visual servoing for robot control", "Robot control from camera images by visual servoing."),
]


@pytest.fixture
def clock() -> Clock:
    return Clock(MONDAY_0800)


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: Any) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:
        yield running


async def _stored(e2e: E2E) -> tuple[set[int], set[int]]:
    """The papers on robot control: (those that say "reinforcement learning", the others)."""
    await e2e.services.papers.upsert_many(
        PaperRecord(title=title, abstract=abstract, year=2025) for title, abstract in RL + OTHER
    )
    await e2e.services.index.refresh()
    rows = await e2e.db.fetchall("SELECT id, title FROM papers")
    by_title = {str(r[1]): int(r[0]) for r in rows}
    return {by_title[t] for t, _ in RL}, {by_title[t] for t, _ in OTHER}


def _listed_ids(result: InteractionResult) -> set[int]:
    """The papers of an answer, by its 👍 👎 🔖 buttons."""
    return {
        int(match.group(1))
        for message in result.messages
        for button in message.buttons
        if (match := re.fullmatch(r"pb:\w+:(\d+)", str(button.get("custom_id", ""))))
    }


def _footers(result: InteractionResult) -> str:
    return "\n".join(
        (embed.get("footer") or {}).get("text", "") for message in result.messages for embed in message.embeds
    )


async def _posted_ids(e2e: E2E, messages: list[SandboxMessage]) -> set[int]:
    ids = set()
    for message in messages:
        paper = await e2e.services.messages.paper_for(message.id)
        assert paper is not None
        ids.add(paper)
    return ids


async def _fire(e2e: E2E, sub_id: int) -> None:
    """The subscription's job runs now, as at its time; returns once the run is over."""
    jobs = e2e.bot.digest_jobs
    job = jobs.scheduler.get_job(f"digest:{sub_id}")
    assert job is not None
    over = asyncio.Event()

    def seen(event: JobExecutionEvent) -> None:
        if event.job_id == job.id:
            over.set()

    jobs.scheduler.add_listener(seen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    try:
        job.modify(next_run_time=datetime.now(UTC))
        jobs.scheduler.wakeup()
        await asyncio.wait_for(over.wait(), 30)
    finally:
        jobs.scheduler.remove_listener(seen)
    await wait_idle(jobs)
    await e2e.server.wait_quiet()


@pytest.mark.both_engines
async def test_a_muted_topic_never_reaches_recommend_or_the_digest_but_search_still_finds_it(
    e2e: E2E,
) -> None:
    server = e2e.server
    rl, other = await _stored(e2e)
    await server.run_command("bob", "paper interests add", topic="robot control")

    muted = await server.run_command("bob", "paper interests mute", topic="Reinforcement Learning")
    assert muted.ephemeral
    said = re.search(
        r"🔇 Muted “Reinforcement Learning”: the (\d+) papers here that say it", answer_text(muted)
    )
    assert said, answer_text(muted)
    hidden = await e2e.services.mutes.muted(server.bob.id)
    assert rl <= hidden  # (and the shipped corpus's papers that say it)
    assert int(said.group(1)) == len(hidden)
    assert not hidden & other
    shown = answer_text(await server.run_command("bob", "paper interests show"))
    assert "Muted topics (1)" in shown
    assert "🔇 Reinforcement Learning" in shown

    picks = await server.run_command("bob", "paper recommend", count=2)  # the digest gets the rest
    picked = _listed_ids(picks)
    assert picked, answer_text(picks)
    assert not picked & hidden, "a muted paper was recommended"

    found = await server.run_command(
        "bob", "paper search", query="reinforcement learning robot control", limit=5
    )
    listed = _listed_ids(found)
    assert listed <= rl
    assert len(listed) == 5  # search still finds them…
    assert "🔇 5 of these muted for you" in _footers(found)  # …and says so
    other_search = await server.run_command(
        "alice", "paper search", query="reinforcement learning robot control"
    )
    assert "muted" not in _footers(other_search)  # alice muted nothing

    note = await server.run_command("bob", "paper digest")
    assert "to your DMs" in answer_text(note)
    await server.eventually(
        lambda: [m for m in server.dm_messages("bob") if m.embeds], what="bob's digest", timeout=10
    )
    await wait_idle(e2e.bot.digest_jobs)
    await server.wait_quiet()
    sent = await _posted_ids(e2e, [m for m in server.dm_messages("bob") if m.embeds])
    assert sent
    assert not sent & hidden, "a muted paper reached the digest"

    back = await server.run_command("bob", "paper interests unmute", topic="reinforced learning")
    assert "🔊 Unmuted “Reinforcement Learning”" in answer_text(back)
    again = _listed_ids(await server.run_command("bob", "paper recommend", count=10))
    assert again & rl, "unmuting did not bring the papers back"
    assert "Muted topics" not in answer_text(await server.run_command("bob", "paper interests show"))


async def test_the_unmute_autocomplete_offers_the_persons_mutes(e2e: E2E) -> None:
    server = e2e.server
    await server.run_command("carol", "paper interests mute", topic="graph neural networks")
    await server.run_command("carol", "paper interests mute", topic="diffusion")
    choices = await server.autocomplete("carol", "paper interests unmute", "topic", "gra")
    assert [c["value"] for c in choices] == ["graph neural networks"]
    assert await server.autocomplete("bob", "paper interests unmute", "topic", "") == []


async def test_bad_mutes_are_refused_with_the_reason_and_store_nothing(e2e: E2E) -> None:
    server = e2e.server
    cases = {
        "the of and": "only very common words",
        "one two three four five six seven": "at most 6 words",
        "🙂🙂": "only very common words",
    }
    for topic, said in cases.items():
        refused = await server.run_command("carol", "paper interests mute", topic=topic)
        assert said in answer_text(refused), answer_text(refused)
        assert "Nothing was changed" in answer_text(refused)
    assert not await e2e.db.fetchval("SELECT COUNT(*) FROM mutes")
    nothing = await server.run_command("carol", "paper interests unmute", topic="diffusion")
    assert "You don't mute “diffusion”. You have no muted topics." in answer_text(nothing)
    await server.run_command("carol", "paper interests mute", topic="diffusion models")
    twice = await server.run_command("carol", "paper interests mute", topic="Diffusion model")
    assert "You already mute “diffusion models”" in answer_text(twice)
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM mutes") == 1


async def test_a_channel_feed_never_posts_what_it_muted(e2e: E2E, clock: Clock) -> None:
    server = e2e.server
    rl, other = await _stored(e2e)
    channel = server.add_channel("robot-papers")
    server.set_manage_guild("alice", True)
    await server.run_command(
        "alice",
        "paperadmin feed set",
        channel=channel,
        topics="reinforcement learning, robot control",
        time="09:00",
        count=5,
    )
    elsewhere = server.add_channel("no-feed")
    refused = await server.run_command("alice", "paperadmin feed mute", channel=elsewhere, topic="robots")
    assert "no paper feed" in answer_text(refused)
    muted = await server.run_command(
        "alice", "paperadmin feed mute", channel=channel, topic="reinforcement learning"
    )
    assert re.search(r"in this feed: the \d+ papers here that say it", answer_text(muted))
    assert "⚠️ This feed's topic “reinforcement learning” says it too" in answer_text(muted)
    listing = answer_text(await server.run_command("alice", "paperadmin feed list"))
    assert "🔇 muted: reinforcement learning" in listing
    choices = await server.autocomplete("alice", "paperadmin feed unmute", "topic", "rein", channel=channel)
    assert [c["value"] for c in choices] == ["reinforcement learning"]

    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    clock.now = MONDAY_0800 + timedelta(hours=1)
    await _fire(e2e, feed.id)
    posted = await _posted_ids(e2e, [m for m in server.messages_in(channel) if m.embeds])
    assert feed.mutes == ("reinforcement learning",)
    hidden = await e2e.services.mutes.hidden(feed.mutes)
    assert rl <= hidden
    assert posted & other
    assert not posted & hidden, "the feed posted a muted paper"

    bob_muted = await e2e.services.mutes.muted(server.bob.id)
    assert not bob_muted  # the feed's mute is the feed's alone
    back = await server.run_command(
        "alice", "paperadmin feed unmute", channel=channel, topic="Reinforcement learning"
    )
    assert "🔊 Unmuted" in answer_text(back)
    cleared = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert cleared is not None
    assert cleared.mutes == ()


async def test_a_followed_authors_muted_paper_stays_out_of_the_digest(e2e: E2E) -> None:
    server = e2e.server
    papers = e2e.services.papers
    await papers.upsert_many(
        [PaperRecord(title="Sparse attention", abstract="Sparse.", authors=("Ada Lovelace",))]
    )
    await e2e.services.index.refresh()
    await server.run_command("bob", "paper follow", author="Ada Lovelace")
    await papers.upsert_many(
        [
            PaperRecord(
                title="Reinforcement learning for theorem proving",
                abstract="A prover trained by reinforcement learning.",
                authors=("Ada Lovelace",),
            ),
            PaperRecord(title="Analytical engines today", abstract="Engines.", authors=("Ada Lovelace",)),
        ]
    )
    await e2e.services.index.refresh()
    rows = await e2e.db.fetchall("SELECT id, title FROM papers")
    by_title = {str(r[1]): int(r[0]) for r in rows}
    await server.run_command("bob", "paper interests mute", topic="reinforcement learning")

    note = await server.run_command("bob", "paper digest")
    assert "to your DMs" in answer_text(note)
    await server.eventually(
        lambda: [m for m in server.dm_messages("bob") if m.embeds], what="bob's digest", timeout=10
    )
    await wait_idle(e2e.bot.digest_jobs)
    await server.wait_quiet()
    sent = await _posted_ids(e2e, [m for m in server.dm_messages("bob") if m.embeds])
    assert by_title["Analytical engines today"] in sent
    assert by_title["Reinforcement learning for theorem proving"] not in sent
