"""Measures of plain numbers, as pure functions: finite values and their mean, rank
correlation, histograms and value counts, and how concentrated a set of counts is (Lorenz
curve, top share, Gini).

:mod:`hhrlhf.redteam.stats` applies them to red-team attempts (and exports them too).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import require
from ..stats import bin_counts


def finite(values: Iterable[float | None]) -> tuple[list[float], int]:
    """The finite values, and how many were dropped (NaN, infinite, or None: a null score)."""
    kept = []
    dropped = 0
    for v in values:
        if v is not None and math.isfinite(v):
            kept.append(float(v))
        else:
            dropped += 1
    return kept, dropped


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for no values."""
    return math.fsum(values) / len(values) if values else None


def rank_average(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the average of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's r on average ranks (ties handled).

    None when fewer than two pairs or when either side is constant (the correlation is
    undefined there, not zero).
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    n = len(x)
    if n < 2:
        return None
    rx, ry = rank_average(x), rank_average(y)
    mx, my = math.fsum(rx) / n, math.fsum(ry) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = math.fsum((a - mx) ** 2 for a in rx)
    syy = math.fsum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


# --------------------------------------------------------------------------- concentration


def lorenz_curve(counts: Iterable[int]) -> list[tuple[float, float]]:
    """Points (share of members, share of attempts), members sorted from fewest attempts up.

    Starts at (0, 0) and ends at (1, 1); a straight diagonal means every member did as much.
    """
    s = sorted(counts)
    total = sum(s)
    n = len(s)
    if n == 0 or total == 0:
        return [(0.0, 0.0), (1.0, 1.0)]
    points = [(0.0, 0.0)]
    cum = 0
    for i, c in enumerate(s, start=1):
        cum += c
        points.append((i / n, cum / total))
    return points


def top_share(counts: Iterable[int], fraction: float = 0.15) -> dict[str, Any]:
    """Share of all attempts made by the most active ``fraction`` of members.

    The top group is ``ceil(fraction * members)`` members (at least one), so "the top 15%"
    never rounds down to nobody. Returns ``{"members", "top_members", "share"}``.
    """
    s = sorted(counts, reverse=True)
    n, total = len(s), sum(s)
    if n == 0 or total == 0:
        return {"members": n, "top_members": 0, "share": None}
    k = max(1, math.ceil(fraction * n - 1e-9))
    return {"members": n, "top_members": k, "share": sum(s[:k]) / total}


def smallest_share_covering(counts: Iterable[int], target: float = 0.8) -> dict[str, Any]:
    """The fewest members (most active first) whose attempts reach ``target`` of all attempts.

    Returns ``{"members", "needed", "share_of_members"}``: the paper's "about 80% of attacks
    from about 15% of members" read the other way round.
    """
    s = sorted(counts, reverse=True)
    n, total = len(s), sum(s)
    if n == 0 or total == 0:
        return {"members": n, "needed": 0, "share_of_members": None}
    cum = 0
    for i, c in enumerate(s, start=1):
        cum += c
        if cum >= target * total - 1e-9:
            return {"members": n, "needed": i, "share_of_members": i / n}
    return {"members": n, "needed": n, "share_of_members": 1.0}  # pragma: no cover


def gini(counts: Iterable[int]) -> float | None:
    """Gini coefficient of the counts (0 = all equal; near 1 = one member did everything)."""
    s = sorted(counts)
    n, total = len(s), sum(s)
    if n == 0 or total == 0:
        return None
    weighted = sum(i * c for i, c in enumerate(s, start=1))
    return (2 * weighted) / (n * total) - (n + 1) / n


# --------------------------------------------------------------------------- distributions


def histogram(
    values: Sequence[float], bins: int = 30, range_: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Equal-width histogram: ``{"edges": [bins + 1], "counts": [bins], "n"}``.

    The last bin includes its right edge. Non-finite values are the caller's to drop. With no
    values, counts are all zero over ``range_`` (or [0, 1]).
    """
    np = require("numpy", "report", "the red-team statistics")
    arr = np.asarray(values, dtype=float)
    if range_ is None:
        range_ = (float(arr.min()), float(arr.max())) if len(arr) else (0.0, 1.0)
    if range_[0] == range_[1]:
        range_ = (range_[0] - 0.5, range_[1] + 0.5)
    edges = [float(e) for e in np.linspace(range_[0], range_[1], bins + 1)]
    return {"n": int(len(arr)), "edges": edges, "counts": bin_counts(arr.tolist(), edges)}


def number_key(v: float) -> str:
    """A JSON key for a number: ``4.0`` -> ``"4"``, ``2.5`` -> ``"2.5"``."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def value_counts(values: Iterable[float]) -> dict[str, int]:
    """Counts of each distinct value, keys in numeric order (``4.0`` is written ``"4"``)."""
    c = Counter(values)
    return {number_key(v): c[v] for v in sorted(c)}
