"""JSON and JSONL paper records with the usual field names.

Accepted shapes: a JSON list of records, an object holding such a list (`papers`, `records`, `data`,
`items`, `results`, `notes`, `hits`, or its only list of objects), a single record object, and JSONL
(one record per line). Field names, first match wins:

- title: `title` (a record without one gets a derived title, marked as derived);
- abstract: `abstract`, `summary`, `text`, `abstract_text`, `description`;
- authors: `authors`, `author`, `creators` (a list of names or of `{name}` objects, or a string
  separated by ";" or ",");
- the record's own id (kept as the external id): `id`, `_id`, `uid`, `paper_id`, `paperId`, `key`;
- arXiv id: `arxiv_id`, `arxiv`, `arxivId`, `eprint`, `externalIds.ArXiv`, an arXiv URL in any link
  field, or an own id that is itself an arXiv id ("2401.01234v2");
- OpenReview id: `openreview_id`, `forum`, `openreview`, or an openreview.net URL;
- DOI: `doi`, `DOI`, `externalIds.DOI`, or a doi.org URL;
- venue / year / status: `venue`, `conference`, `booktitle`, `journal`; `year`; `status`,
  `decision` ("ICML 2024 Poster" in `venue` gives all three);
- links: `url`, `openreview_url`, `paper_url`, `site_url`, `pmlr_url`, `link`, …; `pdf_url`,
  `pdf`; `code`, `code_url`, `github` (else a code URL found in the abstract);
- date: `published`, `date`, `publication_date`, `publicationDate`.

OpenReview API v2 notes (`{"content": {"title": {"value": …}}}`) are unwrapped first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from bot.services.papers.ingest.normalise import (
    FileRejected,
    RecordError,
    Rejected,
    arxiv_id,
    clean_text,
    clean_url,
    doi,
    iso_date,
    openreview_id,
    parse_venue,
    parse_year,
    split_authors,
)
from bot.services.papers.ingest.titles import derive_title, extract_code_url
from storage.models import PaperRecord

_ABSTRACT_KEYS = ("abstract", "summary", "text", "abstract_text", "description", "paperAbstract")
_AUTHOR_KEYS = ("authors", "author", "creators", "authors_list")
_ID_KEYS = ("id", "_id", "uid", "paper_id", "paperId", "key")
_ARXIV_KEYS = ("arxiv_id", "arxiv", "arxivId", "eprint")
_OPENREVIEW_KEYS = ("openreview_id", "forum", "openreview")
_DOI_KEYS = ("doi", "DOI")
_VENUE_KEYS = ("venue", "conference", "booktitle", "journal", "venue_name")
_STATUS_KEYS = ("status", "decision", "presentation")
_URL_KEYS = (
    "url",
    "openreview_url",
    "paper_url",
    "site_url",
    "pmlr_url",
    "link",
    "html_url",
    "abs_url",
    "site",
    "proceeding",
)
_PDF_KEYS = ("pdf_url", "pdf", "pdf_link")
_CODE_KEYS = ("code", "code_url", "github", "repository", "repo")
_DATE_KEYS = ("published", "date", "publication_date", "publicationDate", "published_at")
_LIST_KEYS = ("papers", "records", "data", "items", "results", "notes", "hits", "entries")
#: why a record nested deeper than Python's JSON decoder goes (about 1,000 levels) is rejected
TOO_DEEP = "JSON nested too deeply"


def _first(obj: Mapping[str, Any], keys: Iterable[str]) -> Any:
    for key in keys:
        if key in obj:
            value = obj[key]
            if value is not None and value != "" and value != []:
                return value
    return None


def _found(obj: Mapping[str, Any], keys: Iterable[str], extract: Callable[[Any], str | None]) -> str | None:
    """The first usable value among `keys`, as `extract` reads it."""
    for key in keys:
        if key in obj:
            value = extract(obj[key])
            if value:
                return value
    return None


def _unwrap(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten an OpenReview API v2 note: `content.title.value` → `title`."""
    flat = dict(obj)
    content = obj.get("content")
    if isinstance(content, dict):
        for key, value in content.items():
            if isinstance(value, dict) and "value" in value:
                value = value["value"]
            flat.setdefault(key, value)
            if key in ("title", "abstract", "authors", "venue") and value not in (None, ""):
                flat[key] = value
    external = obj.get("externalIds")
    if isinstance(external, dict):
        for source_key, target in (("ArXiv", "arxiv_id"), ("DOI", "doi")):
            if external.get(source_key) and not flat.get(target):
                flat[target] = external[source_key]
    return flat


