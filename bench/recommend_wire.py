"""Learning from reactions over the wire: recommend_eval.py's simulated people as sandbox users of the
real bot, side by side with the same people in recommend_eval.py's in-process simulation.

    .venv/bin/python bench/recommend_wire.py [--starts broad,name] [--people N] [--at-once 8]

recommend_eval.py calls the recommender and the feedback service directly. Here each person is a user
of the sandbox Discord, and the bot is the real one (``running_paperbot``: the discord.py client, its
services, the digest delivery): they type their phrase into `/paper interests add`, and each day run
`/paper digest`, wait for its papers in their DMs, press 👍 on those of their area and 👎 on the rest,
and wait until the store holds those ratings (a person rates a digest before the next day's). So it
checks that what recommend_eval.py measures is what people get, from the command to the digest and
back through the buttons.

The store: the ICLR 2024 papers with a virtual-site topic (1,990 of the multivenue file), so every
paper the bot may pick is labelled, as recommend_eval.py allows a person only labelled papers. The
people: the tune split's ICLR 2024 areas (29; a tune venue, so no test-split person is read here). The
in-process simulation runs the same people on its own copy of the same store, with the bot's own
learning settings. Reported: precision@5 per day and of days 4–6 both ways, and how many of the
papers each person was sent over the wire the in-process simulation picked for them on the same day.
The two need not agree pick for pick: over the wire, ratings are stamped by the bot's clock and the
digest's time is the real one (the simulation's days are a day apart), which moves each rating's
weight by a few hundredths.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_common import MULTIVENUE, multivenue_rows  # noqa: E402
from recommend_eval import (  # noqa: E402
    DAYS,
    PER_DAY,
    Person,
    Product,
    Split,
    load_split,
    product_picker,
    simulate,
    table,
    without_merged,
)

from bot.sandbox import SandboxServer  # noqa: E402
from bot.sandbox.harness import running_paperbot, sandbox_settings  # noqa: E402
from bot.services.recommend.learner import LearningParams  # noqa: E402

RATING = re.compile(r"pb:like:(\d+)")
SENT = re.compile(r"Sent (\d+) papers?")


def venue_rows() -> list[dict[str, Any]]:
    """The ICLR 2024 papers of the multivenue file that carry a virtual-site topic."""
    return [
        r for r in multivenue_rows() if r.get("venue") == "ICLR" and r.get("year") == 2024 and r.get("topic")
    ]


async def in_process(
    product: Product, split: Split, start: str
) -> tuple[np.ndarray, dict[tuple[int, int], list[int]]]:
    """recommend_eval.py's simulation with the bot's own learning settings: precision@5 per person and
    day, and the rows picked for (person, day)."""
    pick = product_picker(product, split, learn=True, learning=LearningParams())
    picked: dict[tuple[int, int], list[int]] = {}
    index = {person.area: p for p, person in enumerate(split.people)}

    async def recorded(person, phrase, liked, disliked, shown, day, state):  # type: ignore[no-untyped-def]
        rows = await pick(person, phrase, liked, disliked, shown, day, state)
        picked[(index[person.area], day)] = rows
        return rows

    return await simulate(split, start, recorded), picked


async def over_the_wire(
    store: Path, product: Product, split: Split, start: str, at_once: int
) -> tuple[np.ndarray, dict[tuple[int, int], list[int]]]:
    """The same people as users of the real bot on ``store``: precision@5 per person and day, and the
    rows each was sent on each day."""
    result = np.zeros((len(split.people), DAYS))
    sent: dict[tuple[int, int], list[int]] = {}
    async with SandboxServer() as server:
        # each person asks for a digest a day, the days squeezed into minutes: no per-person limit
        settings = sandbox_settings(server, store, state_dir=store.parent, person_limits=False)
        async with running_paperbot(server, settings, load_shipped_corpus=False) as running:
            space = running.services.recommender.space
            await server.eventually(lambda: space.ready, timeout=120, what="the paper space")
            gate = asyncio.Semaphore(at_once)

            async def one(p: int, person: Person) -> None:
                async with gate:
                    result[p], days = await person_over_the_wire(
                        server, running.services.db, product, person, p, start
                    )
                    sent.update({(p, day): rows for day, rows in enumerate(days)})

            await asyncio.gather(*(one(p, person) for p, person in enumerate(split.people)))
    return result, sent


def paper_of(message: Any) -> int | None:
    """The paper a DM message of the digest is about (its 👍 button names it)."""
    found = RATING.search(str(message.components))
    return int(found.group(1)) if found else None


async def person_over_the_wire(
    server: SandboxServer, db: Any, product: Product, person: Person, p: int, start: str
) -> tuple[np.ndarray, list[list[int]]]:
    user = server.add_user(f"reader{p}")
    phrase = person.name if start == "name" else person.broad
    await server.run_command(user, "paper interests add", topic=phrase, timeout=30)
    precision = np.zeros(DAYS)
    days: list[list[int]] = []
    seen = rated = 0
    for day in range(DAYS):
        answer = await server.run_command(user, "paper digest", timeout=60)
        count = int(match.group(1)) if (match := SENT.search(answer.content)) else 0

        def arrived(seen: int = seen, count: int = count) -> list[Any] | None:
            papers = [m for m in server.dm_messages(user) if m.embeds and paper_of(m) is not None]
            return papers[seen:] if len(papers) >= seen + count else None

        messages = (await server.eventually(arrived, timeout=30, what=f"{count} papers in the DM"))[:count]
        seen += count
        rows = [product.rows_of[paper_of(m)] for m in messages]  # type: ignore[index]
        for message, row in zip(messages, rows, strict=True):
            await server.click(user, message, "👍" if person.likes(row) else "👎", timeout=30)
        rated += len(rows)

        async def stored(rated: int = rated) -> bool:
            count = await db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (user.id,))
            return bool(count >= rated)

        await server.eventually(stored, timeout=30, what="the ratings stored")
        precision[day] = sum(row in person.relevant for row in rows) / PER_DAY
        days.append(rows)
    return precision, days


def agreement(
    sent: dict[tuple[int, int], list[int]], picked: dict[tuple[int, int], list[int]], people: int
) -> list[float]:
    """Per day, the share of the papers sent to a person that the simulation picked for them (mean over people)."""
    return [
        float(
            np.mean(
                [len(set(sent[p, d]) & set(picked[p, d])) / max(1, len(sent[p, d])) for p in range(people)]
            )
        )
        for d in range(DAYS)
    ]


def report(split: Split, start: str, results: dict[str, np.ndarray], agreement: list[float]) -> None:
    """recommend_eval.py's table of both ways, and a row of how far the picks agree."""
    print("\n" + table(split, start, results))
    print(
        f"| sent over the wire that the simulation also picked | {' | '.join(f'{a:.2f}' for a in agreement)} | |"
    )


