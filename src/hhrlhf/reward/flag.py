"""Which pairs to trust: cross-fitted mislabel flags (``hh pm flag``).

Every pair is scored only by preference models that never saw it: the pairs are split into
``folds`` folds grouped by prompt (:func:`.holdout.kfold`, the folds of ``hh pm cv``), a PM is
trained on all folds but one and scores the one left out, and this is repeated with ``seeds``
seeds (other folds). A pair's ``margin`` is the mean of its out-of-fold margins
``r(chosen) - r(rejected)`` over the seeds, ``margin_sd`` their standard deviation (sample,
0 with one seed). A negative margin means models trained on the other pairs prefer the
rejected response.

``p_mislabelled`` is Bradley-Terry's ``sigmoid(-margin / T)`` with one temperature ``T``
fitted by maximum likelihood on the out-of-fold margins and the labels as given
(``max_T sum_i log sigmoid(margin_i / T)``: a logistic calibration with one parameter and no
intercept, since swapping a pair's sides negates its margin). ``T`` is itself cross-fitted:
the pairs of each fold (seed 0's folds) get the ``T`` fitted on the other folds' pairs. It
is the calibrated probability, *as far as the PM can tell from the text*, that a preference
between these two responses goes the other way: when pairs with a given margin have their
label reversed 30% of the time across the data, they get about 0.3. It is not the
probability that the annotator erred: a pair of two equally good responses is near 0.5
however carefully it was labelled, and a label the PM cannot understand (a fact the features
miss) looks reversed when it is right. A flag is the model's disagreement, not the truth.

``class`` is read off ``p_mislabelled`` with two thresholds (:class:`Thresholds`):
``likely_mislabelled`` at or above ``likely`` (default 0.6: the PM, calibrated, finds the
other order at least 3:2 more probable than the given one), ``clear`` at or below ``clear``
(default 0.4: the given order at least 3:2 more probable), ``ambiguous`` between. On the real
harmless-base test file with 10% of its labels flipped, 0.6 flagged 15% of the pairs, a
quarter of them flipped ones (bench/RESULTS-pm.md); 0.5 would flag every pair the PM gets
wrong, over a third of them.

Several judges (:func:`judge_margins`: saved models trained elsewhere) can vote, by
PrefCleanBench's multi-judge rule: each judge's margin is calibrated the same way, a judge
votes "reversed" when its own ``p_mislabelled`` reaches ``likely``, a judge abstains on the
pairs it was trained on (its fingerprints, :mod:`.holdout`), ``p_mislabelled`` is the mean
over the judges that vote, and a pair is ``likely_mislabelled`` only when it reaches
``likely`` *and* a strict majority of those judges vote "reversed" (``vote="majority"``,
the default) or every one of them does (``vote="all"``); a pair that reaches ``likely``
without the votes is ``ambiguous``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ..errors import DataFormatError, HHError, require

__all__ = [
    "CLASSES",
    "VOTES",
    "Thresholds",
    "FlagResult",
    "FlagRow",
    "cross_fit",
    "fit_temperature",
    "calibrate",
    "judge_margins",
    "flag_pairs",
    "class_counts",
    "write_flags",
    "read_flags",
    "flag_margins",
]

#: The classes, most doubtful first.
CLASSES = ("likely_mislabelled", "ambiguous", "clear")
#: Multi-judge rules.
VOTES = ("majority", "all")


@dataclass(frozen=True)
class Thresholds:
    """``p_mislabelled`` at or above ``likely``: likely_mislabelled; at or below ``clear``:
    clear; between: ambiguous."""

    likely: float = 0.6
    clear: float = 0.4

    def __post_init__(self) -> None:
        if not 0 < self.clear < self.likely <= 1:
            raise ValueError(
                f"thresholds need 0 < clear < likely <= 1, not clear {self.clear}, "
                f"likely {self.likely}"
            )

    def classify(self, p: float) -> str:
        return CLASSES[0] if p >= self.likely else CLASSES[2] if p <= self.clear else CLASSES[1]


# functional syntax: ``class`` is a keyword
_FlagRowScored = TypedDict(
    "_FlagRowScored",
    {
        "subset": str,
        "split": str,
        "index": int,
        "margin": float,
        "margin_sd": float,
        "p_mislabelled": float,
        "class": str,
    },
)


class FlagRow(_FlagRowScored, total=False):
    """One pair's flag (a JSON line of ``hh pm flag``): the pair's ``subset``, ``split`` and
    ``index``, its ``margin`` (``margin_sd``), ``p_mislabelled`` and ``class``; with judges,
    each judge's margin (``judges``, None where it abstains) and the ``votes`` "reversed" of
    the ``voters``; with injected flips, whether this pair's label was flipped."""

    judges: dict[str, float | None]
    votes: int
    voters: int
    injected_flip: bool