def _text_field(obj: Mapping[str, Any], keys: Iterable[str], label: str) -> str:
    value = _first(obj, keys)
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = " ".join(value)  # abstracts stored as a list of sentences
    if not isinstance(value, str):
        raise RecordError(f"{label} is not text ({type(value).__name__})")
    return clean_text(value)


def _ident(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str):
        text = str(value).strip()
        return text or None
    return None


def record_from_mapping(raw: object, *, source: str) -> PaperRecord:
    """One PaperRecord from a JSON object; RecordError says why it cannot be one."""
    if not isinstance(raw, dict):
        raise RecordError(f"not a JSON object ({type(raw).__name__})")
    obj = _unwrap(raw)
    title = _text_field(obj, ("title",), "title")
    abstract = _text_field(obj, _ABSTRACT_KEYS, "abstract")
    if not title and not abstract:
        raise RecordError("neither a title nor an abstract")

    external_id = _ident(_first(obj, _ID_KEYS))
    urls = [url for key in _URL_KEYS if key in obj and (url := clean_url(obj[key]))]
    pdfs = [url for key in _PDF_KEYS if key in obj and (url := clean_url(obj[key]))]
    links = urls + pdfs

    found_arxiv = _found(obj, _ARXIV_KEYS, lambda value: arxiv_id(_ident(value)))
    found_arxiv = found_arxiv or next(
        (a for link in links if "arxiv.org" in link and (a := arxiv_id(link))), None
    )
    if found_arxiv is None and external_id and ("." in external_id or "/" in external_id):
        found_arxiv = arxiv_id(external_id)
    found_openreview = _found(obj, _OPENREVIEW_KEYS, lambda value: openreview_id(_ident(value)))
    found_openreview = found_openreview or next(
        (o for link in links if "openreview.net" in link and (o := openreview_id(link))), None
    )
    found_doi = _found(obj, _DOI_KEYS, doi)
    found_doi = found_doi or next((d for link in links if "doi.org/" in link and (d := doi(link))), None)

    venue, venue_year, venue_status = parse_venue(_first(obj, _VENUE_KEYS))
    year = parse_year(_first(obj, ("year", "publication_year")))
    published = _found(obj, _DATE_KEYS, iso_date)
    if year is None:
        year = venue_year or (int(published[:4]) if published else None)
    status = clean_text(_first(obj, _STATUS_KEYS)) or venue_status

    url = urls[0] if urls else None
    if url is None and found_openreview:
        url = f"https://openreview.net/forum?id={found_openreview}"
    if url is None and found_arxiv:
        url = f"https://arxiv.org/abs/{found_arxiv}"
    pdf_url = pdfs[0] if pdfs else (f"https://arxiv.org/pdf/{found_arxiv}" if found_arxiv else None)
    code_url = _found(obj, _CODE_KEYS, clean_url)
    if code_url is None and abstract:
        code_url = extract_code_url(abstract)

    title_derived = False
    if not title:
        title, title_derived = derive_title(abstract), True
    return PaperRecord(
        title=title,
        title_derived=title_derived,
        abstract=abstract,
        authors=split_authors(_first(obj, _AUTHOR_KEYS)),
        venue=venue,
        year=year,
        status=status or None,
        url=url,
        pdf_url=pdf_url,
        code_url=code_url,
        arxiv_id=found_arxiv,
        openreview_id=found_openreview,
        doi=found_doi,
        external_id=external_id or found_openreview or found_arxiv,
        source=source,
        published=published,
    )


