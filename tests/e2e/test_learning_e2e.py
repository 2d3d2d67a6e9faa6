"""Learning from reactions, end to end: a broad field narrowed by 👍, 👎 moving away, pause freezing it.

The corpus is built here: four sub-areas of reinforcement learning (every abstract says
"reinforcement learning", each sub-area has words of its own) and papers of other fields. A person
types only the broad field, reacts to the DM digests through the sandbox as a person would, and the
next digests are read back by sub-area.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from test_digest_e2e import paper_messages, posted_paper_ids, wait_for_papers

from bot.services.papers.ingest import ingest_bytes
from paperindex.tokenizer import tokenize
from storage.store import open_database

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

# Area names are one word each, so every area's titles have the same shape and the same length.
AREAS = {
    "multiagent": "agents cooperative communication teams decentralized coordination emergent game "
    "opponents equilibrium nash centralized critics credit assignment swarm population league",
    "offline": "offline dataset logged conservative behavior cloning pessimism distribution shift "
    "batch fixed trajectories support constraint extrapolation importance weighting",
    "locomotion": "legged quadruped locomotion gait terrain sim-to-real torque joints contact "
    "balance walking hardware actuators domain randomization motor",
    "alignment": "language models human preferences feedback reward model fine-tuning alignment "
    "chat instructions proximal preference pairs annotators helpful harmless",
}
OTHER = {
    "vision": "images convolutional segmentation pixels detection objects bounding boxes video frames",
    "graphs": "graphs nodes edges message passing molecules neighbourhoods spectral pooling",
}
RL_WORDS = "policy reward agent value environment return exploration actions states episodes"
#: papers of each sub-area and of each other field: 520 in all are enough for the paper space to tell a
#: field's words from general English (learned words are listed only then), the default 160 are not
ENOUGH_TO_TELL_WORDS = (100, 60)


def _papers(per_area: int = 30, per_other_field: int = 20) -> list[dict[str, Any]]:
    rng = random.Random(7)
    papers = []
    for area, words in {**AREAS, **OTHER}.items():
        own = words.split()
        for n in range(per_area if area in AREAS else per_other_field):
            text = rng.choices(own, k=rng.randint(12, 24))
            if area in AREAS:
                text += rng.choices(RL_WORDS.split(), k=8)
                lead = "We study reinforcement learning"
            else:
                lead = "We study deep learning"
            rng.shuffle(text)
            papers.append(
                {
                    "id": f"{area}-{n}",
                    "title": f"{area.capitalize()} study {n}: {' '.join(text[:4])}",
                    "abstract": f"{lead} with {' '.join(text)}.",
                    "authors": [f"Author {area} {n}"],
                    "venue": "TestConf",
                    "year": 2024,
                }
            )
    return papers


async def _library(tmp_path: Path, sizes: tuple[int, int] = (30, 20)) -> Path:
    """A store of :func:`_papers` (``sizes``: papers of each sub-area, of each other field)."""
    db_path = tmp_path / "library.db"
    async with await open_database(db_path) as db:
        await ingest_bytes(db, "library.jsonl", "\n".join(json.dumps(p) for p in _papers(*sizes)).encode())
    return db_path


async def _digest(e2e: E2E, user: str, seen: int) -> list[SandboxMessage]:
    """/paper digest, and the paper messages it sent (after the `seen` earlier ones)."""
    await e2e.server.run_command(user, "paper digest")
    messages = await wait_for_papers(e2e, lambda: e2e.server.dm_messages(user), seen + 5)
    return paper_messages(messages)[seen:]


async def _areas(e2e: E2E, messages: list[SandboxMessage]) -> list[str]:
    ids = await posted_paper_ids(e2e, messages)
    papers = await e2e.services.papers.get_many(ids)
    return [papers[i].title.split()[0].lower() for i in ids]


async def _react_all(
    e2e: E2E, user: str, messages: list[SandboxMessage], areas: list[str], liked: str
) -> None:
    user_id = getattr(e2e.server, user).id
    before = await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (user_id,))
    for message, area in zip(messages, areas, strict=True):
        await e2e.server.react(user, message, "👍" if area == liked else "👎")
    await e2e.server.eventually(
        lambda: _stored(e2e, user_id, before + len(messages)), what=f"{user}'s reactions stored"
    )


async def _stored(e2e: E2E, user_id: int, count: int) -> bool:
    return bool(await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (user_id,)) >= count)


async def test_a_broad_field_is_narrowed_by_reactions_moved_by_dislikes_and_frozen_by_pause(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """Typing "reinforcement learning" and 👍ing multi-agent papers (👎 the rest) makes the next digest
    mostly multi-agent, and `/paper interests show` lists multi-agent words as learned (none of them
    against); while learning is paused, 👎 on all of it changes nothing; once resumed, 👎s
    move the digests away from multi-agent papers within three digests."""
    # days of digests, seconds apart: without the per-person limit on /paper digest
    async with start_paperbot(
        store=await _library(tmp_path, ENOUGH_TO_TELL_WORDS), load_shipped_corpus=False, person_limits=False
    ) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper subscribe", topics="reinforcement learning", count=5)
        seen = 0
        for _ in range(4):  # react until two multi-agent papers were liked
            digest = await _digest(e2e, "alice", seen)
            seen += len(digest)
            areas = await _areas(e2e, digest)
            assert all(a in AREAS for a in areas), f"the broad field brought other fields: {areas}"
            await _react_all(e2e, "alice", digest, areas, liked="multiagent")
            likes = await e2e.db.fetchval(
                "SELECT COUNT(*) FROM feedback WHERE user_id = ? AND signal = 'like'", (server.alice.id,)
            )
            if likes >= 2:
                break
        narrowed = await _areas(e2e, digest := await _digest(e2e, "alice", seen))
        seen += len(digest)
        assert narrowed.count("multiagent") >= 4, narrowed
        learned, against = await _learned_words(e2e, "alice")
        multiagent = _terms(AREAS["multiagent"].split())
        assert len(_terms(learned[:4]) & multiagent) >= 3, learned
        assert not _terms(against) & multiagent, against

        paused = await server.run_command("alice", "paper interests pause")
        assert "paused" in paused.content.lower()
        for message in digest:
            await server.react("alice", message, "👎")
        await server.wait_quiet()
        frozen = await _areas(e2e, digest := await _digest(e2e, "alice", seen))
        seen += len(digest)
        assert frozen.count("multiagent") >= 4, f"learning was paused, yet the digest moved: {frozen}"

        await server.run_command("alice", "paper interests pause")  # resume
        areas = frozen
        for _ in range(3):  # she has gone off multi-agent work: 👎 on each digest
            await _react_all(e2e, "alice", digest, areas, liked="none")
            areas = await _areas(e2e, digest := await _digest(e2e, "alice", seen))
            seen += len(digest)
            if areas.count("multiagent") < frozen.count("multiagent"):
                break
        assert areas.count("multiagent") < frozen.count("multiagent"), (frozen, areas)


def _terms(words: list[str]) -> set[str]:
    """The index terms of words (a word is shown in whichever form the process saw first)."""
    return {t for w in words for t in tokenize(w)}


async def _learned_words(e2e: E2E, user: str) -> tuple[list[str], list[str]]:
    """The words `/paper interests show` lists as learned for and against, strongest first (over
    every interest: these people follow one)."""
    shown = await e2e.server.run_command(user, "paper interests show")
    description = str(shown.embeds[0].get("description", ""))
    learned = re.findall(r"for: ((?:`[^`]+`(?:, )?)+)", description)
    against = re.findall(r"against: ((?:`[^`]+`(?:, )?)+)", description)
    return (
        [w for block in learned for w in re.findall(r"`([^`]+)`", block)],
        [w for block in against for w in re.findall(r"`([^`]+)`", block)],
    )


def _listed_ids(result: Any) -> list[int]:
    """Paper ids of a search answer, in the order of its 👍 buttons."""
    return [int(i) for i in re.findall(r"pb:like:(\d+)", str(result.message.components))]


async def test_search_orders_close_matches_by_the_persons_reactions_unless_paused(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """After 👍 on three multi-agent papers, a search for the broad field puts multi-agent papers
    first and says it ordered them for that person; someone without reactions, and the same person
    with learning paused, get the search engine's own order, without the note."""
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        query = {"query": "reinforcement learning", "limit": 10}
        plain = await server.run_command("bob", "paper search", **query)
        assert "ordered for you" not in plain.embed["footer"]["text"]
        before = await _areas_of(e2e, _listed_ids(plain))

        agents = await server.run_command(
            "alice", "paper search", query="cooperative agents coordination", limit=3
        )
        for paper_id in _listed_ids(agents):
            await server.click("alice", agents, f"pb:like:{paper_id}")
        await server.eventually(lambda: _stored(e2e, server.alice.id, 3), what="alice's three likes stored")
        assert set(await _areas_of(e2e, _listed_ids(agents))) == {"multiagent"}

        mine = await server.run_command("alice", "paper search", **query)
        assert "close matches ordered for you by your reactions" in mine.embed["footer"]["text"]
        after = await _areas_of(e2e, _listed_ids(mine))
        wanted = after.count("multiagent")
        assert wanted >= 2, after
        assert after[:wanted] == ["multiagent"] * wanted, after
        assert before[:wanted] != ["multiagent"] * wanted, before

        await server.run_command("alice", "paper interests pause")
        paused = await server.run_command("alice", "paper search", **query)
        assert "ordered for you" not in paused.embed["footer"]["text"]
        assert _listed_ids(paused) == _listed_ids(plain)


