"""One flagging run as ``hh pm flag`` makes it: the judge, the saved judges, injected flips,
the flags, and the reports, in one call (:func:`run_flag`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypedDict

from .flag import FlagRow, Thresholds, class_counts, flag_pairs, judge_margins

__all__ = ["FlagReport", "make_fitter", "load_judges", "run_flag"]


class _FlagRun(TypedDict):
    pairs: int
    folds: int
    seeds: int
    grouped_by: str
    backend: str
    fits: dict[str, int]
    thresholds: dict[str, Any]
    judges: list[str]
    vote: str
    temperatures: dict[str, list[float]]
    counts: list[dict[str, Any]]


class FlagReport(_FlagRun, total=False):
    """What ``hh pm flag --json`` prints (:func:`run_flag`): the run (pairs, folds, seeds,
    the fits' solvers counted, thresholds, judges, the fitted temperatures, the class
    counts per subset and split); ``extra_training``, ``injected`` and ``strata`` when asked
    for; ``seconds`` always, written last."""

    extra_training: dict[str, int]
    injected: dict[str, Any]
    strata: list[dict[str, Any]]
    seconds: float


def make_fitter(
    pairs: Sequence[Any], backend: str = "linear", solver: str = "auto", **options: Any
) -> Any:
    """The fitter of ``backend`` (:mod:`.flag_fit`) with its training ``options`` (those of
    :func:`.backends.train_model`); ``solver`` is the linear PM's."""
    from .flag_fit import BackendFitter, LinearFitter

    if backend == "linear":
        return LinearFitter(pairs, solver=solver, **options)
    return BackendFitter(pairs, backend, **options)


def load_judges(directories: Sequence[str | Path], pairs: Sequence[Any]) -> dict[str, Any]:
    """Each saved model's margins on ``pairs`` (NaN on those it was trained on), by path."""
    from .backends import load_model

    out = {}
    for d in directories:
        out[str(d)] = judge_margins(load_model(d), pairs, d)
    return out


def run_flag(
    pairs: Sequence[Any],
    *,
    backend: str = "linear",
    options: dict[str, Any] | None = None,
    solver: str = "auto",
    folds: int = 5,
    seeds: int = 2,
    thresholds: Thresholds | None = None,
    judges: Sequence[str | Path] = (),
    vote: str = "majority",
    inject: tuple[float, int] | None = None,
    strata: int | None = None,
    resamples: int = 1000,
    extra: Sequence[Any] = (),
) -> tuple[list[FlagRow], FlagReport]:
    """``(rows, report)``: the flag rows (:func:`.flag.flag_pairs`) and what ``hh pm flag
    --json`` prints. ``inject``: ``(rate, seed)`` of labels flipped first, and the report
    says how well the flags find them (:func:`.flag_eval.flip_report`); ``strata``: that
    many margin strata (:func:`.flag_eval.strata_report`). ``extra``: more pairs in every
    fold's training set, never scored (:class:`.flag_fit.ExtraTraining`); those sharing a
    prompt with one of ``pairs`` are left out (the folds keep a prompt on one side), and the
    report counts them (``extra_training``)."""
    from .flag_eval import flip_report, inject_flips, strata_report
    from .flag_fit import ExtraTraining

    if extra and strata:
        raise ValueError("strata train on one stratum alone: not with extra training pairs")

    t0 = time.perf_counter()
    thresholds = thresholds or Thresholds()
    flipped = None
    if inject is not None:
        pairs, flipped = inject_flips(pairs, *inject)
    prompts = {p.prompt for p in pairs}
    kept = [p for p in extra if p.prompt not in prompts]
    fitter = make_fitter([*pairs, *kept], backend, solver, **(options or {}))
    if extra:
        fitter = ExtraTraining(fitter, len(pairs), len(kept))
    votes = load_judges(judges, pairs)
    result = flag_pairs(
        pairs, fitter, folds=folds, seeds=seeds, thresholds=thresholds, judges=votes, vote=vote
    )
    rows = result.rows
    report: FlagReport = {
        "pairs": len(rows),
        "folds": folds,
        "seeds": seeds,
        "grouped_by": "prompt",
        "backend": backend,
        "fits": result.solvers,
        "thresholds": asdict(thresholds),
        "judges": ["cv", *votes],
        "vote": vote,
        "temperatures": result.temperatures,
        "counts": class_counts(rows),
    }
    if extra:
        report["extra_training"] = {"pairs": len(kept), "shared_prompt": len(extra) - len(kept)}
    if flipped is not None:
        for row, f in zip(rows, flipped.tolist(), strict=True):
            row["injected_flip"] = f
        p = [r["p_mislabelled"] for r in rows]
        report["injected"] = {
            "rate": inject[0] if inject else None,
            "seed": inject[1] if inject else None,
            "flipped": int(flipped.sum()),
            **flip_report(p, flipped, [r["class"] for r in rows], resamples=resamples),
        }
    if strata:
        report["strata"] = strata_report(
            fitter, [r["margin"] for r in rows], result.folds[0], strata=strata, flipped=flipped
        )
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return rows, report
