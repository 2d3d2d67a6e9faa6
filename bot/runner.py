"""`paperbot run`: the bot on Discord until SIGINT/SIGTERM, then a clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from bot.app import PaperBot
from bot.runtime import open_services
from bot.settings import Settings

log = logging.getLogger(__name__)


async def run_bot(settings: Settings) -> int:
    token = settings.require_token()
    async with open_services(settings) as services:
        bot = PaperBot(settings=settings, services=services)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        async with bot:
            runner = asyncio.create_task(bot.start(token), name="discord-client")
            stopper = asyncio.create_task(stop.wait(), name="stop-signal")
            done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if stopper in done:
                log.info("shutting down (signal received)")
            await bot.close()
            stopper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
            if runner.done() and not runner.cancelled() and runner.exception() is not None:
                error = runner.exception()
                log.error("the Discord client stopped: %s", error)
                return 1
    log.info("stopped cleanly")
    return 0
