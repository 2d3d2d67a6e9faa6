"""Which of a person's interests each reaction teaches.

A reaction to a paper an interest brought (a pick of `/paper recommend` or a digest, noted when it was
shown or sent) teaches that interest. A paper named in `/paper interests add paper:` is its own
interest's first 👍. Any other reaction (a 👍 on a search result, on a channel's feed, on a paper
shown before interests were noted) teaches the interest it lies closest to in the paper space
(:mod:`bot.services.recommend.paper_space`), when one is close enough. The 👍 and 🔖 far from every
interest are grouped by place (:func:`group`: a library imported at once makes a few groups, not an
interest per paper); a group that holds no interest's papers starts a new interest, a group of liked
papers. A 👎 far from everything teaches nothing (it says what is not wanted, not what is).

A reaction to a paper brought by an interest since removed teaches nothing; one given while an
interest is paused, after the pause, is not learned by it (the interest stays as it was).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import numpy as np
import numpy.typing as npt

from storage.repositories.feedback import FeedbackRow
from storage.repositories.interests import InterestRow

Coords = npt.NDArray[np.float32]

#: a reaction no interest brought joins the closest interest at this cosine (in the paper space) or more
JOIN_COSINE: Final = 0.3
#: liked papers far from every interest lie in one group while the mean cosine between the papers of
#: two groups is this or more. Chosen on the tune split of bench/library_eval.py (20-paper libraries,
#: day-1 precision@5, IJCAI / ICLR: 0.43 / 0.47 one 👍 at a time, 0.53 / 0.43 at 0.25, 0.61 / 0.48 at
#: 0.15): mean cosines between halves of one area are 0.26–0.40 there (10th–90th percentile), of two
#: areas 0.11–0.25 — a library is one interest unless its parts lie clearly apart.
GROUP_COSINE: Final = 0.15


@dataclass(slots=True)
class Taught:
    """What one interest learns from: its reactions (oldest first), the papers it brought that were
    left without one, and where it lies (the unit mean of its papers' coordinates, or its topic's)."""

    interest: InterestRow
    signals: list[FeedbackRow] = field(default_factory=list)
    ignored: list[int] = field(default_factory=list)
    centre: npt.NDArray[np.float64] | None = None

    @property
    def wanted(self) -> int:
        return len({s.paper_id for s in self.signals if s.signal != "dislike"})

    @property
    def disliked(self) -> int:
        return len({s.paper_id for s in self.signals if s.signal == "dislike"})


@dataclass(frozen=True, slots=True)
class Attribution:
    taught: dict[int, Taught]  # interest id → what it learns from (removed interests left out)
    new_groups: tuple[int, ...]  # papers whose 👍 starts a new interest (a group of liked papers)


def _unit(vector: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def attribute(
    interests: Sequence[InterestRow],
    signals: Sequence[FeedbackRow],
    seen: Sequence[int] | frozenset[int],
    brought: Mapping[int, int],
    *,
    coords_of: Callable[[int], npt.NDArray[np.float32] | None],
    topic_centre: Callable[[str], npt.NDArray[np.float64] | None],
) -> Attribution:
    """Split the person's reactions among their interests (module docstring). ``coords_of``: a paper's
    place (None when it has none yet); ``topic_centre``: where a typed topic's best matches lie."""
    by_id = {i.id: i for i in interests}
    taught = {i.id: Taught(i) for i in interests if i.removed_at is None}
    seeds = {i.paper_id: i.id for i in interests if i.kind != "topic" and i.paper_id is not None}
    # the paper named for a topic teaches that topic, wherever it lies
    seeds |= {i.narrowed_by: i.id for i in interests if i.kind == "topic" and i.narrowed_by is not None}
    members: dict[int, list[npt.NDArray[np.float64]]] = {i: [] for i in taught}
    placed = False

    def place_interests() -> None:
        """Where each interest lies (only once a reaction needs it: a topic's place costs a search)."""
        for interest_id, entry in taught.items():
            interest = entry.interest
            if interest.kind == "topic" and interest.topic is not None:
                entry.centre = topic_centre(interest.topic)
            elif interest.paper_id is not None:
                where = coords_of(interest.paper_id)
                if where is not None:
                    members[interest_id].insert(0, where.astype(np.float64))
                    entry.centre = _unit(np.sum(members[interest_id], axis=0))

    by_paper: dict[int, list[FeedbackRow]] = {}
    for row in signals:
        by_paper.setdefault(row.paper_id, []).append(row)
    far: list[tuple[int, list[FeedbackRow], npt.NDArray[np.float64]]] = []  # likes near no interest
    for paper_id, rows in by_paper.items():  # in the order of each paper's first reaction
        owner = brought.get(paper_id, seeds.get(paper_id))
        if owner is not None:
            if owner in taught:
                _teach(taught[owner], rows)
            continue  # (brought by an interest since removed: teaches nothing)
        where = coords_of(paper_id)
        if where is None:
            continue
        if not placed:
            place_interests()
            placed = True
        point = where.astype(np.float64)
        best, best_cos = None, JOIN_COSINE
        for interest_id, entry in taught.items():
            if entry.centre is not None and (cos := float(entry.centre @ point)) >= best_cos:
                best, best_cos = interest_id, cos
        if best is not None:
            _teach(taught[best], rows)
            if by_id[best].kind != "topic":
                members[best].append(point)
                taught[best].centre = _unit(np.sum(members[best], axis=0))
        elif any(row.signal != "dislike" for row in rows):
            far.append((paper_id, rows, point))
    new_groups: list[int] = []
    if far:
        # the far likes grouped with the papers of the interests that are papers or groups themselves:
        # a group holding an interest's papers teaches it, any other starts a new interest
        anchors = [i for i in taught if by_id[i].kind != "topic" and members[i]]
        found = group(
            [np.sum(members[i], axis=0) for i in anchors],
            [len(members[i]) for i in anchors],
            [point for _, _, point in far],
        )
        for anchor, papers in found:
            if anchor is None:
                new_groups.append(far[papers[0]][0])
                continue
            owner = anchors[anchor]
            for k in papers:
                _teach(taught[owner], far[k][1])
                members[owner].append(far[k][2])
            taught[owner].centre = _unit(np.sum(members[owner], axis=0))
    rated = set(by_paper)
    for paper_id in seen:
        owner = brought.get(paper_id)
        if owner is not None and owner in taught and paper_id not in rated:
            taught[owner].ignored.append(paper_id)
    return Attribution(taught, tuple(new_groups))


