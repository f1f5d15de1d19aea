"""Honest evaluation of any reward model on preference pairs.

Input is always two scores per pair (chosen, rejected), wherever they come from: our PM, a
baseline, a scores file, a Hugging Face model. From them:

- accuracy = pairs where chosen scores strictly higher / all pairs. Equal scores are ties:
  counted and reported separately, never as correct;
- a seeded bootstrap 95% interval (pairs resampled with replacement, percentile interval);
- calibration: the model's P(chosen > rejected) = sigmoid(s_chosen - s_rejected). Each pair is
  binned by the confidence of the model's pick, max(p, 1 - p), and the bin's mean confidence is
  compared with how often that pick was the human's: the reliability table and the expected
  calibration error ECE = sum_b (n_b / n) |accuracy_b - confidence_b|. Ties (confidence 0.5)
  count as not correct, like everywhere else;
- accuracy per subset, by number of human turns, and length-controlled: on pairs where the
  chosen response is shorter than the rejected one vs longer (equal lengths apart);
- baselines scored in the same run: ``random`` (seeded), ``longer wins``, ``shorter wins``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..bootstrap import bootstrap_mean
from ..errors import DataFormatError, HHError, require
from ..reader import read_objects

__all__ = [
    "BASELINES",
    "accuracy_summary",
    "calibration",
    "evaluate_scores",
    "evaluate_model",
    "baseline_scores",
    "pair_id",
    "read_scores_file",
]


def pair_id(pair) -> str:
    """The id a scores file uses for a pair: ``subset/split/index`` (index 0-based in its file)."""
    return f"{pair.subset}/{pair.split}/{pair.index}"


def _length(text: str) -> int:
    return len(text.strip())


def _random_scores(pairs, seed: int):
    np = require("numpy", "reward", "evaluation")
    rng = np.random.default_rng(seed)
    s = rng.standard_normal(2 * len(pairs))
    return s[: len(pairs)], s[len(pairs) :]


def _length_scores(pairs, sign: float):
    np = require("numpy", "reward", "evaluation")
    c = np.array([sign * _length(p.chosen_response) for p in pairs], dtype=float)
    r = np.array([sign * _length(p.rejected_response) for p in pairs], dtype=float)
    return c, r


#: Baselines: name -> function(pairs, seed) -> (chosen scores, rejected scores).
BASELINES: dict[str, Callable] = {
    "random": _random_scores,
    "longer wins": lambda pairs, seed: _length_scores(pairs, 1.0),
    "shorter wins": lambda pairs, seed: _length_scores(pairs, -1.0),
}


def baseline_scores(name: str, pairs, seed: int = 0):
    return BASELINES[name](pairs, seed)


def _interval(correct: Any, *, seed: int, resamples: int) -> list[float | None]:
    """The accuracy's percentile-bootstrap 95% interval (:func:`hhrlhf.bootstrap.bootstrap_mean`)."""
    out = bootstrap_mean(correct.astype(float), seed=seed, resamples=resamples)
    return [out["low"], out["high"]]


def accuracy_summary(margin, *, seed: int = 0, n_boot: int = 1000) -> dict:
    """n, correct, ties, wrong, accuracy (ties not correct) and its bootstrap 95% interval."""
    np = require("numpy", "reward", "evaluation")
    margin = np.asarray(margin, dtype=float)
    n = len(margin)
    correct = margin > 0
    ties = int(np.sum(margin == 0))
    return {
        "n": n,
        "correct": int(correct.sum()),
        "ties": ties,
        "wrong": int(n - correct.sum() - ties),
        "accuracy": float(correct.mean()) if n else None,
        "ci95": _interval(correct, seed=seed, resamples=n_boot),
    }


def calibration(margin, *, bins: int = 10) -> dict:
    """Reliability table and ECE of P(chosen > rejected) = sigmoid(margin), by confidence bin."""
    np = require("numpy", "reward", "evaluation")
    from .loss import sigmoid

    margin = np.asarray(margin, dtype=float)
    p = sigmoid(margin)
    conf = np.maximum(p, 1 - p)
    hit = margin > 0  # the model's pick is the human's pick; a tie picks nothing
    edges = np.linspace(0.5, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, bins - 1)
    table, ece, n = [], 0.0, len(margin)
    for b in range(bins):
        sel = which == b
        k = int(sel.sum())
        row = {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "n": k,
            "confidence": None,
            "accuracy": None,
        }
        if k:
            confidence = float(conf[sel].mean())
            accuracy = float(hit[sel].mean())
            row["confidence"] = confidence
            row["accuracy"] = accuracy
            ece += k / n * abs(accuracy - confidence)
        table.append(row)
    return {"ece": float(ece) if n else None, "bins": table}


