"""Operator commands: `paperbot stats`, and `paperbot backup` taken while the bot writes, then restored
exactly as deploy/README.md says (stop, put the file in place, drop stale -wal/-shm, start)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from postgres_stores import with_password

from bot.cli import main
from bot.services.papers.arxiv_fetch import LAST_FETCH_KEY
from storage.db import Database, utcnow
from storage.migrate import available_migrations
from storage.repositories.state import StateRepository
from storage.store import StoreLocation, open_database

pytestmark = pytest.mark.usefixtures("isolated")

BATCH = 50


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def write_batch(db: Database, batch: int) -> None:
    """One transaction: BATCH papers, one user, and that user's like of each paper."""
    now = utcnow()
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO users (id, created_at) VALUES (?, ?)", (batch + 1, now))
        for i in range(BATCH):
            paper_id = await conn.fetchval(
                "INSERT INTO papers (title, abstract, added_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id",
                (f"Batch {batch} paper {i}", f"abstract {batch}-{i}", now, now),
            )
            await conn.execute(
                "INSERT INTO feedback (user_id, paper_id, signal, created_at) VALUES (?, ?, 'like', ?)",
                (batch + 1, paper_id, now),
            )


def counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {
            table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("papers", "users", "feedback")
        }


def check_integrity(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(available_migrations())
    finally:
        conn.close()


def restore_as_documented(backup: Path, live: Path) -> None:
    """deploy/README.md's restore: with the bot stopped, put the backup in place of the database,
    remove any -wal/-shm left beside it (they belong to the old database), start again."""
    Path(f"{live}-wal").write_bytes(b"a stale write-ahead log from the old database")
    shutil.copy2(backup, live)
    for suffix in ("-wal", "-shm"):
        Path(f"{live}{suffix}").unlink(missing_ok=True)


# --- stats -------------------------------------------------------------------------------------------


def make_store(path: Path) -> Path:
    """A new, empty (migrated) store at ``path``."""

    async def make() -> None:
        async with await open_database(path):
            pass

    asyncio.run(make())
    return path


def test_stats_on_a_new_database_prints_zero_counts_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAPERBOT_DB", str(make_store(tmp_path / "data" / "paperbot.db")))
    code, out, _ = cli(capsys, "stats")
    assert code == 0
    stats = json.loads(out)
    assert stats["database"] == str(tmp_path / "data" / "paperbot.db")
    assert stats["papers"] == stats["users"] == stats["subscriptions"] == 0
    assert stats["last_arxiv_fetch"] is None
    assert stats["next_digest"] is None


@pytest.mark.parametrize("where", ["user part", "parameter"])
async def test_stats_never_prints_the_store_password(
    postgres_store: StoreLocation, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_password(postgres_store, "hunter2-pw", in_parameter=where == "parameter")
    os.environ["PAPERBOT_DB"] = url
    try:
        code = await asyncio.to_thread(main, ["stats"])  # (the CLI runs its own event loop)
    finally:
        del os.environ["PAPERBOT_DB"]
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "hunter2" not in captured.out + captured.err
    assert json.loads(captured.out)["database"] == url.replace("hunter2-pw", "***")


def test_stats_counts_papers_users_and_subscriptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "paperbot.db"

    async def fill() -> None:
        async with await open_database(path) as db:
            await write_batch(db, 0)
            await write_batch(db, 1)
            now = utcnow()
            await db.execute(
                "INSERT INTO subscriptions (kind, user_id, created_at, updated_at) VALUES ('user', 1, ?, ?)",
                (now, now),
            )
            await db.execute(
                "INSERT INTO subscriptions (kind, guild_id, channel_id, created_at, updated_at) "
                "VALUES ('channel', 9, 10, ?, ?)",
                (now, now),
            )
            await StateRepository(db).set(LAST_FETCH_KEY, "2026-11-30T06:00:04+00:00")

    asyncio.run(fill())
    monkeypatch.setenv("PAPERBOT_DB", str(path))
    code, out, _ = cli(capsys, "stats")
    assert code == 0
    stats = json.loads(out)
    assert stats["papers"] == 2 * BATCH
    assert stats["users"] == 2
    assert stats["subscriptions"] == 1
    assert stats["channel_feeds"] == 1
    assert stats["feedback"] == 2 * BATCH
    # both subscriptions are daily at 09:00 UTC (the defaults): the next one is the next 09:00 UTC
    due = datetime.fromisoformat(stats["next_digest"])
    now = datetime.now(UTC)
    assert (due.hour, due.minute, due.utcoffset()) == (9, 0, timedelta(0))
    assert now < due <= now + timedelta(days=1)
    assert stats["digests_due_24h"] == 2
    assert stats["last_arxiv_fetch"] == "2026-11-30T06:00:04+00:00"


# --- backup and restore ------------------------------------------------------------------------------


async def test_backup_while_the_bot_writes_is_consistent_and_restores(tmp_path: Path) -> None:
    """A second process backs up the live database mid-write; the copy holds whole transactions only."""
    live = tmp_path / "data" / "paperbot.db"
    backup = tmp_path / "backups" / "paperbot-backup.db"
    db = await open_database(live)
    written = 0
    stop = asyncio.Event()
    progress = asyncio.Event()

    async def writer() -> None:
        nonlocal written
        while not stop.is_set():
            await write_batch(db, written)
            written += 1
            progress.set()
            await asyncio.sleep(0)

    async def until_written(batches: int) -> None:
        while written < batches:
            progress.clear()
            await progress.wait()

    try:
        task = asyncio.create_task(writer())
        await until_written(5)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
        env["PAPERBOT_DB"] = str(live)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "backup",
            str(backup),
            env=env,
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        await until_written(written + 5)
        stop.set()
        await task
    finally:
        await db.close()

    assert process.returncode == 0, err.decode()
    assert f"backed up {live} to {backup}" in out.decode()
    assert sorted(p.name for p in backup.parent.iterdir()) == [backup.name], "the backup is one file"
    check_integrity(backup)
    copy = counts(backup)
    live_counts = counts(live)
    assert copy["papers"] % BATCH == 0, "a transaction was cut in half"
    assert copy["feedback"] == copy["papers"]
    assert copy["users"] == copy["papers"] // BATCH
    assert 5 * BATCH <= copy["papers"] < live_counts["papers"], "the copy is a snapshot taken mid-writing"

    restore_as_documented(backup, live)
    async with await open_database(live) as restored:
        assert await restored.fetchval("SELECT COUNT(*) FROM papers") == copy["papers"]
        assert await restored.fetchval("PRAGMA integrity_check") == "ok"
    check_integrity(live)


def test_backup_keeps_an_existing_file_and_replaces_it_only_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --force an existing file is never overwritten (exit 2, one line, the file as it was);
    with it, it is replaced by a whole backup."""
    live = tmp_path / "paperbot.db"
    target = tmp_path / "latest.db"
    monkeypatch.setenv("PAPERBOT_DB", str(live))

    async def add(batch: int) -> None:
        async with await open_database(live) as db:
            await write_batch(db, batch)

    asyncio.run(add(0))
    assert cli(capsys, "backup", str(target))[0] == 0
    asyncio.run(add(1))
    before = target.read_bytes()
    code, out, err = cli(capsys, "backup", str(target))
    assert (code, out) == (2, "")
    assert err == f"paperbot: {target} exists: nothing was written (--force replaces it)\n"
    assert target.read_bytes() == before
    assert cli(capsys, "backup", str(target), "--force")[0] == 0
    assert counts(target)["papers"] == 2 * BATCH
    check_integrity(target)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [], "no partial file left"


def test_backup_to_a_path_that_cannot_be_written_says_why_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAPERBOT_DB", str(make_store(tmp_path / "paperbot.db")))
    (tmp_path / "a-file").write_text("not a folder")
    target = tmp_path / "a-file" / "backup.db"
    code, out, err = cli(capsys, "backup", str(target))
    assert (code, out) == (2, "")
    assert err.startswith(f"paperbot: cannot write the backup to {target}: ")
    assert err.endswith("; nothing was written\n")
    assert err.count("\n") == 1
    code, _, err = cli(capsys, "backup", str(tmp_path))
    assert code == 2
    assert err.startswith(f"paperbot: {tmp_path} is a folder")


def test_backup_refuses_to_overwrite_the_database_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    live = make_store(tmp_path / "paperbot.db")
    monkeypatch.setenv("PAPERBOT_DB", str(live))
    code, _, err = cli(capsys, "backup", "./paperbot.db")
    assert code == 2
    assert err.startswith("paperbot: the backup path is the database itself")
    check_integrity(live)


def test_backup_of_a_missing_database_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "nowhere" / "paperbot.db"))
    code, _, err = cli(capsys, "backup", str(tmp_path / "b.db"))
    assert code == 2
    assert "PAPERBOT_DB" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "nowhere").exists(), "a backup must not create an empty database"


# --- a store that is not there ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [["stats"], ["search", "kv cache", "--json"], ["digest", "--user", "7", "--dry-run"]]
)
def test_a_command_that_reads_the_store_refuses_a_misspelt_one_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    make_store(tmp_path / "paperbot.db")
    misspelt = tmp_path / "papperbot.db"
    monkeypatch.setenv("PAPERBOT_DB", str(misspelt))
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert err == (
        f"paperbot: no paperbot store at {misspelt}: check PAPERBOT_DB (`paperbot ingest` or `paperbot run` "
        "creates one); nothing was created\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paperbot.db"]


def test_a_store_in_a_folder_that_does_not_exist_is_refused_and_no_folder_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = tmp_path / "papers.jsonl"
    papers.write_text(_record(1) + "\n")
    store = tmp_path / "dta" / "paperbot.db"
    monkeypatch.setenv("PAPERBOT_DB", str(store))
    code, _, err = cli(capsys, "ingest", str(papers))
    assert code == 2
    assert err == (
        f"paperbot: PAPERBOT_DB names {store}, but its folder {store.parent} does not exist: create the "
        "folder or fix the path; nothing was created\n"
    )
    code, _, err = cli(capsys, "stats")
    assert code == 2
    assert f"(nor its folder {store.parent})" in err
    assert not store.parent.exists()


# --- fetch: categories and no network ----------------------------------------------------------------


def test_fetch_refuses_a_category_arxiv_does_not_have_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "paperbot.db"))
    monkeypatch.setattr("bot.services.papers.arxiv_fetch.API_URL", "https://unused.invalid/api/query")
    code, out, err = cli(capsys, "fetch", "arxiv", "--category", "notacat")
    assert (code, out) == (2, "")
    assert err.startswith("paperbot: 'notacat' is not an arXiv category.")
    code, _, err = cli(capsys, "fetch", "arxiv", "--category", "cs.LGG")
    assert code == 2
    assert "Did you mean cs.LG" in err
    assert not (tmp_path / "paperbot.db").exists()


def test_fetch_offline_fails_at_once_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No network to arXiv (its name does not resolve: `.invalid` never does): exit 1 within seconds,
    one line saying so, where it used to retry for 90 s."""
    monkeypatch.setenv("PAPERBOT_DB", str(tmp_path / "paperbot.db"))
    monkeypatch.setattr("bot.services.papers.arxiv_fetch.API_URL", "https://export.arxiv.invalid/api/query")
    started = time.monotonic()
    code, out, err = cli(capsys, "fetch", "arxiv", "--category", "cs.lg")
    assert time.monotonic() - started < 15
    assert (code, out) == (1, "")
    last = err.splitlines()[-1]  # (after the log lines of the store it opened)
    assert last.startswith("paperbot: cannot reach arXiv (ClientConnectorDNSError")
    assert "this machine seems to be offline; nothing was fetched" in last
    assert "Traceback" not in err


# --- search --json: the results alone -----------------------------------------------------------------


def test_search_json_prints_the_results_alone_and_logs_nothing(tmp_path: Path) -> None:
    """As a script runs it: `paperbot search --json` in a process of its own, stdout one JSON object a
    result, stderr empty (before: an INFO line on every call)."""
    store = make_store(tmp_path / "paperbot.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
    run = [sys.executable, "-m", "bot", "search", "kv cache quantization", "--json", "--limit", "3"]
    for _ in range(2):  # the first call loads the shipped corpus into the empty store, the second reads it
        done = subprocess.run(
            run,
            env={**env, "PAPERBOT_DB": str(store)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert [row["rank"] for row in rows] == [1, 2, 3]


# --- ingest exit codes -------------------------------------------------------------------------------


def _record(number: int) -> str:
    return json.dumps(
        {
            "title": f"Exit code paper {number}",
            "abstract": f"Paper {number} measures how exit codes of batch tools guide the scripts that run them.",
        }
    )


@pytest.fixture
def ingest_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    live = tmp_path / "paperbot.db"
    monkeypatch.setenv("PAPERBOT_DB", str(live))
    return live


@pytest.mark.usefixtures("ingest_db")
def test_ingest_exits_0_when_every_record_was_stored_even_on_a_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(_record(n) for n in range(3)) + "\n")
    code, out, _ = cli(capsys, "ingest", str(good))
    assert (code, out.splitlines()[0]) == (0, "added 3, merged 0, unchanged 0, rejected 0")
    code, out, _ = cli(capsys, "ingest", str(good))
    assert (code, out.splitlines()[0]) == (0, "added 0, merged 0, unchanged 3, rejected 0")


@pytest.mark.usefixtures("ingest_db")
def test_ingest_exits_1_when_some_records_were_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(_record(1) + "\n{not json\n" + _record(2) + "\n")
    code, out, _ = cli(capsys, "ingest", str(mixed))
    assert code == 1
    assert out.splitlines()[0] == "added 2, merged 0, unchanged 0, rejected 1"
    assert "mixed.jsonl:2" in out


DEEP = "[" * 100_000 + "]" * 100_000  # far deeper than Python's JSON decoder goes


@pytest.mark.usefixtures("ingest_db")
@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("deep.jsonl:2", f'{_record(1)}\n{{"title": "Deep", "x": {DEEP}}}\n{_record(2)}\n'),
        ("deep.json:3", f'[\n{_record(1)},\n{{"title": "Deep", "x": {DEEP}}},\n{_record(2)}\n]'),
    ],
)
def test_ingest_rejects_a_record_nested_too_deeply_and_goes_on(
    tmp_path: Path, where: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record nested deeper than Python's JSON decoder goes is one rejected record (file, line,
    reason; exit 1), and the records after it are stored."""
    name = where.partition(":")[0]
    path = tmp_path / name
    path.write_text(text)
    code, out, _ = cli(capsys, "ingest", str(path))
    assert code == 1
    assert out.splitlines()[0] == "added 2, merged 0, unchanged 0, rejected 1"
    assert f"  {where}: JSON nested too deeply" in out.splitlines()


@pytest.mark.usefixtures("ingest_db")
def test_ingest_refuses_a_gzip_bomb_naming_the_limit_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gzip bomb among the files is one clear rejection (not an out-of-memory kill); the rest go in."""
    monkeypatch.setenv("PAPERBOT_MAX_DECOMPRESSED_MB", "2")
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.jsonl").write_text("\n".join(_record(n) for n in range(3)) + "\n")
    with gzip.open(folder / "papers.jsonl.gz", "wb") as bomb:
        for _ in range(64):
            bomb.write(b"\n" * (1024 * 1024))
    code, out, _ = cli(capsys, "ingest", str(folder))
    assert code == 1
    assert out.splitlines()[0] == "added 3, merged 0, unchanged 0, rejected 1"
    assert (
        "  papers.jsonl.gz: holds more than 2 MB once decompressed, the most one file may hold "
        "(PAPERBOT_MAX_DECOMPRESSED_MB); nothing of it was stored"
    ) in out.splitlines()


@pytest.mark.usefixtures("ingest_db")
def test_ingest_exits_3_when_nothing_was_ingested(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n[1, 2\n")
    code, out, _ = cli(capsys, "ingest", str(broken))
    assert code == 3
    assert out.splitlines()[0] == "added 0, merged 0, unchanged 0, rejected 2"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = cli(capsys, "ingest", str(empty))
    assert code == 3
    assert "no supported files" in out


def test_ingest_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    text = capsys.readouterr().out
    assert "exit status:" in text
    for code in ("0", "1", "2", "3"):
        assert f"\n  {code}  " in text


# --- search ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("ingest_db")
def test_search_batch_answers_every_line_in_order_with_errors_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "\n".join(
            json.dumps({"id": f"p{n}", "title": title, "abstract": abstract})
            for n, (title, abstract) in enumerate(
                [
                    ("Quantizing the KV cache", "We quantize the key value cache of transformers."),
                    ("Graph neural networks at scale", "Message passing over very large graphs."),
                    ("Speculative decoding", "A draft model proposes tokens the large model verifies."),
                ]
            )
        )
        + "\n"
    )
    assert cli(capsys, "ingest", str(papers))[0] == 0
    batch = tmp_path / "queries.txt"
    batch.write_text(
        "kv cache\n\nthe of\ngraph networks\n" + json.dumps({"_id": "q9", "text": "draft model"}) + "\n"
    )
    code, out, _ = cli(capsys, "search", "--batch", str(batch), "--json", "--limit", "2")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(line["query_id"], line["query"]) for line in lines] == [
        ("1", "kv cache"),
        ("3", "the of"),
        ("4", "graph networks"),
        ("q9", "draft model"),
    ]
    assert lines[0]["results"][0]["title"] == "Quantizing the KV cache"
    assert lines[0]["results"][0]["external_id"] == "p0"
    assert "very common words" in lines[1]["error"]
    assert lines[1]["results"] == []
    assert [r["title"] for r in lines[2]["results"]] == ["Graph neural networks at scale"]
    assert lines[3]["results"][0]["title"] == "Speculative decoding"


@pytest.mark.usefixtures("ingest_db")
def test_search_says_what_a_misspelt_query_or_a_name_was_searched_as(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "\n".join(
            json.dumps({"id": f"p{n}", "title": title, "abstract": abstract, "authors": authors})
            for n, (title, abstract, authors) in enumerate(
                [
                    ("Quantizing the KV cache", "We quantize the key value cache.", ["Ada Lovelace"]),
                    ("Speculative decoding", "A draft model proposes tokens.", ["Grace Hopper"]),
                ]
            )
        )
        + "\n"
    )
    assert cli(capsys, "ingest", str(papers))[0] == 0
    code, out, _ = cli(capsys, "search", "quantizng the cahce")
    assert code == 0
    assert out.startswith("Showing results for “quantizing the cache” (put the query in quotes")
    assert "Quantizing the KV cache" in out
    code, out, _ = cli(capsys, "search", "ada lovelace")
    assert out.startswith("Papers by Ada Lovelace, newest first")
    assert "Quantizing the KV cache" in out
    assert "[0.000]" not in out  # newest first: no score that means nothing
    # --json: stdout holds the results alone, the note goes to stderr
    code, out, err = cli(capsys, "search", "quantizng", "--json")
    assert json.loads(out.splitlines()[0])["title"] == "Quantizing the KV cache"
    assert "Showing results for “quantizing”" in err
    batch = tmp_path / "queries.txt"
    batch.write_text('quantizng\n"quantizng"\n')
    code, out, _ = cli(capsys, "search", "--batch", str(batch), "--json")
    first, typed = (json.loads(line) for line in out.splitlines())
    assert first["searched_as"] == "quantizing"
    assert first["results"][0]["title"] == "Quantizing the KV cache"
    assert "searched_as" not in typed
    assert typed["results"] == []


@pytest.mark.parametrize(
    "command", ["ingest", "fetch", "search", "digest", "stats", "backup", "migrate-store", "health"]
)
def test_every_operator_command_lists_its_exit_statuses_in_its_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status:" in text
    assert "0 " in text.split("exit status:")[1]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    assert "| 2 | nothing was done: bad usage or an invalid setting" in readme


def test_run_refuses_a_store_in_a_folder_that_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt folder in PAPERBOT_DB would have started the bot on a new store of the shipped corpus."""
    store = tmp_path / "var-lib-papperbot" / "paperbot.db"
    monkeypatch.setenv("PAPERBOT_DB", str(store))
    monkeypatch.setenv("DISCORD_TOKEN", "MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.never-used-token-0123456789abcdef")
    for command in ("run", "start"):
        code, _, err = cli(capsys, command)
        assert code == 2
        assert err.endswith(
            f"its folder {store.parent} does not exist: create the folder or fix the path; nothing was created\n"
        )
    assert not store.parent.exists()
