"""`bot/ui/listing.py`: a page the search service returned, as the message people see and click.

Fast: no gateway and no database; the message is checked against the sandbox's validator too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from builders import paper

from bot.sandbox.emulator import limits
from bot.services.search.listings import ListedHit, ListingPage
from bot.ui.listing import Listing, render_listing
from storage.models import Paper
from storage.repositories.searches import StoredSearch


def _paper(paper_id: int) -> Paper:
    return paper(paper_id, authors=("A. Author",), url=f"https://example.org/{paper_id}")


def _page(
    *,
    page: int,
    total: int,
    page_size: int = 5,
    kind: str = "search",
    author: str | None = None,
    year: int | None = None,
    source_title: str | None = None,
) -> ListingPage:
    listing = StoredSearch(
        777, kind, "kv cache" if kind == "search" else "", 9, author, None, year, page_size
    )
    first = page * page_size
    hits = tuple(
        ListedHit(_paper(n), snippet="the **kv cache**", matched=("kv", "cache"))
        for n in range(first + 1, min(total, first + page_size) + 1)
    )
    if kind != "search":
        return ListingPage(listing, page, total, hits, source_title)
    # the service counts the papers holding every word only without filters
    every = None if author or year else 5
    return ListingPage(listing, page, total, hits, source_title, holding_all=every, words=("kv", "cache"))


def _buttons(rendered: Listing) -> list[dict[str, Any]]:
    """The buttons as Discord receives them, row by row."""
    return [button for row in rendered.view.to_components() for button in row["components"]]


def _labels(rendered: Listing) -> list[str | None]:
    return [button.get("label") for button in _buttons(rendered)]


def _valid(rendered: Listing) -> str:
    body = {"embeds": [rendered.embed.to_dict()], "components": rendered.view.to_components()}
    return limits.validate_message(body).describe()


def test_the_first_of_three_pages() -> None:
    rendered = render_listing(_page(page=0, total=12, author="Lovelace", year=2024))
    assert rendered.total == 12
    assert rendered.embed.title == "Results for “kv cache”"
    assert rendered.embed.footer.text == (
        "page 1 of 3 · 12 papers with one of these words or more · author: Lovelace, year: 2024 · "
        "buttons: rate or save a paper"
    )
    assert (rendered.embed.description or "").startswith("**1. [Paper number 1](https://example.org/1)**")
    assert _labels(rendered) == ["1", "2", "3", "4", "5"] * 3 + ["◀ Previous", "Next ▶"]
    previous, following = _buttons(rendered)[-2:]
    assert previous.get("disabled") is True
    assert not following.get("disabled")
    assert following["custom_id"] == "pb:page:777:1:n"
    assert [button["custom_id"] for button in _buttons(rendered)[:2]] == ["pb:like:1", "pb:like:2"]
    assert _valid(rendered) == ""


def test_the_last_page_numbers_on_and_cannot_go_further() -> None:
    rendered = render_listing(_page(page=2, total=12))
    assert rendered.embed.footer.text == (
        "page 3 of 3 · 5 with both words, 12 with one or more · buttons: rate or save a paper"
    )
    assert (rendered.embed.description or "").startswith("**11. ")
    assert _labels(rendered) == ["11", "12"] * 3 + ["◀ Previous", "Next ▶"]
    previous, following = _buttons(rendered)[-2:]
    assert previous["custom_id"] == "pb:page:777:1:p"
    assert following.get("disabled") is True
    assert _valid(rendered) == ""


@pytest.mark.parametrize(
    ("for_searcher", "note"),
    [
        (True, "close matches ordered for you by your reactions"),
        (False, "close matches ordered by the reactions of whoever searched"),
    ],
)
def test_a_page_ordered_by_the_searchers_reactions_says_for_whom(for_searcher: bool, note: str) -> None:
    """ "For you" only on a page shown for the person who searched: another's ▶ on a shared list
    turns it to a page in that person's order, which says whose it is."""
    page = dataclasses.replace(_page(page=1, total=12), personal=True, for_searcher=for_searcher)
    assert (
        render_listing(page).embed.footer.text
        == f"page 2 of 3 · 5 with both words, 12 with one or more · {note} · buttons: rate or save a paper"
    )


def test_one_page_has_no_paging_buttons() -> None:
    rendered = render_listing(_page(page=0, total=3))
    assert _labels(rendered) == ["1", "2", "3"] * 3


@pytest.mark.parametrize(
    ("source_title", "heading"), [("Medusa", "Papers like “Medusa”"), (None, "Papers like “9”")]
)
def test_papers_like_one_paper_are_headed_by_its_title(source_title: str | None, heading: str) -> None:
    rendered = render_listing(_page(page=0, total=2, kind="similar", source_title=source_title))
    assert rendered.embed.title == heading


def test_ten_papers_a_page_get_two_like_rows_and_two_save_rows() -> None:
    rendered = render_listing(_page(page=0, total=30, page_size=10))
    buttons = _buttons(rendered)
    assert len(buttons) == 22
    assert [button["emoji"]["name"] for button in buttons[:20]] == ["👍"] * 10 + ["🔖"] * 10
    assert buttons[0]["custom_id"] == "pb:like:1"
    assert buttons[10]["custom_id"] == "pb:save:1"
    assert _valid(rendered) == ""


def test_the_count_says_what_it_counts() -> None:
    """One word: the papers holding it; several: how many hold all and how many one or more; papers
    like one paper: the most alike, as many as are listed."""
    single = dataclasses.replace(_page(page=0, total=1), words=("cache",), holding_all=None)
    assert render_listing(single).embed.footer.text.startswith("page 1 of 1 · 1 paper · ")
    several = dataclasses.replace(_page(page=0, total=1550), holding_all=38)
    assert "· 38 with both words, 1,550 with one or more ·" in render_listing(several).embed.footer.text
    similar = _page(page=0, total=40, kind="similar", source_title="KIVI")
    assert "· the 40 papers most like it ·" in render_listing(similar).embed.footer.text
