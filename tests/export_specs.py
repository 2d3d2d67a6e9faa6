"""The export formats' specifications as checks, for the tests of the exports and of /paper saved:
RIS (the RIS specification, 2011) and CSL-JSON (the CSL data schema, csl-data.json)."""

from __future__ import annotations

import re
from typing import Any

# -- RIS ------------------------------------------------------------------------------------------

#: "TAG  - value": a capital letter, a capital or digit, two spaces, a hyphen, a space
TAG_LINE = re.compile(r"^(?P<tag>[A-Z][A-Z0-9])  - (?P<value>.*)$")
#: the tags of the specification this export uses (of its ~70)
SPEC_TAGS = {"TY", "TI", "AU", "PY", "DA", "T2", "DO", "UR", "L1", "AB", "N1", "ER"}
#: the specification's reference types this export uses
SPEC_TYPES = {"CONF", "GEN"}


def parse_ris(text: str) -> list[list[tuple[str, str]]]:
    """A strict reader: records of (tag, value); AssertionError on anything the specification rejects."""
    assert text.endswith("\r\n"), "the file ends with a line end"
    lines = text.split("\r\n")[:-1]
    assert all("\n" not in line and "\r" not in line for line in lines), "CR LF line ends only"
    records: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] | None = None
    for line in lines:
        if not line:
            assert current is None, "a blank line only between records"
            continue
        match = TAG_LINE.match(line)
        assert match, f"not a tag line: {line!r}"
        tag, value = match["tag"], match["value"]
        assert tag in SPEC_TAGS, tag
        if tag == "TY":
            assert current is None, "TY inside a record"
            assert value in SPEC_TYPES, value
            current = []
        assert current is not None, f"{tag} outside a record"
        current.append((tag, value))
        if tag == "ER":
            assert value == "", "ER  - ends a record and has no value"
            records.append(current)
            current = None
    assert current is None, "the last record was not closed with ER"
    return records


# -- CSL-JSON -------------------------------------------------------------------------------------

#: csl-data.json's item types
CSL_TYPES = set(
    [
        "article",
        "article-journal",
        "article-magazine",
        "article-newspaper",
        "bill",
        "book",
        "broadcast",
        "chapter",
        "classic",
        "collection",
        "dataset",
        "document",
        "entry",
        "entry-dictionary",
        "entry-encyclopedia",
        "figure",
        "graphic",
        "hearing",
        "interview",
        "legal_case",
        "legislation",
        "manuscript",
        "map",
        "motion_picture",
        "musical_score",
        "pamphlet",
        "paper-conference",
        "patent",
        "performance",
        "periodical",
        "personal_communication",
        "post",
        "post-weblog",
        "regulation",
        "report",
        "review",
        "review-book",
        "software",
        "song",
        "speech",
        "standard",
        "thesis",
        "treaty",
        "webpage",
    ]
)
#: csl-data.json's variables (its item properties; it allows no others)
NAME_VARIABLES = set(
    [
        "author",
        "chair",
        "collection-editor",
        "compiler",
        "composer",
        "container-author",
        "contributor",
        "curator",
        "director",
        "editor",
        "editorial-director",
        "executive-producer",
        "interviewer",
        "illustrator",
        "organizer",
        "original-author",
        "performer",
        "producer",
        "recipient",
        "reviewed-author",
        "translator",
    ]
)
DATE_VARIABLES = set(
    ["accessed", "available-date", "container", "event-date", "issued", "original-date", "submitted"]
)
OTHER_VARIABLES = set(
    [
        "type",
        "id",
        "categories",
        "language",
        "journalAbbreviation",
        "shortTitle",
        "abstract",
        "annote",
        "archive",
        "archive_collection",
        "archive_location",
        "archive-place",
        "authority",
        "call-number",
        "chapter-number",
        "citation-number",
        "citation-label",
        "collection-number",
        "collection-title",
        "container-title",
        "container-title-short",
        "dimensions",
        "division",
        "DOI",
        "edition",
        "event",
        "event-place",
        "first-reference-note-number",
        "genre",
        "ISAN",
        "ISBN",
        "ISCI",
        "ISMN",
        "ISRC",
        "ISSN",
        "ISWC",
        "issue",
        "jurisdiction",
        "keyword",
        "locator",
        "medium",
        "note",
        "number",
        "number-of-pages",
        "number-of-volumes",
        "original-publisher",
        "original-publisher-place",
        "original-title",
        "page",
        "page-first",
        "part",
        "part-title",
        "PMCID",
        "PMID",
        "printing",
        "publisher",
        "publisher-place",
        "references",
        "reviewed-title",
        "scale",
        "section",
        "source",
        "status",
        "supplement",
        "title",
        "title-short",
        "translated-title",
        "translated-title-short",
        "URL",
        "version",
        "volume",
        "year-suffix",
        "custom",
    ]
)
NAME_PARTS = set(
    [
        "family",
        "given",
        "dropping-particle",
        "non-dropping-particle",
        "suffix",
        "comma-suffix",
        "static-ordering",
        "literal",
        "parse-names",
    ]
)


def check_against_schema(data: Any) -> None:
    """What csl-data.json requires of a file; AssertionError naming what breaks it."""
    assert isinstance(data, list)
    for item in data:
        assert isinstance(item, dict)
        assert {"id", "type"} <= set(item), "id and type are required"
        assert isinstance(item["id"], str | int)
        assert item["type"] in CSL_TYPES, item["type"]
        unknown = set(item) - NAME_VARIABLES - DATE_VARIABLES - OTHER_VARIABLES
        assert not unknown, f"not CSL variables: {unknown}"
        for name in NAME_VARIABLES & set(item):
            for person in item[name]:
                assert set(person) <= NAME_PARTS, person
                assert all(isinstance(v, str) for v in person.values())
        for name in DATE_VARIABLES & set(item):
            parts = item[name]["date-parts"]
            assert set(item[name]) == {"date-parts"}
            assert 1 <= len(parts) <= 2
            assert all(1 <= len(p) <= 3 and all(isinstance(x, int | str) for x in p) for p in parts)
        for name in OTHER_VARIABLES & set(item) - {"id", "custom", "categories"}:
            assert isinstance(item[name], str | int), name
