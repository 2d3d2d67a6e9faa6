"""`paperbot health`: the heartbeat a running process writes (bot/health.py), judged as a container's
health check would — healthy only when it is recent and names no problem; every other case says why."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.health import STALE_AFTER, Beat, judge, make_beat, write_beat
from bot.services.write_behind import OutboxState

pytestmark = pytest.mark.usefixtures("isolated")

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_a_recent_beat_without_problems_is_healthy_and_says_what_the_process_does(tmp_path: Path) -> None:
    path = tmp_path / "paperbot.health"
    write_beat(path, make_beat("worker", True, [], now=NOW - timedelta(seconds=12)))
    healthy, line = judge(path, now=NOW)
    assert healthy
    assert line == f"healthy: worker (pid {os.getpid()}), leading the background work, heartbeat 12 s ago"
    write_beat(path, make_beat("worker", False, [], now=NOW))
    assert "standing by" in judge(path, now=NOW)[1]


def test_a_beat_older_than_three_missed_ones_means_stopped_or_hung(tmp_path: Path) -> None:
    path = tmp_path / "paperbot.health"
    write_beat(path, make_beat("gateway", None, [], now=NOW - STALE_AFTER))
    assert judge(path, now=NOW)[0]  # exactly at the limit: still healthy
    healthy, line = judge(path, now=NOW + timedelta(seconds=1))
    assert not healthy
    assert (
        line == f"the last heartbeat (pid {os.getpid()}, gateway) is 31 s old: the process stopped or hangs"
    )


def test_a_beat_naming_problems_is_unhealthy_and_names_them(tmp_path: Path) -> None:
    path = tmp_path / "paperbot.health"
    problems = ["the store does not answer (ConnectionRefusedError)", "not connected to Discord's gateway"]
    write_beat(path, make_beat("all", False, problems, now=NOW))
    healthy, line = judge(path, now=NOW)
    assert not healthy
    assert line.endswith(
        "the store does not answer (ConnectionRefusedError); not connected to Discord's gateway"
    )


def test_no_beat_or_a_foreign_file_is_unhealthy_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "paperbot.health"
    assert judge(path, now=NOW) == (
        False,
        f"no heartbeat at {path}: paperbot run is not running with these settings (yet)",
    )
    for text in (
        "",
        "{}",
        '{"at": "2026-12-01T09:00:00", "pid": 1, "role": "all", "leading": 1, "problems": []}',
    ):
        path.write_text(text, "utf-8")
        healthy, line = judge(path, now=NOW)
        assert not healthy
        assert "not a paperbot heartbeat" in line


def test_a_beat_reads_back_as_written(tmp_path: Path) -> None:
    beat = Beat(NOW, 42, "gateway", None, ("gateway shards 1 not connected",))
    assert Beat.from_json(beat.to_json()) == beat


def test_the_command_reads_the_beat_of_the_same_settings_and_exits_0_or_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.environ["PAPERBOT_DB"] = "postgresql://paperbot@db.example/paperbot"
    os.environ["PAPERBOT_STATE_DIR"] = str(tmp_path / "state")
    try:
        assert main(["health"]) == 1
        assert f"no heartbeat at {tmp_path / 'state' / 'paperbot.health'}" in capsys.readouterr().err
        write_beat(tmp_path / "state" / "paperbot.health", make_beat("gateway", None, []))
        assert main(["health"]) == 0
        assert capsys.readouterr().out.startswith("healthy: gateway")
        old = datetime.now(UTC) - timedelta(minutes=5)
        write_beat(tmp_path / "state" / "paperbot.health", make_beat("gateway", None, [], now=old))
        assert main(["health"]) == 1
        assert re.search(r"is 30[01] s old: the process stopped or hangs", capsys.readouterr().err)
    finally:
        del os.environ["PAPERBOT_DB"], os.environ["PAPERBOT_STATE_DIR"]


def test_the_command_finds_the_beat_beside_a_sqlite_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.environ["PAPERBOT_DB"] = str(tmp_path / "data" / "paperbot.db")
    try:
        write_beat(tmp_path / "data" / "paperbot.db.health", make_beat("all", True, []))
        assert main(["health"]) == 0
        assert "leading the background work" in capsys.readouterr().out
    finally:
        del os.environ["PAPERBOT_DB"]


def test_writes_waiting_in_the_outbox_are_reported_and_a_stuck_outbox_or_a_dead_letter_is_a_problem(
    tmp_path: Path,
) -> None:
    """A few writes waiting (the store took them a moment later) leave the process healthy, with their
    count; writes the store has refused for a minute, or any in the dead letter, make it unhealthy and
    say where they are kept."""
    path = tmp_path / "paperbot.health"
    moment = OutboxState(waiting=3, dead=0, refused_for=None, error=None, path="/state/paperbot.pending")
    write_beat(path, make_beat("gateway", None, moment.problems(), now=NOW, waiting=3))
    healthy, line = judge(path, now=NOW)
    assert healthy
    assert line.endswith("; accepted writes waiting to be stored: 3")

    stuck = OutboxState(
        waiting=5,
        dead=2,
        refused_for=75.0,
        error="ReadOnlySQLTransactionError (25006)",
        path="/state/paperbot.pending",
    )
    write_beat(path, make_beat("gateway", None, stuck.problems(), now=NOW, waiting=5, dead=2))
    healthy, line = judge(path, now=NOW)
    assert not healthy
    assert (
        "accepted writes (reactions, clicks, listings) not stored for 75 s: 5, kept in /state/paperbot.pending"
        in line
    )
    assert "the store refuses them (ReadOnlySQLTransactionError (25006))" in line
    assert "writes in the dead letter of /state/paperbot.pending: 2" in line
    assert Beat.from_json(Beat(NOW, 1, "all", True, (), 5, 2).to_json()) == Beat(
        NOW, 1, "all", True, (), 5, 2
    )
