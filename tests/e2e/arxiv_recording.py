"""A recording of arXiv's API served on this machine, and a port nothing listens on: the arXiv look-ups
of the end-to-end tests never leave the machine."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

#: arXiv's answer to `id_list=1605.08386`, recorded by lukasschwab/arxiv.py (MIT) in 2026
RECORDED = Path(__file__).parent / "recorded" / "arxiv_id_1605.08386.atom"
RECORDED_TITLE = "Heat-bath random walks with Markov bases"


@contextlib.asynccontextmanager
async def recorded_arxiv() -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A local stand-in for export.arxiv.org that answers the recorded `id_list` query."""
    asked: list[dict[str, str]] = []

    async def query(request: web.Request) -> web.Response:
        asked.append(dict(request.query))
        if request.query.get("id_list") == "1605.08386":
            return web.Response(body=RECORDED.read_bytes(), content_type="application/atom+xml")
        return web.Response(status=400, text="incorrect id format")

    app = web.Application()
    app.router.add_get("/api/query", query)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/api/query", asked
    finally:
        await runner.cleanup()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
