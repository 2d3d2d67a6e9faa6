"""The stored paper a message or a pasted link points to, fetching from arXiv what the store lacks.

Used by the "Save paper" / "Like paper" message commands and by `/paper show paper:<link>`. The first
link of the text whose paper the store has wins; when none is stored, the first arXiv link is fetched
(:class:`~bot.services.papers.arxiv_lookup.ArxivLookup`) and indexed before the answer. Every refusal
says what was looked for and why nothing was stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.errors import NotFoundError
from bot.services.papers.arxiv_lookup import ArxivLookup, ArxivUnavailable
from bot.services.papers.links import PaperLink, named_papers
from storage.models import Paper
from storage.repositories.papers import PaperRepository

NO_LINK = (
    "That message has no paper link I can read: I look for arXiv, OpenReview, DOI and "
    "ACL Anthology links (e.g. https://arxiv.org/abs/2401.01234)."
)


class LinkedPapers:
    """Links in text → stored papers."""

    def __init__(
        self,
        papers: PaperRepository,
        *,
        arxiv: ArxivLookup | None,
        on_stored: Callable[[], Awaitable[object]],
    ) -> None:
        self.papers = papers
        self.arxiv = arxiv
        self.on_stored = on_stored

    async def find(self, text: str) -> Paper:
        """The paper ``text`` links to (NotFoundError, worded for the person, when there is none)."""
        links = named_papers(text)
        if not links:
            raise NotFoundError(NO_LINK)
        for link in links:
            paper = await self.papers.find_by_external(link.reference)
            if paper is not None:
                return paper
        arxiv = next((link for link in links if link.kind == "arxiv"), None)
        if arxiv is None:
            raise NotFoundError(_not_stored(links))
        if self.arxiv is None:
            raise NotFoundError(
                f"I don't have {arxiv.describe()}, and fetching from arXiv is turned off here. "
                "Nothing was saved."
            )
        try:
            paper = await self.arxiv.fetch(arxiv.id)
        except ArxivUnavailable as error:
            raise NotFoundError(
                f"I don't have {arxiv.describe()} yet and could not fetch it: {error} "
                "Nothing was saved; try again later."
            ) from None
        await self.on_stored()
        return paper


def _not_stored(links: list[PaperLink]) -> str:
    named = ", ".join(link.describe() for link in links[:3]) + (" and more" if len(links) > 3 else "")
    return (
        f"I don't have the paper this links to ({named}). Papers reach me through arXiv (whose links I "
        "fetch myself) or an admin's `/paperadmin ingest`. Nothing was saved."
    )
