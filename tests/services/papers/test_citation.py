"""`bot/services/papers/citation.py`: names split for reference managers, the landing URL, the ids note."""

from __future__ import annotations

import pytest
from test_bibtex import _paper

from bot.services.papers.citation import id_lines, landing_url, split_name


@pytest.mark.parametrize(
    ("name", "family", "given"),
    [
        ("Ada Lovelace", "Lovelace", "Ada"),
        ("  Grace   Brewster Hopper ", "Hopper", "Grace Brewster"),
        ("Lovelace, Ada", "Lovelace", "Ada"),
        ("Ludwig van Beethoven", "van Beethoven", "Ludwig"),
        ("Johannes Diderik van der Waals", "van der Waals", "Johannes Diderik"),
        ("van Gogh", "Gogh", "van"),
        ("Plato", "Plato", ""),
    ],
)
def test_names_split_into_family_and_given(name: str, family: str, given: str) -> None:
    assert split_name(name) == (family, given)


def test_landing_url_and_ids() -> None:
    assert landing_url(_paper(1, url="https://proceedings.example/1")) == "https://proceedings.example/1"
    assert landing_url(_paper(1, openreview_id="abc")) == "https://openreview.net/forum?id=abc"
    assert landing_url(_paper(1, doi="10.1/x")) == "https://doi.org/10.1/x"
    assert landing_url(_paper(1)) is None
    assert id_lines(_paper(1, arxiv_id="2401.01234", openreview_id="abc")) == [
        "arXiv: 2401.01234",
        "OpenReview: abc",
    ]
