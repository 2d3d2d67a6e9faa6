"""Polls and threads started from a message, as Discord documents them: a poll made with a message,
votes taken and taken back (MESSAGE_POLL_VOTE_ADD/REMOVE under the poll intents), ended by its
author or by its expiry, its results and voters; a thread from a message (its id the message's) and
posts in it. Every limit Discord sets is refused as Discord refuses it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import aiohttp
import discord
import pytest

from bot.sandbox import SandboxServer
from bot.sandbox.emulator.recorder import ClientRefused
from bot.sandbox.emulator.state import Permissions
from bot.sandbox.harness import running_client


def poll(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "question": {"text": "Which paper next week?"},
        "answers": [{"poll_media": {"text": "Medusa"}}, {"poll_media": {"text": "FlashAttention"}}],
        "duration": 48,
        "allow_multiselect": False,
        "layout_type": 1,
    }
    body.update(changes)
    return body


@pytest.fixture
async def rest(sandbox: SandboxServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(
        base_url=sandbox.api_base.rstrip("/") + "/", headers={"Authorization": f"Bot {sandbox.token}"}
    ) as session:
        yield session


def url(path: str) -> str:
    return path.lstrip("/")


async def post_poll(rest: aiohttp.ClientSession, channel_id: int, body: dict[str, Any]) -> tuple[int, Any]:
    async with rest.post(url(f"/channels/{channel_id}/messages"), json={"poll": body}) as response:
        return response.status, await response.json()


async def test_a_poll_is_voted_ended_and_counted(sandbox: SandboxServer, rest: aiohttp.ClientSession) -> None:
    papers = sandbox.channel("papers")
    status, created = await post_poll(rest, papers.id, poll())
    assert status == 200
    assert [a["answer_id"] for a in created["poll"]["answers"]] == [1, 2]
    assert created["poll"]["results"]["is_finalized"] is False
    message = sandbox.message(int(created["id"]))
    assert message is not None
    assert sandbox.polls.vote("bob", message, "Medusa") == 1
    sandbox.polls.vote("carol", message, 2)
    sandbox.polls.unvote("carol", message, 2)
    sandbox.polls.vote("carol", message, 1)
    added = [e for e in sandbox.gateway_events if e.t == "MESSAGE_POLL_VOTE_ADD"]
    assert added == []  # the default test client asks for no poll intents: none is sent

    with pytest.raises(ClientRefused, match="remove the vote first"):
        sandbox.polls.vote("bob", message, 2)  # one answer only
    with pytest.raises(ClientRefused, match="no answer"):
        sandbox.polls.vote("alice", message, 3)
    async with rest.get(url(f"/channels/{papers.id}/polls/{message.id}/answers/1")) as response:
        voters = (await response.json())["users"]
    assert sorted(u["username"] for u in voters) == ["bob", "carol"]
    async with rest.get(url(f"/channels/{papers.id}/polls/{message.id}/answers/1?limit=101")) as response:
        assert (response.status, (await response.json())["code"]) == (400, 50035)
    async with rest.post(url(f"/channels/{papers.id}/polls/{message.id}/expire")) as response:
        ended = await response.json()
    assert ended["poll"]["results"] == {
        "is_finalized": True,
        "answer_counts": [{"id": 1, "count": 2, "me_voted": False}],
    }
    with pytest.raises(ClientRefused, match="over"):
        sandbox.polls.vote("alice", message, 2)
    async with rest.post(url(f"/channels/{papers.id}/polls/{message.id}/expire")) as response:
        assert (response.status, (await response.json())["code"]) == (400, 520001)


async def test_a_poll_expires_on_the_clock(sandbox: SandboxServer, rest: aiohttp.ClientSession) -> None:
    papers = sandbox.channel("papers")
    _, created = await post_poll(rest, papers.id, poll(duration=1))
    message = sandbox.message(int(created["id"]))
    assert message is not None
    sandbox.clock.advance(3601)
    async with rest.get(url(f"/channels/{papers.id}/messages/{message.id}")) as response:
        assert (await response.json())["poll"]["results"]["is_finalized"] is True


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (poll(question={"text": "q" * 301}), "question"),
        (poll(question={"text": ""}), "question"),
        (poll(answers=[]), "answers"),
        (poll(answers=[{"poll_media": {"text": f"a{n}"}} for n in range(11)]), "answers"),
        (poll(answers=[{"poll_media": {"text": "a" * 56}}]), "answers"),
        (poll(answers=[{"poll_media": {}}]), "answers"),
        (poll(duration=0), "duration"),
        (poll(duration=769), "duration"),
        (poll(duration=1.5), "duration"),
        (poll(layout_type=2), "layout_type"),
        (poll(allow_multiselect="yes"), "allow_multiselect"),
    ],
)
async def test_what_discord_refuses_in_a_poll(
    sandbox: SandboxServer, rest: aiohttp.ClientSession, body: dict[str, Any], where: str
) -> None:
    status, answer = await post_poll(rest, sandbox.channel("papers").id, body)
    assert (status, answer["code"]) == (400, 50035)
    assert where in answer["errors"]["poll"]
    assert sandbox.messages_in("papers") == []


async def test_the_longest_poll_discord_takes(sandbox: SandboxServer, rest: aiohttp.ClientSession) -> None:
    body = poll(
        question={"text": "q" * 300},
        answers=[{"poll_media": {"text": "a" * 55}} for _ in range(10)],
        duration=768,
    )
    status, _ = await post_poll(rest, sandbox.channel("papers").id, body)
    assert status == 200


async def test_polls_need_send_polls_and_cannot_be_edited_or_ended_by_others(
    sandbox: SandboxServer, rest: aiohttp.ClientSession
) -> None:
    papers = sandbox.channel("papers")
    _, created = await post_poll(rest, papers.id, poll())
    async with rest.patch(
        url(f"/channels/{papers.id}/messages/{created['id']}"), json={"poll": poll()}
    ) as response:
        assert (await response.json())["code"] == 520003
    plain = await sandbox.send_message("bob", "papers", "hello")
    async with rest.post(url(f"/channels/{papers.id}/polls/{plain.id}/expire")) as response:
        assert (await response.json())["code"] == 520006
    sandbox.set_permissions(papers, sandbox.bot_user, deny=Permissions.SEND_POLLS)
    status, answer = await post_poll(rest, papers.id, poll())
    assert (status, answer["code"]) == (403, 50013)


async def test_a_thread_from_a_message_and_a_post_in_it(
    sandbox: SandboxServer, rest: aiohttp.ClientSession
) -> None:
    papers = sandbox.channel("papers")
    async with rest.post(url(f"/channels/{papers.id}/messages"), json={"content": "Winner: Medusa"}) as r:
        announced = await r.json()
    start = url(f"/channels/{papers.id}/messages/{announced['id']}/threads")
    async with rest.post(start, json={"name": "", "auto_archive_duration": 10080}) as response:
        assert (await response.json())["code"] == 50035
    async with rest.post(start, json={"name": "x" * 101}) as response:
        assert (await response.json())["code"] == 50035
    async with rest.post(start, json={"name": "Medusa", "auto_archive_duration": 30}) as response:
        assert (await response.json())["code"] == 50035
    async with rest.post(start, json={"name": "Medusa", "auto_archive_duration": 10080}) as response:
        thread = await response.json()
    assert thread["id"] == announced["id"]
    assert thread["parent_id"] == str(papers.id)
    async with rest.post(start, json={"name": "Again"}) as response:
        assert (await response.json())["code"] == 160004
    async with rest.post(url(f"/channels/{thread['id']}/messages"), json={"content": "Read it"}) as r:
        assert r.status == 200
    in_thread = sandbox.channel(int(thread["id"]))
    assert [m.content for m in sandbox.messages_in(in_thread)] == ["Read it"]
    (inside,) = sandbox.messages_in(in_thread)
    async with rest.post(
        url(f"/channels/{thread['id']}/messages/{inside.id}/threads"), json={"name": "x"}
    ) as r:
        assert (r.status, (await r.json())["code"]) == (400, 50024)  # not from a message in a thread
    sandbox.set_permissions(papers, sandbox.bot_user, deny=Permissions.CREATE_PUBLIC_THREADS)
    async with rest.post(url(f"/channels/{papers.id}/messages"), json={"content": "Other"}) as r:
        other = await r.json()
    async with rest.post(
        url(f"/channels/{papers.id}/messages/{other['id']}/threads"), json={"name": "x"}
    ) as r:
        assert (r.status, (await r.json())["code"]) == (403, 50013)


async def test_vote_events_reach_a_client_with_the_poll_intent(sandbox: SandboxServer) -> None:
    intents = discord.Intents.none()
    intents.guilds = True
    intents.polls = True
    seen: list[discord.RawPollVoteActionEvent] = []
    removed: list[discord.RawPollVoteActionEvent] = []
    client = discord.Client(intents=intents)
    client.event(_collect(seen, "on_raw_poll_vote_add"))
    client.event(_collect(removed, "on_raw_poll_vote_remove"))
    async with running_client(client, sandbox):
        channel = client.get_channel(sandbox.channel("papers").id)
        assert isinstance(channel, discord.TextChannel)
        sent = await channel.send(
            poll=discord.Poll("Which paper?", duration=timedelta(hours=2))
            .add_answer(text="Medusa")
            .add_answer(text="FlashAttention")
        )
        message = sandbox.message(sent.id)
        assert message is not None
        sandbox.polls.vote("bob", message, "FlashAttention")
        sandbox.polls.unvote("bob", message, "FlashAttention")
        await sandbox.eventually(lambda: len(seen) == 1 and len(removed) == 1, what="the vote events")
        assert (seen[0].answer_id, seen[0].user_id) == (2, sandbox.user("bob").id)
        ended = await sent.end_poll()
        assert ended.poll is not None
        assert ended.poll.is_finalised()
        assert [a.vote_count for a in ended.poll.answers] == [0, 0]
        thread = await sent.create_thread(name="Which paper?", auto_archive_duration=10080)
        assert thread.id == sent.id
        await sandbox.eventually(lambda: client.get_channel(sent.id) is not None, what="THREAD_CREATE")
        await thread.send("In the thread")
        assert [m.content for m in sandbox.messages_in(sandbox.channel(thread.id))] == ["In the thread"]


def _collect(into: list[Any], name: str) -> Any:
    async def handler(event: Any) -> None:
        into.append(event)

    handler.__name__ = name
    return handler
