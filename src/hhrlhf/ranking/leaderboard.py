"""The leaderboard: Bradley-Terry ratings, bootstrap intervals, style control, robustness.

:func:`rank` takes votes from anywhere (a battles file, the collection database, an
iterable of :class:`~hhrlhf.ranking.votes.Vote`, a pandas or Arrow table) and returns the
JSON-ready leaderboard: the votes in as cells (:func:`vote_cells`), one Bradley-Terry fit
(:mod:`~hhrlhf.ranking.bradley_terry`), the intervals (:mod:`~hhrlhf.ranking.intervals`) and
the table of models (:mod:`~hhrlhf.ranking.table`).

- **Intervals**: percentile intervals over bootstrap fits. Votes that carry a group (the
  collection database: the conversation) are resampled by group (the *conversation
  bootstrap*: the turns of one conversation are not independent); otherwise votes are
  resampled one by one (the *vote bootstrap*), drawn exactly as a multinomial over the
  cells (see :mod:`hhrlhf.bootstrap`).
- **Style control**: the covariate of a vote is the normalised length difference
  ``(len_a - len_b) / (len_a + len_b)`` (0 when both are empty), divided by its root mean
  square over all votes (as LMArena divides by the standard deviation; not centred, so the
  covariate does not depend on which model is called A). Votes are counted in ``buckets``
  quantile buckets of the covariate and each cell (pair, outcome, bucket) takes the mean
  covariate of its votes: exact for the sum of covariate x outcome, and the within-bucket
  spread of the covariate (below 1/``buckets`` of its range) is the only approximation.
  The bootstrap resamples those cells, so it resamples the binned data. ``"style"`` reports
  the coefficient in logits per unit of the covariate.
- **Robustness**: see :mod:`hhrlhf.ranking.robustness`. The normalisation and the buckets
  of the full data are kept when votes are removed.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, TypedDict

from ..errors import DataFormatError, HHError, require
from .intervals import StyleSummary
from .table import ModelRow

__all__ = [
    "Dates",
    "FlipTop",
    "IntervalMethod",
    "Leaderboard",
    "Robustness",
    "rank",
    "vote_cells",
    "ROBUSTNESS_MAX_MODELS",
]


class Dates(TypedDict):
    """The first and last vote's time (ISO 8601, UTC, to the second)."""

    first: str
    last: str


class IntervalMethod(TypedDict):
    """How the intervals were made: ``"conversation bootstrap"`` or ``"vote bootstrap"``."""

    method: str
    resamples: int
    level: float


class _FlipTopFound(TypedDict):
    votes: int
    new_top: str


class FlipTop(_FlipTopFound, total=False):
    """The fewest votes found whose removal changes the first-ranked model (``votes`` of
    them; ``new_top`` the model then first), listed by their ``lines`` (0-based, a file's
    votes) or their ``refs`` (votes given references; :mod:`hhrlhf.collect.leaderboard`
    renames those ``turns``)."""

    lines: list[int]
    refs: list[Any]
    turns: list[Any]


class Robustness(TypedDict):
    """The robustness search: what it found (None: nothing within ``limit`` votes)."""

    flip_top: FlipTop | None
    limit: int


class _Board(TypedDict):
    models: list[ModelRow]
    votes: int
    comparisons: int
    ties: int
    dates: Dates | None
    intervals: IntervalMethod
    style: StyleSummary | None


class Leaderboard(_Board, total=False):
    """What :func:`rank` returns (see there): ``conversations`` only when the votes are
    grouped, ``robustness`` only when asked for."""

    conversations: int
    robustness: Robustness


#: the most models the robustness search takes (it solves with the dense Hessian)
ROBUSTNESS_MAX_MODELS = 500


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="seconds")


