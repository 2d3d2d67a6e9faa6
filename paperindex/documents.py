"""What the engine indexes of a paper."""

from __future__ import annotations

from typing import NamedTuple


class Document(NamedTuple):
    """One paper as the index holds it. Any tuple in this field order is taken as one (an
    application's own row type, such as paperbot's ``storage.models.IndexRow``, needs no copy)."""

    paper_id: int
    title: str
    abstract: str
    authors: tuple[str, ...] = ()
    venue: str | None = None
    year: int | None = None
    #: arXiv / OpenReview ids and DOIs, found by autocomplete
    external_ids: tuple[str, ...] = ()
