"""Start-up time and memory of the whole bot at 100,000 papers.

From "process begins to start the bot" to discord.py's on_ready (the real PaperBot, default client options,
against the in-process local Discord server): open + migrate the store, build the search index, log in,
sync commands, gateway handshake, guild_ready_timeout (2 s by default). Then the first /paper search answer
and the process's resident memory. Target: ready ≤ 5 s, ≤ 1 GB resident.

    .venv/bin/python bench/startup_bench.py [--papers 100000] [--db PATH] [--ready-timeout 30]

The database is prepared as `digest_bench.py` prepares it (10,000 subscribers, 100,000 papers; needs
../shared/data/multivenue/); `--db` keeps it for the next run (and can share the digest bench's).
`--ready-timeout`: how long to wait for on_ready (a machine other work keeps busy may need more than 30 s).
The first search is timed until its answer arrives, also when it came past Discord's 3 s (refused).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import digest_bench

from bot.sandbox import SandboxServer
from bot.sandbox.harness import running_paperbot, sandbox_settings

READY_TARGET_S = 5.0
MEMORY_TARGET_MB = 1024


async def measure(db_path: Path, ready_timeout: float) -> int:
    async with SandboxServer() as server:
        settings = sandbox_settings(server, db_path)
        started = time.perf_counter()
        async with running_paperbot(
            server, settings, load_shipped_corpus=False, client_options={}, ready_timeout=ready_timeout
        ) as running:
            ready = time.perf_counter() - started
            papers = len(running.services.search)
            first = time.perf_counter()
            result = await server.run_command(
                "bob", "paper search", query="kv cache quantization", limit=5, check=False, timeout=30
            )
            answered = time.perf_counter() - first
            late = result.record.late_callback_age is not None or bool(result.record.rejected)
            rss = digest_bench.rss_mb()
    ok = ready <= READY_TARGET_S and rss <= MEMORY_TARGET_MB
    print(f"papers indexed            {papers:>10,}")
    print(
        f"start → on_ready          {ready:>10.2f} s   (target ≤ {READY_TARGET_S:.0f} s; includes discord.py's 2 s guild_ready_timeout)"
    )
    outcome = "refused: past Discord's 3 s" if late else "answered" if result.embeds else "no answer"
    print(f"first /paper search       {answered * 1000:>10.1f} ms  ({outcome})")
    print(f"resident memory           {rss:>10.0f} MB  (target ≤ {MEMORY_TARGET_MB} MB)")
    print(f"load average              {digest_bench.load_average():>10}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--db", type=Path, help="keep the prepared database here and reuse it next time")
    parser.add_argument("--ready-timeout", type=float, default=30.0, help="seconds to wait for on_ready")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not digest_bench.CORPUS.exists():
        print(f"start-up bench skipped: {digest_bench.CORPUS} is absent (research data, not shipped)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        db_path = args.db or Path(tmp) / "bench.db"
        if not db_path.exists():
            command = [sys.executable, digest_bench.__file__, "--prepare", str(db_path)]
            command += ["--subscribers", str(args.subscribers), "--papers", str(args.papers)]
            subprocess.run(command, check=True)
        return asyncio.run(measure(db_path, args.ready_timeout))


if __name__ == "__main__":
    raise SystemExit(main())
