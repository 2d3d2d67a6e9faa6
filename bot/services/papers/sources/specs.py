"""Sources named in text, as `PAPERBOT_SOURCES` and the daily job name them: `KIND:ARGUMENT`, e.g.
`rss:https://www.nature.com/nature.rss`, `biorxiv:neuroscience`, `medrxiv`, `medrxiv:epidemiology`,
`openreview:ICLR.cc/2025/Conference`, `arxiv:cs.LG`. Every one needs no key.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.services.papers.sources.arxiv import REQUEST_SPACING as ARXIV_SPACING
from bot.services.papers.sources.arxiv import ArxivSource
from bot.services.papers.sources.base import Source, SourceError
from bot.services.papers.sources.biorxiv import BiorxivSource
from bot.services.papers.sources.openreview import OpenReviewSource
from bot.services.papers.sources.rss import RssSource

KINDS = ("rss", "biorxiv", "medrxiv", "openreview", "arxiv")
#: seconds between two requests to one service: arXiv's terms ask 3, the others get 1
SPACING = {"arxiv": ARXIV_SPACING, "rss": 1.0, "biorxiv": 1.0, "medrxiv": 1.0, "openreview": 1.0}


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str
    argument: str  # "" when the kind takes none (medrxiv, biorxiv: every category)

    def __str__(self) -> str:
        return f"{self.kind}:{self.argument}" if self.argument else self.kind

    def build(self) -> Source:
        return build_source(self.kind, self.argument)

    @property
    def spacing(self) -> float:
        return SPACING[self.kind]


def build_source(kind: str, argument: str = "") -> Source:
    """The source a kind and its argument name; `SourceError` saying what is wrong otherwise."""
    if kind == "rss":
        if not argument:
            raise SourceError("rss needs the feed's URL: rss:https://…")
        return RssSource(argument)
    if kind in ("biorxiv", "medrxiv"):
        return BiorxivSource(kind, argument or None)
    if kind == "openreview":
        return OpenReviewSource(argument)
    if kind == "arxiv":
        if not argument:
            raise SourceError("arxiv needs a category: arxiv:cs.LG")
        return ArxivSource(argument)
    raise SourceError(f"unknown source {kind!r}: one of {', '.join(KINDS)}")


def parse_spec(text: str) -> SourceSpec:
    """One `KIND:ARGUMENT`, checked (the source it names can be built) and in the source's own spelling."""
    kind, _, argument = text.strip().partition(":")
    source = SourceSpec(kind.strip().lower(), argument.strip()).build()
    canonical, _, argument = source.name.partition(":")  # "BIORXIV:Cell_Biology" is biorxiv:cell_biology
    return SourceSpec(canonical, argument)


def parse_specs(text: str) -> tuple[SourceSpec, ...]:
    """Whitespace-separated specs (a bioRxiv category with spaces takes underscores)."""
    specs = [parse_spec(part) for part in text.split()]
    return tuple(dict.fromkeys(specs))