def group(
    anchor_sums: Sequence[npt.NDArray[np.float64]],
    anchor_sizes: Sequence[int],
    points: Sequence[npt.NDArray[np.float64]],
) -> list[tuple[int | None, list[int]]]:
    """Average-linkage groups of ``points`` (unit places) around the anchors (each the sum of
    ``anchor_sizes`` unit places: an interest's papers; never two anchors in one group). Each point
    joins the group whose papers it lies closest to on average, when that mean cosine is
    ``GROUP_COSINE`` or more, else starts one; then groups merge, closest first, while the mean cosine
    between their papers is that or more. Returns (anchor index or None, its points' indexes) for each
    group that holds a point, in the order of the groups' first points."""
    sums = [np.asarray(s, dtype=np.float64) for s in anchor_sums]
    sizes = [float(n) for n in anchor_sizes]
    owners: list[int | None] = list(range(len(sums)))
    held: list[list[int]] = [[] for _ in sums]
    for k, point in enumerate(points):
        best, best_link = -1, GROUP_COSINE
        for g, total in enumerate(sums):
            if (link := float(total @ point) / sizes[g]) >= best_link:
                best, best_link = g, link
        if best < 0:
            sums.append(np.asarray(point, dtype=np.float64).copy())
            sizes.append(1.0)
            owners.append(None)
            held.append([k])
        else:
            sums[best] = sums[best] + point
            sizes[best] += 1.0
            held[best].append(k)
    alive = [g for g in range(len(sums)) if held[g] or owners[g] is not None]
    while len(alive) > 1:
        pair, best_link = None, GROUP_COSINE
        for x, a in enumerate(alive):
            for b in alive[x + 1 :]:
                if owners[a] is not None and owners[b] is not None:
                    continue
                if (link := float(sums[a] @ sums[b]) / (sizes[a] * sizes[b])) >= best_link:
                    pair, best_link = (a, b), link
        if pair is None:
            break
        keep, gone = pair if owners[pair[1]] is None else (pair[1], pair[0])
        sums[keep], sizes[keep] = sums[keep] + sums[gone], sizes[keep] + sizes[gone]
        held[keep] = sorted(held[keep] + held[gone])
        alive.remove(gone)
    return sorted(((owners[g], held[g]) for g in alive if held[g]), key=lambda item: item[1][0])


def _moment(stamp: str) -> datetime:
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _teach(entry: Taught, rows: Sequence[FeedbackRow]) -> None:
    """Add the reactions to the interest, but none given after it was paused."""
    paused = entry.interest.paused_at
    if paused is None:
        entry.signals.extend(rows)
    else:
        until = _moment(paused)
        entry.signals.extend(row for row in rows if _moment(row.created_at) <= until)
