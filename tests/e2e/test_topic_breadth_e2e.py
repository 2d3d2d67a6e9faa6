"""A broad topic through the sandbox: the answer says it is broad, names narrower topics, and a
button per narrower topic follows it in place of the broad one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.services.papers.ingest import ingest_bytes
from storage.store import open_database
from tests.services.recommend.test_topic_breadth import NOUNS, library

BROAD_NOTE = "“reinforcement learning” is broad: 60 of 200 papers here have its words."


async def _library(tmp_path: Path) -> Path:
    """A store of the library of tests/services/test_topic_breadth.py: 60 of its 200 papers are about
    reinforcement learning, in three sub-areas; 70 about object detection, 70 image segmentation."""
    db_path = tmp_path / "library.db"
    papers = [
        {"id": f"p{row.paper_id}", "title": row.title, "abstract": row.abstract, "authors": ["A. Author"]}
        for row in library()
    ]
    async with await open_database(db_path) as db:
        await ingest_bytes(db, "library.jsonl", "\n".join(json.dumps(p) for p in papers).encode())
    return db_path


async def test_a_broad_topic_offers_narrower_ones_and_a_button_follows_one_in_its_place(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """ "reinforcement learning" in a library where 60 of 200 papers have its words: the answer adds
    it, says it is broad (with the counts), names its three sub-areas and offers each as a button;
    pressing one follows it in place of the broad topic, and another pressed after that only adds its
    own. A narrow topic is added with no note; the broad topic added again only "already follow";
    a subscription with two broad topics gets a note for each (one without narrower topics in its
    titles says to give a narrower one)."""
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        server = e2e.server
        broad = await server.run_command("alice", "paper interests add", topic="reinforcement learning")
        assert broad.ephemeral
        assert broad.content.startswith("Added “reinforcement learning”. `/paper recommend` now uses it.")
        assert BROAD_NOTE in broad.content
        for narrower in ("offline", "multi-agent", "model-based"):
            assert f"“{narrower} reinforcement learning”" in broad.content, broad.content
        assert "Press the one you mean" in broad.content

        chosen = await server.click("alice", broad, "offline reinforcement learning")
        assert chosen.ephemeral
        assert chosen.content == (
            "Now following “offline reinforcement learning” in place of “reinforcement learning”. "
            "`/paper recommend` uses it."
        )
        assert await e2e.services.profiles.topics(server.alice.id) == ["offline reinforcement learning"]
        other = await server.click("alice", broad, "multi-agent reinforcement learning")
        assert other.content == "Added “multi-agent reinforcement learning”. `/paper recommend` now uses it."
        assert await e2e.services.profiles.topics(server.alice.id) == [
            "offline reinforcement learning",
            "multi-agent reinforcement learning",
        ]

        narrow = await server.run_command(
            "carol", "paper interests add", topic="offline reinforcement learning"
        )
        assert narrow.content == "Added “offline reinforcement learning”. `/paper recommend` now uses it."
        await server.run_command("carol", "paper interests add", topic="reinforcement learning")
        again = await server.run_command("carol", "paper interests add", topic="Reinforcement Learning")
        assert again.content == "You already follow “reinforcement learning”."

        digest = await server.run_command(
            "bob", "paper subscribe", topics="image segmentation, reinforcement learning"
        )
        assert digest.content.startswith("✅ Subscribed"), digest.content
        assert BROAD_NOTE in digest.content
        assert "“offline reinforcement learning”" in digest.content
        assert "Give the one you mean" in digest.content
        assert (
            "“image segmentation” is broad: 70 of 200 papers here have its words. Give a narrower topic"
            in (digest.content)
        )


async def test_a_subscription_with_many_broad_topics_keeps_its_answer_within_discords_limit(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """/paper subscribe with three broad topics of 100 characters each (every one of their words is in
    the 60 reinforcement-learning abstracts) and narrow ones up to the option's 500 characters (within the 20 topics a digest takes): the
    notes on them would take the answer past Discord's 2,000 characters, which the sandbox refuses as
    Discord does; the answer keeps as many notes as fit, and is sent."""
    words = ["reinforcement", "learning", "policies", "act", "study"]
    broad = []
    for turn in range(3):
        name = ""
        for n in range(100):
            word = words[(n + turn) % len(words)]
            if len(name) + len(word) + 1 > 100:
                break
            name = f"{name} {word}".strip()
        broad.append(name)
    topics = ", ".join(broad)
    for noun in NOUNS:  # narrow topics, as many as the option's 500 characters hold
        if len(topics) + len(f", {noun} and {noun}") > 500:
            break
        topics += f", {noun} and {noun}"
    async with start_paperbot(store=await _library(tmp_path), load_shipped_corpus=False) as e2e:
        answer = await e2e.server.run_command("bob", "paper subscribe", topics=topics)
        assert answer.content.startswith("✅ Subscribed"), answer.content
        assert len(answer.content) <= 2000
        assert f"“{broad[0]}” is broad: 60 of 200 papers" in answer.content, answer.content
