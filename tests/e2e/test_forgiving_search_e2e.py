"""/paper search forgives typing, through the real discord.py client and the local Discord server: a
misspelt word is searched corrected and the answer says so (quotes search it as typed), the joined,
hyphenated and spaced forms of a compound find each other's papers, and an author's name lists their
papers. On a corpus the test builds, and on ICML 2024 when ../shared has it."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import pytest
from lab_papers import add_papers
from shared_data import shared_path

from bot.services.papers.ingest.runner import ingest_bytes

if TYPE_CHECKING:
    from paperbot_e2e import E2E

Start = Callable[..., AbstractAsyncContextManager["E2E"]]

CORPUS = [
    {
        "title": "Sparse Attention for Long Documents",
        "abstract": "A transformer whose attention mechanism reads only a few tokens per query.",
        "authors": ["Ada Lovelace", "Alan Turing"],
        "year": 2022,
        "openreview_id": "SpArSeAtTn",
    },
    {
        "title": "Convolutions Instead of Recurrence",
        "abstract": "Convolutional networks for sequence transduction, trained on translation.",
        "authors": ["Grace Hopper"],
        "year": 2021,
        "openreview_id": "CoNvSeQ001",
    },
    {
        "title": "Residual Links Against Oversmoothing",
        "abstract": "Deep graph networks suffer from oversmoothing; residual links keep node features apart.",
        "authors": ["Ada Lovelace", "Barbara Liskov"],
        "year": 2024,
        "openreview_id": "OvErSmOoTh",
    },
    {
        "title": "Why Deep Message Passing Fails",
        "abstract": "Message passing over many layers leads to over-smoothing of node features in graphs.",
        "authors": ["Edsger Dijkstra"],
        "year": 2023,
        "openreview_id": "OvEr-SmOtH",
    },
    {
        "title": "Label Smoothing for Calibrated Classifiers",
        "abstract": "Label smoothing softens targets of image classifiers and calibrates them.",
        "authors": ["Grace Hopper"],
        "year": 2023,
        "openreview_id": "LaBeLsMoOt",
    },
]


def _titles(result: Any) -> list[str]:
    """The listed titles, in order."""
    return re.findall(r"\*\*\d+\. \[([^\]]+)\]", result.embed["description"])


async def test_a_misspelt_query_is_searched_corrected_and_the_answer_says_so(start_paperbot: Start) -> None:
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        await add_papers(e2e, CORPUS)
        result = await e2e.server.run_command("bob", "paper search", query="tranformer atention mechanisim")
        embed = result.embed
        assert embed["title"] == "Results for “transformer attention mechanism”"
        assert embed["description"].startswith("Showing results for *transformer attention mechanism*")
        assert 'put it in quotes: "tranformer atention mechanisim"' in embed["description"]
        assert _titles(result)[0] == "Sparse Attention for Long Documents"
        assert "matched: transformer, attention mechanism" in embed["description"]

        # in quotes: exactly as typed, which no paper holds
        typed = await e2e.server.run_command("bob", "paper search", query='"tranformer atention"')
        assert typed.ephemeral
        assert "No papers match" in typed.content


async def test_joined_hyphenated_and_spaced_forms_find_each_others_papers(start_paperbot: Start) -> None:
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        await add_papers(e2e, CORPUS)
        joined = "Residual Links Against Oversmoothing"
        hyphenated = "Why Deep Message Passing Fails"
        for query, also in [
            ("oversmoothing", "over-smoothing"),
            ("over-smoothing", "oversmoothing"),
            ("over smoothing", "oversmoothing"),
        ]:
            result = await e2e.server.run_command("carol", "paper search", query=query, limit=3)
            titles = _titles(result)
            assert {joined, hyphenated} <= set(titles), (query, titles)
            assert titles[0] in {joined, hyphenated}, (query, titles)
            assert f"Also searched: {also}" in result.embed["description"], query


async def test_an_authors_name_lists_their_papers_newest_first(start_paperbot: Start) -> None:
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        await add_papers(e2e, CORPUS)
        result = await e2e.server.run_command("alice", "paper search", query="ada  LOVELACE")
        embed = result.embed
        assert embed["title"] == "Papers by Ada Lovelace"
        assert embed["description"].startswith("Papers by **Ada Lovelace**, newest first.")
        assert _titles(result) == [
            "Residual Links Against Oversmoothing",
            "Sparse Attention for Long Documents",
        ]
        assert "2 papers" in embed["footer"]["text"]
        # a name that is not an author's is searched as words
        words = await e2e.server.run_command("alice", "paper search", query="Ada Byron")
        assert words.ephemeral
        assert "No papers match “Ada Byron”" in words.content


@pytest.mark.shared
async def test_on_icml_2024_typos_forms_and_an_author(start_paperbot: Start) -> None:
    """The three searches that failed on ICML 2024: a misspelt query ("No papers match"), the joined
    form of "over-smoothing" (its hyphenated papers missed) and an author's name (nothing found)."""
    path = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        summary = await ingest_bytes(e2e.db, path.name, path.read_bytes())
        assert summary.rejected == 0
        await e2e.services.index.refresh()
        server = e2e.server

        typo = await server.run_command(
            "bob", "paper search", query="tranformer atention mechanisim", limit=3
        )
        assert typo.embed["description"].startswith("Showing results for *transformer attention mechanism*")
        assert "matched: transformer, attention mechanism" in typo.embed["description"]

        # the hyphenated query finds the papers that only write "oversmoothing"
        joined_only = {
            r["title"]
            for r in records
            if "oversmoothing" in (r["title"] + r["abstract"]).lower()
            and "over-smoothing" not in (r["title"] + r["abstract"]).lower()
        }
        assert joined_only
        hyphen = await server.run_command("bob", "paper search", query="over-smoothing", limit=5)
        assert joined_only & set(_titles(hyphen)), _titles(hyphen)
        assert "Also searched: oversmoothing" in hyphen.embed["description"]

        # the most prolific author's name lists their papers
        name, count = Counter(a for r in records for a in r["authors"]).most_common(1)[0]
        theirs = {r["title"] for r in records if name in r["authors"]}
        by = await server.run_command("carol", "paper search", query=name.lower(), limit=10)
        assert by.embed["title"] == f"Papers by {name}"
        assert f"{count} papers" in by.embed["footer"]["text"]
        assert set(_titles(by)) <= theirs
