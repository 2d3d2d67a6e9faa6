"""Several interests, end to end: each served in every digest, each learning from its own picks.

The library is the learning journey's (four sub-areas of reinforcement learning, and vision and
locomotion papers, each with words of its own); a person follows two interests of different fields and
reacts to the DM digests through the sandbox as a person would. The ICML 2024 list (when
``../shared`` has it) checks the console steps a new user would try.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from shared_data import shared_path
from test_digest_e2e import paper_messages, posted_paper_ids, wait_for_papers
from test_learning_e2e import ENOUGH_TO_TELL_WORDS, _library

from paperindex.tokenizer import tokenize

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

OFFLINE = "offline dataset conservative"
LEGS = "legged locomotion terrain"


async def _digest(e2e: E2E, user: str, seen: int, count: int) -> list[SandboxMessage]:
    """/paper digest, and the paper messages it sent (after the `seen` earlier ones)."""
    await e2e.server.run_command(user, "paper digest")
    messages = await wait_for_papers(e2e, lambda: e2e.server.dm_messages(user), seen + count)
    return paper_messages(messages)[seen:]


async def _areas(e2e: E2E, messages: list[SandboxMessage]) -> list[str]:
    ids = await posted_paper_ids(e2e, messages)
    papers = await e2e.services.papers.get_many(ids)
    return [papers[i].title.split()[0].lower() for i in ids]


def _reason(message: SandboxMessage) -> str:
    return str(message.embeds[0].get("description", ""))


async def _react(e2e: E2E, user: str, message: Any, emoji: str) -> None:
    user_id = e2e.server.user(user).id
    before = await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (user_id,))
    await e2e.server.click(user, message, emoji)
    await e2e.server.eventually(
        lambda: _count_at_least(e2e, user_id, before + 1), what=f"{user}'s {emoji} stored"
    )


async def _count_at_least(e2e: E2E, user_id: int, count: int) -> bool:
    return bool(await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (user_id,)) >= count)


def _shown(result: Any) -> dict[str, str]:
    """`/paper interests show`: each interest's name → its block of lines."""
    description = str(result.embeds[0].get("description", ""))
    blocks: dict[str, str] = {}
    name = ""
    for line in description.splitlines():
        heading = re.match(r"^\S+ \*\*(.+?)\*\*", line)
        if heading:
            name = heading[1]
            blocks[name] = line
        elif name:
            blocks[name] += "\n" + line
    return blocks


