"""Training a preference model as ``hh pm train`` does, apart from its options and printing:
the prompt holdout (:func:`hold_out`), the record of what the model was trained on
(:func:`training_record`), the model written whole into its directory (:func:`train_into`),
and its accuracy on the pairs held out (:func:`held_out_accuracy`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import HHError
from ..layout import DataFile, resolve_source
from ..outputs import replace_dir

__all__ = ["hold_out", "training_record", "train_into", "held_out_accuracy"]


def hold_out(pairs: list[Any], fraction: float) -> tuple[list[Any], list[Any]]:
    """``(train, held_out)`` by :func:`~hhrlhf.reward.holdout.split_holdout`; an error when
    either side is empty."""
    from .holdout import split_holdout

    train, held = split_holdout(pairs, fraction)
    if not train or not held:
        raise HHError(
            f"--holdout {fraction} leaves {len(train)} pairs to train on and {len(held)} "
            "held out: choose another fraction, or select more data"
        )
    return train, held


def training_record(
    files: Sequence[DataFile],
    data: str | None,
    pairs: Sequence[Any],
    held: Sequence[Any] = (),
    fraction: float | None = None,
) -> dict[str, Any]:
    """Where the pairs came from (source, subsets, splits, rows, each file's sha256), and the
    holdout when pairs were held out."""
    from .saved import describe_training_data

    info: dict[str, Any] = describe_training_data(
        pairs, files=files, source=resolve_source(data).label
    )
    if held:
        info["holdout"] = {"fraction": fraction, "held_out_pairs": len(held), "by": "prompt"}
    return info


def train_into(
    backend: str,
    pairs: Sequence[Any],
    out: Path,
    info: dict[str, Any],
    progress: Callable[[str], None],
    **options: Any,
) -> Any:
    """Train ``backend`` on ``pairs`` into the directory ``out``, never leaving a mix of an
    old model's files and the new (:func:`~hhrlhf.outputs.replace_dir`)."""
    from .backends import train_model

    with replace_dir(out) as tmp:
        return train_model(backend, pairs, tmp, training_data=info, progress=progress, **options)


def held_out_accuracy(model: Any, held: Sequence[Any]) -> dict[str, Any]:
    """Accuracy (ties not correct) of ``model`` on the held-out pairs."""
    from .holdout import margin_accuracy

    return {"pairs": len(held), **margin_accuracy(*model.score_pairs(held))}
