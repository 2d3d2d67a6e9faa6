"""CSL-JSON export, checked against the CSL data schema (csl-data.json): an array of objects with
the required id and type, a type the schema allows, only variables it defines, names as
family/given or literal, dates as date-parts."""

from __future__ import annotations

import json

from export_specs import check_against_schema
from test_bibtex import _paper

from bot.services.papers.csl_json import to_csl_json


def test_items_follow_the_schema_and_carry_ids_doi_url_and_abstract() -> None:
    conference = _paper(
        1,
        authors=("Ashish Vaswani", "Plato"),
        doi="10.5555/3295222.3295349",
        arxiv_id="1706.03762",
        openreview_id="abcXYZ",
        published="2017-06-12",
    )
    preprint = _paper(2, venue=None, year=2024, arxiv_id="2401.01234", authors=(), title_derived=True)
    data = json.loads(to_csl_json([conference, preprint]))
    check_against_schema(data)
    first, second = data
    assert first == {
        "id": "vaswani2017attention",
        "type": "paper-conference",
        "title": "Attention Is All You Need",
        "author": [{"family": "Vaswani", "given": "Ashish"}, {"literal": "Plato"}],
        "issued": {"date-parts": [[2017, 6, 12]]},
        "container-title": "NeurIPS 2017",
        "DOI": "10.5555/3295222.3295349",
        "URL": "https://arxiv.org/abs/1706.03762",
        "abstract": "We propose the Transformer.",
        "note": "arXiv: 1706.03762\nOpenReview: abcXYZ",
    }
    assert second["type"] == "article"
    assert second["issued"] == {"date-parts": [[2024]]}
    assert second["number"] == "arXiv:2401.01234"
    assert second["publisher"] == "arXiv"
    assert "author" not in second
    assert second["note"].endswith("Title derived from the abstract by paperbot")


def test_ids_are_unique_and_text_is_kept_as_written_its_latex_as_text() -> None:
    # CSL-JSON is read by reference managers as plain text: LaTeX there shows raw, so it goes as text
    papers = [
        _paper(
            n,
            title="A $2.2\\times$ faster $\\alpha$-search",
            abstract="Ünïcödé — “quotes” {braces} \\ $O(n^2)$",
        )
        for n in range(3)
    ]
    data = json.loads(to_csl_json(papers))
    check_against_schema(data)
    assert len({item["id"] for item in data}) == 3
    assert data[0]["abstract"] == "Ünïcödé — “quotes” {braces} \\ O(n²)"
    assert data[0]["title"] == "A 2.2× faster α-search"