def evaluate_scores(
    pairs,
    chosen_scores,
    rejected_scores,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    bins: int = 10,
    with_calibration: bool = True,
) -> dict:
    """The full report for one set of scores (see the module docstring)."""
    np = require("numpy", "reward", "evaluation")
    pairs = list(pairs)
    margin = np.asarray(chosen_scores, dtype=float) - np.asarray(rejected_scores, dtype=float)
    if len(margin) != len(pairs):
        raise HHError(f"{len(margin)} scores for {len(pairs)} pairs")
    if np.isnan(margin).any():
        raise HHError("scores contain NaN")

    def group(keys) -> dict:
        out = {}
        keys = np.asarray(keys, dtype=object)
        for key in sorted(set(keys.tolist()), key=lambda v: (isinstance(v, str), v)):
            out[key] = accuracy_summary(margin[keys == key], seed=seed, n_boot=n_boot)
        return out

    lc = np.array([_length(p.chosen_response) for p in pairs])
    lr = np.array([_length(p.rejected_response) for p in pairs])
    turns = [min(p.human_turns, 5) for p in pairs]
    length = np.where(lc < lr, "chosen shorter", np.where(lc > lr, "chosen longer", "same length"))
    report = {
        "overall": accuracy_summary(margin, seed=seed, n_boot=n_boot),
        "subsets": group([str(p.subset) for p in pairs]),
        "by_turns": {("5+" if k == 5 else str(k)): v for k, v in group(turns).items()},
        "length_controlled": group(length.tolist()),
    }
    if with_calibration:
        report["calibration"] = calibration(margin, bins=bins)
    return report


def evaluate_model(
    model_or_scores,
    pairs,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    bins: int = 10,
    baselines: bool = True,
    n_jobs: int = 1,
) -> dict:
    """Evaluate a model (anything with ``score_pairs``) or a ``(chosen, rejected)`` tuple of
    scores on ``pairs``, with the baselines in the same run under ``"baselines"``."""
    pairs = list(pairs)
    if hasattr(model_or_scores, "score_pairs"):
        chosen, rejected = model_or_scores.score_pairs(pairs, n_jobs=n_jobs)
    else:
        chosen, rejected = model_or_scores
    report = evaluate_scores(pairs, chosen, rejected, seed=seed, n_boot=n_boot, bins=bins)
    if baselines:
        report["baselines"] = {
            name: evaluate_scores(
                pairs, *fn(pairs, seed), seed=seed, n_boot=n_boot, with_calibration=False
            )
            for name, fn in BASELINES.items()
        }
    return report


def read_scores_file(path, pairs) -> tuple:
    """Scores for ``pairs`` from a JSONL file of ``{"id", "chosen", "rejected"}`` rows.

    ``id`` is :func:`pair_id` (``subset/split/index``); the score keys may also be spelled
    ``chosen_score`` / ``rejected_score``. Every pair needs exactly one row; rows for pairs
    not being evaluated are ignored. Errors name the file and line.
    """
    np = require("numpy", "reward", "evaluation")
    path = Path(path)
    wanted = {pair_id(p): i for i, p in enumerate(pairs)}
    chosen = np.full(len(pairs), np.nan)
    rejected = np.full(len(pairs), np.nan)
    seen: dict[str, int] = {}
    for lineno, row in read_objects(path):
        if not isinstance(row, dict) or "id" not in row:
            raise DataFormatError(path, lineno, 'expected an object with "id"')
        values = []
        for key in ("chosen", "rejected"):
            v = row.get(key, row.get(f"{key}_score"))
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise DataFormatError(path, lineno, f'"{key}" must be a finite number, got {v!r}')
            values.append(float(v))
        pid = str(row["id"])
        if pid in seen:
            raise DataFormatError(path, lineno, f"duplicate id {pid!r} (first on line {seen[pid]})")
        seen[pid] = lineno
        if pid in wanted:
            chosen[wanted[pid]], rejected[wanted[pid]] = values
    missing = [pid for pid, i in wanted.items() if math.isnan(chosen[i])]
    if missing:
        raise DataFormatError(
            path, None, f"no scores for {len(missing)} of {len(pairs)} pairs (first: {missing[0]})"
        )
    return chosen, rejected