async def test_anothers_page_press_keeps_the_searchers_order_and_never_says_for_you(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """Alice (👍 on multi-agent papers) searches in #general; Bob (👍 on offline papers) presses ▶ on
    her result list. The page he turns to is in Alice's order — the one she gets pressing ▶ herself —
    not his, and it says whose reactions ordered it instead of "for you"; his own search of the same
    words has another second page."""
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        query = {"query": "reinforcement learning", "limit": 5}
        for person, words in (
            ("alice", "cooperative agents coordination"),
            ("bob", "offline dataset conservative"),
        ):
            found = await server.run_command(person, "paper search", query=words, limit=3)
            for paper_id in _listed_ids(found):
                await server.click(person, found, f"pb:like:{paper_id}")
            user_id = server.user(person).id
            await server.eventually(
                lambda u=user_id: _stored(e2e, u, 3), what=f"{person}'s three likes stored"
            )

        hers = await server.run_command("alice", "paper search", **query)
        assert "close matches ordered for you by your reactions" in hers.embed["footer"]["text"]
        pressed = await server.click("bob", hers, "Next ▶")
        footer = pressed.message.embed["footer"]["text"]
        assert footer.startswith("page 2 of"), footer
        assert "ordered for you" not in footer
        assert "close matches ordered by the reactions of whoever searched" in footer
        by_bob = _listed_ids(pressed)

        await server.click("alice", hers, "◀ Previous")
        again = await server.click("alice", hers, "Next ▶")
        assert "close matches ordered for you by your reactions" in again.message.embed["footer"]["text"]
        assert by_bob == _listed_ids(again)

        his = await server.run_command("bob", "paper search", **query)
        his_second = await server.click("bob", his, "Next ▶")
        assert _listed_ids(his_second) != by_bob, "Bob's own order differs, so the check above could fail"


async def _areas_of(e2e: E2E, paper_ids: list[int]) -> list[str]:
    papers = await e2e.services.papers.get_many(paper_ids)
    return [papers[i].title.split()[0].lower() for i in paper_ids]


async def test_a_paper_named_as_the_broad_note_asks_narrows_the_very_next_picks(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """ "reinforcement learning" is broad here (120 of 160 papers); the answer asks for a paper the
    person likes. Naming an offline one counts as a 👍, and the very next picks are mostly offline
    papers (30 of the 120 the typed words match); the answer and `/paper interests show` say the topic is
    narrowed to the part like it. Given in the same command, the note does not ask."""
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        broad = await server.run_command("carol", "paper interests add", topic="reinforcement learning")
        assert "is broad" in broad.content, broad.content
        assert "name a paper you like (`/paper interests add paper:`)" in broad.content, broad.content
        offline = await e2e.db.fetchval("SELECT id FROM papers WHERE title LIKE 'Offline study 0:%'")
        liked = await server.run_command("carol", "paper interests add", paper=str(offline))
        assert "now counts as a paper you like" in liked.content, liked.content
        assert "It narrows your interest in reinforcement learning to the part like it" in liked.content
        shown = await server.run_command("carol", "paper interests show")
        title = await e2e.db.fetchval("SELECT title FROM papers WHERE id = ?", (offline,))
        assert "reinforcement learning**" not in shown.text, shown.text
        assert f"reinforcement learning, the part like “{title[:40]}" in shown.text, shown.text
        await server.eventually(lambda: _stored(e2e, server.carol.id, 1), what="carol's 👍 stored")

        picks = await server.run_command("carol", "paper recommend", count=5)
        ids = _listed_ids(picks)
        assert len(ids) == 5, picks.message.components
        assert offline not in ids, "a paper she named is not recommended back"
        areas = await _areas_of(e2e, ids)
        assert areas.count("offline") >= 4, areas

        both = await server.run_command(
            "bob", "paper interests add", topic="reinforcement learning", paper=str(offline)
        )
        assert "is broad" in both.content
        assert "now counts as a paper you like" in both.content
        assert "/paper interests add paper:" not in both.content, "he has just named one"
        assert "It narrows your interest in reinforcement learning" in both.content, both.content


async def test_a_paper_named_alone_is_given_to_the_topic_the_person_presses(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """Named alone, a paper narrows the topic it lies in; the answer offers the person's other typed
    topics as buttons, and pressing one makes the paper the part of that topic instead (the first
    topic is no longer narrowed by it), as `/paper interests show` then says."""
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        await server.run_command("alice", "paper interests add", topic="reinforcement learning")
        await server.run_command("alice", "paper interests add", topic="deep learning")
        offline = await e2e.db.fetchval("SELECT id FROM papers WHERE title LIKE 'Offline study 0:%'")
        named = await server.run_command("alice", "paper interests add", paper=str(offline))
        assert "It narrows your interest in reinforcement learning" in named.content, named.content
        assert "press that topic" in named.content, named.content
        labels = [b["label"] for b in named.buttons]
        assert labels == ["It is what I mean by “deep learning”"], labels

        pressed = await server.click("alice", named, f"pb:narrowby:{offline}|deep learning")
        assert (
            "Your interest in deep learning is narrowed to the part like “Offline study 0" in pressed.content
        )
        shown = await server.run_command("alice", "paper interests show")
        assert "**deep learning, the part like “Offline study 0" in shown.text, shown.text
        assert "**reinforcement learning**" in shown.text, "no longer narrowed by the paper"
