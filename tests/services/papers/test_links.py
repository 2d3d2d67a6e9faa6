"""Paper links found in what people post: each kind, in order, once, and nothing that only looks like one."""

from __future__ import annotations

from bot.services.papers.links import MAX_LINKS, PaperLink, named_papers, paper_links


def test_each_kind_of_link_in_the_order_written() -> None:
    text = (
        "New: https://arxiv.org/abs/2401.01234v3, its review https://openreview.net/forum?id=AbC_12-xyz "
        "and the journal version https://doi.org/10.1038/s41586-024-07000-1. "
        "ACL: https://aclanthology.org/2024.acl-long.42.pdf, old ACL: aclanthology.org/P19-1001/"
    )
    assert paper_links(text) == [
        PaperLink("arxiv", "2401.01234"),
        PaperLink("openreview", "AbC_12-xyz"),
        PaperLink("doi", "10.1038/s41586-024-07000-1"),
        PaperLink("doi", "10.18653/v1/2024.acl-long.42"),
        PaperLink("doi", "10.18653/v1/p19-1001"),
    ]


def test_pdf_links_references_and_versions_name_the_same_paper_once() -> None:
    text = "arXiv:2401.01234 (pdf: https://arxiv.org/pdf/2401.01234v2.pdf) or arxiv.org/abs/hep-th/9901001v1."
    assert paper_links(text) == [PaperLink("arxiv", "2401.01234"), PaperLink("arxiv", "hep-th/9901001")]


def test_text_without_a_paper_link_has_none() -> None:
    assert paper_links("lunch at 12? see https://example.org/arxiv and version 10.5 of the tool") == []
    assert paper_links("") == []


def test_at_most_ten_links_are_looked_up() -> None:
    text = " ".join(f"https://arxiv.org/abs/2401.{n:05d}" for n in range(1, 30))
    assert len(paper_links(text)) == MAX_LINKS


def test_how_a_link_is_named_and_looked_up() -> None:
    assert PaperLink("doi", "10.1/x").describe() == "DOI 10.1/x"
    assert PaperLink("doi", "10.1/x").reference == "doi:10.1/x"
    assert PaperLink("arxiv", "2401.01234").reference == "2401.01234"


def test_a_bare_arxiv_id_names_a_paper_as_an_option_value_but_not_in_running_text() -> None:
    assert named_papers("2405.00001v2") == [PaperLink("arxiv", "2405.00001")]
    assert named_papers(" hep-th/9901001 ") == [PaperLink("arxiv", "hep-th/9901001")]
    assert named_papers("see https://arxiv.org/abs/2401.01234") == [PaperLink("arxiv", "2401.01234")]
    assert named_papers("Medusa decoding heads") == []
    assert paper_links("meet at 2405.00001 or so") == []
