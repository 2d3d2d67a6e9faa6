"""How skimmable a digest is: characters per five-paper digest, and whether the gist states the method.

    .venv/bin/python bench/digest_skim.py            # the shipped corpus, plus ../shared/data when present
    .venv/bin/python bench/digest_skim.py --digests 200

1. Characters per five-paper digest. Real digests: the bot's own `DigestPlanner` (the recommender
   and its reasons) on a temporary store, one digest of 5 papers per topic of :data:`TOPICS`, each
   rendered two ways — as digests were sent before (``before_embed`` below: a copy of the old
   ``bot.ui.embeds.paper_embed(paper, reason=…)``, whole abstract up to 1,500 characters, Authors /
   Venue / Links fields, "Unknown authors" when none) and as they are sent now
   (``bot.ui.paper_views.digest_message``). Counted as a reader gets them: the header line, every
   embed's title, description, field names and values and footer (discord.py's ``len(embed)``),
   and button labels.
2. The gist on abstracts that name a method. An abstract names a method when one of its sentences
   says "we propose / introduce / present …" followed by a name (a word with two capitals or a
   digit, as in MGit, LoRA, GPT-4, or "called / named / dubbed / termed …"): :func:`names_method`,
   written for this measure and not used by the gist rule. A hit: the shown text contains that
   sentence (its first 80 characters). Side by side: the gist rule (``bot.services.papers.gist``), the
   abstract's first sentence, its first two sentences, its first 320 characters, and the whole
   abstract as digests showed it before (first 1,500 characters).
3. Gists that hold a link: a sentence saying where the code or data is, shown as what the paper does.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import discord

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.runtime import open_services  # noqa: E402
from bot.services.digests.planning import DigestPlan  # noqa: E402
from bot.services.papers.gist import gist  # noqa: E402
from bot.services.papers.ingest.runner import ingest_paths  # noqa: E402
from bot.services.papers.prose import plain_text, sentences  # noqa: E402
from bot.services.search.snippets import escape_markdown  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.ui.embeds import GIST_LIMIT  # noqa: E402
from bot.ui.format import display_title, links, paper_link, trim  # noqa: E402
from bot.ui.paper_views import digest_message  # noqa: E402
from storage.models import Paper, Subscription  # noqa: E402
from storage.store import StoreLocation  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
CORPORA = {
    "ICML 2024 (2,610 papers, with authors)": SHARED / "icml2024" / "icml2024_papers.jsonl.gz",
    "multivenue (35,712 papers)": SHARED / "multivenue" / "multivenue_corpus.jsonl.gz",
}
TOPICS = (
    "kv cache quantization",
    "speculative decoding",
    "diffusion models",
    "graph neural networks",
    "reinforcement learning from human feedback",
    "federated learning",
    "in-context learning",
    "vision transformers",
    "offline reinforcement learning",
    "differential privacy",
    "mixture of experts",
    "causal inference",
    "contrastive learning",
    "neural architecture search",
    "adversarial robustness",
    "bayesian optimization",
    "time series forecasting",
    "protein structure",
    "continual learning",
    "low-rank adaptation",
)


# -- 1. characters per digest -------------------------------------------------------------------


def before_embed(paper: Paper, reason: str) -> discord.Embed:
    """A digest paper as it was sent before: bot/ui/embeds.py paper_embed(paper, reason=…) at 5ceb790."""
    abstract = escape_markdown(trim(paper.abstract, 1500)) if paper.abstract else "*No abstract.*"
    embed = discord.Embed(
        title=trim(display_title(paper), 256),
        url=paper_link(paper),
        description=trim(f"*{escape_markdown(trim(reason, 300))}*\n\n{abstract}", 4096),
    )
    authors = paper.authors
    shown = (
        ", ".join(authors)
        if len(authors) <= 8
        else f"{', '.join(authors[:8])} et al. ({len(authors)} authors)"
    )
    embed.add_field(name="Authors", value=trim(shown or "Unknown authors", 1024))
    venue = (
        " ".join(p for p in (paper.venue, str(paper.year) if paper.year else None) if p) or "Venue unknown"
    )
    if paper.venue and paper.year and str(paper.year) in paper.venue:
        venue = paper.venue
    embed.add_field(name="Venue", value=trim(venue + (f" · {paper.status}" if paper.status else ""), 1024))
    link_text = " · ".join(f"[{name}]({url})" for name, url in links(paper))
    if link_text:
        embed.add_field(name="Links", value=trim(link_text, 1024), inline=False)
    embed.set_footer(text=f"paper #{paper.id} · react 👍 👎 🔖 to rate or save")
    return embed


def digest_chars(plan: DigestPlan, render: Callable[[Paper, str], tuple[discord.Embed, list[str]]]) -> int:
    total = len(plan.header)
    for planned in plan.papers:
        embed, labels = render(planned.paper, planned.reason)
        total += len(embed) + sum(map(len, labels))
    return total


def render_before(paper: Paper, reason: str) -> tuple[discord.Embed, list[str]]:
    return before_embed(paper, reason), []


def render_now(paper: Paper, reason: str) -> tuple[discord.Embed, list[str]]:
    shown = digest_message(paper, reason)
    labels = [str(getattr(item, "item", item).label or "") for item in shown.view.children]
    return shown.embed, labels


async def digest_sizes(corpus: Path | None, count: int) -> tuple[list[int], list[int]]:
    """(before, now) characters of each five-paper digest of ``count`` (fewer where fewer than 5 match)."""
    before: list[int] = []
    now: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(store=StoreLocation.parse(str(Path(folder) / "bench.db")))
        async with open_services(settings, load_shipped_corpus=corpus is None) as services:
            if corpus is not None:
                await ingest_paths(services.db, [corpus])
                await services.index.refresh()
            for number, topics in enumerate(_topic_sets(count), 1):
                sub = _subscription(number, topics)
                plan = await services.digests.planner.build(sub, sent=())
                if len(plan.papers) < 5:
                    continue
                before.append(digest_chars(plan, render_before))
                now.append(digest_chars(plan, render_now))
    return before, now


def _topic_sets(count: int) -> Iterator[tuple[str, ...]]:
    for number in range(count):
        yield (
            (TOPICS[number % len(TOPICS)],)
            if number < len(TOPICS)
            else (
                TOPICS[number % len(TOPICS)],
                TOPICS[(number * 7 + 3) % len(TOPICS)],
            )
        )


def _subscription(number: int, topics: tuple[str, ...]) -> Subscription:
    return Subscription(
        id=number,
        kind="user",
        user_id=number,
        guild_id=None,
        channel_id=None,
        topics=topics,
        time_local="09:00",
        timezone="UTC",
        frequency="daily",
        weekday=0,
        count=5,
        active=True,
        paused_reason=None,
        created_by=number,
        created_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:00:00+00:00",
    )


# -- 2. does the gist state the method? ---------------------------------------------------------

_WE_PROPOSE = re.compile(r"\bwe\s+(?:[\w-]+\s+){0,2}?(?:propose|introduce|present)[sd]?\b(?P<rest>.*)", re.I)
_A_NAME = re.compile(r"\b(?:called|named|dubbed|termed)\b|\b[A-Z][\w-]*[A-Z0-9][\w-]*\b")


def names_method(sentence: str) -> bool:
    """ "we propose / introduce / present …" followed by a name (see the module docstring)."""
    match = _WE_PROPOSE.search(sentence)
    return bool(match and _A_NAME.search(match.group("rest")))


SHOWN: dict[str, Callable[[str], str]] = {
    "gist rule (now)": lambda abstract: trim(gist(abstract).text, GIST_LIMIT),
    "first sentence": lambda abstract: (sentences(plain_text(abstract)) or [""])[0],
    "first two sentences": lambda abstract: " ".join(sentences(plain_text(abstract))[:2]),
    "first 320 characters": lambda abstract: trim(plain_text(abstract), 320),
    "whole abstract to 1,500 (before)": lambda abstract: trim(plain_text(abstract), 1500),
}


def gist_hits(abstracts: list[str]) -> tuple[int, dict[str, tuple[float, float]]]:
    """How many abstracts name a method, and per way of showing: (hit rate, mean characters shown)."""
    labelled = []
    for abstract in abstracts:
        method = [s for s in sentences(plain_text(abstract)) if names_method(s)]
        if method:
            labelled.append((abstract, method))
    figures = {}
    for name, show in SHOWN.items():
        hits = 0
        chars = 0
        for abstract, method in labelled:
            shown = show(abstract)
            chars += len(shown)
            hits += any(s[:80] in shown for s in method)
        figures[name] = (hits / len(labelled), chars / len(labelled))
    return len(labelled), figures


_LINK = re.compile(r"https?://|\bwww\.|\bgithub\.com/", re.I)


def gists_with_a_link(abstracts: list[str]) -> int:
    """How many gists hold a link: a code or data sentence ("We release X at https://…") shown as
    what the paper does."""
    return sum(bool(_LINK.search(gist(abstract).text)) for abstract in abstracts)


def read_abstracts(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [a for a in (json.loads(line).get("abstract") or "" for line in lines) if a]


def shipped_abstracts() -> list[str]:
    from bot.services.papers.ingest.runner import shipped_seed_files

    return [
        p for _, data in shipped_seed_files() for p in data.decode("utf-8").split("\n\n")[1:] if p.strip()
    ]


# -- report ---------------------------------------------------------------------------------------


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _quantiles(values: list[int]) -> tuple[float, float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))], max(ordered)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--digests", type=int, default=40, help="five-paper digests per corpus (default 40)")
    args = parser.parse_args()

    corpora: dict[str, Path | None] = {"shipped corpus (38 papers, no authors)": None}
    corpora |= {name: path for name, path in CORPORA.items() if path.is_file()}
    missing = [str(path) for path in CORPORA.values() if not path.is_file()]
    if missing:
        print(f"(not found, left out: {', '.join(missing)})")

    print("\n1. Characters per five-paper digest (header + 5 paper messages)\n")
    print(
        _row(["corpus", "digests", "before: median / p90 / max", "now: median / p90 / max", "now / before"])
    )
    print(_row(["---"] * 5))
    for name, path in corpora.items():
        if path is not None and "multivenue" in str(path):
            continue  # digests: the ICML corpus has authors already; the large one is for the gist only
        before, now = await digest_sizes(path, args.digests)
        if not before:
            print(_row([name, "0", "—", "—", "—"]))
            continue
        b, n = _quantiles(before), _quantiles(now)
        ratio = statistics.median(x / y for x, y in zip(now, before, strict=True))
        print(
            _row(
                [
                    name,
                    str(len(before)),
                    " / ".join(f"{v:,.0f}" for v in b),
                    " / ".join(f"{v:,.0f}" for v in n),
                    f"{ratio:.2f}",
                ]
            )
        )
    print("\n2. Papers whose abstract names a method: does what is shown contain that sentence?\n")
    sets = {"shipped corpus": shipped_abstracts()}
    sets |= {name: read_abstracts(path) for name, path in corpora.items() if path is not None}
    print(_row(["corpus", "abstracts naming a method", *SHOWN]))
    print(_row(["---"] * (2 + len(SHOWN))))
    for name, abstracts in sets.items():
        labelled, figures = gist_hits(abstracts)
        cells = [f"{rate:.1%} ({chars:,.0f} ch)" for rate, chars in figures.values()]
        print(_row([name, f"{labelled:,} of {len(abstracts):,}", *cells]))
    print("\n3. Gists that hold a link (where the code is, not what the paper does)\n")
    for name, abstracts in sets.items():
        print(f"{name}: {gists_with_a_link(abstracts):,} of {len(abstracts):,}")


if __name__ == "__main__":
    asyncio.run(main())