async def run(args: argparse.Namespace) -> int:
    rows = venue_rows()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        pristine = Path(folder) / "pristine"
        pristine.mkdir()
        product = await Product.open(pristine, rows)
        await product.db.close()
        split = without_merged(load_split(rows, "tune"), product)
        split = Split(split.name, split.people[: args.people] if args.people else split.people)
        print(f"store {len(rows):,} papers (ICLR 2024 with a topic), {len(split.people)} people", flush=True)
        for start in args.starts:
            copies = {}
            for way in ("in-process", "wire"):
                (Path(folder) / f"{way}-{start}").mkdir()
                copies[way] = Path(folder) / f"{way}-{start}" / "bench.db"
                shutil.copy(pristine / "bench.db", copies[way])
            local = await Product.open(copies["in-process"].parent, rows)  # the copy: every row is there
            try:
                simulated, picked = await in_process(local, split, start)
            finally:
                await local.db.close()
            wire, sent = await over_the_wire(copies["wire"], product, split, start, args.at_once)
            results = {"in-process (recommend_eval.py)": simulated, "over the wire": wire}
            report(split, start, results, agreement(sent, picked, len(split.people)))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", default="broad,name", help="comma-separated: broad, name")
    parser.add_argument("--people", type=int, default=0, help="only the first N people (0: all)")
    parser.add_argument("--at-once", type=int, default=8, help="people using the bot at the same time")
    args = parser.parse_args()
    args.starts = [s.strip() for s in args.starts.split(",")]
    if unknown := set(args.starts) - {"broad", "name"}:
        parser.error(f"unknown --starts: {', '.join(sorted(unknown))} (broad, name)")
    logging.basicConfig(level=logging.WARNING)
    if not MULTIVENUE.exists():
        print(f"needs {MULTIVENUE} (the shared data); not found", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
