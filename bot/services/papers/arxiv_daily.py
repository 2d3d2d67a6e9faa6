"""The daily arXiv fetch: new papers from the configured categories, searchable at once."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from bot.services.papers.arxiv_fetch import FetchSummary, fetch_arxiv_live
from storage.db import Database

log = logging.getLogger(__name__)

#: Two days back: a day's listing can appear late, and papers fetched twice are merged, not duplicated.
DAILY_FETCH_DAYS = 2

Fetch = Callable[..., Awaitable[FetchSummary]]


async def run_daily_fetch(
    db: Database,
    categories: Sequence[str],
    index_changes: Callable[[], Awaitable[int]],
    *,
    fetch: Fetch = fetch_arxiv_live,
) -> FetchSummary | None:
    """Fetch ``categories`` and index what changed (``index_changes``: the live index's refresh);
    errors are logged, never raised.

    A failed day leaves the fetch cursor where it stopped, so the next run resumes it.
    """
    if not categories:
        return None
    try:
        summary = await fetch(db, categories=categories, days=DAILY_FETCH_DAYS)
    except Exception:
        log.exception("daily arXiv fetch of %s failed; the next run resumes it", " ".join(categories))
        return None
    try:
        indexed = await index_changes()
    except Exception:
        # The papers are stored; the periodic index refresh picks them up.
        log.exception("daily arXiv fetch: the papers are stored but could not be indexed yet")
        return summary
    log.info("daily arXiv fetch: %s; %d papers (re)indexed", summary.describe().splitlines()[0], indexed)
    return summary
