"""Bootstrap resampling of counted data, by unit or by group, without touching every unit.

Resampling ``n`` independent units with replacement and counting how many fall in each
*cell* (a class of units the statistic cannot tell apart) draws the cell counts from a
multinomial with probabilities ``cell total / n``: exactly the same distribution, at a cost
of the number of cells. Units that are not independent (the turns of one conversation)
are resampled by *group*: each resample draws group multiplicities and adds up the cell
counts of the drawn groups.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["resample_counts", "percentile_interval"]


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
    tail = 100 * (1 - level) / 2
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low = np.nanpercentile(draws, tail, axis=0)
            high = np.nanpercentile(draws, 100 - tail, axis=0)
    return low, high
