"""What several benchmarks share: the research data's paths, the searches their people send, a
percentile, the last title of an input file, a search's first response as Discord measures it,
`paperbot ingest` started as a child process, another commit checked out beside this one, and a
simulated person's 👍 👎 🔖 stored as the bot stores one. Imported by the scripts beside it (run as
`python bench/NAME.py`, this folder is first on the path)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from bot.sandbox import SandboxServer
    from bot.sandbox.emulator.state import SandboxUser
    from storage.db import Database
    from storage.models import Signal

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
MULTIVENUE = SHARED / "multivenue" / "multivenue_corpus.jsonl.gz"
#: what the benches' people type into `/paper search`
QUERIES = (
    "kv cache quantization",
    "speculative decoding",
    "diffusion models for images",
    "graph neural networks",
    "reinforcement learning from human feedback",
    "federated learning privacy",
    "sparse mixture of experts",
    "in-context learning theory",
)


async def rate(
    db: Database, user_id: int, paper_id: int, signal: Signal, *, at: datetime, guild_id: int | None = None
) -> None:
    """A person's 👍 👎 🔖 given at ``at``, stored as the write-behind stores one
    (`FeedbackRepository.rate`: like and dislike replace each other; none while learning is paused)."""
    from datetime import UTC

    from storage.repositories.feedback import FeedbackRepository

    stamp = at.astimezone(UTC).isoformat(timespec="seconds")
    await FeedbackRepository(db).rate(user_id, paper_id, signal, added=True, guild_id=guild_id, at=stamp)


def percentile(values: Sequence[float], share: float) -> float:
    """The value below which `share` of the values lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, for the line beside a timing."""
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def multivenue_rows() -> list[dict[str, Any]]:
    """The multivenue corpus's records, in the file's order (a row number is a paper's place here)."""
    with gzip.open(MULTIVENUE, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def last_title(path: Path) -> str:
    """The title of the last record of a JSONL file (gzipped or not): the one indexed last."""
    with path.open("rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    title = ""
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                title = json.loads(line).get("title") or title
    return title


async def first_response(
    server: SandboxServer,
    user: SandboxUser | str,
    query: str,
    *,
    timeout: float = 30,  # noqa: ASYNC109
) -> float | None:
    """Seconds from the INTERACTION_CREATE of a `/paper search` to the bot's first callback (None: it
    never answered). Discord refuses a first response after 3 s."""
    result = await server.run_command(user, "paper search", query=query, check=False, timeout=timeout)
    record = result.record
    return None if record.callback_at is None else record.callback_at - record.created


async def start_ingest(
    paths: Sequence[Path], settings: dict[str, str], *, cwd: Path | None = None, stdout: int | IO[Any] | None
) -> asyncio.subprocess.Process:
    """`python -m bot ingest PATH…` in a child process with these PAPERBOT_ settings (and none of the
    shell's PAPERBOT_/DISCORD_ variables); its errors are dropped, its output goes to `stdout`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
    env.update(settings)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "ingest",
        *map(str, paths),
        cwd=cwd,
        env=env,
        stdout=stdout,
        stderr=asyncio.subprocess.DEVNULL,
    )


@contextlib.contextmanager
def commit_checkout(rev: str, where: Path) -> Iterator[Path]:
    """Commit `rev` checked out under `where` (a temporary `git worktree`, removed after)."""
    path = where / f"tree-{rev[:12]}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
        check=True,
        capture_output=True,
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False)
