"""The leaderboard's table: one row per model (rating, interval, comparisons, win rate and a
warning where its interval would mean nothing), best first."""

from __future__ import annotations

import math
from typing import Any, TypedDict

from ..errors import require

__all__ = ["ModelRow", "model_rows"]


class ModelRow(TypedDict):
    """One model of the leaderboard: its Elo ``rating`` and interval (None where the interval
    means nothing, ``warning`` saying why), its ``comparisons`` and ``win_rate``."""

    name: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    comparisons: int
    win_rate: float
    warning: str | None


def _interval_warning(played: int, wins: int, losses: int, prior: float) -> str | None:
    """Why a model's interval would mean nothing (None when it means something)."""
    rests = f"its rating rests on the prior ({prior:g} virtual wins each way)"
    if played == 1:
        return f"one vote: no interval; {rests}"
    if not wins and not losses:
        return f"never won or lost (ties only): no interval; {rests}"
    if not losses:
        return f"never lost: no interval (no upper bound); {rests}"
    if not wins:
        return f"never won: no interval (no lower bound); {rests}"
    return None


def model_rows(cols: Any, rating: Any, low: Any, high: Any, prior: float) -> list[ModelRow]:
    """The rows of the models of ``cols`` (:class:`~hhrlhf.ranking.votes.VoteColumns`) with
    their ``rating`` and interval (``low``, ``high``), sorted best first; ``win_rate`` counts
    a tie as half a win."""
    np = require("numpy", "web", "the leaderboard")
    m = len(cols.models)
    a = np.frombuffer(cols.a, dtype=np.int32).astype(np.int64)
    b = np.frombuffer(cols.b, dtype=np.int32).astype(np.int64)
    outcome = np.frombuffer(cols.outcome, dtype=np.int8)
    played = np.bincount(a, minlength=m) + np.bincount(b, minlength=m)
    won = np.bincount(a, weights=(outcome == 0) + 0.5 * (outcome == 2), minlength=m) + np.bincount(
        b, weights=(outcome == 1) + 0.5 * (outcome == 2), minlength=m
    )
    wins = np.bincount(a, weights=outcome == 0, minlength=m) + np.bincount(
        b, weights=outcome == 1, minlength=m
    )
    losses = np.bincount(a, weights=outcome == 1, minlength=m) + np.bincount(
        b, weights=outcome == 0, minlength=m
    )
    rows: list[ModelRow] = []
    for k, name in enumerate(cols.models):
        warning = _interval_warning(int(played[k]), int(wins[k]), int(losses[k]), prior)
        rows.append(
            {
                "name": name,
                "rating": round(float(rating[k]), 1),
                "ci_low": None if warning or math.isnan(low[k]) else round(float(low[k]), 1),
                "ci_high": None if warning or math.isnan(high[k]) else round(float(high[k]), 1),
                "comparisons": int(played[k]),
                "win_rate": round(float(won[k] / played[k]), 4),
                "warning": warning,
            }
        )
    rows.sort(key=lambda r: (-r["rating"], r["name"]))
    return rows
