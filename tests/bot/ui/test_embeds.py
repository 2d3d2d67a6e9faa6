"""`bot/ui/embeds.py`: every embed paperbot builds fits Discord's limits, however long the paper.

Checked twice: against the documented limits one by one, and by the sandbox's own validator of a
Create Message body (`bot.sandbox.emulator.limits`, the rules the local Discord refuses a message by).
"""

from __future__ import annotations

from typing import Any

import discord
import pytest
from builders import paper

from bot.sandbox.emulator import limits
from bot.ui.embeds import ListedPaper, abstract_embed, paper_embed, results_embed
from bot.ui.paper_views import digest_message
from storage.models import Paper

LONG_WORDS = " ".join(["quantization"] * 2000)  # 25,999 characters, no sentence end


def _paper(paper_id: int = 1, *, long: bool = False, **fields: Any) -> Paper:
    values: dict[str, Any] = {
        "title": "KV cache quantization",
        "abstract": "We quantize the KV cache.",
        "arxiv_id": "2401.01234",
    }
    if long:
        values |= {
            "title": LONG_WORDS[:900],
            "title_derived": True,
            "abstract": LONG_WORDS,
            "authors": tuple(f"Author Number {n} With A Long Name" for n in range(300)),
            "venue": "The International Conference on " + LONG_WORDS[:1500],
            "status": "Oral " + LONG_WORDS[:600],
            "url": "https://example.org/" + "a" * 600,
            "pdf_url": "https://example.org/pdf/" + "b" * 600,
            "code_url": "https://github.com/" + "c" * 600,
            "openreview_id": "x" * 200,
            "doi": "10.1000/" + "d" * 300,
        }
    return paper(paper_id, **(values | fields))


def _problems(embeds: list[discord.Embed]) -> str:
    """What the sandbox (Discord's rules) refuses in a message carrying these embeds; "" when fine."""
    return limits.validate_message({"embeds": [embed.to_dict() for embed in embeds]}).describe()


def _within_documented_limits(embed: discord.Embed) -> None:
    assert len(embed.title or "") <= 256
    assert len(embed.description or "") <= 4096
    assert len(embed.fields) <= 25
    for embed_field in embed.fields:
        assert 0 < len(embed_field.name or "") <= 256
        assert 0 < len(embed_field.value or "") <= 1024
    assert len(embed.footer.text or "") <= 2048
    assert len(embed) <= 6000, "title, description, fields, footer and author together"


def test_a_paper_with_every_field_far_too_long_still_fits() -> None:
    embed = paper_embed(_paper(long=True))
    _within_documented_limits(embed)
    assert _problems([embed]) == ""
    assert (embed.title or "").endswith("…"), "a cut title says it was cut"


@pytest.mark.parametrize("reason", ["", "You liked " + LONG_WORDS[:5000]])
def test_a_digest_paper_with_every_field_far_too_long_still_fits(reason: str) -> None:
    shown = digest_message(_paper(long=True), reason)
    _within_documented_limits(shown.embed)
    assert _problems([shown.embed]) == ""
    assert (shown.embed.title or "").endswith("…")
    assert [item.label for item in _buttons(shown.view)] == ["Full abstract", "More like this"]


def _buttons(view: discord.ui.View) -> list[Any]:
    return [getattr(item, "item", item) for item in view.children]


def test_a_long_paper_keeps_its_links_and_footer() -> None:
    embed = paper_embed(_paper(long=True))
    names = [embed_field.name for embed_field in embed.fields]
    assert names == ["Authors", "Venue", "Links"]
    assert embed.footer.text == "paper #1 · react 👍 👎 🔖 to rate or save"
    assert "et al. (300 authors)" in (embed.fields[0].value or "")


ABSTRACT = (
    "Large language models are slow to decode because every token needs a full pass over the weights. "
    "Many systems have tried to speed this up with a second, smaller model that drafts tokens. "
    "In this paper, we propose Medusa, a method that adds extra decoding heads to predict several "
    "tokens in parallel. " + " ".join(["Experiments on many tasks confirm that it is faster."] * 40)
)


