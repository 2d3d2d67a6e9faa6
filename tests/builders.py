"""Builders every test folder shares (import them as ``from builders import ...``): one settable
clock, a bare bot."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.app import PaperBot
    from bot.settings import Settings


class Clock:
    """A wall clock a test sets: what the services read as "now" (``open_services(clock=...)``, or a
    service's ``clock=``), moved with ``clock.now = ...``, ``set`` or ``advance``."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def set(self, now: datetime) -> None:
        self.now = now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def bare_bot(settings: Settings | None = None, services: Any = None) -> PaperBot:
    """A PaperBot on no store and without the Discord parts `bot.runtime.build_bot` attaches: its
    commands, tree and hooks, never started (``services``: whatever the test needs of them)."""
    from bot.app import PaperBot
    from bot.discord_limits import RequestPacer
    from bot.scheduler import ProcessScheduler
    from bot.settings import Settings

    return PaperBot(
        settings=settings or Settings(),
        services=services if services is not None else SimpleNamespace(),
        pacer=RequestPacer(),
        scheduler=ProcessScheduler(),
    )
