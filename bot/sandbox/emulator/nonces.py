"""Discord's message-create deduplication: ``nonce`` with ``enforce_nonce: true``.

Discord's Create Message documents ``nonce`` as an integer or a string of up to 25 characters, and
``enforce_nonce``: "If true and nonce is present, it will be checked for uniqueness in the past few
minutes. If another message was created by the same author with the same nonce, that message will be
returned and no new message will be created." A message created with that nonce and deleted since is
not created again either: the create answers 404 Unknown Message (10008), which is how Discord's own
engineer described it when the parameter shipped and what discord.py documents for ``send(nonce=)``.

Discord does not say how long "a few minutes" is; the sandbox remembers a nonce for
``SandboxOptions.nonce_window`` seconds of its clock (3 minutes by default), so
``server.clock.advance()`` moves past it without sleeping. Without ``enforce_nonce`` a nonce is only
echoed back (in the answer and the MESSAGE_CREATE event), never enforced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .limits import NONCE_MAX

if TYPE_CHECKING:
    from .state import SandboxClock, SandboxMessage

__all__ = ["DEFAULT_WINDOW", "NONCE_MAX", "NonceMemory"]

DEFAULT_WINDOW = 180.0


class NonceMemory:
    """Recent ``(author, nonce)`` → the message created with it, for the dedupe window."""

    def __init__(self, clock: SandboxClock, window: float = DEFAULT_WINDOW) -> None:
        self.clock = clock
        self.window = window
        self._seen: dict[tuple[int, str], tuple[float, SandboxMessage]] = {}

    def recall(self, author_id: int, nonce: str | int) -> SandboxMessage | None:
        """The message ``author_id`` created with ``nonce`` within the window (it may be deleted since)."""
        key = (author_id, str(nonce))
        found = self._seen.get(key)
        if found is None:
            return None
        created, message = found
        if self.clock.monotonic() - created > self.window:
            del self._seen[key]
            return None
        return message

    def remember(self, author_id: int, nonce: str | int, message: SandboxMessage) -> None:
        self._forget_expired()
        self._seen[(author_id, str(nonce))] = (self.clock.monotonic(), message)

    def _forget_expired(self) -> None:
        horizon = self.clock.monotonic() - self.window
        for key in [key for key, (created, _) in self._seen.items() if created < horizon]:
            del self._seen[key]
