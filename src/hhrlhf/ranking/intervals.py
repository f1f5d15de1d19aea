"""The leaderboard's intervals: percentile intervals of each model's rating and of the style
coefficient over bootstrap refits (resampling votes, or whole conversations when votes carry
a group; see :mod:`hhrlhf.bootstrap`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import require

if TYPE_CHECKING:
    from .bradley_terry import BradleyTerry

__all__ = ["LengthCoefficient", "StyleSummary", "rating_intervals", "style_summary"]


class LengthCoefficient(TypedDict):
    """The length coefficient in logits per unit of the covariate (``coef``, its interval)
    and in Elo points (``elo_per_unit``)."""

    coef: float
    ci_low: float | None
    ci_high: float | None
    elo_per_unit: float


class StyleSummary(TypedDict):
    """The leaderboard's ``"style"`` entry (:func:`style_summary`)."""

    length: LengthCoefficient
    covariate: str
    buckets: int


def rating_intervals(
    model: BradleyTerry,
    fit: tuple[Any, Any],
    cell: Any,
    counts: Any,
    groups: Any,
    *,
    resamples: int,
    seed: int,
    level: float,
) -> tuple[Any, Any, list[Any]]:
    """``(low, high, betas)``: the rating interval of each model (NaN where no resample
    gave one) and the style coefficient of each resample, refitting ``model`` from ``fit``
    (its ``(theta, beta)`` on the full ``counts``) on each resample of the votes' cells
    (``cell``), by ``groups`` when given."""
    np = require("numpy", "web", "the leaderboard")
    from ..bootstrap import percentile_interval, resample_counts
    from .bradley_terry import to_elo

    m = model.cells.n_models
    draws, betas = [], []
    # resamples fitted at once: 250, fewer where models or cells are many (bounded memory)
    chunk = max(1, min(250, 4_000_000 // max(len(counts), m)))
    for boot in resample_counts(
        cell, len(counts), groups=groups, resamples=resamples, seed=seed, chunk=chunk
    ):
        th, be = model.fit(boot, start=fit, tolerance=1e-7)
        present = model.played(boot) > 0
        draws.append(np.where(present, to_elo(th, present), np.nan))
        betas.append(be)
    if draws:
        low, high = percentile_interval(np.concatenate(draws), level)
    else:
        low = high = np.full(m, np.nan)
    return low, high, betas


def style_summary(beta: Any, betas: list[Any], level: float, buckets: int) -> StyleSummary:
    """The ``"style"`` entry of the leaderboard: the length coefficient (logits per unit of
    the covariate, and in Elo points) with its bootstrap interval."""
    np = require("numpy", "web", "the leaderboard")
    from ..bootstrap import percentile_interval
    from .bradley_terry import SCALE

    b_low, b_high = (
        percentile_interval(np.concatenate(betas)[:, None], level)
        if betas
        else ([math.nan], [math.nan])
    )
    return {
        "length": {
            "coef": round(float(beta), 4),
            "ci_low": None if math.isnan(b_low[0]) else round(float(b_low[0]), 4),
            "ci_high": None if math.isnan(b_high[0]) else round(float(b_high[0]), 4),
            "elo_per_unit": round(float(beta) * SCALE, 1),
        },
        "covariate": "(len_a - len_b) / (len_a + len_b), divided by its root mean square",
        "buckets": buckets,
    }
