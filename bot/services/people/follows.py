"""Following authors: `/paper follow`, `/paper following`, `/paper unfollow`, and the followed authors'
new papers that come first in a person's digest.

A person follows a name, or — where the papers under a name fall into groups with no co-author in
common, perhaps different people (:mod:`bot.services.people.authors`) — one of those groups, which they
pick. A followed author's new papers are the papers under the name (in the group picked) stored in the
library after the person followed them and never sent to them before; the digest brings them first,
with the reason "by <author>, whom you follow", and records them as it records every paper, so none
comes twice.

An option's value says what was picked: ``Name`` (every paper under the name) or ``Name (#123)``
(the group under the name that holds paper 123).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from bot.errors import NotFoundError, UserFacingError
from bot.services.people.authors import AuthorDirectory, AuthorGroup
from bot.services.search.snippets import echo
from paperindex.engine import fold
from storage.db import Database
from storage.repositories.follows import FollowRepository, FollowRow
from storage.repositories.papers import PaperRepository
from storage.repositories.subscriptions import SubscriptionRepository

log = logging.getLogger(__name__)

#: the most authors one person follows
MAX_FOLLOWS: Final = 50
#: the longest option value Discord takes (an autocomplete choice's value)
MAX_VALUE: Final = 100
#: names whose groups the follow autocomplete lists (when the typed text names them, or few match)
_EXPANDED: Final = 2
_SHOWN_NAME: Final = 80

_GROUP_VALUE = re.compile(r"^(?P<name>.+?)\s*\(#(?P<paper>\d{1,18})\)$")


@dataclass(frozen=True, slots=True)
class AuthorSuggestion:
    """One autocomplete choice: a name (``group`` None), or one group of the papers under a name.
    ``groups``: how many groups the name's papers fall into, where that was worked out (the choice
    for the name itself then stands for all of them)."""

    value: str
    name: str
    papers: int
    group: AuthorGroup | None = None
    groups: int = 1


@dataclass(frozen=True, slots=True)
class Followed:
    """An author a person follows: the name, and the group picked (None: every paper under the name)."""

    name: str
    group_paper_id: int | None
    detail: str | None
    since: str

    @property
    def value(self) -> str:
        """The `/paper unfollow` option value that names this follow."""
        return _value(self.name, self.group_paper_id)


@dataclass(frozen=True, slots=True)
class FollowOutcome:
    """What following did: the name, the groups under it followed (none: every paper under the name),
    every group its papers fall into (more than one: perhaps different people, to say so), and the
    person's follows of the same name it replaced."""

    name: str
    key: str
    chosen: tuple[AuthorGroup, ...]
    groups: tuple[AuthorGroup, ...]
    replaced: tuple[Followed, ...] = ()
    has_digest: bool = True

    @property
    def papers(self) -> int:
        """Papers under what is followed, now."""
        return sum(g.papers for g in (self.chosen or self.groups))


@dataclass(frozen=True, slots=True)
class FollowedPaper:
    """A new paper by authors the person follows, for their digest."""

    paper_id: int
    authors: tuple[str, ...]

    @property
    def reason(self) -> str:
        return f"by {_joined(self.authors)}, whom you follow"


@dataclass
class _Parsed:
    name: str
    key: str
    group_paper_id: int | None = None
    groups: list[AuthorGroup] = field(default_factory=list)


def _value(name: str, group_paper_id: int | None) -> str:
    return name if group_paper_id is None else f"{name} (#{group_paper_id})"


