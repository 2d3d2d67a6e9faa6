"""The Discord digest sender's pacing: every request a digest makes waits its turn under Discord's limit."""

from __future__ import annotations

import time

from bot.digest_sender import RequestPacer


async def test_request_pacer_limits_the_rate() -> None:
    """After the burst, requests go out at `rate` per second."""
    pacer = RequestPacer(rate=200.0, burst=5)
    started = time.monotonic()
    for _ in range(25):
        await pacer.wait()
    assert time.monotonic() - started >= 20 / 200 * 0.9
