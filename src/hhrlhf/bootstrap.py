"""The package's one bootstrap: percentile intervals by resampling with replacement.

- :func:`bootstrap_mean`: a mean and its interval (the red-team report's cells, a preference
  model's accuracy);
- :func:`bootstrap_interval`: any statistic over resampled units (agreement between
  annotators: kappa, alpha);
- :func:`resample_counts` and :func:`percentile_interval`: counted data (the leaderboard's
  Bradley-Terry fits), below.

All are seeded: the same values and seed give the same interval.

Resampling ``n`` independent units with replacement and counting how many fall in each
*cell* (a class of units the statistic cannot tell apart) draws the cell counts from a
multinomial with probabilities ``cell total / n``: exactly the same distribution, at a cost
of the number of cells. Units that are not independent (the turns of one conversation)
are resampled by *group*: each resample draws group multiplicities and adds up the cell
counts of the drawn groups.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import require

if TYPE_CHECKING:
    import numpy as np

__all__ = ["bootstrap_mean", "bootstrap_interval", "resample_counts", "percentile_interval"]

NAN = float("nan")


def bootstrap_mean(
    values: Sequence[float], *, seed: int = 0, resamples: int = 1000, level: float = 0.95
) -> dict[str, Any]:
    """Mean with a percentile-bootstrap interval: ``{"n", "mean", "low", "high"}``.

    ``resamples`` resamples of ``len(values)`` draws with replacement, from a generator seeded
    with ``seed`` (same values and seed, same interval). ``low``/``high`` are the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled means (linear
    interpolation). Non-finite values are the caller's to drop. With no values every number is
    None; with one value the interval is that value.
    """
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "low": None, "high": None}
    np = require("numpy", "report", "bootstrap intervals")
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # chunks keep memory flat on large inputs (17,739 values x 1,000 resamples otherwise)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = arr[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    mean = math.fsum(arr.tolist()) / n
    return {"n": n, "mean": mean, "low": float(low), "high": float(high)}


def bootstrap_interval(
    units: Sequence[Any],
    statistic: Callable[[Sequence[Any]], float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over resampled ``units`` (draws where the statistic
    is NaN are dropped; NaN, NaN when none is left). Plain Python: a statistic over a few
    hundred units needs no numpy."""
    units = list(units)
    if not units:
        return NAN, NAN
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        value = statistic([units[rng.randrange(len(units))] for _ in units])
        if not math.isnan(value):
            draws.append(value)
    if not draws:
        return NAN, NAN
    draws.sort()
    tail = (1 - level) / 2
    lo = draws[min(len(draws) - 1, int(math.floor(tail * len(draws))))]
    hi = draws[min(len(draws) - 1, int(math.ceil((1 - tail) * len(draws))) - 1)]
    return lo, hi


def resample_counts(
    cell: np.ndarray,
    n_cells: int,
    *,
    groups: np.ndarray | None = None,
    resamples: int = 1000,
    seed: int = 0,
    chunk: int = 250,
) -> Iterator[np.ndarray]:
    """Bootstrap cell counts, ``(r, n_cells)`` float arrays of at most ``chunk`` rows.

    ``cell``: each unit's cell index. ``groups``: each unit's group index (0-based, dense);
    None resamples units. Seeded: the same arguments give the same draws.
    """
    np = require("numpy", "web", "the leaderboard")
    rng = np.random.default_rng(seed)
    cell = np.asarray(cell, dtype=np.int64)
    n = len(cell)
    if n == 0 or resamples <= 0:
        return
    if groups is None:
        p = np.bincount(cell, minlength=n_cells) / n
        for done in range(0, resamples, chunk):
            r = min(chunk, resamples - done)
            yield rng.multinomial(n, p, size=r).astype(float)
        return
    groups = np.asarray(groups, dtype=np.int64)
    n_groups = int(groups.max()) + 1
    # each distinct (group, cell) once, with its count
    key, count = np.unique(groups * n_cells + cell, return_counts=True)
    g, c = key // n_cells, key % n_cells
    for done in range(0, resamples, chunk):
        r = min(chunk, resamples - done)
        drawn = rng.integers(0, n_groups, size=(r, n_groups))
        rows = (np.arange(r)[:, None] * n_groups + drawn).ravel()
        weight = np.bincount(rows, minlength=r * n_groups).reshape(r, n_groups)
        flat = (np.arange(r)[:, None] * n_cells + c).ravel()
        yield np.bincount(
            flat, weights=(weight[:, g] * count).ravel(), minlength=r * n_cells
        ).reshape(r, n_cells)


def percentile_interval(draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over axis 0 of ``draws``, ignoring NaN (a statistic a resample
    could not give); NaN where every draw is NaN."""
    np = require("numpy", "web", "the leaderboard")
    tail = 100 * (1 - level) / 2
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low = np.nanpercentile(draws, tail, axis=0)
            high = np.nanpercentile(draws, 100 - tail, axis=0)
    return low, high