def _joined(names: tuple[str, ...]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _quoted(text: str) -> str:
    return echo(text, _SHOWN_NAME)


def _parse(text: str) -> tuple[str, int | None]:
    """(name, group paper id) of an option value."""
    cleaned = " ".join(text.split())
    match = _GROUP_VALUE.match(cleaned)
    if match:
        return match["name"], int(match["paper"])
    return cleaned, None


class FollowService:
    """Follow, list and unfollow authors; a person's followed authors' new papers for their digest."""

    def __init__(
        self,
        db: Database,
        directory: AuthorDirectory,
        *,
        papers: PaperRepository | None = None,
        clock: Callable[[], datetime] | None = None,
        limit: int = MAX_FOLLOWS,
    ) -> None:
        self.directory = directory
        self.follows = FollowRepository(db)
        self.papers = papers if papers is not None else PaperRepository(db)
        self.subscriptions = SubscriptionRepository(db)
        self.limit = limit
        self._clock = clock or (lambda: datetime.now(UTC))

    # ------------------------------------------------------------------ autocomplete

    async def suggest(self, text: str, *, limit: int = 25) -> list[AuthorSuggestion]:
        """Names matching what someone typed (most papers first); where the text names one (or only a
        few match) and its papers fall into several groups, each group after the name."""
        await self.directory.refresh()
        name, _ = _parse(text)
        matches = self.directory.matches(name, limit)
        shown = await self.directory.names([key for key, _ in matches])
        typed = fold(name)
        expand = [key for key, _ in matches if key == typed] or (
            [key for key, _ in matches] if len(matches) <= _EXPANDED and typed else []
        )
        out: list[AuthorSuggestion] = []
        for key, papers in matches:
            written = shown[key]
            if len(_value(written, 10**18)) > MAX_VALUE:
                continue  # a value Discord would refuse; such a "name" is not one anyway
            groups = await self.directory.groups(key) if key in expand[:_EXPANDED] else []
            out.append(AuthorSuggestion(written, written, papers, groups=max(1, len(groups))))
            if len(groups) > 1:
                out.extend(
                    AuthorSuggestion(
                        _value(written, g.paper_id), written, g.papers, group=g, groups=len(groups)
                    )
                    for g in groups
                )
        return out[:limit]

    async def suggest_followed(self, user_id: int, text: str, *, limit: int = 25) -> list[Followed]:
        """The person's follows whose name (or what tells its group apart) holds the typed text."""
        needle = fold(text)
        found = [f for f in await self.following(user_id) if needle in fold(f"{f.name} {f.detail or ''}")]
        return found[:limit]

    # ------------------------------------------------------------------ following

    async def follow(self, user_id: int, text: str) -> FollowOutcome:
        """Follow the author an option names: every paper under a name, or one group under it (which
        then replaces following every paper under the name, and the other way round). UserFacingError
        for an unknown author, one followed already, or too many follows; nothing is written then."""
        parsed = await self._resolve(text)
        groups = parsed.groups
        group: AuthorGroup | None = None
        if parsed.group_paper_id is not None and len(groups) > 1:
            group = next(g for g in groups if parsed.group_paper_id in g.paper_ids)
        existing = [f for f in await self.following(user_id) if fold(f.name) == parsed.key]
        if group is None:
            already = next((f for f in existing if f.group_paper_id is None), None)
        else:
            already = next((f for f in existing if f.group_paper_id in group.paper_ids), None)
        if already is not None:
            what = f"{_quoted(parsed.name)} ({group.describe()})" if group else f"“{_quoted(parsed.name)}”"
            raise UserFacingError(f"You already follow {what}, since {already.since[:10]}.")
        # every paper under the name and groups under it exclude each other
        instead = tuple(f for f in existing if (f.group_paper_id is None) != (group is None))
        chosen = (group,) if group else ()
        await self._store(user_id, parsed, chosen, replace=bool(instead))
        return await self._outcome(user_id, parsed, chosen, instead)

    async def follow_groups(self, user_id: int, key: str, paper_ids: Collection[int]) -> FollowOutcome:
        """Follow only the groups under the folded name ``key`` holding these papers (a menu's pick),
        instead of whatever the person followed of that name."""
        parsed = await self._resolve(key)
        chosen = tuple(g for g in parsed.groups if g.paper_ids & set(paper_ids))
        if not paper_ids or sum(len(g.paper_ids & set(paper_ids)) for g in chosen) < len(set(paper_ids)):
            raise NotFoundError(
                f"The papers under “{_quoted(parsed.name)}” changed since this list was made: run "
                "`/paper follow` again."
            )
        if len(chosen) == len(parsed.groups):
            chosen = ()  # all of them: every paper under the name
        existing = [f for f in await self.following(user_id) if fold(f.name) == parsed.key]
        await self._store(user_id, parsed, chosen, replace=True)
        return await self._outcome(user_id, parsed, chosen, tuple(existing))

    async def _store(
        self, user_id: int, parsed: _Parsed, chosen: tuple[AuthorGroup, ...], *, replace: bool
    ) -> None:
        now = self._now()
        rows = [
            FollowRow(parsed.name, parsed.key, group.paper_id, group.describe(), now) for group in chosen
        ] or [FollowRow(parsed.name, parsed.key, None, None, now)]
        result: str
        if replace:
            result = await self.follows.replace_name(user_id, parsed.key, rows, limit=self.limit)
        else:
            result = await self.follows.add(user_id, rows[0], limit=self.limit)
        if result == "already":  # a follow made meanwhile (another command of theirs)
            raise UserFacingError(f"You already follow “{_quoted(parsed.name)}”.")
        if result == "full":
            raise UserFacingError(
                f"You follow {self.limit} authors, the most I keep. Stop following one with "
                "`/paper unfollow` first."
            )
        log.info("user %d follows an author (%d groups)", user_id, len(chosen))

    async def _outcome(
        self,
        user_id: int,
        parsed: _Parsed,
        chosen: tuple[AuthorGroup, ...],
        replaced: tuple[Followed, ...],
    ) -> FollowOutcome:
        subscription = await self.subscriptions.for_user(user_id)
        return FollowOutcome(
            parsed.name,
            parsed.key,
            chosen=chosen,
            groups=tuple(parsed.groups),
            replaced=replaced,
            has_digest=subscription is not None and subscription.active,
        )

    async def _resolve(self, text: str) -> _Parsed:
        name, group_paper_id = _parse(text)
        key = fold(name)
        if not key:
            raise UserFacingError("Give an author's name: start typing it and pick one from the list.")
        await self.directory.refresh()
        if not self.directory.paper_ids(key):
            raise NotFoundError(await self._unknown(name))
        written = (await self.directory.names([key]))[key]
        groups = await self.directory.groups(key)
        if group_paper_id is not None and not any(group_paper_id in g.paper_ids for g in groups):
            raise NotFoundError(
                f"Paper #{group_paper_id} is not one of {_quoted(written)}'s: start typing the name and "
                "pick from the list again."
            )
        return _Parsed(written, key, group_paper_id, groups)

    async def _unknown(self, name: str) -> str:
        """No stored paper has that name: say so, with names sharing a word with it."""
        message = f"I know no author named “{_quoted(name)}” in the library"
        close: list[str] = []
        for word in reversed(fold(name).split()):  # the family name first, where it comes last
            close += [key for key, _ in self.directory.matches(word, 3) if key not in close]
        close = close[:3]
        if close:
            shown = await self.directory.names(close)
            return (
                message
                + f" (close: {', '.join(f'“{shown[key]}”' for key in close)}). Pick one from the list."
            )
        return (
            message
            + ". Start typing a name and pick one from the list: it holds the authors of stored papers."
        )

    async def following(self, user_id: int) -> list[Followed]:
        """The authors the person follows, in the order they followed them."""
        return [
            Followed(f.name, f.group_paper_id, f.detail, f.followed_at)
            for f in await self.follows.follows(user_id)
        ]

    async def unfollow(self, user_id: int, text: str) -> Followed:
        """Stop following the author an option names (one of the person's follows)."""
        name, group_paper_id = _parse(text)
        key = fold(name)
        mine = await self.following(user_id)
        if not mine:
            raise UserFacingError("You follow no authors yet. Follow one with `/paper follow author:`.")
        same_name = [f for f in mine if fold(f.name) == key]
        if group_paper_id is not None:
            chosen = [f for f in same_name if f.group_paper_id == group_paper_id]
        else:
            chosen = [f for f in same_name if f.group_paper_id is None] or same_name
        if len(chosen) > 1:
            listed = "; ".join(f.detail or "every paper" for f in chosen)
            raise UserFacingError(
                f"You follow {len(chosen)} authors named “{_quoted(name)}” ({listed}): pick one from the list."
            )
        if not chosen:
            listed = ", ".join(f"“{f.name}”" for f in mine[:10])
            raise NotFoundError(f"You don't follow “{_quoted(name)}”. You follow {listed}.")
        (found,) = chosen
        await self.follows.remove(user_id, key, found.group_paper_id)
        log.info("user %d unfollowed an author", user_id)
        return found

    # ------------------------------------------------------------------ digests

    async def new_papers(
        self, user_id: int, *, exclude: Collection[int] = (), limit: int
    ) -> list[FollowedPaper]:
        """Papers by the authors the person follows, stored since they followed them and not in
        ``exclude`` (what was sent to them), the oldest first, at most ``limit``."""
        follows = await self.follows.follows(user_id)
        if not follows or limit <= 0:
            return []
        await self.directory.refresh()
        by_paper: dict[int, list[str]] = {}
        for follow in follows:
            new = [
                p
                for p in self.directory.paper_ids(follow.name_key)
                if p > follow.after_paper_id and p not in exclude
            ]
            if new and follow.group_paper_id is not None:
                groups = await self.directory.groups(follow.name_key)
                mine = next(
                    (g.paper_ids for g in groups if follow.group_paper_id in g.paper_ids), frozenset()
                )
                new = [p for p in new if p in mine]
            for paper_id in new:
                names = by_paper.setdefault(paper_id, [])
                if follow.name not in names:
                    names.append(follow.name)
        return [FollowedPaper(paper_id, tuple(by_paper[paper_id])) for paper_id in sorted(by_paper)[:limit]]

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="seconds")


def _papers(groups: Collection[AuthorGroup]) -> int:
    return sum(g.papers for g in groups)
