"""Search, one paper and more like it, through the real discord.py client and the local Discord server:
/paper search (paging, filters, rating buttons, bad input), /paper show with autocomplete, /paper similar.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import re
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from lab_papers import add_papers

from bot.sandbox import ClientRefused
from bot.services.papers.ingest.runner import ingest_bytes
from paperindex import tokenizer
from storage.store import open_database

if TYPE_CHECKING:
    from paperbot_e2e import E2E


def _numbered_ids(result: object) -> list[int]:
    """Paper ids of a listing, in the order of its 👍 buttons."""
    return [int(i) for i in re.findall(r"pb:like:(\d+)", str(result.message.components))]  # type: ignore[attr-defined]


@pytest.mark.both_engines
async def test_search_lists_linked_titles_snippets_in_bold_and_matched_terms(e2e: E2E) -> None:
    """A public answer: numbered linked titles, authors · venue year, bold query words, what matched."""
    result = await e2e.server.run_command("bob", "paper search", query="kv cache quantization", limit=3)
    assert not result.ephemeral
    embed = result.embed
    assert embed["title"] == "Results for “kv cache quantization”"
    description = embed["description"]
    assert re.search(r"\*\*1\. \[.+\]\(https?://", description), description
    assert "ICML 2024" in description
    assert re.search(r"\*\*(?:KV|kv|Kv|cache|Cache|quantization|Quantization)\w*\*\*", description), (
        description
    )
    assert "matched: " in description
    assert "page 1 of" in embed["footer"]["text"]
    assert len(_numbered_ids(result)) == 3
    # the first result is the KV-cache quantization paper of the shipped list
    assert "KV" in description.split("**2.")[0] or "kv" in description.split("**2.")[0].lower()


async def test_a_matched_phrase_is_shown_as_one_phrase_in_bold_and_in_matched(
    e2e: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query's words that a paper holds side by side read as the phrase, not as separate words. The
    search reads its query's text once (a ParsedQuery) and hands what it read on to the engine, the
    snippets and the listing, however many of them look at the query."""
    await add_papers(
        e2e,
        [
            {
                "title": "Graph Neural Networks for Crystal Property Prediction",
                "abstract": "We train graph neural networks on crystal structures and predict band gaps.",
                "authors": ["Ada Lovelace"],
                "openreview_id": "GnNcRyStAl",
            },
            {
                "title": "Neural networks over graph kernels",
                "abstract": "A graph kernel feeds neural networks that predict band gaps.",
                "authors": ["Ada Lovelace"],
                "openreview_id": "GrApHkErNl",
            },
        ],
    )
    readings = _count_readings(monkeypatch, "graph neural networks")
    result = await e2e.server.run_command("bob", "paper search", query="graph neural networks", limit=2)
    assert len(readings) == 1, f"the query was tokenised {len(readings)} times: {readings}"
    first, second = result.embed["description"].split("**2.")
    assert "Crystal Property" in first, "the paper holding the phrase comes first"
    assert "**graph neural networks**" in first
    assert "matched: graph neural networks" in first
    assert "**graph neural networks**" not in second
    assert "matched: graph, neural networks" in second  # the part of the phrase it holds


def _count_readings(monkeypatch: pytest.MonkeyPatch, text: str) -> list[str]:
    """Every call of a function of ``paperindex.tokenizer`` on ``text``, by name, from now on: each
    function is wrapped where it is defined and wherever a module of paperbot imported it."""
    readings: list[str] = []
    for name, original in list(vars(tokenizer).items()):
        if (
            not inspect.isfunction(original)
            or original.__module__ != tokenizer.__name__
            or name.startswith("_")
            or name == "without_links"  # (a step of each reading, not a reading: it finds no words)
        ):
            continue

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            if args and isinstance(args[0], str) and args[0].strip() == text.strip():
                readings.append(_name)
            return _original(*args, **kwargs)

        for module in list(sys.modules.values()):
            if (
                module.__name__.split(".")[0] in ("paperindex", "bot")
                and getattr(module, name, None) is original
            ):
                monkeypatch.setattr(module, name, counted)
    return readings


