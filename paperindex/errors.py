"""What the engine raises. Each message is written for the person who typed the query or named the
paper, so an application can show it as it is."""

from __future__ import annotations


class SearchError(Exception):
    """A query or a paper the engine cannot take; ``str()`` says why, for the person who asked."""


class QueryError(SearchError, ValueError):
    """A query that cannot be searched (empty, too long, no searchable words)."""


class UnknownPaperError(SearchError, KeyError):
    """A paper id the index does not hold."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
