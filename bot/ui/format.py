"""Text helpers for rendering papers: short author lists, venue lines, trimming, links."""

from __future__ import annotations

from bot.services.papers.citation import landing_url
from bot.services.papers.latex_text import readable
from bot.services.papers.shorten import cut, cut_markdown
from storage.models import Paper


def counted(count: int, one: str, many: str) -> str:
    """The count and the noun it takes: "1 paper", "2,000 papers"."""
    return f"{count:,} {one if count == 1 else many}"


def trim(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """Plain `text` cut to at most `limit` characters at a word's end (never inside a word)."""
    return cut(text, limit, ellipsis=ellipsis)


def trim_markdown(text: str, limit: int) -> str:
    """Markdown `text` cut to at most `limit` characters at a word's end, its links whole and its
    bold and italics closed."""
    return cut_markdown(text, limit)


def short_authors(authors: tuple[str, ...], *, limit: int = 3) -> str:
    """ "A, B, C" for up to `limit` authors, else "A, B, C et al. (12 authors)"; "" for none."""
    if len(authors) <= limit:
        return ", ".join(authors)
    return f"{', '.join(authors[:limit])} et al. ({len(authors)} authors)"


def venue_line(paper: Paper) -> str:
    """ "ICML 2024 · Oral"; "" when neither venue, year nor status is known."""
    parts = [part for part in (paper.venue, str(paper.year) if paper.year else None) if part]
    if paper.venue and paper.year and str(paper.year) in paper.venue:
        parts = [paper.venue]
    return " · ".join(part for part in (" ".join(parts), paper.status) if part)


def byline(paper: Paper, *, authors: int = 3) -> str:
    """Authors, venue and year on one line ("A, B, C et al. (12 authors) · ICML 2024 · Oral"),
    leaving out what is not known; "" when nothing is."""
    return " · ".join(
        part for part in (short_authors(paper.authors, limit=authors), venue_line(paper)) if part
    )


def paper_link(paper: Paper) -> str | None:
    """The landing page for the paper's title link."""
    # an abstract-only paper (the seed lists) often names its code or project page: the best link it has
    return landing_url(paper) or paper.pdf_url or paper.code_url


def links(paper: Paper) -> list[tuple[str, str]]:
    """Named links for a paper (OpenReview, arXiv, PDF, code), without duplicates."""
    found: list[tuple[str, str]] = []
    if paper.openreview_id:
        found.append(("OpenReview", f"https://openreview.net/forum?id={paper.openreview_id}"))
    if paper.arxiv_id:
        found.append(("arXiv", f"https://arxiv.org/abs/{paper.arxiv_id}"))
    if paper.doi:
        found.append(("DOI", f"https://doi.org/{paper.doi}"))
    if paper.url and all(url != paper.url for _, url in found):
        found.append(("Page", paper.url))
    if paper.pdf_url:
        found.append(("PDF", paper.pdf_url))
    elif paper.arxiv_id:
        found.append(("PDF", f"https://arxiv.org/pdf/{paper.arxiv_id}"))
    if paper.code_url:
        found.append(("Code", paper.code_url))
    return found


def display_title(paper: Paper) -> str:
    """The title as people read it: its LaTeX as text, "(derived title)" when the bot made it."""
    title = readable(paper.title)
    return title if not paper.title_derived else f"{title} (derived title)"


def display_abstract(paper: Paper) -> str:
    """The abstract as people read it: its LaTeX as text."""
    return readable(paper.abstract.strip())


def file_size(size: int) -> str:
    """A file size as people read it: "25 MB", "3.2 MB", "12 KB"."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MB"
    return f"{max(1, round(size / 1024))} KB"