async def test_paging_edits_the_message_in_place_with_the_next_results(e2e: E2E) -> None:
    server = e2e.server
    result = await server.run_command("bob", "paper search", query="language models", limit=2)
    first_page = _numbered_ids(result)
    first_description = result.embed["description"]
    assert "**1." in first_description

    page_two = await server.click("bob", result, "Next ▶")
    assert page_two.callback_type == 7  # the same message, edited
    assert "**3." in page_two.message.embeds[0]["description"]
    assert "page 2 of" in page_two.message.embeds[0]["footer"]["text"]
    second_page = _numbered_ids(page_two)
    assert second_page
    assert not set(second_page) & set(first_page)

    back = await server.click("bob", page_two, "◀ Previous")
    assert _numbered_ids(back) == first_page


@pytest.mark.both_engines
async def test_paging_buttons_survive_a_restart(start_paperbot: Any) -> None:
    """The buttons carry their state: after the bot restarts, Next still works on an old message."""
    async with start_paperbot() as first:
        result = await first.server.run_command(
            "bob", "paper search", query="reinforcement learning", limit=2
        )
    async with start_paperbot() as again:
        page_two = await again.server.click("bob", result, "Next ▶")
        assert "page 2 of" in page_two.message.embeds[0]["footer"]["text"]


@pytest.mark.both_engines
async def test_a_rating_button_stores_the_rating_for_that_paper(e2e: E2E) -> None:
    server = e2e.server
    result = await server.run_command("carol", "paper search", query="diffusion", limit=3)
    second = _numbered_ids(result)[1]
    note = await server.click("carol", result, f"pb:save:{second}")
    assert note.ephemeral
    assert note.content.startswith("🔖")
    rows = await e2e.db.fetchall(
        "SELECT paper_id, signal FROM feedback WHERE user_id = ?", (server.carol.id,)
    )
    assert [(int(r[0]), r[1]) for r in rows] == [(second, "save")]


LIBRARY = [
    {
        "id": "a1",
        "title": "Sparse attention for long documents",
        "abstract": "We study sparse attention " * 8,
        "authors": ["Ada Lovelace", "Alan Turing"],
        "venue": "ICML",
        "year": 2023,
    },
    {
        "id": "a2",
        "title": "Dense attention revisited",
        "abstract": "Dense attention works well " * 8,
        "authors": ["Grace Hopper"],
        "venue": "NeurIPS",
        "year": 2024,
    },
    {
        "id": "a3",
        "title": "Attention in robots",
        "abstract": "Robots need attention too " * 8,
        "authors": ["Ada Byron"],
        "venue": "CoRL",
        "year": 2024,
    },
]


async def test_filters_narrow_the_results(start_paperbot: Any, tmp_path: Path) -> None:
    """author, venue and year filters keep only the papers that match them, and the footer says so."""
    db_path = tmp_path / "library.db"
    async with await open_database(db_path) as db:
        await ingest_bytes(db, "library.jsonl", "\n".join(json.dumps(r) for r in LIBRARY).encode())
    async with start_paperbot(store=db_path, load_shipped_corpus=False) as e2e:
        titles = {}
        for options in ({"author": "ada"}, {"venue": "neurips"}, {"year": 2024}):
            result = await e2e.server.run_command(
                "bob", "paper search", query="attention", limit=10, **options
            )
            papers = await e2e.services.papers.get_many(_numbered_ids(result))
            titles[next(iter(options))] = sorted(paper.title for paper in papers.values())
            assert f"{next(iter(options))}: {next(iter(options.values()))}" in result.embed["footer"]["text"]
    assert titles == {
        "author": ["Attention in robots", "Sparse attention for long documents"],
        "venue": ["Dense attention revisited"],
        "year": ["Attention in robots", "Dense attention revisited"],
    }


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"query": "🤖🚀✨"}, "no words"),
        ({"query": "the of and"}, "common"),
        ({"query": "quantization", "year": 1999}, "No papers match “quantization” with year 1999"),
        ({"query": "zzzqqqxxy"}, "No papers match “zzzqqqxxy”"),
    ],
)
async def test_bad_or_empty_searches_get_a_clear_private_answer(
    e2e: E2E, options: dict[str, object], expected: str
) -> None:
    result = await e2e.server.run_command("bob", "paper search", **options)
    assert result.ephemeral
    assert expected.lower() in result.content.lower(), result.content
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM feedback") == 0


@pytest.mark.parametrize("query", ["kv cache " * 333, "   "])
async def test_a_huge_or_blank_query_is_refused_by_discord_itself(e2e: E2E, query: str) -> None:
    """The option declares 1-300 characters, so Discord's client refuses these before the bot sees them."""
    with pytest.raises(ClientRefused):
        await e2e.server.run_command("bob", "paper search", query=query)


