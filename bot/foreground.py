"""The bot's foreground: people's commands and presses, answered within Discord's 3 s. Background work
that holds the event loop for seconds in slices (the digest jobs' rebuild after a start: 10,000
subscriptions) steps aside while one is being answered, so that each step of the answer does not wait
behind a slice."""

from __future__ import annotations

import time
from typing import Final

#: how long after an interaction arrives background work keeps stepping aside (an answer at 100,000
#: papers takes 5-50 ms on an idle loop; the first after a start more)
QUIET: Final = 0.3


class Foreground:
    def __init__(self, *, quiet: float = QUIET) -> None:
        self.quiet = quiet
        self._last = float("-inf")

    def seen(self) -> None:
        """An interaction arrived (a slash command, a button, a menu)."""
        self._last = time.monotonic()

    def busy_for(self) -> float:
        """Seconds background work should wait before its next slice (0: nobody is being answered)."""
        return max(0.0, self._last + self.quiet - time.monotonic())
