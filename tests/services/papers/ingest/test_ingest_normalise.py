"""Ids, dedupe keys and field cleaning: what decides that two records are the same paper."""

from __future__ import annotations

import pytest

from bot.services.papers.ingest.normalise import (
    RecordError,
    arxiv_id,
    clean_text,
    clean_url,
    content_key,
    doi,
    find_arxiv_id,
    iso_date,
    normalise_text,
    openreview_id,
    parse_venue,
    parse_year,
    split_authors,
)

ABSTRACT = (
    "Large Language Models (LLMs) employ auto-regressive decoding that requires sequential computation, "
    "with each step reliant on the previous one's output. In this paper, we present Medusa, an efficient "
    "method that augments LLM inference by adding extra decoding heads."
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2401.01234", "2401.01234"),
        ("2401.01234v3", "2401.01234"),
        ("arXiv:2401.01234v2", "2401.01234"),
        ("https://arxiv.org/abs/2401.01234v2", "2401.01234"),
        ("http://arxiv.org/pdf/2401.01234v1.pdf", "2401.01234"),
        ("1501.0001", "1501.0001"),
        ("hep-th/9901001", "hep-th/9901001"),
        ("quant-ph/0201082v1", "quant-ph/0201082"),
        ("math.GT/0309136", "math/0309136"),
        ("http://arxiv.org/abs/astro-ph/0601001v2", "astro-ph/0601001"),
        ("0000.0000", None),  # month 00 is not an arXiv id
        ("abc", None),
        ("", None),
        (None, None),
        (12345, None),
    ],
)
def test_arxiv_ids_are_canonical_without_version(raw: object, expected: str | None) -> None:
    assert arxiv_id(raw) == expected


def test_an_arxiv_id_is_found_in_free_text() -> None:
    assert find_arxiv_id("see arXiv:2310.00001v4 for details") == "2310.00001"
    assert find_arxiv_id("pdf at https://arxiv.org/pdf/2310.00001") == "2310.00001"
    assert find_arxiv_id("no id here") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("01M0N8VgfB", "01M0N8VgfB"),
        ("https://openreview.net/forum?id=01M0N8VgfB", "01M0N8VgfB"),
        ("https://openreview.net/pdf?id=v_1Soh8QUNc", "v_1Soh8QUNc"),
        ("https://openreview.net/forum?noteId=x&id=AbCdE12345", "AbCdE12345"),
        ("https://example.org/paper", None),
        ("a b", None),
    ],
)
def test_openreview_ids(raw: str, expected: str | None) -> None:
    assert openreview_id(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.1103/PhysRevB.85.115117", "10.1103/physrevb.85.115117"),
        ("doi:10.1145/3292500.3330701", "10.1145/3292500.3330701"),
        ("https://doi.org/10.1109/ICSTW55395.2022.00035.", "10.1109/icstw55395.2022.00035"),
        ("(see 10.1000/xyz123)", "10.1000/xyz123"),
        ("10.1016/S0140-6736(20)30183-5", "10.1016/s0140-6736(20)30183-5"),
        ("not a doi", None),
    ],
)
def test_dois_are_lower_cased_and_stripped_of_punctuation(raw: str, expected: str | None) -> None:
    assert doi(raw) == expected


def test_content_key_ignores_case_markup_punctuation_spacing_and_accents() -> None:
    variants = [
        ABSTRACT,
        ABSTRACT.upper(),
        ABSTRACT.replace("'", "\u2019").replace(" ", "  "),
        "**" + ABSTRACT.replace("Medusa", "*Medusa*") + "**",
        ABSTRACT.replace("inference", "infer\u00adence").replace("paper", "pa\u0301per"),
    ]
    keys = {content_key("", text) for text in variants}
    assert len(keys) == 1
    assert content_key("Some title", ABSTRACT) == content_key("", ABSTRACT), "a long abstract alone decides"


def test_content_key_tells_different_abstracts_apart() -> None:
    assert content_key("", ABSTRACT) != content_key("", ABSTRACT.replace("Medusa", "Hydra"))


def test_a_short_abstract_is_keyed_together_with_its_title() -> None:
    assert content_key("Paper A", "Withdrawn.") != content_key("Paper B", "Withdrawn.")
    assert content_key("Paper A", "Withdrawn.") == content_key("paper a!", "withdrawn")
    assert content_key("", "") is None


def test_normalise_text_keeps_non_latin_letters() -> None:
    assert normalise_text("注意力 机制, Attention!") == "注意力机制attention"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ICML 2024 Poster", ("ICML", 2024, "Poster")),
        ("ICML 2024 Oral", ("ICML", 2024, "Oral")),
        ("icml", ("ICML", None, None)),
        ("nips", ("NeurIPS", None, None)),
        ("NeurIPS 2023", ("NeurIPS", 2023, None)),
        ("CoRL 2025 Oral", ("CoRL", 2025, "Oral")),
        ("Journal of Machine Learning Research", ("Journal of Machine Learning Research", None, None)),
        ("ICML 2024 Workshop on Efficient Systems", ("ICML", 2024, "Workshop on Efficient Systems")),
        ("AAAI 2021 Conference Proceedings", ("AAAI 2021 Conference Proceedings", 2021, None)),
        ("", (None, None, None)),
        (None, (None, None, None)),
    ],
)
def test_venue_strings_give_venue_year_and_status(raw: object, expected: tuple[object, ...]) -> None:
    assert parse_venue(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"), [(2024, 2024), ("2019", 2019), ("2020-05-01", 2020), (None, None)]
)
def test_years(raw: object, expected: int | None) -> None:
    assert parse_year(raw) == expected


@pytest.mark.parametrize("raw", ["abc", "20x4", 3024, 1024, True, "24"])
def test_invalid_years_reject_the_record(raw: object) -> None:
    with pytest.raises(RecordError, match="invalid year"):
        parse_year(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["Ada Lovelace", "Alan Turing"], ("Ada Lovelace", "Alan Turing")),
        ([{"name": "Ada Lovelace"}, {"first": "Alan", "last": "Turing"}], ("Ada Lovelace", "Alan Turing")),
        ("Ada Lovelace; Alan Turing", ("Ada Lovelace", "Alan Turing")),
        ("Ada Lovelace, Alan Turing and Grace Hopper", ("Ada Lovelace", "Alan Turing", "Grace Hopper")),
        ("Lovelace, Ada; Turing, Alan", ("Lovelace, Ada", "Turing, Alan")),
        ({"value": ["A. B", " A. B ", "C  D"]}, ("A. B", "C D")),
        (None, ()),
        (42, ()),
    ],
)
def test_authors_from_lists_objects_and_strings(raw: object, expected: tuple[str, ...]) -> None:
    assert split_authors(raw) == expected


def test_dates_urls_and_whitespace() -> None:
    assert iso_date("2024-03-25T17:42:32Z") == "2024-03-25"
    assert iso_date("2024-13-40") is None
    assert iso_date(20240325) is None
    assert clean_url(" https://github.com/x/y ") == "https://github.com/x/y"
    assert clean_url("//openreview.net/forum?id=abc") == "https://openreview.net/forum?id=abc"
    assert clean_url("/pdf/abc.pdf") is None
    assert clean_text("A title\n  wrapped\tover lines ") == "A title wrapped over lines"
