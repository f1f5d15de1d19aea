"""Cross-validation of the linear preference model (``hh pm cv``): prompt-grouped, seeded
folds (:func:`~hhrlhf.reward.holdout.kfold`), each trained on the others and scored on itself,
beside the length baselines on the same folds. An honest accuracy where there is no separate
test split; ties count as not correct.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import HHError

__all__ = ["cross_validate"]


def cross_validate(
    pairs: Sequence[Any],
    folds: int,
    seed: int,
    *,
    l2: float,
    harm_weight: float,
    max_iter: int,
    n_jobs: int = 1,
    data: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The cross-validated accuracy of the linear model and the baselines: per fold
    (``per_fold``) and over the folds (``summary``, :func:`~hhrlhf.reward.holdout.cv_summary`).
    ``data`` names the files read; ``progress`` gets one line per fold."""
    from .evaluate import BASELINES
    from .holdout import cv_summary, kfold

    splits = kfold(pairs, folds, seed)
    if any(not te or not tr for tr, te in splits):
        raise HHError(
            f"{len(pairs)} pairs ({len({p.prompt for p in pairs})} prompts) cannot fill "
            f"{folds} folds: use fewer --folds or more data"
        )
    names = ["model", *(b for b in BASELINES if b != "random")]
    hyperparameters = {"l2": l2, "harm_weight": harm_weight, "max_iter": max_iter}
    rows = []
    for j, (tr, te) in enumerate(splits):
        row = _fold(pairs, tr, te, j, folds, seed, names, hyperparameters, n_jobs)
        rows.append(row)
        if progress:
            progress(
                f"fold {j + 1}/{folds}: accuracy {row['model']['accuracy']:.3f} "
                f"on {len(te):,} pairs"
            )
    return {
        "pairs": len(pairs),
        "folds": folds,
        "seed": seed,
        "grouped_by": "prompt",
        "data": list(data),
        "hyperparameters": hyperparameters,
        "per_fold": rows,
        "summary": cv_summary(rows, names),
    }


def _fold(
    pairs: Sequence[Any],
    tr: list[int],
    te: list[int],
    j: int,
    folds: int,
    seed: int,
    names: list[str],
    hyperparameters: dict[str, Any],
    n_jobs: int,
) -> dict[str, Any]:
    """Fold ``j``: the model trained on ``tr`` and every name's accuracy on ``te``."""
    from .evaluate import BASELINES
    from .holdout import margin_accuracy
    from .model import train_pm

    train_pairs, test_pairs = [pairs[i] for i in tr], [pairs[i] for i in te]
    model = train_pm(train_pairs, **hyperparameters, n_jobs=n_jobs, desc=f"fold {j + 1}/{folds}")
    row: dict[str, Any] = {"fold": j + 1, "train_pairs": len(tr), "test_pairs": len(te)}
    for name in names:
        c, r = (
            model.score_pairs(test_pairs, n_jobs=n_jobs)
            if name == "model"
            else BASELINES[name](test_pairs, seed)
        )
        row[name] = margin_accuracy(c, r)
    return row
