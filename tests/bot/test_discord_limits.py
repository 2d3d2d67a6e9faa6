"""The bot's own pacing under Discord's limits: the global pacer (held by a global 429), the reaction
bucket and the message bucket per channel."""

from __future__ import annotations

import asyncio
import time

from bot.discord_limits import (
    BULK_RATE,
    DIGEST_CONCURRENCY,
    GLOBAL_RATE,
    ChannelSpacer,
    ChannelWindow,
    RequestPacer,
    global_retry_after,
)


async def test_request_pacer_limits_the_rate() -> None:
    """After the burst, requests go out at `rate` per second."""
    pacer = RequestPacer(rate=200.0, burst=5)
    started = time.monotonic()
    for _ in range(25):
        await pacer.wait()
    assert time.monotonic() - started >= 20 / 200 * 0.9


async def test_a_held_pacer_lets_nothing_through_until_the_hold_ends_then_no_burst() -> None:
    """After a global 429 the pacer waits out the wait Discord named, a longer earlier hold is not
    shortened by a shorter later one, and the bucket starts empty (no burst saved up meanwhile)."""
    pacer = RequestPacer(rate=50.0, burst=5)
    pacer.hold(0.3)
    pacer.hold(0.1)
    started = time.monotonic()
    await pacer.wait()
    first = time.monotonic() - started
    assert first >= 0.3 * 0.95
    for _ in range(3):
        await pacer.wait()
    # from an empty bucket at the hold's end, the 4 requests take 4 / 50 s (measured from the hold's
    # end, not from when the first woke: a loop that overslept the hold may use what accrued since)
    assert time.monotonic() - started >= 0.3 * 0.95 + 4 / 50 * 0.9, (
        "the pacer had saved up a burst while held"
    )


async def test_the_pacer_takes_requests_in_turns_between_lanes() -> None:
    """Forty requests of one server's feeds are waiting when a DM digest's request comes: it goes out
    next but one, not after the forty."""
    pacer = RequestPacer(rate=50.0, burst=1)  # one request each 20 ms: time to count those gone
    order: list[str] = []

    async def request(lane: object, name: str) -> None:
        await pacer.wait(lane)
        order.append(name)

    busy = [asyncio.create_task(request(("server", 1), f"feed{n}")) for n in range(40)]
    await asyncio.sleep(0.1)
    await asyncio.sleep(0)  # a request let through just now is counted
    gone = len(order)
    assert gone < 30
    other = asyncio.create_task(request(("person", 2), "digest"))
    await asyncio.gather(*busy, other)
    assert order.index("digest") <= gone + 2, order  # the one sending, the one next in line, then it


def test_only_a_global_429_names_a_wait_for_the_pacer() -> None:
    """Discord marks the global limit with X-RateLimit-Global (a route's 429 has none) and names the
    wait in Retry-After."""
    assert global_retry_after(429, {"X-RateLimit-Global": "true", "Retry-After": "2"}) == 2.0
    assert global_retry_after(429, {"X-RateLimit-Global": "true"}) == 1.0
    assert global_retry_after(429, {"X-RateLimit-Global": "true", "Retry-After": "soon"}) == 1.0
    assert global_retry_after(429, {"Retry-After": "1", "X-RateLimit-Scope": "user"}) is None
    assert global_retry_after(200, {"X-RateLimit-Global": "true"}) is None


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


async def test_channel_window_holds_a_channel_to_its_bucket_and_lets_another_channel_go() -> None:
    """Five sends in a channel go at once; the sixth waits until the first is a window old, counted from
    when the first send ended; another channel does not wait meanwhile."""
    window = ChannelWindow(limit=5, window=0.3)
    ended: dict[int, list[float]] = {1: [], 2: []}
    began: dict[int, list[float]] = {1: [], 2: []}

    async def send(channel: int) -> None:
        async with window.slot(channel):
            began[channel].append(time.monotonic())
            await asyncio.sleep(0.02)  # the request's trip
        ended[channel].append(time.monotonic())

    started = time.monotonic()
    await asyncio.gather(*(send(1) for _ in range(7)), send(2))
    assert began[1][4] - started < 0.2, "the first five did not wait for the window"
    assert began[1][5] >= ended[1][0] + 0.3 - 0.01
    assert began[1][6] >= ended[1][1] + 0.3 - 0.01
    assert began[2][0] - started < 0.2, "another channel waited behind a full one"


async def test_channel_window_forgets_idle_channels() -> None:
    now = [0.0]
    window = ChannelWindow(limit=2, window=1.0, monotonic=lambda: now[0])
    window.KEEP = 3
    for channel in range(3):
        async with window.slot(channel):
            pass
    now[0] = 5.0
    async with window.slot(99):
        pass
    assert set(window._sent) == {99}
