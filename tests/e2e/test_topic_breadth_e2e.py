"""Adding a broad topic through the sandbox: the answer says it is broad and offers narrower topics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.services.ingest import ingest_bytes
from storage.store import open_database
from tests.services.test_topic_breadth import library


async def test_adding_a_broad_topic_offers_narrower_ones_and_a_narrow_topic_is_just_added(
    start_paperbot: Any, tmp_path: Path
) -> None:
    """ "reinforcement learning" in a library where 60 of 200 papers have its words: the answer adds
    it, says it is broad (with the counts) and names its three sub-areas; "offline reinforcement
    learning" is added with no such note; adding the broad topic again says only that it is followed.
    A digest subscribed with two broad topics gets the note for each (one with no narrower topics in
    its titles says to add a narrower one)."""
    db_path = tmp_path / "library.db"
    papers = [
        {"id": f"p{row.paper_id}", "title": row.title, "abstract": row.abstract, "authors": ["A. Author"]}
        for row in library()
    ]
    async with await open_database(db_path) as db:
        await ingest_bytes(db, "library.jsonl", "\n".join(json.dumps(p) for p in papers).encode())
    async with start_paperbot(store=db_path, load_shipped_corpus=False) as e2e:
        server = e2e.server
        broad = await server.run_command("alice", "paper interests add", topic="reinforcement learning")
        assert broad.ephemeral
        assert "Added “reinforcement learning”" in broad.content
        assert "“reinforcement learning” is broad: 60 of 200 papers here have its words." in broad.content
        for narrower in ("offline", "multi-agent", "model-based"):
            assert f"“{narrower} reinforcement learning”" in broad.content, broad.content

        narrow = await server.run_command(
            "alice", "paper interests add", topic="offline reinforcement learning"
        )
        assert "Added “offline reinforcement learning”" in narrow.content
        assert "broad" not in narrow.content

        again = await server.run_command("alice", "paper interests add", topic="Reinforcement Learning")
        assert again.content == "You already follow “reinforcement learning”."
        assert await e2e.services.profiles.topics(server.alice.id) == [
            "reinforcement learning",
            "offline reinforcement learning",
        ]

        digest = await server.run_command(
            "bob", "paper subscribe", topics="image segmentation, reinforcement learning"
        )
        assert digest.content.startswith("✅ Subscribed"), digest.content
        assert "“reinforcement learning” is broad: 60 of 200 papers here have its words." in digest.content
        assert "“offline reinforcement learning”" in digest.content
        assert (
            "“image segmentation” is broad: 70 of 200 papers here have its words. Add a narrower topic"
            in (digest.content)
        )
