"""`paperbot run`: the bot on Discord until SIGINT/SIGTERM, then a clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from bot.app import PaperBot
from bot.runtime import Services, open_services
from bot.settings import Settings

log = logging.getLogger(__name__)


async def run_bot(settings: Settings) -> int:
    token = settings.require_token()
    # Handle the signals from the very start, so a stop during start-up is clean too.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with open_services(settings) as services:
        if stop.is_set():
            log.info("shutting down (signal received during start-up)")
        else:
            code = await _serve(settings, services, token, stop)
            if code:
                return code
    log.info("stopped cleanly")
    return 0


async def _serve(settings: Settings, services: Services, token: str, stop: asyncio.Event) -> int:
    """Run the Discord client until `stop` is set (0) or the client fails (1)."""
    bot = PaperBot(settings=settings, services=services)
    async with bot:
        runner = asyncio.create_task(bot.start(token), name="discord-client")
        stopper = asyncio.create_task(stop.wait(), name="stop-signal")
        done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            log.info("shutting down (signal received)")
            # Stop reading the gateway first: with a read pending, discord.py's close becomes a 4000
            # ("resume later") close, and Discord keeps the session, showing the bot online, until it
            # times out. Without one, the close is a normal 1000.
            runner.cancel()
            await asyncio.wait({runner})
        await bot.close()
        stopper.cancel()
        await asyncio.wait({runner})  # never raises: the outcome is read below
        error = None if runner.cancelled() else runner.exception()
        if error is not None:
            log.error("the Discord client stopped: %s", error)
            return 1
    return 0
