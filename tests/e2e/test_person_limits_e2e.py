"""Fairness between people, end to end: one person repeating the costly commands is told to wait (and
nothing of it is done), others are not held up, and the slow part of `/paper subscribe` and
`/paper interests add` (how broad a topic is) runs beside the answers of everyone else."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from bot.services.recommend import topic_breadth

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox import InteractionResult

TRY_AGAIN = re.compile(r"^⏳ Try again in (\d+ min)?( ?\d+ s)?: ")


def refused(result: InteractionResult) -> bool:
    return result.ephemeral and bool(TRY_AGAIN.match(result.content))


async def test_a_third_digest_in_a_row_is_refused_and_only_one_goes_out_at_a_time(e2e: E2E) -> None:
    """`/paper digest` twice at once: one goes out, the other is told one is going out already; the
    next one goes out; the one after that is told to wait about 10 minutes, and nothing more is sent."""
    server = e2e.server
    await server.run_command("bob", "paper subscribe", topics="language models", count=1)
    # the first digest's first message waits half a second for Discord: the second command comes meanwhile
    server.faults.add("POST /channels/*/messages", "429", retry_after=0.5)
    both = await asyncio.gather(
        server.run_command("bob", "paper digest"), server.run_command("bob", "paper digest")
    )
    notes = sorted(result.content for result in both)
    assert notes[0].startswith("Another digest of yours is going out right now"), notes
    assert notes[1].startswith("📬 Sent 1 paper to your DMs"), notes
    await server.wait_quiet()
    third = await server.run_command("bob", "paper digest")
    assert third.content.startswith("📬 Sent 1 paper to your DMs"), third.content
    await server.wait_quiet()
    sent = len(server.dm_messages("bob"))
    runs = await e2e.db.fetchval("SELECT COUNT(*) FROM digest_runs")

    fourth = await server.run_command("bob", "paper digest")
    assert refused(fourth), fourth.content
    assert "Try again in 9 min" in fourth.content or "Try again in 10 min" in fourth.content
    assert "`/paper digest` is limited to 2 at once, then one every 10 min" in fourth.content
    assert not fourth.deferred  # refused at once, before any work
    await server.wait_quiet()
    assert len(server.dm_messages("bob")) == sent
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM digest_runs") == runs

    other = await server.run_command("carol", "paper digest")  # Carol's budget is her own
    assert not refused(other), other.content


async def test_a_burst_of_searches_past_the_limit_is_refused_for_that_person_only(e2e: E2E) -> None:
    """24 searches by Bob at once: 20 are answered (a few more if the bot took seconds over them), the
    rest told to wait and not stored; Carol searches meanwhile as usual, and Bob's ◀ ▶ on her result
    list is refused too, leaving her message as it was."""
    server = e2e.server
    results = await asyncio.gather(
        *(server.run_command("bob", "paper search", query="language models", limit=1) for _ in range(24))
    )
    answered = [r for r in results if not r.ephemeral]
    turned_away = [r for r in results if refused(r)]
    assert len(answered) + len(turned_away) == 24
    assert 20 <= len(answered) <= 22, len(answered)
    assert all("searching (`/paper search`, `/paper similar`, ◀ ▶)" in r.content for r in turned_away)

    carol = await server.run_command("carol", "paper search", query="language models", limit=2)
    assert not carol.ephemeral
    assert carol.embed is not None
    before = carol.embed["footer"]["text"]
    pressed = await server.click("bob", carol, "Next ▶")
    assert refused(pressed), pressed.content
    assert carol.embed["footer"]["text"] == before

    await e2e.services.writes.drained()
    stored = await e2e.db.fetchval("SELECT COUNT(*) FROM searches WHERE user_id = ?", (server.bob.id,))
    assert stored == len(answered)


async def test_recommend_past_the_limit_is_refused_before_any_work(e2e: E2E) -> None:
    """Seven `/paper recommend` at once: five answered, two told to wait (at once, not deferred)."""
    server = e2e.server
    await server.run_command("bob", "paper interests add", topic="speculative decoding")
    results = await asyncio.gather(*(server.run_command("bob", "paper recommend") for _ in range(7)))
    turned_away = [r for r in results if refused(r)]
    assert len(turned_away) == 2, [r.content for r in results]
    assert all(not r.deferred and "`/paper recommend`" in r.content for r in turned_away)
    assert sum(1 for r in results if r.deferred) == 5


@pytest.mark.parametrize("command", ["paper subscribe", "paper interests add"])
async def test_how_broad_a_topic_is_is_worked_out_off_the_event_loop(
    e2e: E2E, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """While the bot works out how broad Bob's new topics are (made here to take 0.8 s a topic; a broad
    topic of 36k papers takes 0.15 s), its event loop — which answers everyone, and runs the sandbox
    Discord too in this test — is never held up for more than a moment."""
    real = topic_breadth.breadth

    def slow(engine: Any, topic: str) -> Any:
        time.sleep(0.8)
        return real(engine, topic)

    for extension in ("bot.exts.subscriptions", "bot.exts.recommend"):  # as the bot loaded them
        monkeypatch.setattr(sys.modules[extension], "breadth", slow)
    server = e2e.server
    option = (
        {"topics": "language models, quantization"}
        if command == "paper subscribe"
        else {"topic": "quantization"}
    )
    loop = asyncio.get_running_loop()
    longest = 0.0

    async def watch() -> None:
        nonlocal longest
        while True:
            asked = loop.time()
            await asyncio.sleep(0.01)
            longest = max(longest, loop.time() - asked - 0.01)

    watcher = asyncio.create_task(watch())
    try:
        answer = await server.run_command("bob", command, **option)
    finally:
        watcher.cancel()
    assert answer.ephemeral
    assert "Subscribed" in answer.text or "Added" in answer.text, answer.text
    assert longest < 0.3, f"the event loop stalled {longest:.2f} s"
