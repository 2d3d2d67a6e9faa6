"""Cleaning what parsers read: ids, venues, years, dates, authors, URLs; and how a parser says "no".

The merge keys themselves (canonical arXiv / OpenReview / DOI ids, the content key) are defined in
`storage.repositories.paper_keys`, beside the UNIQUE columns that enforce them, and re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from storage.repositories.paper_keys import (
    arxiv_id,
    content_key,
    doi,
    find_arxiv_id,
    normalise_text,
    openreview_id,
)

__all__ = [
    "FileRejected",
    "RecordError",
    "Rejected",
    "arxiv_id",
    "clean_text",
    "clean_url",
    "content_key",
    "doi",
    "find_arxiv_id",
    "iso_date",
    "normalise_text",
    "openreview_id",
    "parse_venue",
    "parse_year",
    "split_authors",
]

MIN_YEAR, MAX_YEAR = 1900, 2100


@dataclass(frozen=True, slots=True)
class Rejected:
    """One record a parser could not use: where it was and why."""

    reason: str
    line: int | None = None  # 1-based line in the file, when known
    item: int | None = None  # 1-based position in a JSON list, when the line is not known

    def where(self, name: str) -> str:
        if self.line is not None:
            return f"{name}:{self.line}"
        if self.item is not None:
            return f"{name}:item {self.item}"
        return name


class RecordError(ValueError):
    """A record that cannot be ingested; str() is the reason."""


class FileRejected(ValueError):
    """A whole file that cannot be ingested (not JSON, an arXiv error feed, ...)."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def clean_text(value: object) -> str:
    """A string field with runs of whitespace (line wraps included) collapsed; "" for non-strings."""
    if not isinstance(value, str):
        return ""
    return " ".join(value.split())


# Canonical spellings of venues that appear in lower case or under old names.
_VENUES = {
    "icml": "ICML",
    "iclr": "ICLR",
    "neurips": "NeurIPS",
    "nips": "NeurIPS",
    "cvpr": "CVPR",
    "iccv": "ICCV",
    "eccv": "ECCV",
    "corl": "CoRL",
    "colt": "COLT",
    "aistats": "AISTATS",
    "uai": "UAI",
    "aaai": "AAAI",
    "ijcai": "IJCAI",
    "kdd": "KDD",
    "acl": "ACL",
    "emnlp": "EMNLP",
    "naacl": "NAACL",
    "eacl": "EACL",
    "coling": "COLING",
    "sigir": "SIGIR",
    "www": "WWW",
    "tmlr": "TMLR",
    "jmlr": "JMLR",
    "icra": "ICRA",
    "iros": "IROS",
    "rss": "RSS",
    "miccai": "MICCAI",
    "interspeech": "INTERSPEECH",
    "icassp": "ICASSP",
    "wacv": "WACV",
    "bmvc": "BMVC",
    "arxiv": "arXiv",
}
_STATUS_WORDS = ("oral", "spotlight", "poster", "workshop", "reject", "rejected", "withdrawn", "accept")
_VENUE_YEAR = re.compile(r"^(?P<name>.*?)[\s'’]*(?P<year>(?:19|20)\d{2})\b(?P<rest>.*)$")


def parse_venue(value: object) -> tuple[str | None, int | None, str | None]:
    """("ICML", 2024, "Poster") from "ICML 2024 Poster"; ("NeurIPS", None, None) from "nips".

    The name is canonicalised for well-known venues so a venue filter finds every year of it.
    """
    text = clean_text(value)
    if not text:
        return None, None, None
    year: int | None = None
    status: str | None = None
    name = text
    match = _VENUE_YEAR.match(text)
    if match and match.group("name").strip():
        name = match.group("name").strip()
        year = int(match.group("year"))
        rest = match.group("rest").strip(" -:·,()")
        if rest and rest.split()[0].lower() in _STATUS_WORDS:
            status = rest
        elif rest:
            name = text  # "ICML 2024 Workshop on X": keep the whole thing
    canonical = _VENUES.get(name.lower())
    return canonical or name, year, status


def parse_year(value: object) -> int | None:
    """A year from an int or a string ("2024", "2024-05-01"); RecordError when it is not a year."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RecordError(f"invalid year {value!r}")
    if isinstance(value, int):
        year = value
    elif isinstance(value, float) and value.is_integer():
        year = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d{4}(?:[-/].*)?\s*", value):
        year = int(value.strip()[:4])
    else:
        raise RecordError(f"invalid year {value!r}")
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise RecordError(f"invalid year {value!r} (outside {MIN_YEAR}-{MAX_YEAR})")
    return year


_DATE = re.compile(r"(?P<y>(?:19|20)\d{2})-(?P<m>\d{2})-(?P<d>\d{2})")


def iso_date(value: object) -> str | None:
    """YYYY-MM-DD from an ISO date or timestamp ("2024-03-25T17:42:32Z"); None when there is none."""
    if not isinstance(value, str):
        return None
    match = _DATE.search(value)
    if not match:
        return None
    try:
        return date(int(match["y"]), int(match["m"]), int(match["d"])).isoformat()
    except ValueError:
        return None


def _author_name(item: object) -> str:
    if isinstance(item, str):
        return clean_text(item)
    if isinstance(item, dict):
        for key in ("name", "fullname", "full_name", "display_name"):
            if isinstance(item.get(key), str):
                return clean_text(item[key])
        first = clean_text(item.get("first") or item.get("given") or item.get("first_name"))
        last = clean_text(item.get("last") or item.get("family") or item.get("last_name"))
        return f"{first} {last}".strip()
    return ""


def split_authors(value: object) -> tuple[str, ...]:
    """Author names from a list (of names or {name} objects) or a ";" / "," / " and "-separated string."""
    if isinstance(value, dict) and "value" in value:  # OpenReview API v2: {"value": [...]}
        value = value["value"]
    if isinstance(value, list | tuple):
        names = [_author_name(item) for item in value]
    elif isinstance(value, str):
        text = clean_text(value)
        if not text:
            return ()
        parts = text.split(";") if ";" in text else re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
        names = [clean_text(part) for part in parts]
    else:
        return ()
    seen: set[str] = set()
    unique: list[str] = []
    for name in names:
        if name and name not in seen:
            seen.add(name)
            unique.append(name)
    return tuple(unique)


def clean_url(value: object) -> str | None:
    """An absolute http(s) URL, or None (relative paths and other schemes are dropped)."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    if url.startswith("//"):
        url = "https:" + url
    if not re.match(r"https?://\S+$", url, re.IGNORECASE):
        return None
    return url
