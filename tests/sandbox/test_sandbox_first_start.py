"""The README's start command on a fresh install: `paperbot start` without a token, as a newcomer runs
it, where numba's cache holds nothing yet (a fresh NUMBA_CACHE_DIR). It must answer within seconds and
say what it is doing, then answer the same on the next start, with the loops compiled meanwhile (into
the module a later start loads without numba)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Compiling the loops in the background takes a minute or two of a core on a busy 2-core machine.
pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
PAPERBOT = Path(sys.executable).with_name("paperbot")
SEARCH = '/paper search query:"kv cache quantization" limit:3'
#: what today's main took to its first answer on a fresh clone: 40-57 s; the target is 10 s on an idle
#: machine, and this bound leaves room for the load other work puts on a shared one
FIRST_ANSWER_BOUND_S = 20.0


def start(cache: Path, folder: Path) -> tuple[float, list[str], int]:
    """`paperbot start` with a search typed at its prompt: seconds to the answer's first line, every
    line it printed, its exit status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "PAPERBOT_"))}
    env.update(NUMBA_CACHE_DIR=str(cache))
    began = time.perf_counter()
    lines: list[str] = []
    answered = None
    with subprocess.Popen(
        [str(PAPERBOT), "start"],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(f"{SEARCH}\nquit\n")
        process.stdin.close()
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if answered is None and "paperbot in #papers" in line:
                answered = time.perf_counter() - began
        status = process.wait(timeout=120)
    assert answered is not None, "\n".join(lines)
    return answered, lines, status


def test_the_first_start_answers_within_seconds_and_the_next_one_as_fast(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    first, lines, status = start(cache, tmp_path)
    text = "\n".join(lines)
    assert status == 0, text
    assert first < FIRST_ANSWER_BOUND_S, f"first answer after {first:.1f} s\n{text}"
    assert "preparing the search loops in the background" in text
    assert "loading 38 papers into the search index…" in text
    answer = text[text.index("paperbot in #papers") :]
    assert "KV Cache" in answer

    deadline = time.monotonic() + 800  # the child compiles on, beyond the session that started it
    while not list(cache.glob("paperindex-*.ready")):
        assert time.monotonic() < deadline, "the loops were never compiled in the background"
        time.sleep(2)

    assert list(cache.glob("paperindex_loops_*.json")), "the loops were not compiled ahead of time"

    later, lines, status = start(cache, tmp_path)
    text = "\n".join(lines)
    assert status == 0, text
    assert later < FIRST_ANSWER_BOUND_S, f"answer after {later:.1f} s\n{text}"
    assert "preparing the search loops" not in text
    assert text[text.index("paperbot in #papers") :] == answer  # the compiled loops answer as the twins did