@dataclass
class FlagResult:
    """What :func:`flag_pairs` found: one row per pair (the JSON lines of ``hh pm flag``)."""

    rows: list[FlagRow]
    #: Out-of-fold margins, one array per seed.
    margins: list[Any]
    #: The fold of every pair, per seed (index: seed).
    folds: list[Any]
    #: The temperatures fitted for each fold of seed 0, per judge.
    temperatures: dict[str, list[float]] = field(default_factory=dict)
    #: The solvers the fits used (``dual`` / ``primal`` / a backend name), counted.
    solvers: dict[str, int] = field(default_factory=dict)


def cross_fit(
    pairs: Sequence[Any], fitter: Any, *, folds: int = 5, seeds: int = 2
) -> tuple[list[Any], list[Any]]:
    """``(margins, fold_ids)``: per seed, every pair's margin from the fold model that did not
    see it, and every pair's fold. ``fitter.margins(train, predict, desc=...)`` fits."""
    np = require("numpy", "reward", "mislabel flags")
    from .holdout import kfold

    out, fold_ids = [], []
    for seed in range(seeds):
        splits = kfold(pairs, folds, seed)
        if any(not tr or not te for tr, te in splits):
            raise HHError(
                f"{len(pairs)} pairs ({len({p.prompt for p in pairs})} prompts) cannot fill "
                f"{folds} folds: use fewer --folds or more data"
            )
        margin = np.full(len(pairs), np.nan)
        ids = np.zeros(len(pairs), dtype=np.int64)
        for j, (tr, te) in enumerate(splits):
            desc = f"seed {seed + 1}/{seeds} fold {j + 1}/{folds}"
            margin[te] = fitter.margins(np.asarray(tr), np.asarray(te), desc=desc)
            ids[te] = j
        out.append(margin)
        fold_ids.append(ids)
    return out, fold_ids


def fit_temperature(margins: Any) -> float:
    """The ``T`` maximising ``sum log sigmoid(margin / T)`` (labels as given), in
    [1e-3, 1e3]; 1 when there is nothing to fit."""
    np = require("numpy", "reward", "mislabel flags")
    optimize = require("scipy.optimize", "reward", "mislabel flags")
    m = np.asarray(margins, dtype=float)
    m = m[np.isfinite(m)]
    if not len(m) or not np.any(m):
        return 1.0
    res = optimize.minimize_scalar(
        lambda log_t: float(np.logaddexp(0.0, -m / math.exp(log_t)).sum()),
        bounds=(math.log(1e-3), math.log(1e3)),
        method="bounded",
    )
    return float(math.exp(res.x))


def calibrate(margins: Any, fold_ids: Any) -> tuple[Any, list[float]]:
    """``(p_mislabelled, temperatures)``: ``sigmoid(-margin / T_k)`` for the pairs of fold
    ``k``, ``T_k`` fitted on the other folds' pairs (NaN margins stay NaN)."""
    np = require("numpy", "reward", "mislabel flags")
    from .loss import sigmoid

    m = np.asarray(margins, dtype=float)
    p = np.full(len(m), np.nan)
    temps = []
    for k in range(int(fold_ids.max()) + 1 if len(fold_ids) else 0):
        here = fold_ids == k
        t = fit_temperature(m[~here])
        temps.append(t)
        ok = here & np.isfinite(m)
        p[ok] = sigmoid(-m[ok] / t)
    return p, temps


def judge_margins(model: Any, pairs: Sequence[Any], directory: str | Path | None = None) -> Any:
    """A saved model's margins on ``pairs``; NaN (abstains) on the pairs it was trained on,
    by the fingerprints its ``directory`` keeps."""
    np = require("numpy", "reward", "mislabel flags")
    from .holdout import pair_fingerprint, read_fingerprints

    chosen, rejected = model.score_pairs(list(pairs))
    m = np.asarray(chosen, dtype=float) - np.asarray(rejected, dtype=float)
    seen = read_fingerprints(directory) if directory is not None else None
    if seen:
        m[[pair_fingerprint(p) in seen for p in pairs]] = np.nan
    return m


def _combine(
    p_judges: dict[str, Any], thresholds: Thresholds, vote: str
) -> tuple[Any, Any, Any, Any]:
    """``(p, classes, votes, voters)`` over judges (NaN: abstains)."""
    np = require("numpy", "reward", "mislabel flags")
    ps = np.vstack(list(p_judges.values()))
    present = np.isfinite(ps)
    voters = present.sum(axis=0)
    votes = (np.where(present, ps, 0.0) >= thresholds.likely).sum(axis=0)
    p = np.where(present, ps, 0.0).sum(axis=0) / np.maximum(voters, 1)
    passed = votes * 2 > voters if vote == "majority" else votes == voters
    classes = [thresholds.classify(float(x)) for x in p]
    classes = [
        CLASSES[1] if c == CLASSES[0] and not ok else c
        for c, ok in zip(classes, passed.tolist(), strict=True)
    ]
    return p, classes, votes, voters


