"""One evaluation as ``hh pm eval`` runs it, apart from its options and printing: the pairs a
``--holdout`` model held out (:func:`held_out_pairs`), the target (a saved model, a scores
file or a Hugging Face reward model: :func:`load_target`), whether the evaluated pairs or
files were trained on (:func:`check_training_data`), and the report with all of that in it
(:func:`evaluate_target`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HHError
from ..layout import DataFile

__all__ = [
    "TrainingCheck",
    "held_out_pairs",
    "load_target",
    "check_training_data",
    "evaluate_target",
]


@dataclass(frozen=True, slots=True)
class TrainingCheck:
    """What of the evaluated data the model was trained on.

    ``trained``: how many of the pairs (by the fingerprints a saved model keeps), None when it
    keeps none; ``overlap``: the evaluated files with the checksum of a training file, None
    when the model has no record of them; ``holdout``: the ``--holdout`` fraction the model
    was trained with, if any.
    """

    trained: int | None
    overlap: list[str] | None
    holdout: float | None = None


def held_out_pairs(pairs: list[Any], fraction: float) -> list[Any]:
    """The pairs ``hh pm train --holdout FRACTION`` held out of ``pairs``; an error when none."""
    from .holdout import split_holdout

    held: list[Any] = split_holdout(pairs, fraction)[1]
    if not held:
        raise HHError(f"--holdout {fraction} holds out no pair of this data")
    return held


def load_target(
    model_path: Path | None,
    scores_path: Path | None,
    hf_model: str | None,
    pairs: Sequence[Any],
    max_length: int,
) -> tuple[Any, str]:
    """``(target, name)``: the one of a saved model, a scores file (for ``pairs``) and a
    Hugging Face reward model that is given; a transformers model reads ``max_length`` tokens
    per text."""
    target: Any
    if model_path:
        from .backends import load_model

        target, name = load_model(model_path), str(model_path)
    elif scores_path:
        from .evaluate import read_scores_file

        target, name = read_scores_file(scores_path, pairs), str(scores_path)
    else:
        from .hf import HFRewardModel

        assert hf_model is not None  # the CLI asks for exactly one of the three
        target, name = HFRewardModel(hf_model, max_length=max_length), hf_model
    if getattr(target, "backend", None) == "transformers":
        target.max_length = max_length
    return target, name


def check_training_data(
    target: Any, model_path: Path | None, pairs: Sequence[Any], files: Sequence[DataFile]
) -> TrainingCheck:
    """Whether ``target`` was trained on ``pairs`` (a saved model's fingerprints) and on
    ``files`` (the checksums of its training record)."""
    from .holdout import read_fingerprints, trained_on
    from .saved import training_overlap

    meta = getattr(target, "meta", None)
    overlap = training_overlap(meta, files)
    fingerprints = read_fingerprints(model_path) if model_path else None
    if fingerprints is None:
        return TrainingCheck(None, overlap)
    record = (meta or {}).get("training_data")
    fraction = ((record or {}).get("holdout") or {}).get("fraction")
    return TrainingCheck(len(trained_on(pairs, fingerprints)), overlap, fraction)


def evaluate_target(
    target: Any,
    name: str,
    pairs: Sequence[Any],
    check: TrainingCheck,
    *,
    seed: int,
    n_boot: int,
    bins: int,
    n_jobs: int,
    started: float,
) -> dict[str, Any]:
    """:func:`~hhrlhf.reward.evaluate.evaluate_model`'s report, with the model's name, the
    truncation of a transformers model, what of the data it was trained on, and the seconds
    since ``started`` (a :func:`time.perf_counter`)."""
    from .evaluate import evaluate_model

    report: dict[str, Any] = evaluate_model(
        target, pairs, seed=seed, n_boot=n_boot, bins=bins, n_jobs=n_jobs
    )
    report["model"] = name
    cut = getattr(target, "pair_truncation", None)
    if cut:
        report["truncation"] = cut
    if check.trained is not None:
        report["evaluated_on_training_data"] = check.trained > 0
        report["training_pairs_evaluated"] = check.trained
    else:
        report["evaluated_on_training_data"] = (
            None if check.overlap is None else bool(check.overlap)
        )
    report["training_data_files"] = check.overlap or []
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report
