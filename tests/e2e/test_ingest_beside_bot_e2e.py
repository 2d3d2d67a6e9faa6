"""`paperbot ingest` of several files in another process beside the running bot, while people search,
click, react and follow topics through the local Discord: every interaction is answered within
Discord's 3 s, every reaction, click and command is stored, and every ingested paper is searchable
within 60 s of the ingest's end."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from shared_data import shared_path

from bot.sandbox import InteractionResult
from bot.services.recommend.interests import MAX_TOPICS

if TYPE_CHECKING:
    from paperbot_e2e import E2E

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 3.0  # Discord's first-response deadline
SEARCHABLE_WITHIN = 60.0
QUERIES = ("language models", "reinforcement learning", "diffusion", "graph neural networks", "quantization")
WORDS = [
    "sparse",
    "attention",
    "kernels",
    "retrieval",
    "planning",
    "robots",
    "protein",
    "folding",
    "tabular",
    "forecasting",
]


def _generated(folder: Path, files: int, per_file: int) -> list[Path]:
    """JSONL files of distinct synthetic papers; the last paper of each has a word of its own."""
    paths = []
    for k in range(files):
        lines = []
        for n in range(per_file):
            topic = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(3))
            lines.append(
                json.dumps(
                    {
                        "id": f"f{k}-{n}",
                        "title": f"Study {k}-{n} of {topic}",
                        "abstract": f"We study {topic} in setting {k}-{n} and report results on {n % 9 + 2} "
                        f"benchmarks, with a method called Method{k}x{n} that is simple and fast.",
                    }
                )
            )
        lines[-1] = json.dumps(
            {
                "id": f"f{k}-last",
                "title": f"Closing paper zyxwfile{k} of the set",
                "abstract": f"zyxwfile{k} " * 12,
            }
        )
        path = folder / f"part{k}.jsonl"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        paths.append(path)
    return paths


def _last_title(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    title = ""
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                title = json.loads(line).get("title") or title
    return title


@dataclass
class People:
    """What people did while the ingest ran, and how fast each interaction got its first response."""

    firsts: list[float] = field(default_factory=list)
    reactions: set[tuple[str, int]] = field(default_factory=set)  # (who, paper id) rated 👍
    saves: set[tuple[str, int]] = field(default_factory=set)  # (who, paper id) saved by button
    topics: list[str] = field(default_factory=list)  # erin's, each added by a command

    def answered(self, result: InteractionResult) -> InteractionResult:
        record = result.record
        assert record.callback_at is not None, result.failure
        self.firsts.append(record.callback_at - record.created)
        return result


async def _search_and_save(e2e: E2E, people: People, running: asyncio.Event) -> None:
    server, turn = e2e.server, 0
    while running.is_set():
        result = people.answered(
            await server.run_command("bob", "paper search", query=QUERIES[turn % 5], limit=5)
        )
        ids = [int(i) for i in re.findall(r"pb:save:(\d+)", str(result.message.components))]  # type: ignore[union-attr]
        fresh = [pid for pid in ids if ("carol", pid) not in people.saves]
        if fresh:
            note = people.answered(await server.click("carol", result, f"pb:save:{fresh[0]}"))
            assert "Saved" in note.text
            people.saves.add(("carol", fresh[0]))
        if turn % 2 and "Next ▶" in str(result.message.components):  # type: ignore[union-attr]
            people.answered(await server.click("bob", result, "Next ▶"))
        turn += 1
        await asyncio.sleep(0.1)


async def _show_and_react(e2e: E2E, people: People, running: asyncio.Event, papers: list[int]) -> None:
    server = e2e.server
    for paper_id in papers:
        if not running.is_set():
            return
        shown = people.answered(
            await server.run_command("alice", "paper show", paper=str(paper_id), where="papers")
        )
        assert shown.message is not None
        await server.react("dave", shown.message, "👍")
        people.reactions.add(("dave", paper_id))
        await asyncio.sleep(0.1)


async def _follow_topics(e2e: E2E, people: People, running: asyncio.Event) -> None:
    """A command that writes before it answers (the store's lock is free between the ingest's batches)."""
    while running.is_set() and len(people.topics) < MAX_TOPICS:
        topic = f"{WORDS[len(people.topics) % len(WORDS)]} topic {len(people.topics)}"
        added = people.answered(await e2e.server.run_command("erin", "paper interests add", topic=topic))
        assert "Added" in added.text
        people.topics.append(topic)
        await asyncio.sleep(0.2)


async def _ingest_beside_the_bot(e2e: E2E, paths: list[Path]) -> None:
    server = e2e.server
    server.add_user("dave", manage_guild=False, dms_open=True)
    server.add_user("erin", manage_guild=False, dms_open=True)
    probes = [_last_title(path) for path in paths]
    papers = [int(r[0]) for r in await e2e.db.fetchall("SELECT id FROM papers ORDER BY id LIMIT 200")]
    people = People()
    running = asyncio.Event()
    running.set()
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "ingest", *map(str, paths),
        env={**os.environ, "PAPERBOT_DB": str(e2e.settings.store.path), "PAPERBOT_LOG_LEVEL": "WARNING"},
        stdout=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    busy = [
        asyncio.create_task(_search_and_save(e2e, people, running)),
        asyncio.create_task(_show_and_react(e2e, people, running, papers)),
        asyncio.create_task(_follow_topics(e2e, people, running)),
    ]
    try:
        output, _ = await asyncio.wait_for(child.communicate(), 240)
    finally:
        running.clear()
        await asyncio.gather(*busy)
    ended = loop.time()
    assert child.returncode == 0, output
    assert people.firsts, "people used the bot while the ingest ran"
    assert max(people.firsts) < DEADLINE, sorted(people.firsts)[-5:]

    async def everything_searchable() -> bool:
        if len(e2e.services.search) < await e2e.services.papers.count():
            return False
        for probe in probes:
            result = await server.run_command("carol", "paper search", query=probe, limit=1)
            people.answered(result)
            if probe not in result.text.replace("\\", ""):  # titles are markdown-escaped
                return False
        return True

    await server.eventually(
        everything_searchable, timeout=SEARCHABLE_WITHIN, interval=0.5, what="every paper"
    )
    assert loop.time() - ended < SEARCHABLE_WITHIN
    assert max(people.firsts) < DEADLINE

    await e2e.services.writes.drained()
    ids = {name: server.user(name).id for name in ("carol", "dave")}
    stored = {
        (int(r[0]), int(r[1]), str(r[2]))
        for r in await e2e.db.fetchall("SELECT user_id, paper_id, signal FROM feedback")
    }
    assert {(ids[who], pid, "like") for who, pid in people.reactions} <= stored, "every reaction"
    assert {(ids[who], pid, "save") for who, pid in people.saves} <= stored, "every click"
    erin = server.user("erin").id
    topics = await e2e.db.fetchall(
        "SELECT topic FROM interests WHERE user_id = ? AND kind = 'topic'", (erin,)
    )
    assert sorted(str(r[0]) for r in topics) == sorted(people.topics), "every command"
    assert people.reactions
    assert people.saves
    assert people.topics


async def test_a_multi_file_ingest_beside_the_bot_while_people_use_it(e2e: E2E, tmp_path: Path) -> None:
    await _ingest_beside_the_bot(e2e, _generated(tmp_path, files=3, per_file=25_000))


@pytest.mark.shared
async def test_the_36k_multivenue_corpus_ingested_beside_the_bot_while_people_use_it(
    e2e: E2E, tmp_path: Path
) -> None:
    multivenue = shared_path("data", "multivenue", "multivenue_corpus.jsonl.gz")
    await _ingest_beside_the_bot(e2e, [multivenue, *_generated(tmp_path, files=1, per_file=2_000)])
