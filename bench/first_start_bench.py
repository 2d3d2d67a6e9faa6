"""A researcher's first start: `paperbot start` (no token: the sandbox console) on a fresh install, to
its first answer, and the start after it.

"Fresh install" is an empty numba cache (a new NUMBA_CACHE_DIR): nothing compiled yet. Each run starts
`python -m bot start` as a child process, types `/paper search query:"kv cache quantization"` at its
prompt, then `quit`, and times from the child's start to the first line of the answer. Then it waits
for the loops compiled in the background (their stamp in the cache) and starts again on the same cache:
a later start.

    .venv/bin/python bench/first_start_bench.py [--store icml2024] [--runs 1]

`--store shipped` (default): the temporary store with the shipped corpus, as the README's start command
gives it. `--store icml2024`: PAPERBOT_DB names a store of ICML 2024's 2,610 papers (ingested once,
needs ../shared/data/; each run copies it without its search-index snapshot, so the first start builds
the index). No `--compare`: the editable install's import hook puts this checkout's packages before
another tree's on PYTHONPATH, so measure another commit from its own checkout and venv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import REPO, SHARED, load_average

ICML = SHARED / "icml2024" / "icml2024_papers.jsonl.gz"
SEARCH = '/paper search query:"kv cache quantization" limit:3'
STAMP_WAIT_S = 900


def start(source: Path, cache: Path, store: Path | None, cwd: Path) -> tuple[float | None, float, list[str]]:
    """`python -m bot start` of the code in `source`: seconds to the answer's first line (None: none),
    seconds to its exit, what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(source))
    if store is not None:
        env["PAPERBOT_DB"] = str(store)
    began = time.perf_counter()
    answered = None
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "bot", "start"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(f"{SEARCH}\nquit\n")
        child.stdin.close()
        for line in child.stdout:
            lines.append(line.rstrip("\n"))
            if answered is None and "paperbot in #papers" in line:
                answered = time.perf_counter() - began
        child.wait()
    return answered, time.perf_counter() - began, lines


def wait_for_stamp(cache: Path) -> float | None:
    """Seconds until the loops compiled in the background are ready: in numba's cache and, where a C
    compiler is at hand, in the module later starts load without numba (None: no stamp came)."""
    began = time.perf_counter()
    while time.perf_counter() - began < STAMP_WAIT_S:
        if list(cache.glob("paperindex-*.ready")):
            return time.perf_counter() - began
        time.sleep(0.5)
    return None


def prepared_store(folder: Path) -> Path:
    """A store of ICML 2024's papers, ingested by this checkout's `paperbot ingest` (once)."""
    store = folder / "icml2024.db"
    if not store.exists():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
        env.update(PAPERBOT_DB=str(store), PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, "-m", "bot", "ingest", str(ICML)], env=env, check=True, cwd=folder)
    return store


def one_run(label: str, source: Path, store: Path | None, scratch: Path) -> None:
    cache = Path(tempfile.mkdtemp(prefix="numba-cache-", dir=scratch))
    copy = None
    if store is not None:  # the store without its snapshot: the first start builds the index
        copy = scratch / f"run-{cache.name}.db"
        shutil.copy(store, copy)
    print(f"\n{label}  (load {load_average()})")
    first, first_exit, lines = start(source, cache, copy, scratch)
    progress = [line for line in lines if line.startswith("paperbot")]
    shown = "never" if first is None else f"{first:6.1f} s"
    print(f"  first start, empty numba cache:  first answer {shown}   exit {first_exit:6.1f} s")
    for line in progress:
        print(f"      | {line[:150]}")
    preparing = any("in the background" in line for line in progress)
    background = wait_for_stamp(cache) if preparing else None
    if background is not None:
        built = "ahead of time too" if list(cache.glob("paperindex_loops_*.json")) else "numba's cache only"
        print(
            f"  loops compiled in the background: {first_exit + background:6.1f} s after the start ({built})"
        )
    later, later_exit, _ = start(source, cache, copy, scratch)
    shown = "never" if later is None else f"{later:6.1f} s"
    print(f"  later start (cache filled):       first answer {shown}   exit {later_exit:6.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", choices=("shipped", "icml2024"), default="shipped")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if args.store == "icml2024" and not ICML.exists():
        print(f"needs {ICML} (../shared/data/): absent", file=sys.stderr)
        return 2
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="first-start-") as folder:
        scratch = Path(folder)
        store = prepared_store(scratch) if args.store == "icml2024" else None
        for run in range(1, args.runs + 1):
            one_run(f"{head} (run {run}, {args.store})", REPO, store, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
