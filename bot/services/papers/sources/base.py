"""What every source of papers is: something that fetches, page by page, the papers of a date range.

A `Source` turns its service's answers into `PaperRecord`s and says which answers it could not use
(`SourcePage.problems`). It never stores anything: `bot.services.papers.sources.fetch` merges each
page into the store with the same repository (and so the same dedup) as `paperbot ingest`, and keeps
the page's cursor in the same transaction, so a fetch stopped anywhere resumes at the next page.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, TypeVar

from bot.errors import UserFacingError
from bot.services.papers.sources.http import PoliteClient
from storage.models import PaperRecord

_Item = TypeVar("_Item")

#: A source's own resume state (JSON-able): a cursor, an offset.
Cursor = Mapping[str, Any]


class SourceError(UserFacingError):
    """The source refused what was asked (an unknown venue, a URL that is no feed); str() says why.
    Nothing more is fetched; what was stored stays."""


@dataclass(frozen=True, slots=True)
class SourcePage:
    """One answer of a source, parsed."""

    records: list[PaperRecord]
    #: records it could not use, each "where: why"
    problems: list[str] = field(default_factory=list)
    #: where the next page starts (kept with this page's papers); None after the last page
    cursor: Cursor | None = None
    #: records left out as older than the range asked (a feed lists what it lists)
    older: int = 0


def json_answer(data: bytes, where: str) -> Any:
    """A JSON API's answer; `SourceError` saying ``where`` when it is not JSON."""
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise SourceError(f"{where}: not the API's JSON ({error})") from None


def parse_each(
    items: Iterable[_Item], parse: Callable[[_Item], PaperRecord | str], where: str
) -> tuple[list[PaperRecord], list[str]]:
    """Each of a page's items as a record, and "``where`` N: why" for each item ``parse`` refused (it
    returns the reason as a string)."""
    records: list[PaperRecord] = []
    problems: list[str] = []
    for number, item in enumerate(items, start=1):
        found = parse(item)
        if isinstance(found, str):
            problems.append(f"{where} {number}: {found}")
        else:
            records.append(found)
    return records, problems


class Source(Protocol):
    """A live source of papers."""

    #: its key in the store (`source_fetches`), e.g. "rss:https://…", "biorxiv:neuroscience"
    @property
    def name(self) -> str: ...

    #: the service, as an error names it ("bioRxiv's API (https://api.biorxiv.org)")
    @property
    def service(self) -> str: ...

    def pages(
        self, client: PoliteClient, since: date, until: date, cursor: Cursor | None
    ) -> AsyncIterator[SourcePage]:
        """The papers posted from `since` to `until` (inclusive), page by page, starting at `cursor`
        (a page's cursor from an interrupted fetch) or at the first page. The last page has no cursor.
        Raises `SourceError` (or `SourceUnreachableError`) when it cannot go on."""
        ...
