"""`paperbot fetch rss|biorxiv|medrxiv|openreview` against a local HTTP server serving the fixtures
(the real aiohttp transport): counts, problems listed, exit codes, and a clear line when offline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from source_fakes import Answer, biorxiv_pages, fixture, openreview_pages

from bot.cli import main
from bot.services.papers.sources.http import HttpResponse

pytestmark = pytest.mark.usefixtures("isolated")

DAYS = "1000"  # the fixtures are of 2024-11-25 .. 2024-12-02


class _Fixtures(BaseHTTPRequestHandler):
    """The fixtures over HTTP, answered as the tests' fake services answer them (`source_fakes`)."""

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = b'{"notes": [], "count": 0}'
        if url.path == "/neuro.rss":
            body = fixture("rss_nature_neuroscience.xml")
        elif url.path.startswith("/details/"):
            body = _body(biorxiv_pages(url.path.split("/")[2])(url.path, query))
        elif url.path == "/notes":
            body = _body(openreview_pages(url.path, query))
        elif url.path == "/not-a-feed":
            body = b"<html><body>Sign in</body></html>"
        elif url.path == "/broken.rss":
            body = b'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title><item></item></channel></rss>'
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _body(answer: Answer) -> bytes:
    assert isinstance(answer, HttpResponse)
    return answer.body


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Fixtures)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "paperbot.db"
    monkeypatch.setenv("PAPERBOT_DB", str(path))
    return path


def test_a_feed_with_rejected_entries_exits_1_and_lists_them(
    server: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "fetch", "rss", f"{server}/neuro.rss", "--days", DAYS)
    assert code == 1, err
    assert "50 added, 0 merged, 0 unchanged, 2 rejected (1 requests)" in out
    assert "entry 51: neither a title nor an abstract" in out
    code, out, _ = cli(capsys, "fetch", "rss", f"{server}/neuro.rss", "--days", DAYS)
    assert code == 1
    assert "0 added, 0 merged, 50 unchanged" in out


def test_a_feed_of_nothing_usable_exits_3_and_no_feed_exits_2(
    server: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "fetch", "rss", f"{server}/broken.rss")
    assert code == 3
    assert "0 added" in out
    assert "1 rejected" in out
    code, out, err = cli(capsys, "fetch", "rss", f"{server}/not-a-feed")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith(f"paperbot: {server}/not-a-feed is not an RSS or Atom feed")
    assert "Traceback" not in err


def test_biorxiv_medrxiv_and_openreview_exit_1_with_their_rejected_rows(
    server: str, store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.services.papers.sources.biorxiv.API_BASE", server)
    monkeypatch.setattr("bot.services.papers.sources.openreview.API_BASE", server)
    code, out, _ = cli(capsys, "fetch", "biorxiv", "--category", "Neuroscience", "--days", DAYS)
    assert code == 1
    assert "biorxiv:neuroscience" in out
    assert "54 added, 1 merged, 0 unchanged, 3 rejected" in out
    code, out, _ = cli(capsys, "fetch", "medrxiv", "--days", DAYS)
    assert code == 1
    assert "52 added, 0 merged, 0 unchanged, 2 rejected (2 requests)" in out
    code, out, _ = cli(capsys, "fetch", "openreview", "robot-learning.org/CoRL/2024/Conference")
    assert code == 1
    assert "60 added, 0 merged, 0 unchanged, 3 rejected (2 requests)" in out
    code, out, err = cli(capsys, "fetch", "openreview", "robot-learning.org/CoRL/2031/Conference")
    assert (code, out) == (2, "")
    assert "OpenReview has no public notes for robot-learning.org/CoRL/2031" in err
    code, out, err = cli(capsys, "fetch", "openreview", "not a venue")
    assert (code, out) == (2, "")
    assert "is not an OpenReview venue id" in err


def test_an_unreachable_source_fails_at_once_with_a_clear_line(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No network to the feed's host (`.invalid` never resolves): exit 1 within seconds, one line."""
    started = time.monotonic()
    code, out, err = cli(capsys, "fetch", "rss", "https://feeds.paperbot.invalid/nature.rss")
    assert time.monotonic() - started < 15
    assert (code, out) == (1, "")
    last = err.splitlines()[-1]
    assert last.startswith("paperbot: cannot reach feeds.paperbot.invalid (ClientConnectorDNSError")
    assert "this machine seems to be offline" in last
    assert "Traceback" not in err


def test_stats_lists_each_source_with_its_last_fetch_and_failure(
    server: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, "fetch", "rss", f"{server}/neuro.rss", "--days", DAYS)
    cli(capsys, "fetch", "rss", f"{server}/not-a-feed")
    code, out, _ = cli(capsys, "stats")
    assert code == 0
    sources = {s["source"]: s for s in json.loads(out)["sources"]}
    fetched = sources[f"rss:{server}/neuro.rss"]
    assert (fetched["last_records"], fetched["last_added"], fetched["total_added"]) == (52, 50, 50)
    assert fetched["last_error"] is None
    assert fetched["last_fetch"] is not None
    failed = sources[f"rss:{server}/not-a-feed"]
    assert failed["last_fetch"] is None
    assert "is not an RSS or Atom feed" in failed["last_error"]
