"""The Bradley-Terry model as a logistic regression, fitted on aggregated vote counts.

``P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j + beta * x)))`` where ``x`` is an optional
covariate of the vote (style control: the normalised length difference). Votes that agree
on the pair, the outcome and ``x`` are one *cell* with a count, so a fit costs the number of
cells (pairs x outcomes x length buckets), not the number of votes: Newton's method on
the cell counts, all bootstrap resamples at once.

Each Newton step solves with the negative Hessian, a weighted graph Laplacian over the pairs
seen (plus the covariate's row). Up to :data:`DENSE_MAX` parameters it is solved dense (one
batched linear solve per step); past that, by conjugate gradients preconditioned with its
diagonal, in products over the pairs seen: memory and time grow with the pairs compared, not
with the square of the number of models. Both reach the same optimum (the tests compare
them). :data:`MAX_MODELS` is the most models a leaderboard takes (the bootstrap keeps
``resamples x models`` ratings to find the intervals).

A tie is half a win each way. So that a model that never lost (or never won) keeps a finite
rating, every compared pair gets ``prior`` virtual wins each way (0.1 by default: negligible
beside a few dozen real votes), and a ridge of ``1e-6`` fixes the scale's origin. Ratings are
on the Elo scale: ``1000 + 400 * log10(e) * theta``, centred on the mean of the rated models,
so a 400-point gap means 10:1 odds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Cells", "BradleyTerry", "ANCHOR", "SCALE", "MAX_MODELS", "DENSE_MAX", "to_elo"]

ANCHOR = 1000.0
SCALE = 400.0 / math.log(10)  # Elo points per logit
RIDGE = 1e-6
MAX_STEP = 4.0  # logits per Newton step: a guard for nearly separable data
#: the most models a fit takes (a leaderboard of more is refused with one error line)
MAX_MODELS = 10_000
#: the most parameters (models, plus one with style control) solved with a dense Hessian
DENSE_MAX = 128
#: relative residual of a Newton step's conjugate-gradient solve: far from the optimum a rough
#: step does (the gradient's norm, at most 1e-2: an inexact Newton method), near it 1e-10
CG_TOLERANCE = 1e-10


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
    """The model for one set of cells; :meth:`fit` takes counts ``(C,)`` or ``(R, C)``.
    ``dense``: solve Newton steps with the dense Hessian (default: up to :data:`DENSE_MAX`
    parameters) or by conjugate gradients over the pairs (the default past that)."""

    def __init__(self, cells: Cells, *, prior: float = 0.1, dense: bool | None = None) -> None:
        self.cells = cells
        self.prior = prior
        self.style = cells.x is not None
        m = cells.n_models
        p = len(cells.pairs)
        self.pi = cells.pairs[:, 0] if p else np.zeros(0, dtype=np.int64)
        self.pj = cells.pairs[:, 1] if p else np.zeros(0, dtype=np.int64)
        # cells are sorted by pair: the first cell of each pair
        self.starts = np.flatnonzero(np.r_[True, np.diff(cells.pair) != 0]) if p else cells.pair
        self.k = m + (1 if self.style else 0)
        self.dense = self.k <= DENSE_MAX if dense is None else dense

    # -- sums over the pairs ---------------------------------------------------------------
    def _per_pair(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts, axis=-1)

    def _spread(self, w: np.ndarray, sign: float = -1.0) -> np.ndarray:
        """Per-model sums ``(R, M)`` of per-pair values ``w (R, P)``: ``+w`` on the pair's
        first model, ``sign * w`` on its second."""
        r, m = w.shape[0], self.cells.n_models
        off = (np.arange(r) * m)[:, None]
        flat = w.ravel()
        first = np.bincount((off + self.pi).ravel(), weights=flat, minlength=r * m)
        second = np.bincount((off + self.pj).ravel(), weights=flat, minlength=r * m)
        return (first + sign * second).reshape(r, m)

    def _terms(
        self, counts: np.ndarray, theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The cells' win probabilities, residuals and weights ``(R, C)``, and the pairs'
        summed residuals and weights ``(R, P)`` (the prior's virtual wins included)."""
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
            p0 = 1.0 / (1.0 + np.exp(-(theta[:, self.pi] - theta[:, self.pj])))
            g_pair = g_pair + compared * self.prior * (1.0 - 2.0 * p0)
            h_pair = h_pair + compared * 2.0 * self.prior * p0 * (1.0 - p0)
        return p, resid, h, g_pair, h_pair

    def _gradient(
        self, theta: np.ndarray, beta: np.ndarray, resid: np.ndarray, g_pair: np.ndarray
    ) -> np.ndarray:
        r, m = theta.shape
        grad = np.empty((r, self.k))
        grad[:, :m] = self._spread(g_pair) - RIDGE * theta
        if self.style:
            assert self.cells.x is not None  # a style fit's cells carry the style difference
            grad[:, m] = resid @ self.cells.x - RIDGE * beta
        return grad

    # -- the pieces of a Newton step ------------------------------------------------------
    def parts(
        self, counts: np.ndarray, theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient ``(R, K)`` of the log likelihood, its negative Hessian ``(R, K, K)`` (dense:
        for a few hundred parameters at most) and the cells' win probabilities ``(R, C)``, at
        ``theta (R, M)``, ``beta (R,)``."""
        p, resid, h, g_pair, h_pair = self._terms(counts, theta, beta)
        r, m = theta.shape
        grad = self._gradient(theta, beta, resid, g_pair)
        hess = np.zeros((r, self.k, self.k))
        diag = np.arange(m)
        hess[:, diag, diag] = self._spread(h_pair, 1.0)
        hess[:, self.pi, self.pj] = -h_pair  # pairs are distinct, i < j
        hess[:, self.pj, self.pi] = -h_pair
        if self.style:
            x = self.cells.x
            assert x is not None
            cross = self._spread(self._per_pair(h * x))
            hess[:, :m, m] = cross
            hess[:, m, :m] = cross
            hess[:, m, m] = h @ (x * x)
        hess += RIDGE * np.eye(self.k)
        return grad, hess, p

    def _sparse_step(self, counts: np.ndarray, theta: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """The Newton step ``(R, K)``: the negative Hessian's system solved by conjugate
        gradients preconditioned with its diagonal, each product a sum over the pairs.

        Models a resample links by compared pairs form a group whose common shift the
        likelihood does not see: only the ridge holds it, so the step moves each group's mean
        to 0 directly (as the exact solve does) and the gradients solve for the rest."""
        _, resid, h, g_pair, h_pair = self._terms(counts, theta, beta)
        grad = self._gradient(theta, beta, resid, g_pair)
        r, m = theta.shape
        pi, pj = self.pi, self.pj
        centre = _group_centring(self._per_pair(counts) > 0, pi, pj, m)
        diag = np.empty((r, self.k))
        diag[:, :m] = self._spread(h_pair, 1.0) + RIDGE
        cross = hxx = None
        if self.style:
            x = self.cells.x
            assert x is not None
            cross = self._per_pair(h * x)
            hxx = h @ (x * x) + RIDGE
            diag[:, m] = hxx

        def times(v: np.ndarray) -> np.ndarray:
            vt = v[:, :m]
            u = vt[:, pi] - vt[:, pj]
            w = h_pair * u
            out = np.empty_like(v)
            if cross is not None:
                w = w + cross * v[:, m : m + 1]
                out[:, m] = (cross * u).sum(axis=1) + hxx * v[:, m]
            out[:, :m] = self._spread(w) + RIDGE * vt
            return out

        def precondition(res: np.ndarray) -> np.ndarray:
            z = res / diag
            z[:, :m] = centre(z[:, :m])
            return z

        grad[:, :m] = centre(grad[:, :m])
        step = _conjugate_gradients(times, grad, precondition, max(50, 2 * self.k))
        step[:, :m] += centre(theta) - theta  # each group's mean to 0
        return step

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
                if self.dense:
                    grad, hess, _ = self.parts(counts, theta, beta)
                    step = np.linalg.solve(hess, grad[..., None])[..., 0]
                else:
                    step = self._sparse_step(counts, theta, beta)
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
        counts = np.asarray(counts, dtype=float)
        per = np.atleast_2d(self._per_pair(counts))
        out = self._spread(per, 1.0)
        return out[0] if counts.ndim == 1 else out


def _group_centring(
    linked: np.ndarray, pi: np.ndarray, pj: np.ndarray, m: int
) -> Callable[[np.ndarray], np.ndarray]:
    """A function subtracting from ``(R, M)`` values their mean over each group of models
    that the pairs ``linked (R, P)`` connect (row by row: a resample's own groups)."""
    r = linked.shape[0]
    n = r * m
    off = (np.arange(r) * m)[:, None]
    u = (off + pi)[linked]
    v = (off + pj)[linked]
    label = np.arange(n)
    while True:  # hook each root under the smaller root of a pair, then flatten the trees
        lu, lv = label[u], label[v]
        differ = lu != lv
        if not differ.any():
            break
        np.minimum.at(label, np.maximum(lu, lv)[differ], np.minimum(lu, lv)[differ])
        while True:
            up = label[label]
            if (up == label).all():
                break
            label = up
    size = np.bincount(label, minlength=n).astype(float)

    def centre(values: np.ndarray) -> np.ndarray:
        flat = values.ravel()
        mean = np.bincount(label, weights=flat, minlength=n) / np.maximum(size, 1.0)
        return (flat - mean[label]).reshape(values.shape)

    return centre


def _conjugate_gradients(
    times: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    precondition: Callable[[np.ndarray], np.ndarray],
    iterations: int,
) -> np.ndarray:
    """Solve ``A x = b`` row by row (``A`` symmetric positive definite, given by ``times``),
    preconditioned, to a relative residual of ``|b|`` (between :data:`CG_TOLERANCE` and 1e-2)."""
    x = np.zeros_like(b)
    res = b.copy()
    z = precondition(res)
    d = z.copy()
    rz = (res * z).sum(axis=1)
    size = np.linalg.norm(b, axis=1)
    goal = np.clip(size, CG_TOLERANCE, 1e-2) * size
    for _ in range(iterations):
        ad = times(d)
        dad = (d * ad).sum(axis=1)
        alpha = np.divide(rz, dad, out=np.zeros_like(rz), where=dad > 0)
        x += alpha[:, None] * d
        res -= alpha[:, None] * ad
        if (np.linalg.norm(res, axis=1) <= goal).all():
            break
        z = precondition(res)
        rz_new = (res * z).sum(axis=1)
        step = np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
        d = z + step[:, None] * d
        rz = rz_new
    return x
