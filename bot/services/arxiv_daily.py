"""The daily arXiv fetch: new papers from the configured categories, searchable at once."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from bot.services.arxiv_fetch import FetchSummary, fetch_arxiv_live
from storage.db import Database

if TYPE_CHECKING:
    from bot.runtime import Services

log = logging.getLogger(__name__)

#: Two days back: a day's listing can appear late, and papers fetched twice are merged, not duplicated.
DAILY_FETCH_DAYS = 2

Fetch = Callable[..., Awaitable[FetchSummary]]


async def run_daily_fetch(services: Services, *, fetch: Fetch = fetch_arxiv_live) -> FetchSummary | None:
    """Fetch the configured categories and index what changed; errors are logged, never raised.

    A failed day leaves the fetch cursor where it stopped, so the next run resumes it.
    """
    categories: Sequence[str] = services.settings.arxiv_categories
    if not categories:
        return None
    db: Database = services.db
    try:
        summary = await fetch(db, categories=categories, days=DAILY_FETCH_DAYS)
    except Exception:
        log.exception("daily arXiv fetch of %s failed; the next run resumes it", " ".join(categories))
        return None
    try:
        indexed = await services.refresh_changed()
    except Exception:
        # The papers are stored; the periodic index refresh picks them up.
        log.exception("daily arXiv fetch: the papers are stored but could not be indexed yet")
        return summary
    log.info("daily arXiv fetch: %s; %d papers (re)indexed", summary.describe().splitlines()[0], indexed)
    return summary
