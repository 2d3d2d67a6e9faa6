"""RIS export, checked against the RIS specification (2011): tag lines, TY first and ER last in
every record, CR LF line ends, values on one line, the fields Zotero reads."""

from __future__ import annotations

from export_specs import parse_ris
from test_bibtex import _paper

from bot.services.papers.ris import to_ris


def _values(record: list[tuple[str, str]], tag: str) -> list[str]:
    return [value for t, value in record if t == tag]


def test_every_record_opens_with_ty_closes_with_er_and_carries_ids_doi_url_and_abstract() -> None:
    conference = _paper(
        1,
        authors=("Ashish Vaswani", "Ludwig van Beethoven", "Plato"),
        doi="10.5555/3295222.3295349",
        arxiv_id="1706.03762",
        openreview_id="abcXYZ",
        pdf_url="https://example.org/paper.pdf",
        published="2017-06-12",
    )
    preprint = _paper(2, venue=None, year=2024, arxiv_id="2401.01234", authors=())
    records = parse_ris(to_ris([conference, preprint]))
    assert len(records) == 2
    first, second = records
    assert first[0] == ("TY", "CONF")
    assert first[-1] == ("ER", "")
    assert _values(first, "TI") == ["Attention Is All You Need"]
    assert _values(first, "AU") == ["Vaswani, Ashish", "van Beethoven, Ludwig", "Plato"]
    assert _values(first, "PY") == ["2017"]
    assert _values(first, "DA") == ["2017/06/12"]
    assert _values(first, "T2") == ["NeurIPS 2017"]
    assert _values(first, "DO") == ["10.5555/3295222.3295349"]
    assert _values(first, "UR") == ["https://arxiv.org/abs/1706.03762"]
    assert _values(first, "L1") == ["https://example.org/paper.pdf"]
    assert _values(first, "AB") == ["We propose the Transformer."]
    assert _values(first, "N1") == ["arXiv: 1706.03762", "OpenReview: abcXYZ"]
    assert second[0] == ("TY", "GEN")
    assert _values(second, "UR") == ["https://arxiv.org/abs/2401.01234"]
    assert _values(second, "AU") == []


def test_values_that_would_break_a_line_stay_on_one() -> None:
    nasty = _paper(
        3,
        title="Line one\nER  - injected\r\nTY  - JOUR",
        abstract="First paragraph.\n\nSecond\tparagraph\x00 with a NUL.",
        title_derived=True,
    )
    [record] = parse_ris(to_ris([nasty]))
    assert _values(record, "TI") == ["Line one ER - injected TY - JOUR"]
    assert _values(record, "AB") == ["First paragraph. Second paragraph with a NUL."]
    assert _values(record, "N1") == ["Title derived from the abstract by paperbot"]
