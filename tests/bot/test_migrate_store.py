"""`paperbot migrate-store --to postgresql://…`: a store built from the seeds and the ICML 2024 list,
with people in it, moves into PostgreSQL with every count equal and is searchable there; a rerun
says it is done; what the command refuses, it says why, and copies nothing."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest
from postgres_stores import with_password
from shared_data import shared_path
from store_contents import fill_people, table_rows

from bot.cli import main
from bot.runtime import open_services
from bot.services.papers.ingest.runner import ingest_paths
from bot.settings import Settings
from storage.db import Database
from storage.outbox import Outbox
from storage.store import StoreLocation, open_database

pytestmark = pytest.mark.usefixtures("isolated")


async def migrate(
    capsys: pytest.CaptureFixture[str],
    source: Path,
    target: StoreLocation | str,
    *,
    state: Path | None = None,
) -> tuple[int, str, str]:
    """`PAPERBOT_DB=source [PAPERBOT_STATE_DIR=state] paperbot migrate-store --to target` (in a thread:
    the CLI runs its own loop)."""
    os.environ["PAPERBOT_DB"] = str(source)
    if state is not None:
        os.environ["PAPERBOT_STATE_DIR"] = str(state)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        url = target.url if isinstance(target, StoreLocation) else target
        code = await asyncio.to_thread(main, ["migrate-store", "--to", str(url)])
    finally:
        del os.environ["PAPERBOT_DB"]
        os.environ.pop("PAPERBOT_STATE_DIR", None)
        root.handlers[:] = handlers  # the CLI's own handler writes to this call's captured stderr
        root.setLevel(level)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def every_table(db: Database, tables: list[str]) -> dict[str, list[tuple[object, ...]]]:
    return {table: await table_rows(db, table) for table in tables}


@pytest.mark.shared
async def test_a_store_of_the_seeds_and_icml_2024_moves_with_every_count_equal(
    tmp_path: Path, postgres_store: StoreLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "paperbot.db"
    corpora = [shared_path("seeds"), shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")]
    async with await open_database(source) as db:
        await ingest_paths(db, corpora)
        await fill_people(db, [int(row[0]) for row in await db.fetchall("SELECT id FROM papers ORDER BY id")])
        names = await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [str(r[0]) for r in names if r[0] not in ("paper_changes", "sqlite_sequence")]
        expected = await every_table(db, tables)
    assert len(expected["papers"]) == 2610

    code, out, err = await migrate(capsys, source, postgres_store)
    assert code == 0, err
    assert "  papers: 2610\n" in out
    assert "every count equals the source's" in out
    async with await open_database(postgres_store) as moved:
        assert await every_table(moved, tables) == expected

    settings = Settings(store=postgres_store, state_dir=tmp_path)
    async with open_services(settings, load_shipped_corpus=False) as services:
        hits = services.search.search("Medusa multiple decoding heads", limit=1).hits
        paper = await services.papers.get(hits[0].paper_id)
        assert paper is not None
        assert paper.title.startswith("Medusa: Simple LLM Inference Acceleration Framework")

    code, out, _ = await migrate(capsys, source, postgres_store)  # run again: nothing to do
    assert code == 0
    assert "already holds this store, every count equal: nothing to do" in out


async def test_it_refuses_what_it_cannot_do_and_copies_nothing(
    tmp_path: Path, postgres_store: StoreLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "paperbot.db"
    code, _, err = await migrate(capsys, source, postgres_store)
    assert code == 2
    assert f"no SQLite store at {source}" in err
    code, _, err = await migrate(capsys, source, "mysql://x@y/z")
    assert code == 2
    assert "--to must be a SQLite file path or a postgresql:// URL, got a mysql:// URL" in err
    code, _, err = await migrate(capsys, source, str(tmp_path / "other.db"))
    assert code == 2
    assert "--to must be a postgresql:// URL" in err

    async with await open_database(source) as running:  # a bot leading the store: refused
        lock = await running.leader_lock()
        assert await lock.acquire()
        code, _, err = await migrate(capsys, source, postgres_store)
        await lock.release()
    assert code == 1
    assert f"a paperbot process is running on {source} (it leads the store); stop it first" in err

    outbox = await Outbox.open(tmp_path / "paperbot.db.pending")
    await outbox.add("rating", {"user_id": 1, "paper_id": 1, "signal": "like", "added": True})
    await outbox.close()
    code, _, err = await migrate(capsys, source, postgres_store)
    assert code == 1
    assert "1 reactions or clicks the bot accepted are not in" in err
    assert "start the bot once on it and stop it" in err
    async with await open_database(postgres_store) as target:
        assert await target.fetchval("SELECT COUNT(*) FROM users") == 0


@pytest.mark.parametrize("where", ["user part", "parameter"])
async def test_its_output_never_shows_the_target_password(
    tmp_path: Path, postgres_store: StoreLocation, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "paperbot.db"
    await (await open_database(source)).close()
    url = with_password(postgres_store, "hunter2-pw", in_parameter=where == "parameter")
    code, out, err = await migrate(capsys, source, url)
    assert code == 0, err
    assert "hunter2" not in out + err
    assert f"now set PAPERBOT_DB={url.replace('hunter2-pw', '***')}" in out


async def keep_a_rating(outbox_path: Path) -> None:
    """A 👍 the bot accepted into this outbox and had not stored yet."""
    outbox = await Outbox.open(outbox_path)
    await outbox.add("rating", {"user_id": 1, "paper_id": 1, "signal": "like", "added": True})
    await outbox.close()


async def test_writes_waiting_beside_the_sqlite_file_are_found_with_a_state_folder_set(
    tmp_path: Path, postgres_store: StoreLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bot ran without a state folder (its outbox beside the SQLite file); migrate-store runs with
    PAPERBOT_STATE_DIR set, as the PostgreSQL deployment will: the waiting 👍 is still found."""
    source = tmp_path / "paperbot.db"
    await (await open_database(source)).close()
    await keep_a_rating(tmp_path / "paperbot.db.pending")
    (tmp_path / "state").mkdir()
    code, _, err = await migrate(capsys, source, postgres_store, state=tmp_path / "state")
    assert code == 1
    assert f"1 reactions or clicks the bot accepted are not in {source} yet" in err
    assert f"1 in {tmp_path / 'paperbot.db.pending'}" in err
    async with await open_database(postgres_store) as target:
        assert await target.fetchval("SELECT COUNT(*) FROM papers") == 0


async def test_a_running_bot_is_named_before_its_outbox(
    tmp_path: Path, postgres_store: StoreLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a bot leads the store its outbox changes as it works: the answer is that it runs."""
    source = tmp_path / "paperbot.db"
    async with await open_database(source) as running:
        await keep_a_rating(tmp_path / "paperbot.db.pending")
        lock = await running.leader_lock()
        assert await lock.acquire()
        try:
            code, _, err = await migrate(capsys, source, postgres_store)
        finally:
            await lock.release()
    assert code == 1
    assert "a paperbot process is running on" in err
    assert "reactions or clicks" not in err
