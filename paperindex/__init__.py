"""paperindex: exact BM25 search over papers — the scores of ``rank_bm25.BM25Okapi`` from compressed
segments, a compiled top-k, filters, similar papers and autocomplete, saved and loaded as a snapshot.

It knows nothing of the application around it: give :class:`SearchEngine` papers as
:class:`Document` tuples and ask it queries. ``paperbot`` is one such application.

The names below are imported on first use, so ``paperindex.errors`` alone does not load numba.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paperindex.documents import Document
    from paperindex.engine import SearchEngine
    from paperindex.errors import QueryError, SearchError, UnknownPaperError

__all__ = ["Document", "QueryError", "SearchEngine", "SearchError", "UnknownPaperError"]

_HOMES = {
    "Document": "paperindex.documents",
    "SearchEngine": "paperindex.engine",
    "QueryError": "paperindex.errors",
    "SearchError": "paperindex.errors",
    "UnknownPaperError": "paperindex.errors",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'paperindex' has no attribute {name!r}")
