"""The Bradley-Terry model as a logistic regression, fitted on aggregated vote counts.

``P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j + beta * x)))`` where ``x`` is an optional
covariate of the vote (style control: the normalised length difference). Votes that agree
on the pair, the outcome and ``x`` are one *cell* with a count, so a fit costs the number of
cells (pairs x outcomes x length buckets), not the number of votes: Newton's method on
the cell counts, all bootstrap resamples at once (one batched linear solve per step).

A tie is half a win each way. So that a model that never lost (or never won) keeps a finite
rating, every compared pair gets ``prior`` virtual wins each way (0.1 by default: negligible
beside a few dozen real votes), and a ridge of ``1e-6`` fixes the scale's origin. Ratings are
on the Elo scale: ``1000 + 400 * log10(e) * theta``, centred on the mean of the rated models,
so a 400-point gap means 10:1 odds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Cells", "BradleyTerry", "ANCHOR", "SCALE", "to_elo"]

ANCHOR = 1000.0
SCALE = 400.0 / math.log(10)  # Elo points per logit
RIDGE = 1e-6
MAX_STEP = 4.0  # logits per Newton step: a guard for nearly separable data


@dataclass(frozen=True)
class Cells:
    """Distinct kinds of vote, sorted by pair. ``i``, ``j``: the pair's model indices
    (``i < j``); ``y``: 1 when ``i`` won, 0 when ``j`` won, 0.5 for a tie; ``x``: the
    covariate (None without style control); ``pair``: the pair's index in ``pairs``."""

    i: np.ndarray
    j: np.ndarray
    y: np.ndarray
    x: np.ndarray | None
    pair: np.ndarray
    pairs: np.ndarray  # (P, 2)
    n_models: int


def to_elo(theta: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Elo-scale ratings of ``theta`` (..., M), centred on the mean of the ``present`` models."""
    if present is None:
        centre = theta.mean(axis=-1, keepdims=True)
    else:
        w = present.astype(float)
        centre = (theta * w).sum(axis=-1, keepdims=True) / np.maximum(
            w.sum(axis=-1, keepdims=True), 1
        )
    return ANCHOR + SCALE * (theta - centre)


class BradleyTerry:
    """The model for one set of cells; :meth:`fit` takes counts ``(C,)`` or ``(R, C)``."""

    def __init__(self, cells: Cells, *, prior: float = 0.1) -> None:
        self.cells = cells
        self.prior = prior
        self.style = cells.x is not None
        m = cells.n_models
        p = len(cells.pairs)
        d = np.zeros((p, m))
        if p:
            d[np.arange(p), cells.pairs[:, 0]] = 1.0
            d[np.arange(p), cells.pairs[:, 1]] = -1.0
        self.d = d  # pair -> +1 on i, -1 on j
        # cells are sorted by pair: the first cell of each pair
        self.starts = np.flatnonzero(np.r_[True, np.diff(cells.pair) != 0]) if p else cells.pair
        self.k = m + (1 if self.style else 0)

    # -- the pieces of a Newton step ------------------------------------------------------
    def _per_pair(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts, axis=-1)

    def parts(
        self, counts: np.ndarray, theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient ``(R, K)`` of the log likelihood, its negative Hessian ``(R, K, K)`` and
        the cells' win probabilities ``(R, C)``, at ``theta (R, M)``, ``beta (R,)``."""
        c = self.cells
        eta = theta[:, c.i] - theta[:, c.j]
        if self.style:
            eta = eta + beta[:, None] * c.x
        p = 1.0 / (1.0 + np.exp(-eta))
        resid = counts * (c.y - p)
        h = counts * p * (1.0 - p)
        g_pair = self._per_pair(resid)
        h_pair = self._per_pair(h)
        if self.prior:
            compared = self._per_pair(counts) > 0
            pi, pj = c.pairs[:, 0], c.pairs[:, 1]
            p0 = 1.0 / (1.0 + np.exp(-(theta[:, pi] - theta[:, pj])))
            g_pair = g_pair + compared * self.prior * (1.0 - 2.0 * p0)
            h_pair = h_pair + compared * 2.0 * self.prior * p0 * (1.0 - p0)
        r, m = theta.shape
        grad = np.empty((r, self.k))
        hess = np.zeros((r, self.k, self.k))
        grad[:, :m] = g_pair @ self.d - RIDGE * theta
        hess[:, :m, :m] = np.matmul(self.d.T[None] * h_pair[:, None, :], self.d)
        if self.style:
            x = c.x
            assert x is not None  # a style fit's cells carry the style difference
            grad[:, m] = resid @ x - RIDGE * beta
            cross = self._per_pair(h * x) @ self.d
            hess[:, :m, m] = cross
            hess[:, m, :m] = cross
            hess[:, m, m] = h @ (x * x)
        hess += RIDGE * np.eye(self.k)
        return grad, hess, p

    def fit(
        self,
        counts: np.ndarray,
        *,
        start: tuple[np.ndarray, np.ndarray] | None = None,
        tolerance: float = 1e-9,
        iterations: int = 100,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(theta, beta)``: log-strengths ``(R, M)`` (or ``(M,)`` for 1-D counts) and the
        covariate's coefficient ``(R,)`` (zeros without style control)."""
        counts = np.asarray(counts, dtype=float)
        single = counts.ndim == 1
        counts = np.atleast_2d(counts)
        r, m = counts.shape[0], self.cells.n_models
        if start is None:
            theta, beta = np.zeros((r, m)), np.zeros(r)
        else:
            theta = np.broadcast_to(start[0], (r, m)).copy()
            beta = np.broadcast_to(start[1], (r,)).copy()
        if len(self.cells.pairs):
            for _ in range(iterations):
                grad, hess, _ = self.parts(counts, theta, beta)
                step = np.linalg.solve(hess, grad[..., None])[..., 0]
                big = np.abs(step).max(axis=1, keepdims=True)
                step *= np.minimum(1.0, MAX_STEP / np.maximum(big, 1e-300))
                theta += step[:, :m]
                if self.style:
                    beta += step[:, m]
                if big.max() < tolerance:
                    break
        return (theta[0], beta[0]) if single else (theta, beta)

    def played(self, counts: np.ndarray) -> np.ndarray:
        """Votes each model took part in, ``(R, M)`` (or ``(M,)``)."""
        return self._per_pair(np.asarray(counts, dtype=float)) @ np.abs(self.d)
