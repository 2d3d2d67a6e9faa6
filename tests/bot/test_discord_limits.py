"""The bot's own pacing under Discord's limits: the global pacer and the reaction bucket per channel."""

from __future__ import annotations

import asyncio
import time

from bot.discord_limits import BULK_RATE, DIGEST_CONCURRENCY, GLOBAL_RATE, ChannelSpacer, RequestPacer


async def test_request_pacer_limits_the_rate() -> None:
    """After the burst, requests go out at `rate` per second."""
    pacer = RequestPacer(rate=200.0, burst=5)
    started = time.monotonic()
    for _ in range(25):
        await pacer.wait()
    assert time.monotonic() - started >= 20 / 200 * 0.9


def test_bulk_sending_stays_under_the_global_limit_in_any_second() -> None:
    pacer = RequestPacer()
    assert pacer.rate + pacer.burst <= GLOBAL_RATE
    # enough digests in flight, each held to 5 messages per 5 s in its DM, to use the whole rate
    assert DIGEST_CONCURRENCY * 5 / 5 >= BULK_RATE


async def test_channel_spacer_spaces_calls_in_one_channel_not_across_channels() -> None:
    spacer = ChannelSpacer(0.1)
    times: dict[int, list[float]] = {1: [], 2: []}

    async def call(channel: int) -> None:
        await spacer.wait(channel)
        times[channel].append(time.monotonic())

    await asyncio.gather(*(call(1) for _ in range(3)), *(call(2) for _ in range(3)))
    for channel in (1, 2):
        gaps = [b - a for a, b in zip(times[channel], times[channel][1:], strict=False)]
        assert min(gaps) >= 0.09
    assert abs(times[1][0] - times[2][0]) < 0.05, "another channel does not wait"
