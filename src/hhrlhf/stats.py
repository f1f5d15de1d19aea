"""Descriptive statistics of preference pairs (pure functions over records)."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from typing import Any

from .records import PAIR_CLASSES, PreferencePair

__all__ = ["bin_counts", "pair_stats", "summarize_lengths"]


def summarize_lengths(values: list[int]) -> dict[str, Any]:
    """min / mean / median / p90 / max of a list of lengths (all None for an empty list: there
    is no length to summarise, and zeros would read as data)."""
    if not values:
        return {"min": None, "mean": None, "median": None, "p90": None, "max": None}
    s = sorted(values)
    n = len(s)
    mid = n // 2
    median = float(s[mid]) if n % 2 else (s[mid - 1] + s[mid]) / 2
    return {
        "min": s[0],
        "mean": round(sum(s) / n, 2),
        "median": median,
        "p90": s[min(n - 1, (9 * n) // 10)],
        "max": s[-1],
    }


def pair_stats(pairs: Iterable[PreferencePair], *, keep_lengths: bool = False) -> dict[str, Any]:
    """Rows, human turns per prompt, response lengths (chars), chosen-longer share, class counts.

    ``chosen_longer_share`` compares the final responses; ties (equal length) are counted
    separately in ``equal_length``. With no rows, the share and the length summaries are None
    (``null`` in JSON), never zeros. ``keep_lengths=True`` adds ``"lengths"``: every chosen and
    rejected response length, for histograms (one pass over the data serves both).
    """
    turns: Counter[int] = Counter()
    classes: Counter[str] = Counter({name: 0 for name in PAIR_CLASSES})
    chosen_len: list[int] = []
    rejected_len: list[int] = []
    longer = equal = rows = 0
    for p in pairs:
        rows += 1
        turns[p.human_turns] += 1
        lc, lr = len(p.chosen_response), len(p.rejected_response)
        chosen_len.append(lc)
        rejected_len.append(lr)
        longer += lc > lr
        equal += lc == lr
        classes.update(p.classes)
    out = {
        "rows": rows,
        "human_turns": {str(k): turns[k] for k in sorted(turns)},
        "chosen_response_chars": summarize_lengths(chosen_len),
        "rejected_response_chars": summarize_lengths(rejected_len),
        "chosen_longer_share": round(longer / rows, 4) if rows else None,
        "equal_length": equal,
        "classes": dict(classes),
    }
    if keep_lengths:
        out["lengths"] = {"chosen": chosen_len, "rejected": rejected_len}
    return out


def bin_counts(values: Iterable[float], edges: list[float], *, clip_top: bool = False) -> list[int]:
    """Counts of ``values`` in ``[edges[i], edges[i+1])``; the last bin also takes the top edge.

    Values below ``edges[0]`` are not counted; values above the top edge are counted in the
    last bin with ``clip_top``, else not at all (``numpy.histogram``'s rule).
    """
    counts = [0] * (len(edges) - 1)
    last, top = len(counts) - 1, edges[-1]
    for v in values:
        if v > top:
            if clip_top:
                counts[last] += 1
            continue
        i = min(bisect_right(edges, v) - 1, last)
        if i >= 0:
            counts[i] += 1
    return counts