@pytest.mark.both_engines
async def test_show_autocompletes_titles_and_posts_one_paper_with_reactions(e2e: E2E) -> None:
    server = e2e.server
    choices = await server.autocomplete("bob", "paper show", "paper", "stydesty")
    assert 1 <= len(choices) <= 25
    assert all(len(choice["name"]) <= 100 for choice in choices)
    chosen = next(c for c in choices if "StyDeSty" in c["name"])

    shown = await server.run_command("bob", "paper show", paper=chosen["value"])
    assert not shown.ephemeral
    embed = shown.embed
    assert embed["title"].startswith("StyDeSty")
    assert "derived title" in embed["title"]  # the seed list has no titles
    field_names = [field["name"] for field in embed["fields"]]
    assert field_names == ["Venue", "Links"], "a seed paper names no authors: no Authors field"
    assert "github.com" in next(f["value"] for f in embed["fields"] if f["name"] == "Links")
    await server.eventually(
        lambda: set(shown.message.reactions) == {"👍", "👎", "🔖"}, what="the bot's reactions"
    )
    mapped = await e2e.services.messages.paper_for(shown.message.id)
    assert mapped == int(chosen["value"])


async def test_autocomplete_answers_ids_too_and_stays_within_25(e2e: E2E) -> None:
    choices = await e2e.server.autocomplete("bob", "paper show", "paper", "a")
    assert len(choices) == 25
    by_id = await e2e.server.autocomplete("bob", "paper show", "paper", "7")
    assert any(choice["value"] == "7" for choice in by_id)


async def test_show_an_unknown_paper_says_so(e2e: E2E) -> None:
    result = await e2e.server.run_command("bob", "paper show", paper="no such paper title at all")
    assert result.ephemeral
    assert "I don't know a paper matching" in result.content


@pytest.mark.both_engines
async def test_similar_ranks_against_the_paper_and_leaves_it_out(e2e: E2E) -> None:
    result = await e2e.server.run_command("bob", "paper similar", paper="1", limit=5)
    assert not result.ephemeral
    assert result.embed["title"].startswith("Papers like")
    ids = _numbered_ids(result)
    assert ids
    assert 1 not in ids
    expected = e2e.services.search.similar(1, limit=5)
    assert ids == [hit.paper_id for hit in expected.hits]


class RunsCode:
    """Unpickling this touches ``marker`` (what a hostile file beside the database would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[Path]]:
        return (Path.touch, (self.marker,))


async def test_a_search_snapshot_that_would_run_code_is_rebuilt_never_run(
    start_paperbot: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone else's file sits where the index snapshot goes (beside the database): a pickle that would
    create a file when loaded. The bot starts, says it rebuilt the index, answers searches, and the
    file's code never ran."""
    db_path = tmp_path / "paperbot.db"
    snapshot = db_path.with_name(db_path.name + ".search-index")
    marker = tmp_path / "code-ran"
    snapshot.write_bytes(pickle.dumps({"format": 1, "fingerprint": "", "engine": RunsCode(marker)}))
    with caplog.at_level("WARNING", logger="paperindex.engine"):
        async with start_paperbot(store=db_path) as e2e:
            result = await e2e.server.run_command(
                "bob", "paper search", query="kv cache quantization", limit=3
            )
            assert "KV" in result.text
    assert not marker.exists(), "the snapshot's code ran"
    assert any(str(snapshot) in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    assert zipfile.is_zipfile(snapshot), "the index was saved again, in the safe format"


async def test_a_search_slower_than_discords_three_seconds_is_deferred_then_answered(
    e2e: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search still running after 2 s (a start's first look at a million papers, a busy machine) is
    deferred, so Discord keeps the interaction, and its listing follows: the person gets their
    results, where the answer used to come too late and be dropped."""
    service = e2e.services.search_service
    search = service.search

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(3.5)
        return await search(*args, **kwargs)

    monkeypatch.setattr(service, "search", slow)
    result = await e2e.server.run_command(
        "bob", "paper search", query="kv cache quantization", limit=3, timeout=30
    )
    assert not result.ephemeral
    assert result.embed["title"] == "Results for “kv cache quantization”"
    assert len(_numbered_ids(result)) == 3
