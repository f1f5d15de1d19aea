"""How far to trust the flags of :mod:`.flag`, measured on the user's own data.

- :func:`inject_flips` reverses a seeded share of the labels; :func:`flip_report` then says
  how well ``p_mislabelled`` finds them: the AUROC (the chance that a flipped pair ranks above
  an unflipped one, ties counting half), precision and recall among the top 2/5/10% of pairs
  by ``p_mislabelled`` and among the ``likely_mislabelled`` ones, each with a percentile
  bootstrap 95% interval over pairs. Real labels have their own errors, which count here as
  unflipped pairs: the precision is of finding *injected* flips, a floor on finding reversed
  labels.
- :func:`strata_report`: pairs sorted by margin into strata, a PM trained on one stratum alone
  (within each fold's training pairs) and scored on the held-out fold, all strata together.
  A stratum whose model scores below 50% holds labels that point the other way from the
  rest of the data (reversed); near 50%, labels that teach nothing (noise or hard pairs).
  The strata are cut by the out-of-fold margins, which the other folds' labels made: a
  stratum's membership has seen the held-out fold's labels, its model has not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import HHError, require

__all__ = ["TOPS", "inject_flips", "auroc", "flip_report", "strata_report"]

#: The shares of pairs, ranked by p_mislabelled, whose precision and recall are reported.
TOPS = (0.02, 0.05, 0.10)


def inject_flips(pairs: Sequence[Any], rate: float, seed: int) -> tuple[list[Any], Any]:
    """``(pairs, flipped)``: ``round(rate * n)`` pairs drawn with ``seed`` have chosen and
    rejected swapped; ``flipped`` marks them (a numpy bool array)."""
    np = require("numpy", "reward", "mislabel flags")
    if not 0 < rate < 1:
        raise ValueError(f"the flip rate must be between 0 and 1, not {rate}")
    n = len(pairs)
    flipped = np.zeros(n, dtype=bool)
    flipped[np.random.default_rng(seed).choice(n, round(rate * n), replace=False)] = True
    out = [
        type(p)(p.rejected, p.chosen, p.subset, p.split, p.index) if f else p
        for p, f in zip(pairs, flipped.tolist(), strict=True)
    ]
    return out, flipped


def auroc(scores: Any, positive: Any) -> float | None:
    """Area under the ROC curve of ``scores`` for the ``positive`` ones (Mann-Whitney, ties
    half); None without both kinds."""
    np = require("numpy", "reward", "mislabel flags")
    from scipy.stats import rankdata

    s, pos = np.asarray(scores, dtype=float), np.asarray(positive, dtype=bool)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return None
    ranks = rankdata(s)
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _stats(p: Any, flipped: Any, flagged: Any, tops: Sequence[float]) -> dict[str, float | None]:
    np = require("numpy", "reward", "mislabel flags")
    out: dict[str, float | None] = {"auroc": auroc(p, flipped)}
    order = np.argsort(-p, kind="stable")
    total = int(flipped.sum())
    for q in tops:
        k = max(1, round(q * len(p)))
        hits = int(flipped[order[:k]].sum())
        out[f"precision@{q:g}"] = hits / k
        out[f"recall@{q:g}"] = hits / total if total else None
    hits = int((flipped & flagged).sum())
    out["precision@likely"] = hits / int(flagged.sum()) if flagged.any() else None
    out["recall@likely"] = hits / total if total else None
    return out


def flip_report(
    p_mislabelled: Any,
    flipped: Any,
    classes: Sequence[str],
    *,
    tops: Sequence[float] = TOPS,
    seed: int = 0,
    resamples: int = 1000,
) -> dict[str, dict[str, float | None]]:
    """Each statistic (see the module docstring) and its bootstrap 95% interval:
    ``{name: {"value", "low", "high"}}``; ``flagged`` are the ``likely_mislabelled`` pairs."""
    np = require("numpy", "reward", "mislabel flags")
    p = np.asarray(p_mislabelled, dtype=float)
    flipped = np.asarray(flipped, dtype=bool)
    flagged = np.array([c == "likely_mislabelled" for c in classes], dtype=bool)
    point = _stats(p, flipped, flagged, tops)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(resamples):
        idx = rng.integers(0, len(p), size=len(p))
        for k, v in _stats(p[idx], flipped[idx], flagged[idx], tops).items():
            if v is not None:
                draws[k].append(v)
    out = {}
    for k, v in point.items():
        low, high = np.quantile(draws[k], [0.025, 0.975]).tolist() if draws[k] else (None, None)
        out[k] = {"value": v, "low": low, "high": high}
    return out


def strata_report(
    fitter: Any,
    margin: Any,
    fold_ids: Any,
    *,
    strata: int = 5,
    flipped: Any = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Per stratum of ``margin`` (lowest first): its pairs, margin range, the held-out
    accuracy of PMs trained on it alone (``fitter.margins``; folds ``fold_ids``) with a
    bootstrap interval, and the share of injected flips in it when ``flipped`` is given."""
    np = require("numpy", "reward", "mislabel flags")
    from .evaluate import accuracy_summary

    margin = np.asarray(margin, dtype=float)
    if not 2 <= strata <= len(margin) // 2:
        raise HHError(f"{len(margin)} pairs cannot make {strata} strata of two pairs or more")
    rows = []
    folds = int(fold_ids.max()) + 1
    for s, members in enumerate(np.array_split(np.argsort(margin, kind="stable"), strata)):
        held = []
        for j in range(folds):
            train = members[fold_ids[members] != j]
            test = np.flatnonzero(fold_ids == j)
            if not len(train):
                continue
            desc = f"stratum {s + 1}/{strata} fold {j + 1}/{folds}"
            held.append(fitter.margins(train, test, desc=desc))
        acc = accuracy_summary(np.concatenate(held) if held else [], seed=seed)
        row = {
            "stratum": s + 1,
            "pairs": len(members),
            "margin_low": float(margin[members].min()),
            "margin_high": float(margin[members].max()),
            "held_out_accuracy": acc["accuracy"],
            "ci95": acc["ci95"],
            "held_out_pairs": acc["n"],
        }
        if flipped is not None:
            row["injected_flips"] = float(np.asarray(flipped)[members].mean())
        rows.append(row)
    return rows
