"""Fakes for digest tests (the settable clock is `builders.Clock`, as `FakeClock` here): a scripted recommender, a recording sender, a paper store."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from builders import Clock

from bot.runtime import build_digests
from bot.services.digests import Digests
from bot.services.digests.delivery import SendOutcomeUnknownError, SentMessage
from storage.db import Database
from storage.models import Paper


@dataclass(frozen=True)
class Rec:
    paper_id: int
    score: float
    reason: str
    interest_id: int | None = None


class FakeRecommender:
    """Ranks papers by a fixed score table; records every call."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        self.calls: list[dict[str, object]] = []

    async def recommend(
        self,
        user_id: int | None,
        *,
        count: int,
        topics: Sequence[str] = (),
        exclude: Collection[int] = (),
        now: datetime | None = None,
        mark_shown: bool = True,
    ) -> list[Rec]:
        self.calls.append(
            {
                "user_id": user_id,
                "count": count,
                "topics": tuple(topics),
                "exclude": set(exclude),
                "mark_shown": mark_shown,
            }
        )
        ranked = sorted((pid for pid in self.scores if pid not in exclude), key=lambda p: -self.scores[p])
        return [Rec(pid, self.scores[pid], f"matched: topic {pid}") for pid in ranked[:count]]


class DbPapers:
    """get_many over the papers table (only the columns a digest shows)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get_many(self, ids: Sequence[int]) -> dict[int, Paper]:
        ids = list(ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = await self.db.fetchall(
            f"SELECT id, title, abstract, added_at FROM papers WHERE id IN ({marks})", ids
        )
        return {
            int(r[0]): Paper(
                id=int(r[0]),
                title=str(r[1]),
                title_derived=False,
                abstract=str(r[2]),
                authors=("A. Author",),
                venue="ICML",
                year=2024,
                status=None,
                url=None,
                pdf_url=None,
                code_url=None,
                arxiv_id=None,
                openreview_id=None,
                doi=None,
                external_id=None,
                source=None,
                published=None,
                added_at=str(r[3]),
            )
            for r in rows
        }


async def add_papers(db: Database, ids: Sequence[int]) -> None:
    stamp = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    await db.executemany(
        "INSERT INTO papers (id, title, abstract, added_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        [(pid, f"Paper {pid}", f"Abstract of paper {pid}.", stamp, stamp) for pid in ids],
    )


_MESSAGE_IDS = itertools.count(9000)  # message ids are unique across senders, like Discord's


@dataclass
class FakeSender:
    """Records what a digest posted; can fail at a chosen paper with a chosen exception.

    Like Discord with ``enforce_nonce``, a message whose nonce is in ``posted`` (shared between senders
    to stand for Discord's memory) is not posted again: the earlier message is returned.
    ``lose_answer_at`` posts that paper attempt and then raises SendOutcomeUnknownError (the answer was
    lost); ``lose_header_answers`` does so for that many header attempts. ``history`` is what the
    channel shows of each paper posted (share it, like ``posted``, for another sender to find them).
    """

    channel_id: int = 555
    guild_id: int | None = None
    headers: list[str] = field(default_factory=list)
    papers: list[tuple[int, str]] = field(default_factory=list)
    nothing: list[str] = field(default_factory=list)
    fail_header: BaseException | None = None
    fail_at: dict[int, BaseException] = field(default_factory=dict)  # 0-based paper attempt → error
    lose_answer_at: set[int] = field(default_factory=set)  # 0-based paper attempts posted, answer lost
    lose_header_answers: int = 0
    posted: dict[str, SentMessage] = field(default_factory=dict)  # nonce → message (Discord's memory)
    history: dict[int, SentMessage] = field(default_factory=dict)  # paper → its message in the channel
    finished: list[int] = field(default_factory=list)  # message ids finish_paper was called for
    nonces: list[str] = field(default_factory=list)  # the nonce of every attempt, in order
    attempts: int = 0

    def _post(self, nonce: str, record: Callable[[], None]) -> SentMessage:
        earlier = self.posted.get(nonce)
        if earlier is not None:
            return earlier
        record()
        message = self.posted[nonce] = SentMessage(next(_MESSAGE_IDS), self.channel_id, self.guild_id)
        return message

    async def send_header(self, text: str, *, nonce: str) -> SentMessage:
        self.nonces.append(nonce)
        if self.fail_header is not None:
            raise self.fail_header
        message = self._post(nonce, lambda: self.headers.append(text))
        if self.lose_header_answers:
            self.lose_header_answers -= 1
            raise SendOutcomeUnknownError("no answer from Discord (timeout)")
        return message

    async def send_paper(self, paper: Paper, reason: str, *, nonce: str) -> SentMessage:
        index = self.attempts
        self.attempts += 1
        self.nonces.append(nonce)
        if index in self.fail_at:
            raise self.fail_at[index]
        message = self.history[paper.id] = self._post(nonce, lambda: self.papers.append((paper.id, reason)))
        if index in self.lose_answer_at:
            raise SendOutcomeUnknownError("no answer from Discord (timeout)")
        return message

    async def finish_paper(self, message: SentMessage) -> None:
        self.finished.append(message.message_id)

    async def find_paper(self, paper_id: int) -> SentMessage | None:
        return self.history.get(paper_id)

    async def send_nothing_today(self, text: str, *, nonce: str) -> SentMessage:
        self.nonces.append(nonce)
        if self.fail_header is not None:
            raise self.fail_header
        message = self._post(nonce, lambda: self.nothing.append(text))
        if self.lose_header_answers:
            self.lose_header_answers -= 1
            raise SendOutcomeUnknownError("no answer from Discord (timeout)")
        return message

    @property
    def paper_ids(self) -> list[int]:
        return [pid for pid, _ in self.papers]


async def no_sleep(seconds: float) -> None:
    """The digest's pause between repeats of a send, skipped in tests."""


def make_service(db: Database, clock: Clock, scores: dict[int, float], **kwargs: object) -> Digests:
    """The digests of one process (each call: another process); their leases follow `clock` too."""
    kwargs.setdefault("sleep", no_sleep)
    kwargs.setdefault("lease_wall", lambda: clock().timestamp())
    return build_digests(db, papers=DbPapers(db), recommender=FakeRecommender(scores), clock=clock, **kwargs)  # type: ignore[arg-type]
