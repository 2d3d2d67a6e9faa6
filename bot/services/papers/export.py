"""Saved papers as a file for a reference manager: BibTeX, RIS or CSL-JSON, each of which Zotero
imports (with ids, DOI, URL and abstract)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from bot.services.papers.bibtex import to_bibtex
from bot.services.papers.csl_json import to_csl_json
from bot.services.papers.ris import to_ris
from storage.models import Paper

FormatKey = Literal["bibtex", "ris", "csl-json"]


@dataclass(frozen=True, slots=True)
class ExportFormat:
    key: FormatKey
    label: str  # as people know it: "BibTeX"
    filename: str
    render: Callable[[Sequence[Paper]], str]


FORMATS: Final[dict[str, ExportFormat]] = {
    f.key: f
    for f in (
        ExportFormat("bibtex", "BibTeX", "paperbot-saved.bib", to_bibtex),
        ExportFormat("ris", "RIS", "paperbot-saved.ris", to_ris),
        ExportFormat("csl-json", "CSL-JSON", "paperbot-saved.json", to_csl_json),
    )
}


@dataclass(frozen=True, slots=True)
class ExportFile:
    format: ExportFormat
    data: bytes  # UTF-8

    @property
    def filename(self) -> str:
        return self.format.filename


def export(papers: Sequence[Paper], key: str) -> ExportFile:
    """``papers`` as a file in the format ``key`` names (a KeyError for another key)."""
    chosen = FORMATS[key]
    return ExportFile(chosen, chosen.render(papers).encode("utf-8"))