def test_show_keeps_the_whole_abstract_and_a_digest_shows_its_gist() -> None:
    paper = _paper(abstract=ABSTRACT, venue="ICML", year=2024, status="Oral")
    assert len(ABSTRACT) > 2000
    shown = paper_embed(paper)
    assert shown.description == ABSTRACT, "/paper show: every word of the abstract"

    digest = digest_message(paper, "matched: decoding")
    description = digest.embed.description or ""
    assert description.splitlines()[:2] == ["A. Author, B. Author · ICML 2024 · Oral", "*matched: decoding*"]
    gist = (
        "> In this paper, we propose Medusa, a method that adds extra decoding heads to predict several "
        "tokens in parallel. Experiments on many tasks confirm that it is faster.\n"
    )
    assert gist in description, "the contribution, and the next sentence as it is short"
    assert "Many systems" not in description
    assert description.count("Experiments") == 1
    assert "[arXiv](https://arxiv.org/abs/2401.01234)" in description
    assert digest.embed.url == "https://arxiv.org/abs/2401.01234"
    assert len(digest.embed) < 700
    assert [item.label for item in _buttons(digest.view)] == ["Full abstract", "More like this"]
    assert abstract_embed(paper).description == ABSTRACT


def test_a_paper_without_authors_never_says_unknown_authors() -> None:
    bare = _paper(abstract="", authors=(), venue=None, year=None, arxiv_id=None)
    embed = paper_embed(bare)
    assert embed.description == "*No abstract.*"
    assert embed.fields == [], "no Authors or Venue field when neither is known"
    assert _problems([embed]) == ""
    digest = digest_message(bare, "matched: kv")
    assert (digest.embed.description or "").startswith("*matched: kv*")
    assert [item.label for item in _buttons(digest.view)] == ["More like this"], "no Full abstract: none"
    seeded = _paper(authors=(), venue="ICML 2024", year=2024)
    assert "Unknown" not in str(paper_embed(seeded).to_dict())
    assert "Unknown" not in str(digest_message(seeded, "").embed.to_dict())
    listing = results_embed(
        "Results", [ListedPaper(seeded, snippet="", matched=())], first_number=1, footer=""
    )
    assert "ICML 2024" in (listing.description or "")
    assert "Unknown" not in (listing.description or "")


def test_a_short_abstract_is_its_own_gist_and_needs_no_button() -> None:
    paper = _paper(abstract="We quantize the KV cache to 2 bits. It is 4x smaller.")
    digest = digest_message(paper, "")
    assert "> We quantize the KV cache to 2 bits. It is 4x smaller." in (digest.embed.description or "")
    assert [item.label for item in _buttons(digest.view)] == ["More like this"]


@pytest.mark.parametrize("count", [1, 5, 10])
def test_a_result_list_of_long_papers_is_shortened_until_it_fits(count: int) -> None:
    """The longest heading and footer a listing makes (a 150-character query, 100-character filters)."""
    entries = [
        ListedPaper(_paper(n, long=True), snippet=LONG_WORDS[:3000], matched=("quantization",) * 50)
        for n in range(1, count + 1)
    ]
    filters = f"author: {'a' * 100}, venue: {'v' * 100}, year: 2024"
    embed = results_embed(
        f"Results for “{LONG_WORDS[:150]}”",
        entries,
        first_number=1,
        footer=f"page 1 of 999 · 9999 matches · {filters} · buttons: rate or save a paper",
    )
    _within_documented_limits(embed)
    assert _problems([embed]) == ""
    assert embed.description is not None
    assert "**1. " in embed.description


def test_a_result_list_of_short_papers_is_not_shortened() -> None:
    entries = [
        ListedPaper(_paper(n), snippet="We **quantize** the KV cache.", matched=("quantize",)) for n in (1, 2)
    ]
    embed = results_embed("Results for “kv cache”", entries, first_number=6, footer="page 2 of 2")
    assert embed.description is not None
    assert embed.description.count("> We **quantize** the KV cache.") == 2
    assert "**6. [KV cache quantization](https://arxiv.org/abs/2401.01234)**" in embed.description
    assert "**7. " in embed.description
    assert "matched: quantize" in embed.description
