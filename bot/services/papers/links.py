"""The papers a piece of text links to: arXiv, OpenReview, DOI and ACL Anthology links, in order.

People post links in channels all day ("have you seen https://arxiv.org/abs/2401.01234v2?"); the
"Save paper" and "Like paper" message commands and `/paper show paper:` turn them into stored papers.
An ACL Anthology id is its DOI's suffix (the Anthology registers ``10.18653/v1/<id>``), so it is
looked up as that DOI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from storage.repositories import paper_keys

LinkKind = Literal["arxiv", "openreview", "doi"]

MAX_LINKS = 10  # a message of a hundred links is not a request to look up a hundred papers
ACL_DOI_PREFIX = "10.18653/v1/"

_LINK = re.compile(
    r"(?P<arxiv_url>arxiv\.org/(?:abs|pdf|html)/[^\s<>)\]]+)"
    r"|(?P<arxiv_ref>\barxiv\s*:\s*[\w./-]+)"
    r"|(?P<openreview>openreview\.net/(?:forum|pdf|attachment)\?[^\s<>)\]]+)"
    r"|(?P<acl>aclanthology\.org/(?P<acl_id>[A-Z]\d{2}-\d{4}|\d{4}\.[a-z][\w-]*\.\d+)(?:\.pdf)?)"
    r"|(?P<doi>\b10\.\d{4,9}/[^\s\"'<>]+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class PaperLink:
    """One paper a text names, by the id the store keys it on."""

    kind: LinkKind
    id: str

    def describe(self) -> str:
        """How the answer names it: "arXiv 2401.01234", "OpenReview abc123", "DOI 10.1/x"."""
        return {"arxiv": "arXiv", "openreview": "OpenReview", "doi": "DOI"}[self.kind] + " " + self.id

    @property
    def reference(self) -> str:
        """What the paper repository's look-up by external id takes for it."""
        return f"doi:{self.id}" if self.kind == "doi" else self.id


def paper_links(text: str) -> list[PaperLink]:
    """Every paper link in ``text`` in the order written, each once, at most :data:`MAX_LINKS`."""
    found: list[PaperLink] = []
    for match in _LINK.finditer(text or ""):
        link = _link(match)
        if link is not None and link not in found:
            found.append(link)
            if len(found) == MAX_LINKS:
                break
    return found


def named_papers(text: str) -> list[PaperLink]:
    """The papers an option's value names: its links, or the value itself where it is a bare arXiv id
    ("2401.01234v2", as people type one into `/paper show paper:`; in running text a bare number is
    not taken for one)."""
    links = paper_links(text)
    if links:
        return links
    bare = paper_keys.arxiv_id(text)
    return [PaperLink("arxiv", bare)] if bare else []


def _link(match: re.Match[str]) -> PaperLink | None:
    if match["arxiv_url"] or match["arxiv_ref"]:
        value = (match["arxiv_url"] or match["arxiv_ref"]).rstrip(".,;:!?")
        found = paper_keys.arxiv_id(value)
        return PaperLink("arxiv", found) if found else None
    if match["openreview"]:
        found = paper_keys.openreview_id(match["openreview"])
        return PaperLink("openreview", found) if found else None
    if match["acl"]:
        return PaperLink("doi", (ACL_DOI_PREFIX + match["acl_id"]).lower())
    found = paper_keys.doi(match["doi"])
    return PaperLink("doi", found) if found else None
