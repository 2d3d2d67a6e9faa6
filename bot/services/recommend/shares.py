"""Each interest's share of a list of picks, and the list made of their rankings.

Every interest gets at least one pick while the count allows (the most engaged first when it does
not); the rest go by how much the person engages with each: (1 + papers 👍'd or 🔖'd) / (1 + papers
👎'd + a tenth of the papers it brought that were left without a reaction). The list interleaves the
interests' rankings by their shares, so the first picks already show every interest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeVar

IGNORED_WEIGHT: Final = 0.1
MIN_SHARE: Final = 2  # picks each interest gets while the count allows

K = TypeVar("K")
T = TypeVar("T")


def engagement(wanted: int, disliked: int, ignored: int) -> float:
    """How much the person engages with an interest (module docstring)."""
    return (1.0 + wanted) / (1.0 + disliked + IGNORED_WEIGHT * ignored)


def allocate(count: int, weights: Mapping[K, float]) -> dict[K, int]:
    """``count`` picks shared among the keys: one each while it lasts (heaviest first, then in the
    mapping's order), the rest in proportion to the weights (largest remainders)."""
    keys = sorted(weights, key=lambda k: -weights[k])  # (stable: the mapping's order among equals)
    shares = {k: 0 for k in weights}
    floor = max(1, min(MIN_SHARE, count // max(len(keys), 1)))
    for k in keys[:count]:
        shares[k] = floor
    rest = count - sum(shares.values())
    total = sum(weights.values())
    if rest <= 0 or total <= 0:
        return shares
    exact = {k: rest * weights[k] / total for k in keys}
    for k in keys:
        shares[k] += math.floor(exact[k])
    left = count - sum(shares.values())
    for k in sorted(keys, key=lambda k: -(exact[k] - math.floor(exact[k])))[:left]:
        shares[k] += 1
    return shares


def interleave(
    rankings: Mapping[K, Sequence[T]],
    shares: Mapping[K, int],
    count: int,
    admit: Callable[[K, T], bool],
) -> list[tuple[K, T]]:
    """Up to ``count`` items from the rankings: each ranking's best admitted ones up to its share,
    interleaved (the k-th item of a ranking with share s comes at k / s), then, while the list is
    short (a ranking ran out), the next admitted ones of any, in the same order. ``admit`` says
    whether an item may join the list (not a repeat, not a near-copy), and takes note of it."""
    cursor = {k: 0 for k in rankings}
    taken = {k: 0 for k in rankings}
    out: list[tuple[K, T]] = []
    order = list(rankings)
    for capped in (True, False):
        while len(out) < count:
            best: K | None = None
            best_key = math.inf
            for k in order:
                share = shares.get(k, 0)
                if cursor[k] >= len(rankings[k]) or (capped and taken[k] >= share):
                    continue
                key = (taken[k] + 0.5) / max(share, 0.5)
                if key < best_key:
                    best, best_key = k, key
            if best is None:
                break
            item = rankings[best][cursor[best]]
            cursor[best] += 1
            if admit(best, item):
                out.append((best, item))
                taken[best] += 1
    return out
