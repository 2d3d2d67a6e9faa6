"""`paperbot search QUERY` and `paperbot search --batch FILE`: the corpus searched from the terminal.

A batch is searched a block of queries at a time: the block's queries are ranked, then the papers of
all their hits are read in one go (only the title and ids the output shows), then the block is
printed, one JSON line per query. Ranking skips what only the bot's listing uses (which words each
hit holds, for its snippet).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bot.errors import USER_FACING, UserFacingError
from bot.runtime import open_services
from bot.services.papers.latex_text import readable
from bot.services.search.query_repair import QueryRepair, SearchAnswer
from bot.settings import Settings
from paperindex.engine import SearchEngine, SearchResults
from storage.models import PaperIdentity

#: queries of a batch searched before their papers are read at once (bounds what is held)
BATCH_BLOCK = 500


async def run_search(args: argparse.Namespace, settings: Settings) -> int:
    if (args.query is None) == (args.batch is None):
        raise UserFacingError("give either a QUERY or --batch FILE")
    if not 1 <= args.limit <= 1000:
        raise UserFacingError("--limit must be between 1 and 1000")
    queries = read_batch(args.batch) if args.batch else [(None, args.query)]
    async with open_services(settings, beside_start=False) as services:
        repair = services.search_service.repair
        await repair.catch_up(services.search)
        for start in range(0, len(queries), BATCH_BLOCK):
            block = queries[start : start + BATCH_BLOCK]
            found = await search_block(
                repair, services.search, [text for _, text in block], args.limit, args.batch is None
            )
            # One read of the block's papers: a read per query waited on the store's thread each time.
            papers = await services.papers.identities(
                hit.paper_id
                for answer in found
                if isinstance(answer, SearchAnswer)
                for hit in answer.results.hits
            )
            for (query_id, text), results in zip(block, found, strict=True):
                _print_results(args, query_id, text, results, papers)
    return 0


async def search_block(
    repair: QueryRepair, engine: SearchEngine, texts: list[str], limit: int, raise_errors: bool
) -> list[SearchAnswer | Exception]:
    """Each query's answer (an author's papers, or the query repaired and searched), or the error that
    says why it cannot be searched (raised instead with ``raise_errors``). The author names must be
    up to date (``repair.catch_up()``)."""
    found: list[SearchAnswer | Exception] = []
    for text in texts:
        try:
            found.append(await repair.answer(engine, text, limit=limit, matched=False))
        except USER_FACING as error:
            if raise_errors:
                raise
            found.append(error)
    return found


def _print_results(
    args: argparse.Namespace,
    query_id: str | None,
    text: str,
    answer: SearchAnswer | Exception,
    papers: dict[int, PaperIdentity],
) -> None:
    if args.batch:
        print(batch_line(query_id, text, answer, papers))
        return
    if isinstance(answer, Exception):
        raise answer
    note = query_note(answer)
    results = answer.results
    if args.json:
        if note:  # stdout holds the results alone
            print(note, file=sys.stderr)
        for row in _rows(results, papers):
            print(json.dumps(row, ensure_ascii=False))
    else:
        if note:
            print(note)
        if not results.hits:
            print(f"No papers match {text!r}.")
        for row in _rows(results, papers):
            # an author's papers are listed newest first: there is no score to show
            score = "" if answer.author else f"[{row['score']:.3f}] "
            print(f"{row['rank']:>3}. {score}{readable(str(row['title']))}  (#{row['id']})")


def query_note(answer: SearchAnswer) -> str:
    """What the query was taken as, when not word for word, and how to search it as typed."""
    lines = []
    if answer.author:
        lines.append(
            f"Papers by {answer.author}, newest first (put the query in quotes to search its words)."
        )
    elif answer.searched_as:
        lines.append(
            f"Showing results for “{answer.searched_as}” (put the query in quotes to search it as typed)."
        )
    if answer.forms:
        lines.append(f"Also searched: {', '.join(answer.forms)}.")
    return "\n".join(lines)


def batch_line(
    query_id: str | None,
    text: str,
    answer: SearchAnswer | Exception,
    papers: dict[int, PaperIdentity],
) -> str:
    """A batch query's line of output: its id, its text and its results, or the error in their place;
    what the query was searched as when not as typed (``searched_as``, ``author``, ``forms``)."""
    if isinstance(answer, Exception):
        return json.dumps({"query_id": query_id, "query": text, "error": str(answer), "results": []})
    line: dict[str, object] = {"query_id": query_id, "query": text}
    if answer.searched_as:
        line["searched_as"] = answer.searched_as
    if answer.author:
        line["author"] = answer.author
    if answer.forms:
        line["forms"] = list(answer.forms)
    line["results"] = _rows(answer.results, papers)
    return json.dumps(line, ensure_ascii=False)


def _rows(results: SearchResults, papers: dict[int, PaperIdentity]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for rank, hit in enumerate(results.hits, 1):
        paper = papers[hit.paper_id]
        rows.append(
            {
                "rank": rank,
                "id": hit.paper_id,
                "external_id": paper.external_id,
                "arxiv_id": paper.arxiv_id,
                "openreview_id": paper.openreview_id,
                "doi": paper.doi,
                "score": round(hit.score, 6),
                "title": paper.title,
            }
        )
    return rows


def read_batch(path: Path) -> list[tuple[str | None, str]]:
    """One query per line, or JSONL records with `_id` (or `id`) and `text` (or `query`)."""
    if not path.is_file():
        raise UserFacingError(f"no such batch file: {path}")
    queries: list[tuple[str | None, str]] = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise UserFacingError(f"{path}:{number}: not valid JSON ({error.msg})") from None
            text = record.get("text") or record.get("query")
            if not isinstance(text, str):
                raise UserFacingError(f"{path}:{number}: a JSON query needs a 'text' field")
            query_id = record.get("_id", record.get("id"))
            queries.append((None if query_id is None else str(query_id), text))
        else:
            queries.append((str(number), line))
    return queries