def vote_cells(
    cols: Any, *, style_control: bool = False, buckets: int = 16
) -> tuple[Any, Any, Any]:
    """The votes of ``cols`` (:class:`~hhrlhf.ranking.votes.VoteColumns`) as
    ``(Cells, cell of each vote, count of each cell)``."""
    np = require("numpy", "web", "the leaderboard")
    from .bradley_terry import Cells

    n = len(cols)
    m = len(cols.models)
    a = np.frombuffer(cols.a, dtype=np.int32).astype(np.int64)
    b = np.frombuffer(cols.b, dtype=np.int32).astype(np.int64)
    outcome = np.frombuffer(cols.outcome, dtype=np.int8)
    swap = a > b  # orient each vote as (lower index, higher index)
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    oc = np.where(outcome == 2, 2, np.where(swap, 1 - outcome, outcome))  # 0: lo won
    key = (lo * m + hi) * 3 + oc
    x = None
    if style_control:
        la = np.frombuffer(cols.length_a, dtype=float)
        lb = np.frombuffer(cols.length_b, dtype=float)
        missing = np.flatnonzero(np.isnan(la) | np.isnan(lb))
        if len(missing):
            k = int(missing[0])
            raise DataFormatError(
                cols.source,
                cols.lines[k] + 1,
                f"style control needs both response lengths; {len(missing):,} vote(s) lack "
                "them, the first here (length_a/length_b or conv_metadata)",
                unit=cols.unit,
            )
        total = la + lb
        diff = np.divide(la - lb, total, out=np.zeros(n), where=total > 0)
        diff = np.where(swap, -diff, diff)
        rms = math.sqrt(float(np.mean(diff * diff))) or 1.0
        x = diff / rms
        edges = np.unique(np.quantile(x, np.linspace(0, 1, buckets + 1)[1:-1]))
        key = key * (len(edges) + 1) + np.searchsorted(edges, x)
    ukey, cell, count = np.unique(key, return_inverse=True, return_counts=True)
    cell = cell.reshape(-1)
    per = 3 * (len(edges) + 1) if style_control else 3
    pair_code = ukey // per
    pairs_u, pair = np.unique(pair_code, return_inverse=True)
    oc_cell = (ukey // (per // 3)) % 3
    cells = Cells(
        i=(pairs_u // m)[pair],
        j=(pairs_u % m)[pair],
        y=np.choose(oc_cell, [1.0, 0.0, 0.5]),
        x=None if x is None else np.bincount(cell, weights=x) / count,
        pair=pair.reshape(-1),
        pairs=np.stack([pairs_u // m, pairs_u % m], axis=1),
        n_models=m,
    )
    return cells, cell, count


def _empty(cols: Any, resamples: int, level: float, robustness: bool) -> Leaderboard:
    """The leaderboard before any fit: the counts, the interval method, nothing ranked."""
    grouped = cols.groups is not None
    out: Leaderboard = {
        "models": [],
        "votes": len(cols),
        "comparisons": len(cols),
        "ties": cols.ties,
        "dates": None,
        "intervals": {
            "method": "conversation bootstrap" if grouped else "vote bootstrap",
            "resamples": resamples,
            "level": level,
        },
        "style": None,
    }
    if grouped:
        out["conversations"] = len(set(cols.groups or ()))
    if robustness:
        out["robustness"] = {"flip_top": None, "limit": 0}
    return out


def _dates(cols: Any) -> Dates | None:
    """The first and last vote's time, None when no vote has one."""
    np = require("numpy", "web", "the leaderboard")
    t = np.frombuffer(cols.tstamp, dtype=float)
    if np.isnan(t).all():
        return None
    return {"first": _iso(float(np.nanmin(t))), "last": _iso(float(np.nanmax(t)))}


def _check_models(cols: Any, max_models: int | None, robustness: bool) -> None:
    """An error when there are more models than the fit (or the robustness search) takes."""
    from .bradley_terry import MAX_MODELS

    m = len(cols.models)
    max_models = MAX_MODELS if max_models is None else max_models
    if m > max_models:
        raise DataFormatError(
            cols.source,
            None,
            f"{m:,} models: the leaderboard ranks at most {max_models:,} "
            "(hhrlhf.ranking.bradley_terry.MAX_MODELS; its bootstrap keeps resamples x models "
            "ratings)",
        )
    if robustness and m > ROBUSTNESS_MAX_MODELS:
        raise HHError(
            f"{cols.source}: {m:,} models: the robustness search handles at most "
            f"{ROBUSTNESS_MAX_MODELS:,} (its influence solve is dense); rank without --robustness"
        )


def _group_ids(cols: Any) -> Any:
    """Each vote's group as a number (the bootstrap resamples groups), None when ungrouped."""
    np = require("numpy", "web", "the leaderboard")
    if cols.groups is None:
        return None
    ids: dict[Any, int] = {}
    return np.fromiter(
        (ids.setdefault(g, len(ids)) for g in cols.groups or ()), dtype=np.int64, count=len(cols)
    )


def _flip_top(
    cols: Any, model: Any, counts: Any, cell: Any, count: Any, limit: int
) -> FlipTop | None:
    """The votes whose removal changes the first-ranked model
    (:func:`~hhrlhf.ranking.robustness.flip_top`), by their lines or references."""
    np = require("numpy", "web", "the leaderboard")
    from .robustness import flip_top

    flip = flip_top(model, counts, limit=limit)
    if flip is None:
        return None
    # the votes of each cell, in file order; take the first ones of each cell needed
    order = np.argsort(cell, kind="stable")
    first = np.r_[0, np.cumsum(count)[:-1]]
    taken = np.zeros(len(counts), dtype=np.int64)
    picked = []
    for c in flip.cells.tolist():
        picked.append(int(order[first[c] + taken[c]]))
        taken[c] += 1
    picked.sort()
    refs = [cols.ref(k) for k in picked]
    found: FlipTop = {"votes": len(picked), "new_top": cols.models[flip.new_top]}
    if cols.refs is None:
        found["lines"] = refs
    else:
        found["refs"] = refs
    return found


def rank(
    votes: Any,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    prior: float = 0.1,
    style_control: bool = False,
    buckets: int = 16,
    robustness: bool = False,
    robustness_limit: int | None = None,
    max_models: int | None = None,
) -> Leaderboard:
    """The leaderboard of ``votes`` (see :func:`~hhrlhf.ranking.votes.collect_votes`).

    Returns a :class:`Leaderboard`: ``{"models": [{"name", "rating", "ci_low", "ci_high", "comparisons",
    "win_rate", "warning"}], "votes", "ties", "dates": {"first", "last"} | None, "intervals": {...},
    "style": {...} | None}``, best first, plus ``"conversations"`` when votes are grouped and
    ``"robustness": {"flip_top": {"votes", "lines" | "refs", "new_top"} | None, "limit"}``
    when asked. ``win_rate`` counts a tie as half a win. ``robustness_limit``: the most votes
    the search may remove (default: 1% of the votes, at least 10).
    """
    require("numpy", "web", "the leaderboard")
    from .bradley_terry import BradleyTerry, to_elo
    from .intervals import rating_intervals, style_summary
    from .table import model_rows
    from .votes import collect_votes

    cols = collect_votes(votes)
    n = len(cols)
    out = _empty(cols, resamples, level, robustness)
    if n == 0:
        return out
    out["dates"] = _dates(cols)
    _check_models(cols, max_models, robustness)
    cells, cell, count = vote_cells(cols, style_control=style_control, buckets=buckets)
    model = BradleyTerry(cells, prior=prior)
    counts = count.astype(float)
    theta, beta = model.fit(counts)
    low, high, betas = rating_intervals(
        model,
        (theta, beta),
        cell,
        counts,
        _group_ids(cols),
        resamples=resamples,
        seed=seed,
        level=level,
    )
    out["models"] = model_rows(cols, to_elo(theta), low, high, prior)
    if style_control:
        out["style"] = style_summary(beta, betas, level, buckets)
    if robustness:
        limit = robustness_limit if robustness_limit is not None else max(10, n // 100)
        out["robustness"]["limit"] = limit
        out["robustness"]["flip_top"] = _flip_top(cols, model, counts, cell, count, limit)
    return out
