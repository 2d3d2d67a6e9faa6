"""A paper's gist: the one or two sentences of its abstract that say what the paper contributes.

The rule (measured by ``bench/digest_skim.py``): every sentence is scored by what it states,

* 3: the authors' contribution — "we propose / introduce / present / develop …", "this paper
  proposes …", "our proposed method …";
* 2: what the authors set out to do — "we study / investigate / analyse / address …";
* 1: a result they state — "we show / demonstrate / prove / find …";

plus 1 when the sentence names something ("… called X", "we propose MGit", an acronym being
defined), and the best one wins (the earliest on a tie). A sentence with a link says where the code
or data is ("We release DOMINO as open source at https://github.com/…"), not what the paper does: it
comes last. An abstract that states none of these gets its opening sentence. A sentence shorter than
:data:`SHORT` is followed by the next one (not a link's) when both fit in :data:`MAX_CHARS` (what
shows it cuts a longer one at a word).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bot.services.papers.latex_text import readable
from bot.services.papers.prose import plain_text, sentences

MAX_CHARS: Final = 320
SHORT: Final = 120

_AUTHORS = r"(?:we|this (?:paper|work|study|article|note)|the present (?:paper|work)|our (?:paper|work))"
# "we" and its verb may have a few words between them ("we further propose", "this paper, for the
# first time, introduces"), never a clause's worth.
_GAP = r"(?:[\s,]+[\w-]+){0,4}?[\s,]+"
_INFLECTED = r"(?:s|es|d|ed)?\b"  # "proposes", "proposed"; not "designing"
_CONTRIBUTES = re.compile(
    rf"\b{_AUTHORS}{_GAP}(?P<verb>(?:propose|introduce|present|develop|design|devise|build|construct|"
    rf"formulate|derive|release|contribute|put forward|offer|create){_INFLECTED})",
    re.I,
)
_OURS = re.compile(
    r"\bour (?:proposed|new|novel) (?:method|model|framework|approach|algorithm|system)\b", re.I
)
_AIMS = re.compile(
    rf"\b{_AUTHORS}{_GAP}(?:study|studie|investigate|analy[sz]e|examine|explore|address|tackle|"
    rf"consider|focus|extend|revisit|rethink|provide|characteri[sz]e|establish){_INFLECTED}",
    re.I,
)
_RESULTS = re.compile(
    rf"\b{_AUTHORS}{_GAP}(?:show|demonstrate|prove|find|found|observe|achieve|obtain|report){_INFLECTED}",
    re.I,
)
# Something named: "… called X", an acronym being defined "(PAIL)", or a name right after the verb
# ("we propose MIREL", "we introduce Mixture-of-Domain Low-rank Experts").
_NAMING = re.compile(
    r"\b(?:dubbed|termed|called|named|namely|coined|referred to as)\b|\((?=[^()]{1,20}\))[^()]*[A-Z][^()]*\)"
)
_LINK = re.compile(r"https?://|\bwww\.|\bgithub\.com/", re.I)
_NAME_AFTER = re.compile(r"\s+(?:the\s+|our\s+)?[A-Z]")  # a capital right after the verb starts a name


@dataclass(frozen=True, slots=True)
class Gist:
    """The gist's text (plain, no markup) and whether it is the whole abstract."""

    text: str
    whole: bool


def sentence_score(sentence: str) -> int:
    """How strongly ``sentence`` states the paper's contribution (0: not at all, −1: a link's
    sentence); see the module doc."""
    if _LINK.search(sentence):
        return -1
    contributes = _CONTRIBUTES.search(sentence)
    if contributes or _OURS.search(sentence):
        named = (contributes and _NAME_AFTER.match(sentence, contributes.end())) or _NAMING.search(sentence)
        return 4 if named else 3
    if _AIMS.search(sentence):
        return 2
    return 1 if _RESULTS.search(sentence) else 0


def gist(abstract: str, *, max_chars: int = MAX_CHARS) -> Gist:
    """The one or two sentences of ``abstract`` that state its contribution (see the module doc)."""
    text = plain_text(readable(abstract))
    parts = sentences(text)
    if not parts:
        return Gist("", whole=True)
    scores = [sentence_score(sentence) for sentence in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    chosen = parts[best]
    follows = parts[best + 1] if best + 1 < len(parts) else None
    if (
        follows is not None
        and len(chosen) < SHORT
        and scores[best + 1] >= 0  # not a link's sentence
        and len(chosen) + 1 + len(follows) <= max_chars
    ):
        chosen = f"{chosen} {follows}"
    return Gist(chosen, whole=chosen == text)
