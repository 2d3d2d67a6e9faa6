"""The clock every service is given: a callable returning the current time as an aware UTC datetime.

The composition root (`bot/runtime.py`) passes the real one, `utc_now`; tests and the sandbox pass
their own, so no module reads the time behind their back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: Returns the current time as an aware UTC datetime; injected everywhere time matters.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The real clock."""
    return datetime.now(UTC)