def _convert(
    raw: object, *, source: str, line: int | None = None, item: int | None = None
) -> PaperRecord | Rejected:
    try:
        return record_from_mapping(raw, source=source)
    except RecordError as error:
        return Rejected(str(error), line=line, item=item)


def parse_jsonl(lines: Iterable[str], *, source: str) -> Iterator[PaperRecord | Rejected]:
    """Records from JSON Lines; a bad line is a rejection with its line number, the rest go in."""
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as error:
            yield Rejected(f"invalid JSON ({error.msg})", line=number)
            continue
        except RecursionError:
            yield Rejected(TOO_DEEP, line=number)
            continue
        yield _convert(raw, source=source, line=number)


def _records_in_object(obj: dict[str, Any]) -> list[Any] | None:
    for key in _LIST_KEYS:
        if isinstance(obj.get(key), list):
            return list(obj[key])
    lists = [
        value for value in obj.values() if isinstance(value, list) and value and isinstance(value[0], dict)
    ]
    return lists[0] if len(lists) == 1 else None


def parse_json(text: str, *, source: str) -> Iterator[PaperRecord | Rejected]:
    """Records from a JSON document (a list, an object holding a list, or one record).

    A list is decoded element by element, so each rejection names its line; a syntax error stops
    the file there (what came before it still goes in) and is reported with its line.
    """
    text = text.lstrip("\ufeff")
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] == "[":
        yield from _parse_json_list(text, start + 1, source=source)
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise FileRejected(f"invalid JSON ({error.msg})", line=error.lineno) from None
    except RecursionError:
        raise FileRejected(TOO_DEEP) from None
    if isinstance(document, dict):
        items = _records_in_object(document)
        if items is None:
            yield _convert(document, source=source, line=1)
            return
        for position, raw in enumerate(items, start=1):
            yield _convert(raw, source=source, item=position)
        return
    raise FileRejected(f"expected a JSON list or object, found {type(document).__name__}")


_WHITESPACE = " \t\r\n"


def _parse_json_list(text: str, index: int, *, source: str) -> Iterator[PaperRecord | Rejected]:
    decoder = json.JSONDecoder()
    line, counted = 1, 0
    end = len(text)

    def skip(position: int) -> int:
        while position < end and text[position] in _WHITESPACE:
            position += 1
        return position

    index = skip(index)
    if index < end and text[index] == "]":
        return
    while index < end:
        line += text.count("\n", counted, index)
        counted = index
        try:
            raw, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as error:
            yield Rejected(f"invalid JSON ({error.msg}); the rest of the file was skipped", line=error.lineno)
            return
        except RecursionError:
            yield Rejected(TOO_DEEP, line=line)
            index = end_of_value(text, index)
        else:
            yield _convert(raw, source=source, line=line)
        index = skip(index)
        if index < end and text[index] == ",":
            index = skip(index + 1)
            continue
        if index < end and text[index] == "]":
            return
        line += text.count("\n", counted, index)
        counted = index
        yield Rejected("invalid JSON (expected ',' or ']'); the rest of the file was skipped", line=line)
        return
    yield Rejected("invalid JSON (the list is not closed)", line=text.count("\n") + 1)


def end_of_value(text: str, index: int) -> int:
    """Where the JSON array or object starting at `index` ends (just past its closing bracket), found
    without decoding it, so nesting of any depth is stepped over; the end of `text` if it never closes."""
    depth = 0
    position = index
    end = len(text)
    while position < end:
        char = text[position]
        if char == '"':
            position += 1
            while position < end and text[position] != '"':
                position += 2 if text[position] == "\\" else 1
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    return end
