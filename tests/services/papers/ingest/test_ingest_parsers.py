"""Each parser on small fixtures built here (and malformed variants), then on the real files in ../shared."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from shared_data import shared_path

from bot.services.papers.ingest.arxiv_atom import ArxivApiError, parse_atom, repair_mojibake, unwrap_recorded
from bot.services.papers.ingest.normalise import FileRejected, Rejected
from bot.services.papers.ingest.papertext import header_venue, parse_paper_list
from bot.services.papers.ingest.records import parse_json, parse_jsonl, record_from_mapping
from storage.models import PaperRecord

LONG = (
    "Sparse attention lets transformers process long documents, but its kernels waste memory bandwidth on "
    "padding. We introduce FlashSparse, a kernel library that packs blocks tightly and schedules them by "
    "size. Code is available at https://github.com/example/flashsparse."
)
OTHER = (
    "Diffusion models sample slowly because every step evaluates a large network. In this work, we propose "
    "a novel framework capable of adaptively allocating compute across steps, which reduces sampling time "
    "without hurting image quality on standard benchmarks."
)


def _records(items: list[PaperRecord | Rejected]) -> list[PaperRecord]:
    return [item for item in items if isinstance(item, PaperRecord)]


def _rejected(items: list[PaperRecord | Rejected]) -> list[Rejected]:
    return [item for item in items if isinstance(item, Rejected)]


# ----------------------------------------------------------------------------- paper-list text


def test_paper_list_text_gives_derived_titles_venue_year_and_code_urls() -> None:
    text = f"ICML 2024 论文列表\n\n{LONG}\n\n{OTHER}\n"
    items = list(parse_paper_list(text, source="list.txt"))
    first, second = _records(items)
    assert first.title.startswith("FlashSparse: a kernel library that packs blocks tightly")
    assert first.title_derived is True
    assert (first.venue, first.year) == ("ICML", 2024)
    assert first.code_url == "https://github.com/example/flashsparse"
    assert first.abstract == LONG
    assert first.source == "list.txt"
    assert second.code_url is None
    assert not _rejected(items)


def test_paper_list_paragraphs_may_wrap_over_lines_and_have_no_header() -> None:
    wrapped = LONG.replace(". ", ".\n", 1)
    records = _records(list(parse_paper_list(f"{wrapped}\n\n\n{OTHER}", source="x.txt")))
    assert [r.abstract for r in records] == [LONG, OTHER]
    assert records[0].venue is None


def test_a_stray_short_paragraph_is_rejected_with_its_line() -> None:
    text = f"Paper list\n\n{LONG}\n\nPage 2 of 3\n\n{OTHER}"
    items = list(parse_paper_list(text, source="x.txt"))
    assert len(_records(items)) == 2
    (bad,) = _rejected(items)
    assert bad.line == 5
    assert "too short" in bad.reason


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("ICML 2024 论文列表", ("ICML", 2024)),
        ("Accepted papers, NeurIPS 2023", ("NeurIPS", 2023)),
        ("nips 2019 list", ("NeurIPS", 2019)),
        ("My reading list", (None, None)),
        ("Papers from 2021", (None, None)),
    ],
)
def test_the_header_names_the_venue(header: str, expected: tuple[str | None, int | None]) -> None:
    assert header_venue(header) == expected


# ----------------------------------------------------------------------------- JSON / JSONL


def test_json_records_with_the_usual_field_names() -> None:
    record = record_from_mapping(
        {
            "id": "paper-7",
            "title": "  FlashSparse:\n fast kernels ",
            "summary": LONG,
            "authors": [{"name": "Ada Lovelace"}, "Alan Turing"],
            "venue": "ICML 2024 Oral",
            "url": "https://openreview.net/forum?id=AbCdEf1234",
            "pdf": "https://example.org/p.pdf",
            "doi": "https://doi.org/10.1000/ABC",
            "arxiv": "arXiv:2401.01234v2",
        },
        source="f.json",
    )
    assert record.title == "FlashSparse: fast kernels"
    assert record.title_derived is False
    assert record.abstract == LONG
    assert record.authors == ("Ada Lovelace", "Alan Turing")
    assert (record.venue, record.year, record.status) == ("ICML", 2024, "Oral")
    assert record.openreview_id == "AbCdEf1234"
    assert record.arxiv_id == "2401.01234"
    assert record.doi == "10.1000/abc"
    assert record.external_id == "paper-7"
    assert record.url == "https://openreview.net/forum?id=AbCdEf1234"
    assert record.pdf_url == "https://example.org/p.pdf"
    assert record.code_url == "https://github.com/example/flashsparse"


def test_a_record_without_a_title_gets_a_derived_one_and_ids_come_from_urls() -> None:
    record = record_from_mapping(
        {"_id": 99, "text": OTHER, "paper_url": "https://arxiv.org/abs/hep-th/9901001v2", "year": "2021"},
        source="f.jsonl",
    )
    assert record.title_derived is True
    assert record.title.startswith("A novel framework capable of adaptively allocating compute")
    assert record.arxiv_id == "hep-th/9901001"
    assert record.external_id == "99"
    assert record.year == 2021
    assert record.pdf_url == "https://arxiv.org/pdf/hep-th/9901001"


def test_openreview_api_notes_are_unwrapped() -> None:
    note = {
        "id": "XyZ12345ab",
        "forum": "XyZ12345ab",
        "content": {
            "title": {"value": "A Note"},
            "abstract": {"value": LONG},
            "authors": {"value": ["A. One", "B. Two"]},
            "venue": {"value": "ICLR 2025 Poster"},
        },
    }
    record = record_from_mapping(note, source="notes.json")
    assert (record.title, record.openreview_id, record.venue, record.year) == (
        "A Note",
        "XyZ12345ab",
        "ICLR",
        2025,
    )
    assert record.authors == ("A. One", "B. Two")
    assert record.url == "https://openreview.net/forum?id=XyZ12345ab"


def test_an_own_id_that_is_an_arxiv_id_counts_as_one() -> None:
    record = record_from_mapping({"id": "0704.0001", "title": "T", "abstract": LONG}, source="kaggle.json")
    assert record.arxiv_id == "0704.0001"


def test_jsonl_reports_bad_lines_and_keeps_the_rest() -> None:
    lines = [
        json.dumps({"title": "One", "abstract": LONG}),
        "{not json",
        "",
        json.dumps({"title": "", "abstract": ""}),
        json.dumps({"title": "Four", "abstract": OTHER, "year": "twenty"}),
        json.dumps(["a", "list"]),
        json.dumps({"title": "Six", "abstract": OTHER, "authors": "A; B"}),
        json.dumps({"title": {"en": "x"}, "abstract": OTHER}),
    ]
    items = list(parse_jsonl(lines, source="f.jsonl"))
    assert [r.title for r in _records(items)] == ["One", "Six"]
    problems = {(r.line, r.reason.split(" (")[0]) for r in _rejected(items)}
    assert problems == {
        (2, "invalid JSON"),
        (4, "neither a title nor an abstract"),
        (5, "invalid year 'twenty'"),
        (6, "not a JSON object"),
        (8, "title is not text"),
    }


def test_a_json_list_reports_records_by_line() -> None:
    text = '[\n  {"title": "A", "abstract": "x"},\n  {"title": "", "abstract": ""},\n  {"title": "C"}\n]\n'
    items = list(parse_json(text, source="f.json"))
    assert [r.title for r in _records(items)] == ["A", "C"]
    (bad,) = _rejected(items)
    assert bad.line == 3
    assert bad.where("f.json") == "f.json:3"


def test_a_syntax_error_in_a_json_list_stops_there_and_keeps_what_came_before() -> None:
    text = '[\n {"title": "A", "abstract": "x"},\n {"title": "B" "abstract": "y"},\n {"title": "C"}\n]'
    items = list(parse_json(text, source="f.json"))
    assert [r.title for r in _records(items)] == ["A"]
    (bad,) = _rejected(items)
    assert bad.line == 3
    assert "invalid JSON" in bad.reason
    assert "skipped" in bad.reason


DEEP = "[" * 50_000 + "]" * 50_000


def test_a_record_nested_too_deeply_in_a_json_list_is_stepped_over() -> None:
    """Its end is found without decoding it (brackets inside strings, escaped quotes too), and the
    records after it are read."""
    tricky = '{"title": "Deep", "note": "a ] } \\" [ string", "x": ' + DEEP + "}"
    text = f'[\n  {{"title": "A", "abstract": "x"}},\n  {tricky},\n  {{"title": "C"}}\n]\n'
    items = list(parse_json(text, source="f.json"))
    assert [r.title for r in _records(items)] == ["A", "C"]
    (deep,) = _rejected(items)
    assert (deep.line, deep.reason) == (3, "JSON nested too deeply")


def test_a_json_document_nested_too_deeply_rejects_the_file() -> None:
    with pytest.raises(FileRejected, match="JSON nested too deeply"):
        list(parse_json('{"papers": ' + DEEP + "}", source="deep.json"))
    assert unwrap_recorded('{"body": ' + DEEP + "}") is None


def test_a_json_object_holding_a_list_and_a_single_record() -> None:
    holder = json.dumps({"count": 2, "papers": [{"title": "A"}, {"title": "B", "abstract": OTHER}]})
    assert [r.title for r in _records(list(parse_json(holder, source="h.json")))] == ["A", "B"]
    single = json.dumps({"title": "Only", "abstract": LONG})
    assert [r.title for r in _records(list(parse_json(single, source="s.json")))] == ["Only"]


@pytest.mark.parametrize(("text", "line"), [('{"title": "A",\n "abstract": }', 2), ("42", None)])
def test_an_unreadable_json_document_rejects_the_file(text: str, line: int | None) -> None:
    with pytest.raises(FileRejected) as caught:
        list(parse_json(text, source="bad.json"))
    assert caught.value.line == line


# ----------------------------------------------------------------------------- arXiv Atom

ATOM_NS = (
    'xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom"'
)


def atom_feed(entries: list[dict[str, str]], *, total: int | None = None, start: int = 0) -> str:
    """A response in the current arXiv API layout."""
    parts = []
    for entry in entries:
        extra = ""
        if "doi" in entry:
            extra += f"<arxiv:doi>{entry['doi']}</arxiv:doi>"
        if "journal_ref" in entry:
            extra += f"<arxiv:journal_ref>{entry['journal_ref']}</arxiv:journal_ref>"
        parts.append(
            f"""<entry><id>http://arxiv.org/abs/{entry["id"]}</id>
            <title>{entry.get("title", "A title")}</title>
            <summary>{entry.get("summary", LONG)}</summary>
            <published>{entry.get("published", "2026-04-10T12:00:00Z")}</published>
            <updated>{entry.get("published", "2026-04-10T12:00:00Z")}</updated>
            <author><name>Ada Lovelace</name></author><author><name>Alan Turing</name></author>
            <category term="{entry.get("category", "cs.LG")}" scheme="http://arxiv.org/schemas/atom"/>
            <arxiv:primary_category term="{entry.get("category", "cs.LG")}"/>{extra}</entry>"""
        )
    total = len(entries) if total is None else total
    return (
        f"<?xml version='1.0' encoding='UTF-8'?><feed {ATOM_NS}><id>https://arxiv.org/api/x</id>"
        f"<title>arXiv Query</title><opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>"
        f"<opensearch:totalResults>{total}</opensearch:totalResults>"
        f"<opensearch:startIndex>{start}</opensearch:startIndex>{''.join(parts)}</feed>"
    )


ERROR_FEED = (
    f"<?xml version='1.0' encoding='UTF-8'?><feed {ATOM_NS}><id>https://arxiv.org/</id><title>arXiv</title>"
    "<entry><id>https://arxiv.org/api/errors#incorrect_id_format_for_abc</id><title>Error</title>"
    "<summary>incorrect id format for abc</summary><author><name>arXiv api core</name></author></entry></feed>"
)


def test_atom_entries_become_records() -> None:
    feed = atom_feed(
        [
            {
                "id": "2404.00001v2",
                "title": "Fast\n   Kernels",
                "doi": "10.1000/XYZ",
                "journal_ref": "JMLR 25 (2026)",
            },
            {"id": "quant-ph/0201082v1", "category": "quant-ph", "published": "2002-01-17T00:00:00Z"},
        ],
        total=214,
        start=10,
    )
    page = parse_atom(feed, source="api")
    first, second = page.records
    assert (page.total_results, page.start_index, page.items_per_page) == (214, 10, 2)
    assert first.arxiv_id == "2404.00001"
    assert first.title == "Fast Kernels"
    assert first.authors == ("Ada Lovelace", "Alan Turing")
    assert (first.venue, first.year, first.published) == ("arXiv cs.LG", 2026, "2026-04-10")
    assert first.doi == "10.1000/xyz"
    assert first.status == "Published in JMLR 25 (2026)"
    assert first.url == "https://arxiv.org/abs/2404.00001"
    assert first.code_url == "https://github.com/example/flashsparse"
    assert second.arxiv_id == "quant-ph/0201082"
    assert second.venue == "arXiv quant-ph"


def test_the_api_error_feed_is_a_clear_rejection() -> None:
    with pytest.raises(ArxivApiError, match=r"^arXiv API error: incorrect id format for abc$"):
        parse_atom(ERROR_FEED, source="api", status=400)


def test_an_empty_result_is_a_page_without_records() -> None:
    page = parse_atom(atom_feed([], total=0), source="api")
    assert page.records == []
    assert page.total_results == 0


def test_text_that_is_not_a_feed_is_rejected() -> None:
    with pytest.raises(FileRejected, match="not an Atom feed"):
        parse_atom("just some words", source="x")


def test_recorded_responses_are_unwrapped_and_their_mojibake_repaired() -> None:
    body = atom_feed([{"id": "2404.00002v1", "summary": "Error at most α and β. " + LONG}])
    wrapper = json.dumps(
        {
            "url": "https://export.arxiv.org/api/query?x",
            "status_code": 200,
            "body": body.encode("utf-8").decode("latin-1"),
        }
    )
    unwrapped = unwrap_recorded(wrapper)
    assert unwrapped is not None
    text, status = unwrapped
    assert status == 200
    assert parse_atom(text, source="r").records[0].abstract.startswith("Error at most α and β.")
    assert repair_mojibake("plain ascii") == "plain ascii"
    assert repair_mojibake("café") == "café", "real Latin-1 text is left alone"
    assert unwrap_recorded('{"title": "not a recording"}') is None


# ----------------------------------------------------------------------------- the real files in ../shared

ARXIV_2026 = "arxiv-api/lukasschwab-arxiv.py-2026"


def _recorded(name: str) -> tuple[str, int | None]:
    path = shared_path("data", ARXIV_2026, name)
    unwrapped = unwrap_recorded(path.read_text("utf-8"))
    assert unwrapped is not None
    return unwrapped


@pytest.mark.shared
def test_real_paging_responses_of_the_current_api() -> None:
    folder = shared_path("data", ARXIV_2026)
    for path in sorted(folder.glob("q_testing_*.json")):
        body, status = unwrap_recorded(path.read_text("utf-8")) or ("", None)
        page = parse_atom(body, source=path.name, status=status)
        assert page.total_results == 214881
        assert len(page.records) == page.items_per_page, path.name
        assert all(r.arxiv_id and r.title and r.abstract and r.authors and r.published for r in page.records)
        assert all("Î" not in r.abstract for r in page.records), "mojibake left in " + path.name


@pytest.mark.shared
@pytest.mark.parametrize(
    ("name", "expected_ids"),
    [
        ("id_1605.08386_s0_m100_199195aa31ad.json", ["1605.08386"]),
        ("id_2104.12255v1_s0_m100_6ae69987ffe1.json", ["2104.12255"]),
        ("id_quant-ph_0201082v1_s0_m100_86989fe779ef.json", ["quant-ph/0201082"]),
        ("id_astro-ph_0601001_s0_m100_3150dca9dc76.json", ["astro-ph/0601001"]),
        ("id_0000.0000_s0_m100_8b51d9633a68.json", []),
        ("id_0808.05394_s0_m100_7b0c7d0a7cdd.json", []),
    ],
)
def test_real_id_look_ups_old_and_new_style_and_empty(name: str, expected_ids: list[str]) -> None:
    body, status = _recorded(name)
    assert [r.arxiv_id for r in parse_atom(body, source=name, status=status).records] == expected_ids


@pytest.mark.shared
def test_the_real_http_400_error_feed() -> None:
    body, status = _recorded("id_abc_s0_m100_b79c8dcf6bc3.json")
    assert status == 400
    with pytest.raises(ArxivApiError, match="arXiv API error: incorrect id format for abc"):
        parse_atom(body, source="id_abc", status=status)


@pytest.mark.shared
def test_real_2016_layout_with_doi_journal_ref_and_wrapped_lines() -> None:
    path = shared_path(
        "data",
        "arxiv-api",
        "lukasschwab-arxiv.py-2016",
        "search_au_del_maestro_AND_ti_quantum_criticality.xml",
    )
    page = parse_atom(path.read_bytes(), source=path.name)
    first = page.records[0]
    assert page.total_results == 2
    assert (
        first.title
        == "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large Connectivity Limit"
    )
    assert "\n" not in first.abstract
    assert "  " not in first.abstract
    assert first.doi == "10.1103/physrevb.85.115117"
    assert first.status == "Published in Phys. Rev. B 85, 115117 (2012)"
    assert first.venue == "arXiv cond-mat.str-el"
    assert first.authors == ("James M. Murray", "Adrian Del Maestro", "Zlatko Tesanovic")


@pytest.mark.shared
def test_real_icml_scifact_and_airas_records() -> None:
    icml = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    with gzip.open(icml, "rt", encoding="utf-8") as handle:
        records = _records(list(parse_jsonl(handle, source=icml.name)))
    assert len(records) == 2610
    sample = records[0]
    assert sample.openreview_id
    assert sample.external_id == sample.openreview_id
    assert (sample.venue, sample.year) == ("ICML", 2024)
    assert sample.status in {"Oral", "Spotlight", "Poster"}
    assert sample.url == f"https://openreview.net/forum?id={sample.openreview_id}"
    assert all(r.authors and r.title and not r.title_derived for r in records)

    scifact = shared_path("data", "beir-scifact", "corpus.jsonl.gz")
    with gzip.open(scifact, "rt", encoding="utf-8") as handle:
        items = list(parse_jsonl(handle, source=scifact.name))
    assert len(_records(items)) == 5183
    assert not _rejected(items)
    assert _records(items)[0].external_id == "4983"

    airas = shared_path("data", "airas-papers-db", "iclr_2021.json.gz")
    items = list(parse_json(gzip.decompress(airas.read_bytes()).decode("utf-8"), source=airas.name))
    assert len(_records(items)) == 913
    assert not _rejected(items)
    with_url = [r for r in _records(items) if r.openreview_id]
    assert with_url
    assert all(r.venue == "ICLR" and r.year == 2021 for r in _records(items))


@pytest.mark.shared
def test_real_seed_files_match_the_shipped_copies() -> None:
    folder = shared_path("seeds")
    shipped = Path(__file__).resolve().parents[4] / "bot" / "data" / "seeds"
    for path in sorted(folder.glob("*.txt")):
        assert (shipped / path.name).read_bytes() == path.read_bytes()
        items = list(parse_paper_list(path.read_text("utf-8"), source=path.name))
        assert len(_records(items)) == 19
        assert not _rejected(items)
        assert all((r.venue, r.year) == ("ICML", 2024) for r in _records(items))
