"""Saved papers as CSL-JSON: the citation data of the Citation Style Language (its schema
``csl-data.json``), which Zotero imports and pandoc, citeproc and most reference tools read.

A JSON array of items; each has the required ``id`` and ``type`` (``paper-conference`` with a venue,
else ``article``, CSL's type for a preprint), and only variables the schema defines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bot.services.papers.bibtex import unique_keys
from bot.services.papers.citation import id_lines, landing_url, split_name
from bot.services.papers.latex_text import readable
from storage.models import Paper


def _name(author: str) -> dict[str, str]:
    family, given = split_name(author)
    return {"family": family, "given": given} if given else {"literal": family}


def _issued(paper: Paper) -> dict[str, list[list[int]]] | None:
    if paper.published:
        parts = [int(part) for part in paper.published.split("-")[:3] if part.isdigit()]
        if parts:
            return {"date-parts": [parts]}
    return {"date-parts": [[paper.year]]} if paper.year else None


def item(paper: Paper, key: str, *, include_abstract: bool = True) -> dict[str, Any]:
    """One CSL-JSON item; ``key`` is its id (the BibTeX key, so both files cite alike)."""
    data: dict[str, Any] = {
        "id": key,
        "type": "paper-conference" if paper.venue else "article",
        "title": readable(paper.title),
    }
    if paper.authors:
        data["author"] = [_name(author) for author in paper.authors if author.strip()]
    if issued := _issued(paper):
        data["issued"] = issued
    if paper.venue:
        data["container-title"] = paper.venue
    elif paper.arxiv_id:
        data["publisher"] = "arXiv"
        data["number"] = f"arXiv:{paper.arxiv_id}"
    if paper.doi:
        data["DOI"] = paper.doi
    if url := landing_url(paper):
        data["URL"] = url
    if include_abstract and paper.abstract.strip():
        data["abstract"] = readable(paper.abstract)
    notes = id_lines(paper)
    if paper.title_derived:
        notes.append("Title derived from the abstract by paperbot")
    if notes:
        data["note"] = "\n".join(notes)
    return data


def to_csl_json(papers: Iterable[Paper], *, include_abstract: bool = True) -> str:
    """A whole CSL-JSON file (UTF-8) for these papers, in the given order."""
    items = list(papers)
    keys = unique_keys(items)
    data = [item(p, k, include_abstract=include_abstract) for p, k in zip(items, keys, strict=True)]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
