"""Plain records passed between storage, services and the Discord layer (no discord types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

# ---- the vocabulary of ratings (the one place: the stored names, their emoji, what excludes what) ----

#: A person's rating of a paper: 👍, 👎 or 🔖 (like and dislike exclude each other; save is apart).
Signal = Literal["like", "dislike", "save"]
SIGNALS: Final[tuple[Signal, ...]] = ("like", "dislike", "save")
OPPOSITE: Final[dict[str, Signal]] = {"like": "dislike", "dislike": "like"}
#: each signal's emoji: the reaction, the button and the words that name it
SIGNAL_EMOJI: Final[dict[Signal, str]] = {"like": "👍", "dislike": "👎", "save": "🔖"}
#: the reactions the bot adds under a paper it posts in a channel, in this order
REACTIONS: Final[tuple[str, ...]] = tuple(SIGNAL_EMOJI.values())
_EMOJI_SIGNAL: Final[dict[str, Signal]] = {emoji: signal for signal, emoji in SIGNAL_EMOJI.items()}
# Emoji modifiers a client may attach: skin tones and the emoji variation selector.
_MODIFIERS: Final = frozenset(chr(c) for c in range(0x1F3FB, 0x1F400)) | {"\ufe0f", "\ufe0e"}


def as_signal(text: str) -> Signal | None:
    """The signal ``text`` names ("like", "dislike" or "save"), else None."""
    return next((signal for signal in SIGNALS if signal == text), None)


def signal_for_emoji(emoji: str) -> Signal | None:
    """👍 → like, 👎 → dislike, 🔖 → save (skin tones and variation selectors ignored); else None."""
    base = "".join(ch for ch in emoji if ch not in _MODIFIERS)
    return _EMOJI_SIGNAL.get(base)


@dataclass(slots=True)
class PaperRecord:
    """A paper as a parser produced it, before it is merged into the store."""

    title: str = ""
    title_derived: bool = False
    abstract: str = ""
    authors: tuple[str, ...] = ()
    venue: str | None = None
    year: int | None = None
    status: str | None = None
    url: str | None = None
    pdf_url: str | None = None
    code_url: str | None = None
    arxiv_id: str | None = None  # without version, e.g. "2401.01234" or "hep-th/9901001"
    openreview_id: str | None = None
    doi: str | None = None  # lower-cased
    external_id: str | None = None  # the record's own id (`id`/`_id`/`uid`)
    source: str | None = None  # where it came from (file name, "arxiv", ...)
    published: str | None = None  # ISO date (YYYY-MM-DD) when known
    #: the version the source gives (arXiv v2, a bioRxiv version): a newer one updates the paper
    version: int | None = None
    #: more DOIs of the same paper: the journal version of a preprint, or the preprint of an article
    other_dois: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Paper:
    """A paper as stored."""

    id: int
    title: str
    title_derived: bool
    abstract: str
    authors: tuple[str, ...]
    venue: str | None
    year: int | None
    status: str | None
    url: str | None
    pdf_url: str | None
    code_url: str | None
    arxiv_id: str | None
    openreview_id: str | None
    doi: str | None
    external_id: str | None
    source: str | None
    published: str | None
    added_at: str


class PaperIdentity(NamedTuple):
    """A paper's title and the ids it is known by elsewhere."""

    id: int
    title: str
    external_id: str | None
    arxiv_id: str | None
    openreview_id: str | None
    doi: str | None


class IndexRow(NamedTuple):
    """What the search index holds of a paper (the repository reads these; the engine indexes them)."""

    paper_id: int
    title: str
    abstract: str
    authors: tuple[str, ...] = ()
    venue: str | None = None
    year: int | None = None
    #: arXiv / OpenReview ids and DOIs, found by autocomplete
    external_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IngestSummary:
    """What one ingest did: counts and the reasons records were rejected."""

    added: int = 0
    merged: int = 0
    unchanged: int = 0
    rejected: int = 0
    problems: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Subscription:
    """A DM digest or a channel feed, as stored."""

    id: int
    kind: str  # 'user' (DM digest) or 'channel' (channel feed)
    user_id: int | None
    guild_id: int | None
    channel_id: int | None
    topics: tuple[str, ...]
    time_local: str  # HH:MM
    timezone: str  # IANA name
    frequency: str  # daily | weekdays | weekly
    weekday: int  # 0 = Monday (weekly only)
    count: int
    active: bool
    paused_reason: str | None
    created_by: int | None
    created_at: str
    updated_at: str
    mutes: tuple[str, ...] = ()  # a channel feed's muted topics, as typed (`/paperadmin feed mute`)

    @property
    def is_channel(self) -> bool:
        return self.kind == "channel"


@dataclass(frozen=True, slots=True)
class ClubRow:
    channel_id: int
    guild_id: int
    weekday: int  # 0 = Monday
    time: str  # HH:MM
    timezone: str
    topics: str
    created_by: int | None
    active: bool


@dataclass(frozen=True, slots=True)
class ClubWeek:
    channel_id: int
    announce_at: str  # ISO-8601 UTC
    state: str
    candidates: tuple[int, ...]
    poll_message_id: int | None
    votes: tuple[int, ...] | None
    winner_paper_id: int | None
    announce_message_id: int | None
    thread_id: int | None
    paper_message_id: int | None
    #: the poll is buttons (the bot may not post Discord polls there); votes in ``club_votes``
    buttons: bool = False


@dataclass(frozen=True, slots=True)
class SourceFetch:
    """A live source's fetch state, as stored (`source_fetches`)."""

    source: str
    cursor: str | None  # JSON while a fetch is unfinished
    fetched_until: str | None  # YYYY-MM-DD
    last_fetch_at: str | None
    last_records: int
    last_added: int
    total_records: int
    total_added: int
    last_error: str | None
    last_error_at: str | None
