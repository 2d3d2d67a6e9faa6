"""At home where people talk: threads, forum posts, and a channel where the bot may not add reactions.

Slash commands, reactions and feeds work in a thread and in a forum post as in a channel (a feed
posting to an archived thread unarchives it). The bot checks its permissions before it asks (Discord
counts every 403 toward the invalid-request limit): where it may not add reactions a paper still goes
out, with its 👍 👎 🔖 as buttons, and an admin hears once which permission is missing — never
"Something went wrong" after the paper was posted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from builders import Clock, wait_idle

from bot.sandbox import Permissions

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage


MONDAY_0900 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    """The digest service's clock: 08:00 UTC on a Monday, until a test moves it."""
    return Clock(MONDAY_0900 - timedelta(hours=1))


@pytest.fixture
async def e2e(clock: Clock, start_paperbot: Any) -> AsyncIterator[E2E]:
    async with start_paperbot() as running:
        yield running


async def fire(e2e: E2E, sub_id: int) -> None:
    """APScheduler runs the subscription's job now (as at its trigger time)."""
    job = e2e.bot.digest_jobs.scheduler.get_job(f"digest:{sub_id}")
    assert job is not None
    job.modify(next_run_time=datetime.now(UTC))
    e2e.bot.digest_jobs.scheduler.wakeup()


def button_emoji(message: SandboxMessage) -> list[str]:
    return [(b.get("emoji") or {}).get("name", "") for b in message.buttons]


async def test_a_channel_without_the_reaction_permission_gets_buttons_and_one_notice_to_an_admin(
    e2e: E2E, clock: Clock
) -> None:
    server = e2e.server
    channel = server.add_channel("no-reactions")
    server.set_permissions(channel, server.bot_user, deny=Permissions.ADD_REACTIONS)

    shown = await server.run_command("bob", "paper show", paper="1", where=channel)
    assert shown.message is not None
    assert button_emoji(shown.message)[:3] == ["👍", "👎", "🔖"]
    await server.wait_quiet()
    assert not shown.message.reactions
    assert not server.requests_matching("PUT /channels/*/messages/*/reactions/**"), "asked anyway: a 403"
    assert not [r for r in server.requests if r.status == 403]
    assert shown.followups == [], "bob cannot fix it: he is not told, and nothing went wrong"
    pressed = await server.click("bob", shown.message, "👍")
    assert pressed.ephemeral
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (server.bob.id,)),
        what="bob's 👍 press stored",
    )

    # The server's owner hears of it at their next command, once.
    owner = server.app_owner
    answer = await server.run_command(owner, "paper recommend")
    told = "\n".join(m.content for m in answer.followups)
    assert f"<#{channel.id}>" in told
    assert "**Add Reactions**" in told
    again = await server.run_command(owner, "paper recommend")
    assert "Add Reactions" not in "\n".join(m.content for m in again.followups)
    shown_again = await server.run_command("alice", "paper show", paper="2", where=channel)
    assert button_emoji(shown_again.message)[:3] == ["👍", "👎", "🔖"]
    assert not shown_again.followups, "told once, not at every paper"

    # A feed there posts its papers with buttons too, and stays on.
    server.set_manage_guild("alice", True)
    set_up = await server.run_command(
        "alice", "paperadmin feed set", channel=channel, topics="quantization", time="09:00", count=2
    )
    assert "buttons" in "\n".join(m.content for m in set_up.messages)
    feed = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert feed is not None
    clock.now = MONDAY_0900
    await fire(e2e, feed.id)
    await server.eventually(
        lambda: len([m for m in server.messages_in(channel) if m.embeds]) == 4,
        what="the feed's two papers",
        timeout=10,
    )
    await wait_idle(e2e.bot.digest_jobs)
    papers = [m for m in server.messages_in(channel) if m.embeds][2:]
    assert all(button_emoji(m)[:3] == ["👍", "👎", "🔖"] for m in papers)
    assert not server.requests_matching("PUT /channels/*/messages/*/reactions/**")
    still = await e2e.services.digests.subscriptions.for_channel(channel.id)
    assert still is not None
    assert still.active


async def test_a_command_and_a_reaction_in_a_thread_and_in_a_forum_post(e2e: E2E) -> None:
    """/paper show in a thread posts the paper there with the bot's 👍 👎 🔖, and bob's 👍 on it is
    learned; in a forum post /paper search lists papers whose buttons work."""
    server = e2e.server
    thread = server.add_thread("papers", "kv-cache-reading", by="alice")
    shown = await server.run_command("alice", "paper show", paper="1", where=thread)
    assert shown.message is not None
    assert shown.message.channel is thread
    await server.eventually(
        lambda: all(server.bot_user.id in shown.message.reactions.get(e, []) for e in "👍👎🔖"),  # type: ignore[union-attr]
        what="the bot's 👍 👎 🔖 in the thread",
    )
    await server.react("bob", shown.message, "👍")
    await server.eventually(
        lambda: e2e.db.fetchval(
            "SELECT COUNT(*) FROM feedback WHERE user_id = ? AND signal = 'like'", (server.bob.id,)
        ),
        what="bob's 👍 in the thread stored",
    )

    forum = server.add_forum("paper-club")
    post = server.add_forum_post(forum, "What should we read?", "Suggestions welcome.", by="bob")
    listing = await server.run_command("carol", "paper search", query="quantization", limit=3, where=post)
    assert listing.message is not None
    assert listing.message.channel is post
    saved = await server.click("carol", listing, "🔖")
    assert saved.ephemeral
    await server.eventually(
        lambda: e2e.db.fetchval(
            "SELECT COUNT(*) FROM feedback WHERE user_id = ? AND signal = 'save'", (server.carol.id,)
        ),
        what="carol's 🔖 from the forum post stored",
    )


async def test_a_feed_in_a_thread_posts_there_and_unarchives_it(e2e: E2E, clock: Clock) -> None:
    server = e2e.server
    thread = server.add_thread("papers", "daily-picks", by="alice")
    server.set_manage_guild("alice", True)
    answer = await server.run_command(
        "alice", "paperadmin feed set", channel=thread, topics="quantization", time="09:00", count=2
    )
    assert f"Feed for <#{thread.id}>" in "\n".join(m.content for m in answer.messages)
    feed = await e2e.services.digests.subscriptions.for_channel(thread.id)
    assert feed is not None
    server.archive_thread(thread)  # nobody talked there for a day
    clock.now = MONDAY_0900
    await fire(e2e, feed.id)
    await server.eventually(
        lambda: len([m for m in server.messages_in(thread) if m.embeds]) == 2,
        what="the feed's two papers in the thread",
        timeout=10,
    )
    await wait_idle(e2e.bot.digest_jobs)
    assert thread.thread is not None
    assert not thread.thread.archived, "posting unarchived the thread"
    papers = [m for m in server.messages_in(thread) if m.embeds]
    await server.eventually(
        lambda: all(len(m.reactions) == 3 for m in papers), what="👍 👎 🔖 on the feed's papers"
    )