def flag_pairs(
    pairs: Sequence[Any],
    fitter: Any,
    *,
    folds: int = 5,
    seeds: int = 2,
    thresholds: Thresholds | None = None,
    judges: dict[str, Any] | None = None,
    vote: str = "majority",
) -> FlagResult:
    """Cross-fitted flags of ``pairs`` (see the module docstring). ``judges``: more judges'
    margins on the same pairs (NaN where one abstains), by name."""
    np = require("numpy", "reward", "mislabel flags")
    if vote not in VOTES:
        raise ValueError(f"unknown vote rule {vote!r}; known: {', '.join(VOTES)}")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, not {seeds}")
    thresholds = thresholds or Thresholds()
    pairs = list(pairs)
    margins, fold_ids = cross_fit(pairs, fitter, folds=folds, seeds=seeds)
    stacked = np.vstack(margins)
    margin = stacked.mean(axis=0)
    sd = stacked.std(axis=0, ddof=1) if seeds > 1 else np.zeros(len(pairs))
    all_margins = {"cv": margin, **(judges or {})}
    p_judges, temps = {}, {}
    for name, m in all_margins.items():
        p_judges[name], temps[name] = calibrate(m, fold_ids[0])
    p, classes, votes, voters = _combine(p_judges, thresholds, vote)
    rows = []
    for i, pair in enumerate(pairs):
        row: FlagRow = {
            "subset": pair.subset,
            "split": pair.split,
            "index": pair.index,
            "margin": round(float(margin[i]), 6),
            "margin_sd": round(float(sd[i]), 6),
            "p_mislabelled": round(float(p[i]), 6),
            "class": classes[i],
        }
        if judges:
            row["judges"] = {
                name: None if not math.isfinite(m[i]) else round(float(m[i]), 6)
                for name, m in all_margins.items()
            }
            row["votes"], row["voters"] = int(votes[i]), int(voters[i])
        rows.append(row)
    used = getattr(fitter, "used", [])
    return FlagResult(
        rows, margins, fold_ids, temps, {s: used.count(s) for s in dict.fromkeys(used)}
    )


def class_counts(rows: Sequence[FlagRow]) -> list[dict[str, Any]]:
    """Per subset and split: pairs, and how many of each class, then a total row."""
    groups: dict[tuple[Any, Any], dict[str, Any]] = {}
    total: dict[str, Any] = {"subset": "all", "split": "", "pairs": 0, **dict.fromkeys(CLASSES, 0)}
    for row in rows:
        key = (row["subset"], row["split"])
        g = groups.setdefault(
            key,
            {"subset": key[0], "split": key[1], "pairs": 0, **dict.fromkeys(CLASSES, 0)},
        )
        for target in (g, total):
            target["pairs"] += 1
            target[row["class"]] += 1
    return [*groups.values(), total]


def write_flags(rows: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """One JSON line per row."""
    import orjson

    with open(path, "wb") as fh:
        for row in rows:
            fh.write(orjson.dumps(row) + b"\n")


def _check_row(path: Path, lineno: int, row: Any) -> tuple[Any, Any, int]:
    if not isinstance(row, dict):
        raise DataFormatError(path, lineno, "expected a JSON object (a row of hh pm flag)")
    for key in ("subset", "split", "index", "margin", "p_mislabelled", "class"):
        if key not in row:
            raise DataFormatError(path, lineno, f'no "{key}" (not a file of hh pm flag?)')
    index = row["index"]
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise DataFormatError(path, lineno, f'"index" must be an integer >= 0, got {index!r}')
    for key in ("margin", "p_mislabelled"):
        v = row[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise DataFormatError(path, lineno, f'"{key}" must be a finite number, got {v!r}')
    if row["class"] not in CLASSES:
        raise DataFormatError(
            path, lineno, f"unknown class {row['class']!r} (known: {', '.join(CLASSES)})"
        )
    return row["subset"], row["split"], index


def read_flags(
    path: str | Path, *, keep: Callable[[dict[str, Any]], bool] | None = None
) -> dict[tuple[Any, Any, int], dict[str, Any]]:
    """The rows of a flags file by ``(subset, split, index)``; errors name the file and line
    (a malformed row, a pair twice)."""
    from ..reader import read_objects

    path = Path(path)
    out: dict[tuple[Any, Any, int], dict[str, Any]] = {}
    first: dict[tuple[Any, Any, int], int] = {}
    for lineno, row in read_objects(path):
        key = _check_row(path, lineno, row)
        if key in first:
            raise DataFormatError(
                path, lineno, f"pair {key[0]}/{key[1]}/{key[2]} again (first on line {first[key]})"
            )
        first[key] = lineno
        if keep is None or keep(row):
            out[key] = row
    return out


def flag_margins(
    flags: dict[tuple[Any, Any, int], dict[str, Any]], pairs: Sequence[Any], path: Any = None
) -> list[float]:
    """The ``margin`` of each of ``pairs`` in ``flags`` (:func:`read_flags`); a pair without
    one is an error naming the flags file ``path``."""
    out = []
    for p in pairs:
        row = flags.get((p.subset, p.split, p.index))
        if row is None:
            raise HHError(
                f"{path or 'the flags'}: no row for pair {p.subset}/{p.split}/{p.index} "
                "(flags of other data?)"
            )
        out.append(float(row["margin"]))
    return out