async def test_two_interests_each_keep_their_share_after_a_like_on_one(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """Two topics given to `/paper subscribe`; a 👍 on a locomotion paper of the first digest: the next
    digest still carries offline-RL papers, each pick names the interest that brought it, and
    `/paper interests show` lists both with their picks and likes."""
    async with start_paperbot(
        store=await _library(tmp_path, ENOUGH_TO_TELL_WORDS), load_shipped_corpus=False, person_limits=False
    ) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper subscribe", topics=f"{OFFLINE}, {LEGS}", count=6)
        first = await _digest(e2e, "alice", 0, 6)
        areas = await _areas(e2e, first)
        assert set(areas) == {"offline", "locomotion"}, areas
        for message, area in zip(first, areas, strict=True):
            interest = OFFLINE if area == "offline" else LEGS
            assert f"for your interest in {interest}" in _reason(message), _reason(message)
        graph = first[areas.index("locomotion")]
        await _react(e2e, "alice", graph, "👍")

        second = await _digest(e2e, "alice", 6, 6)
        after = await _areas(e2e, second)
        assert after.count("offline") >= 1, f"the 👍 on a locomotion paper took offline RL away: {after}"
        assert after.count("locomotion") >= after.count("offline"), after  # the liked interest's share grew

        shown = _shown(await server.run_command("alice", "paper interests show"))
        offline = next(v for k, v in shown.items() if k.startswith(OFFLINE))
        legs = next(v for k, v in shown.items() if k.startswith(LEGS))
        assert "(from your digest)" in next(k for k in shown if k.startswith(OFFLINE))
        picks = {name: int(re.search(r"(\d+) picks?\b", block)[1]) for name, block in shown.items()}  # type: ignore[index]
        assert sum(picks.values()) == 12, shown
        assert re.search(r"(?:, 1 of them liked|1 pick, liked) · learns from 1 paper you 👍 or 🔖", legs), (
            legs
        )
        assert re.search(r"(?:, 0 of them liked|1 pick, not liked yet)$", offline), offline
        assert "for:" in legs, legs  # a model of its own, from its 👍


async def test_the_digest_header_names_every_interest_it_serves(start_paperbot: Any, tmp_path: Path) -> None:
    """Subscribed with one topic, a second interest added later: the digest's first message names
    both interests its papers came from, not only the topic the subscription was made with."""
    async with start_paperbot(
        store=await _library(tmp_path), load_shipped_corpus=False, person_limits=False
    ) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper subscribe", topics=OFFLINE, count=6)
        await server.run_command("alice", "paper interests add", topic=LEGS)
        papers = await _digest(e2e, "alice", 0, 6)
        assert set(await _areas(e2e, papers)) == {"offline", "locomotion"}
        headers = [m.content for m in server.dm_messages("alice") if m.content.startswith("📚")]
        assert len(headers) == 1, headers
        assert f"6 new papers on *{OFFLINE}, {LEGS}*" in headers[0], headers[0]


async def test_a_dislike_moves_only_the_interest_that_brought_the_paper(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """Both interests liked once; then a 👎 on an offline-RL pick: the locomotion interest's picks stay
    exactly what they were (its model saw nothing), the offline interest's move."""
    async with start_paperbot(
        store=await _library(tmp_path, ENOUGH_TO_TELL_WORDS), load_shipped_corpus=False, person_limits=False
    ) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper interests add", topic=OFFLINE)
        await server.run_command("alice", "paper interests add", topic=LEGS)
        await server.run_command("alice", "paper subscribe", count=6)
        first = await _digest(e2e, "alice", 0, 6)
        areas = await _areas(e2e, first)
        await _react(e2e, "alice", first[areas.index("locomotion")], "👍")
        await _react(e2e, "alice", first[areas.index("offline")], "👍")
        user_id = server.alice.id

        async def preview() -> dict[str, list[int]]:
            picks = await e2e.services.recommender.recommend(user_id, count=10, mark_shown=False)
            by: dict[str, list[int]] = {"offline": [], "locomotion": []}
            for pick in picks:
                by["offline" if OFFLINE in pick.reason else "locomotion"].append(pick.paper_id)
            return by

        before = await preview()
        offline_left = [m for m, a in zip(first, areas, strict=True) if a == "offline"][1]
        await _react(e2e, "alice", offline_left, "👎")
        after = await preview()
        n = min(len(before["locomotion"]), len(after["locomotion"]))
        assert n >= 3
        assert after["locomotion"][:n] == before["locomotion"][:n], (
            "the locomotion interest moved on an offline 👎"
        )
        assert after["offline"] != before["offline"], "the offline interest did not learn from its 👎"
        shown = _shown(await server.run_command("alice", "paper interests show"))
        assert "against:" in next(v for k, v in shown.items() if k.startswith(OFFLINE))
        assert "against:" not in next(v for k, v in shown.items() if k.startswith(LEGS))


async def test_pausing_one_interest_freezes_only_it(start_paperbot: Any, tmp_path: Path) -> None:
    """Pausing the offline interest: the next digest is all locomotion papers, and a 👍 on an offline paper
    found by a search teaches it nothing (what it learned is shown as before); resumed, it is back."""
    async with start_paperbot(
        store=await _library(tmp_path), load_shipped_corpus=False, person_limits=False
    ) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper interests add", topic=OFFLINE)
        await server.run_command("alice", "paper interests add", topic=LEGS)
        await server.run_command("alice", "paper subscribe", count=4)
        first = await _digest(e2e, "alice", 0, 4)
        areas = await _areas(e2e, first)
        await _react(e2e, "alice", first[areas.index("offline")], "👍")
        learned = _shown(await server.run_command("alice", "paper interests show"))
        offline_before = next(v for k, v in learned.items() if k.startswith(OFFLINE))

        paused = await server.run_command("alice", "paper interests pause", interest=OFFLINE, paused=True)
        assert "Paused “offline dataset conservative”" in paused.content
        frozen = await _areas(e2e, await _digest(e2e, "alice", 4, 4))
        assert set(frozen) == {"locomotion"}, frozen
        found = await server.run_command("alice", "paper search", query="offline batch trajectories", limit=3)
        await _react(e2e, "alice", found, "👍")  # (its first 👍 button: the first result)
        shown = _shown(await server.run_command("alice", "paper interests show"))
        offline_now = next(v for k, v in shown.items() if k.startswith(OFFLINE))
        assert "⏸️ paused" in offline_now
        # the same learned terms in the same order (a word may be shown in another of its forms: the
        # search just typed "batch", the paper had "batching" — one stem)
        assert _terms(offline_now.replace(" · ⏸️ paused", "")) == _terms(offline_before), (
            offline_before,
            offline_now,
        )

        await server.run_command("alice", "paper interests pause", interest=OFFLINE, paused=False)
        back = await _areas(e2e, await _digest(e2e, "alice", 8, 4))
        assert "offline" in back, back


def _terms(shown: str) -> str:
    """An interest's line with each `word` as the term it stands for (its stem)."""
    return re.sub(r"`([^`]+)`", lambda m: "`" + " ".join(tokenize(m.group(1))) + "`", shown)


def _icml_kind(title: str, abstract: str) -> str:
    text = f"{title} {abstract}".lower()
    if re.search(r"\bkv[- ]?cache|key[- ]value cache", text):
        return "kv"
    if "offline" in text and re.search(r"reinforcement|\brl\b|polic", text):
        return "offline"
    return "other"


@pytest.mark.shared
async def test_the_icml_2024_console_steps_serve_both_interests(start_paperbot: Any, sandbox: Any) -> None:
    """On the ICML 2024 list, README's console steps: two topics, a search, 👍 on its first result;
    `/paper recommend count:10` gives at least three papers of each interest (it gave none on offline
    RL when the first 👍 made the topics' weight start from zero); `interests show` lists both, the
    search's 👍 teaching the kv-cache one; pausing that one leaves offline RL alone in the picks."""
    icml = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    async with start_paperbot(operator_ids=frozenset({sandbox.alice.id})) as e2e:
        server = e2e.server
        loaded = await server.run_command("alice", "paperadmin ingest", file=icml, timeout=60)
        assert "added **2572**" in loaded.text, loaded.text
        space, index = e2e.services.recommender.space, e2e.services.search.index
        await server.eventually(  # the bot places new papers in the paper space once the store is quiet
            lambda: space.ready and space.placed == index.n_slots, what="the papers placed", timeout=30
        )
        await server.run_command("bob", "paper interests add", topic="offline reinforcement learning")
        await server.run_command("bob", "paper interests add", topic="kv cache")
        found = await server.run_command("bob", "paper search", query="kv cache quantization", limit=3)
        await server.click("bob", found, 1)
        await server.eventually(
            lambda: _count_at_least(e2e, server.bob.id, 1), what="bob's 👍 stored", timeout=10
        )
        picks = await server.run_command("bob", "paper recommend", count=10, timeout=30)
        ids = [int(i) for i in re.findall(r"pb:like:(\d+)", str(picks.message.components))]
        assert len(ids) == 10, picks.text
        papers = await e2e.services.papers.get_many(ids)
        kinds = [_icml_kind(papers[i].title, papers[i].abstract) for i in ids]
        listed = [(k, papers[i].title[:60]) for k, i in zip(kinds, ids, strict=True)]
        assert kinds.count("offline") >= 3, listed
        assert kinds.count("kv") >= 3, listed
        assert "for your interest in offline reinforcement learning" in picks.text
        # ten papers get 👍 and 🔖 buttons only (25 at most): the footer does not promise a 👎
        assert "pb:dislike" not in str(picks.message.components)
        assert "🔖 save" in picks.text, picks.text
        assert "👎 fewer like this" not in picks.text, picks.text
        assert kinds.count("offline") + kinds.count("kv") >= 9, listed
        shown = _shown(await server.run_command("bob", "paper interests show"))
        assert set(shown) == {"offline reinforcement learning", "kv cache"}, shown
        assert re.search(
            r"(?m)(?:\d+ picks, 0 of them liked|1 pick, not liked yet)$",
            shown["offline reinforcement learning"],
        )
        # the 👍 from the search taught the kv cache interest, though none of its picks was liked
        assert re.search(
            r"(?:\d+ picks, 0 of them liked|1 pick, not liked yet) · learns from 1 paper you 👍 or 🔖 · for:",
            shown["kv cache"],
        ), shown
        paused = await server.run_command("bob", "paper interests pause", interest="kv cache", paused=True)
        assert "Paused “kv cache”" in paused.content
        after = await server.run_command("bob", "paper recommend", count=5, timeout=30)
        assert "for your interest in kv cache" not in after.text
        assert after.text.count("for your interest in offline reinforcement learning") == 5
        assert "pb:dislike" in str(after.message.components)
        assert "👎 fewer like this" in after.text
