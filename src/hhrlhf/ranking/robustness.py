"""How many votes hold the top rank: a small set whose removal changes the first-ranked model.

An approximate, influence-guided greedy search (the idea of dropping the few most influential
data points, as in Broderick, Giordano and Meager's approximate maximum influence
perturbation). At the current fit, removing one vote of cell ``c`` moves the parameters by
about ``-A^-1 g_c`` (``A`` the negative Hessian, ``g_c`` the vote's score), so its effect on the
gap between the leader and a contender is a dot product. For each contender the votes that
shrink the gap most are taken, most influential first, until the predicted gap is gone; the
contender needing the fewest wins the round. The fit is redone without them and the search
repeats (the linear prediction is only a guide) until the leader changes or the search
limit is passed. The set found is then cut to the shortest prefix (in the order chosen) that
still flips the leader, by bisection with refits.

Every set reported has been verified by refitting without it: a flip that a refit does not
confirm is never reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bradley_terry import BradleyTerry

__all__ = ["Flip", "flip_top"]


@dataclass(frozen=True)
class Flip:
    """``cells``: the cell of each removed vote, in the order chosen; ``new_top``: the index
    of the model ranked first without them."""

    cells: np.ndarray
    new_top: int


def _top(model: BradleyTerry, counts: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    theta, beta = model.fit(counts)
    present = model.played(counts) > 0
    return int(np.argmax(np.where(present, theta, -np.inf))), theta, beta


def _beaten(model: BradleyTerry, counts: np.ndarray, top: int) -> tuple[int | None, tuple]:
    """The model now rated strictly above ``top`` (the best such), or None; and the fit.
    A tie with the leader is not a change of leader."""
    new, theta, beta = _top(model, counts)
    if new == top or theta[new] <= theta[top] + 1e-9:
        return None, (theta, beta)
    return new, (theta, beta)


def _plan(
    model: BradleyTerry, counts: np.ndarray, theta: np.ndarray, beta: np.ndarray, top: int
) -> list[int] | None:
    """Cells of the votes to remove next (one entry per vote), or None when no vote is
    predicted to narrow the leader's gap to any contender."""
    c = model.cells
    grad, hess, p = model.parts(counts[None], theta[None], beta[None])
    m = c.n_models
    # per-vote score of each cell: (y - p) * z, z = e_i - e_j (, x)
    z = np.zeros((len(c.i), model.k))
    rows = np.arange(len(c.i))
    z[rows, c.i] = 1.0
    z[rows, c.j] = -1.0
    if model.style:
        z[:, m] = c.x
    score = (c.y - p[0])[:, None] * z
    shift = -np.linalg.solve(hess[0], score.T).T  # (C, K): parameter change per vote removed
    best: list[int] | None = None
    partial: tuple[float, list[int]] | None = None  # (share of the gap reached, votes)
    available = counts > 0.5
    present = model.played(counts) > 0
    for s in range(m):
        if s == top or not present[s]:
            continue
        gap = theta[top] - theta[s]
        effect = shift[:, top] - shift[:, s]
        useful = np.flatnonzero(available & (effect < 0))
        if not len(useful):
            continue
        order = useful[np.argsort(effect[useful], kind="stable")]
        n = np.floor(counts[order] + 0.5).astype(np.int64)
        reach = np.cumsum(n * -effect[order])
        last = int(np.searchsorted(reach, gap))
        if last >= len(order):
            # even every helpful vote is predicted not to be enough: the prediction is linear,
            # so take the half of the predicted reach that costs fewest votes and look again
            half = int(np.searchsorted(reach, reach[-1] / 2)) + 1
            share = float(reach[-1] / gap)
            if partial is None or share > partial[0]:
                partial = (share, np.repeat(order[:half], n[:half]).tolist())
            continue
        before = reach[last - 1] if last else 0.0
        k_last = int(np.ceil((gap - before) / -effect[order[last]])) + 0
        k_last = max(1, min(k_last, int(n[last])))
        plan = np.repeat(order[:last], n[:last]).tolist() + [int(order[last])] * k_last
        if best is None or len(plan) < len(best):
            best = plan
    return best if best is not None or partial is None else partial[1]


def flip_top(
    model: BradleyTerry,
    counts: np.ndarray,
    *,
    limit: int,
    rounds: int = 30,
) -> Flip | None:
    """The smallest set found of at most ``limit`` votes whose removal changes the first-ranked
    model, verified by a refit; None when none is found."""
    counts = np.asarray(counts, dtype=float)
    top, theta, beta = _top(model, counts)
    if model.played(counts).astype(bool).sum() < 2:
        return None
    chosen: list[int] = []
    current = counts.copy()
    flipped = False
    for _ in range(rounds):
        plan = _plan(model, current, theta, beta, top)
        if plan is None:
            return None
        if len(chosen) + len(plan) > limit:
            plan = plan[: limit - len(chosen)]
            if not plan:
                return None
        chosen += plan
        np.subtract.at(current, plan, 1.0)
        new_top, (theta, beta) = _beaten(model, current, top)
        if new_top is not None:
            flipped = True
            break
        if len(chosen) >= limit:
            return None
    if not flipped:
        return None

    def without(k: int) -> int | None:
        reduced = counts.copy()
        np.subtract.at(reduced, chosen[:k], 1.0)
        return _beaten(model, reduced, top)[0]

    lo, hi = 0, len(chosen)  # the first k votes do not flip at lo, do at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if without(mid) is not None:
            hi = mid
        else:
            lo = mid
    new_top = without(hi)
    if new_top is None:  # never report an unverified flip
        return None
    return Flip(cells=np.asarray(chosen[:hi], dtype=np.int64), new_top=new_top)
