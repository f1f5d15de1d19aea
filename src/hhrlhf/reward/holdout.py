"""Held-out pairs without a held-out file: stable, prompt-grouped splits and folds, and the
fingerprints that let an evaluation notice pairs a model was trained on.

A pair's side is drawn from a hash of its prompt, normalised as the train/test leak check
normalises it (lower case, whitespace collapsed), never from its position or a random state:

- :func:`split_holdout`: ``hh pm train --holdout FRACTION`` trains on one side and holds out
  the other. The same prompt text lands on the same side on every run and every machine, and
  pairs that share a prompt never straddle the two sides;
- :func:`fold_of` / :func:`kfold`: ``hh pm cv``'s folds, grouped by prompt the same way and
  seeded (another seed draws other folds);
- :func:`pair_fingerprint`: 8 bytes of the sha256 of a pair's two transcripts. A saved model
  keeps the fingerprints of its training pairs (:data:`FINGERPRINTS_FILE`), and
  :func:`trained_on` counts the evaluated pairs among them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "FINGERPRINTS_FILE",
    "prompt_key",
    "holdout_value",
    "split_holdout",
    "fold_of",
    "kfold",
    "pair_fingerprint",
    "write_fingerprints",
    "read_fingerprints",
    "trained_on",
    "margin_accuracy",
    "cv_summary",
]

#: The file of a model directory that holds its training pairs' fingerprints (8 bytes each,
#: sorted).
FINGERPRINTS_FILE = "training_pairs.bin"


def prompt_key(pair) -> str:
    """The prompt as the grouping sees it: lower case, whitespace collapsed."""
    return " ".join(pair.prompt.lower().split())


def _unit(text: str) -> float:
    """A number in [0, 1) drawn from ``text`` by sha256 (the same on every run and machine)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def holdout_value(pair) -> float:
    """The pair's place in [0, 1): held out when below the fraction."""
    return _unit("holdout\0" + prompt_key(pair))


def split_holdout(pairs: Iterable, fraction: float) -> tuple[list, list]:
    """``(train, held_out)``: about ``fraction`` of the prompts (with all their pairs) held out."""
    if not 0 < fraction < 1:
        raise ValueError(f"the holdout fraction must be between 0 and 1, not {fraction}")
    train: list = []
    held: list = []
    for p in pairs:
        (held if holdout_value(p) < fraction else train).append(p)
    return train, held


def fold_of(pair, k: int, seed: int = 0) -> int:
    """The fold (0 .. k-1) of ``pair``: by its prompt, seeded."""
    return int(_unit(f"fold\0{seed}\0{prompt_key(pair)}") * k)


def kfold(pairs: Sequence, k: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """``k`` (train indices, test indices) of ``pairs``, grouped by prompt and seeded."""
    if k < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {k}")
    folds = [fold_of(p, k, seed) for p in pairs]
    return [
        (
            [i for i, f in enumerate(folds) if f != j],
            [i for i, f in enumerate(folds) if f == j],
        )
        for j in range(k)
    ]


def pair_fingerprint(pair) -> bytes:
    """8 bytes of the sha256 of the pair's chosen and rejected transcripts."""
    h = hashlib.sha256(pair.chosen.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(pair.rejected.encode("utf-8", "surrogatepass"))
    return h.digest()[:8]


def write_fingerprints(pairs: Iterable, directory: str | os.PathLike) -> Path:
    """Write the fingerprints of ``pairs`` (sorted, without repeats) into a model directory."""
    path = Path(directory, FINGERPRINTS_FILE)
    path.write_bytes(b"".join(sorted({pair_fingerprint(p) for p in pairs})))
    return path


def read_fingerprints(directory: str | os.PathLike) -> frozenset[bytes] | None:
    """The training fingerprints a model directory keeps; None when it keeps none."""
    path = Path(directory, FINGERPRINTS_FILE)
    if not path.is_file():
        return None
    data = path.read_bytes()
    return frozenset(data[i : i + 8] for i in range(0, len(data) - len(data) % 8, 8))


def trained_on(pairs: Iterable, fingerprints: frozenset[bytes]) -> list:
    """The pairs among ``pairs`` whose fingerprint is in ``fingerprints``."""
    return [p for p in pairs if pair_fingerprint(p) in fingerprints]


def margin_accuracy(chosen_scores: Sequence[float], rejected_scores: Sequence[float]) -> dict:
    """``{"accuracy", "ties"}`` of paired scores: correct when the chosen response scores
    higher (a tie is not correct)."""
    import numpy as np

    margin = np.asarray(chosen_scores, dtype=float) - np.asarray(rejected_scores, dtype=float)
    return {"accuracy": float(np.mean(margin > 0)), "ties": int(np.sum(margin == 0))}


def cv_summary(rows: Sequence[dict], names: Sequence[str]) -> dict:
    """Per model name: the mean and standard deviation of its accuracy over the folds
    (``rows``, one dict per fold holding ``{name: {"accuracy", "ties"}}``) and its ties."""
    import numpy as np

    return {
        name: {
            "mean_accuracy": float(np.mean([r[name]["accuracy"] for r in rows])),
            "std": float(np.std([r[name]["accuracy"] for r in rows])),
            "ties": sum(r[name]["ties"] for r in rows),
        }
        for name in names
    }
