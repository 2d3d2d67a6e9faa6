"""The daily fetch of `PAPERBOT_SOURCES`: each source in turn, from where its last fetch ended, then
what changed indexed at once. A source that fails is logged (its state records why, for
`/paperadmin stats`) and the others still run; nothing is raised."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from bot.services.papers.sources.fetch import SourceFetchSummary
from bot.services.papers.sources.live import fetch_live
from bot.services.papers.sources.specs import SourceSpec, parse_spec
from storage.db import Database

log = logging.getLogger(__name__)

Fetch = Callable[[Database, SourceSpec], Awaitable[SourceFetchSummary]]


async def run_daily_sources(
    db: Database,
    sources: Sequence[str],
    index_changes: Callable[[], Awaitable[int]],
    *,
    fetch: Fetch = fetch_live,
) -> list[SourceFetchSummary]:
    """Fetch each source (`KIND:ARGUMENT`) and index what changed; returns the fetches that finished."""
    done: list[SourceFetchSummary] = []
    for text in sources:
        try:
            summary = await fetch(db, parse_spec(text))
        except Exception as error:
            # a failure of one source (offline, a refusal, a bug) leaves the others to run
            log.error("daily fetch of %s failed, the next run resumes it: %s", text, error)
            log.debug("daily fetch of %s failed", text, exc_info=True)
            continue
        log.info("daily fetch: %s", summary.describe())
        done.append(summary)
    if done:
        try:
            indexed = await index_changes()
        except Exception:
            log.exception("daily fetch: the papers are stored but could not be indexed yet")
        else:
            log.info("daily fetch of %d sources: %d papers (re)indexed", len(done), indexed)
    return done
