"""Errors whose message is safe to show a user as one friendly line."""

from __future__ import annotations

from typing import Final

from paperindex.errors import SearchError


class UserFacingError(Exception):
    """An error caused by the user's input or situation; str() is what they are told."""


#: Every error type whose message is for the person: ours, and the search engine's (a query it cannot
#: search, a paper it does not hold).
USER_FACING: Final = (UserFacingError, SearchError)


class QueryError(UserFacingError):
    """A search query that cannot be searched (empty, too long, no searchable words)."""


class NotFoundError(UserFacingError):
    """An unknown paper, subscription or other thing the user named."""


class InvalidScheduleError(UserFacingError):
    """A time, timezone, frequency or count that is not valid."""


class SettingsError(Exception):
    """A missing or invalid setting; str() is one line that names the setting."""
