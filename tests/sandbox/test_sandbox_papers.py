"""The papers the sandbox starts on: arXiv's newest of a category (on a recorded arXiv answer), the
shipped corpus when arXiv cannot be reached (and it says so), and the store PAPERBOT_DB names."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.cli import main
from bot.sandbox import papers as sandbox_papers
from bot.sandbox.console import run_console
from bot.services.papers.arxiv_fetch import HttpResponse
from bot.settings import Settings

pytestmark = pytest.mark.timeout(120)

RECORDED = Path(__file__).with_name("fixtures") / "arxiv_query_10_entries.json"


class Recorded:
    """arXiv's API as recorded: every request answered with the same page (and counted)."""

    def __init__(self) -> None:
        saved = json.loads(RECORDED.read_text(encoding="utf-8"))
        self.response = HttpResponse(saved["status_code"], saved["body"].encode())
        self.asked: list[dict[str, str]] = []

    async def __call__(self, url: str, params: Mapping[str, str]) -> HttpResponse:
        self.asked.append(dict(params))
        return self.response


async def test_the_sandbox_starts_on_arxivs_newest_papers_with_titles_authors_and_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "session.txt"
    script.write_text("/paper search query:testing deep learning models limit:3\n")
    arxiv = Recorded()
    code = await run_console(Settings(), store=None, script=script, arxiv="cs.LG", arxiv_http=arxiv)
    out = capsys.readouterr().out
    assert code == 0, out
    assert [a["search_query"] for a in arxiv.asked] == ["cat:cs.LG"]  # one polite request
    assert arxiv.asked[0]["sortBy"] == "submittedDate"
    assert "paperbot: fetching the newest cs.LG papers from arXiv…" in out
    assert "with 10 papers (the 10 newest cs.LG papers on arXiv, submitted 2012-02-21 to 2025-03-07)" in out
    answer = out[out.index("alice@#papers> /paper search") :]
    assert "Testing Deep Learning Models: A First Comparative Study of Multiple Testing" in answer
    assert "(derived title)" not in answer  # real titles
    assert "Helge Spieker" in answer or "Arnaud Gotlieb" in answer  # and their authors
    assert "arxiv.org/abs/" in answer  # and links


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (OSError("Name or service not known"), "could not reach arXiv (OSError: Name or service not known)"),
        (HttpResponse(503, b"busy"), "could not reach arXiv (arXiv answered HTTP 503)"),
    ],
)
async def test_without_arxiv_the_sandbox_says_so_and_starts_on_the_shipped_corpus(
    failure: Exception | HttpResponse, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def unreachable(url: str, params: Mapping[str, str]) -> HttpResponse:
        if isinstance(failure, Exception):
            raise failure
        return failure

    script = tmp_path / "session.txt"
    script.write_text("/paper search query:kv cache quantization limit:1\n")
    code = await run_console(Settings(), store=None, script=script, arxiv="cs.LG", arxiv_http=unreachable)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"paperbot: {said}: starting on the shipped corpus instead" in out
    assert "with 38 papers (the shipped corpus" in out
    assert "KV Cache" in out


def test_paperbot_db_is_the_store_the_sandbox_and_start_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A researcher who ingested their own papers into PAPERBOT_DB finds them in `paperbot sandbox`
    and `paperbot start`, not a temporary database with the shipped corpus."""
    monkeypatch.chdir(tmp_path)
    for name in ("DISCORD_TOKEN", "PAPERBOT_ARXIV_CATEGORIES"):
        monkeypatch.delenv(name, raising=False)
    store = tmp_path / "mine.db"
    monkeypatch.setenv("PAPERBOT_DB", str(store))
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"q{n}",
                    "title": f"Quokka-guided curriculum {n} for offline reinforcement learning",
                    "abstract": f"We order offline transitions by difficulty with quokka-guided curriculum {n}. "
                    * 3,
                    "authors": ["Ada Quokka"],
                }
            )
            for n in range(3)
        )
    )
    assert main(["ingest", str(papers)]) == 0
    script = tmp_path / "session.txt"
    script.write_text("/paper search query:quokka curriculum limit:1\n")
    capsys.readouterr()

    assert main(["sandbox", "--script", str(script)]) == 0
    out = capsys.readouterr().out
    assert f"the store {store}." in out
    assert "with 3 papers. You are alice." in out
    assert "Quokka-guided curriculum" in out

    monkeypatch.setattr(sys, "stdin", io.StringIO("/paper search query:quokka curriculum limit:1\nquit\n"))
    assert main(["start"]) == 0
    out = capsys.readouterr().out
    assert f"the store {store}." in out
    assert "with 3 papers. You are alice." in out
    assert "Quokka-guided curriculum" in out


def test_paperbot_start_arxiv_as_the_readme_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`paperbot start --arxiv cs.LG`, arXiv answering as recorded (its transport stands in for the network)."""
    monkeypatch.chdir(tmp_path)
    for name in ("DISCORD_TOKEN", "PAPERBOT_DB", "PAPERBOT_ARXIV_CATEGORIES"):
        monkeypatch.delenv(name, raising=False)
    arxiv = Recorded()
    monkeypatch.setattr(sandbox_papers, "AiohttpTransport", lambda session, timeout: arxiv)
    monkeypatch.setattr(
        sys, "stdin", io.StringIO("/paper search query:fuzzing cyber-physical limit:1\nquit\n")
    )
    assert main(["start", "--arxiv", "cs.LG"]) == 0
    out = capsys.readouterr().out
    assert "a temporary database" in out
    assert "with 10 papers (the 10 newest cs.LG papers on arXiv" in out
    assert "Active Fuzzing for Testing and Securing Cyber-Physical" in out
    assert arxiv.asked[0]["search_query"] == "cat:cs.LG"
