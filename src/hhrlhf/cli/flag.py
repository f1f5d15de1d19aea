"""``hh pm flag``: which pairs to trust (over :mod:`hhrlhf.reward.flag`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .options import (
    check_outputs,
    data_option,
    emit_json,
    force_option,
    json_option,
    lenient_option,
    pass_skipped,
    print_table,
    seed_option,
    subset_option,
)
from .pm import _load
from .pm_options import backend_kwargs, backend_options, fold_options

if TYPE_CHECKING:
    from ..reward.flag_run import FlagReport

__all__ = ["flag", "print_report"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _print_injected(inj: dict[str, Any]) -> None:
    click.echo(
        f"\n{inj['flipped']:,} labels flipped (rate {inj['rate']:g}, seed {inj['seed']}): "
        f"AUROC {inj['auroc']['value']:.3f} "
        f"(95% CI {inj['auroc']['low']:.3f}-{inj['auroc']['high']:.3f})"
    )
    rows = []
    for at in ("0.02", "0.05", "0.1", "likely"):
        p, r = inj[f"precision@{at}"], inj[f"recall@{at}"]
        rows.append(
            {
                "pairs": "likely_mislabelled" if at == "likely" else f"top {float(at):.0%}",
                "precision %": _pct(p["value"]),
                "precision 95% CI": f"{_pct(p['low'])}-{_pct(p['high'])}",
                "recall %": _pct(r["value"]),
                "recall 95% CI": f"{_pct(r['low'])}-{_pct(r['high'])}",
            }
        )
    print_table(rows)


def print_report(report: FlagReport) -> None:
    """The flag run's summary as ``hh pm flag`` and ``hh collect flag`` print it."""
    fits = ", ".join(f"{n} {s}" for s, n in report["fits"].items())
    click.echo(
        f"{report['folds']}-fold x {report['seeds']}-seed flags on {report['pairs']:,} pairs "
        f"(grouped by prompt; fits: {fits}; judges: {', '.join(report['judges'])})"
    )
    print_table(report["counts"])
    if "injected" in report:
        _print_injected(report["injected"])
    if "strata" in report:
        click.echo("\nstrata by margin (a PM trained on each alone, held-out accuracy):")
        print_table(
            [
                {
                    "stratum": s["stratum"],
                    "pairs": s["pairs"],
                    "margins": f"{s['margin_low']:.2f} to {s['margin_high']:.2f}",
                    "accuracy %": _pct(s["held_out_accuracy"]),
                    "95% CI": f"{_pct(s['ci95'][0])}-{_pct(s['ci95'][1])}",
                    **(
                        {"injected flips %": _pct(s["injected_flips"])}
                        if "injected_flips" in s
                        else {}
                    ),
                }
                for s in report["strata"]
            ]
        )


@click.command("flag")
@click.argument("subsets", nargs=-1)
@click.option(
    "--split",
    default=None,
    metavar="SPLIT",
    help="Split to flag (default: train where there is one, else the splits there).",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="FLAGS.jsonl: one JSON line per pair.",
)
@fold_options("pair")
@backend_options
@click.option(
    "--solver",
    type=click.Choice(["auto", "dual", "primal"]),
    default="auto",
    show_default=True,
    help="Linear backend: fit through the kernel (dual, up to a few thousand pairs) or the "
    "weights (primal); auto picks by the training fold's size.",
)
@click.option(
    "--likely",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.6,
    show_default=True,
    help="p_mislabelled at or above which a pair is likely_mislabelled.",
)
@click.option(
    "--clear",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.4,
    show_default=True,
    help="p_mislabelled at or below which a pair is clear (between: ambiguous).",
)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A saved model that votes too (repeatable); it abstains on the pairs it was trained on.",
)
@click.option(
    "--vote",
    type=click.Choice(["majority", "all"]),
    default="majority",
    show_default=True,
    help="With --judge: likely_mislabelled needs a strict majority of the judges, or all.",
)
@click.option(
    "--inject-flips",
    "inject_rate",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    metavar="RATE",
    help="Flip that share of the labels first and report how well the flags find them.",
)
@seed_option("Draws the flipped labels (--inject-flips).")
@click.option(
    "--strata",
    type=click.IntRange(2, None),
    default=None,
    metavar="N",
    help="Sort pairs by margin into N strata and report the held-out accuracy of a PM "
    "trained on each alone.",
)
@data_option
@subset_option
@lenient_option
@json_option
@force_option
@pass_skipped
def flag(
    subsets: tuple[str, ...],
    split: str | None,
    out: Path,
    folds: int,
    seeds: int,
    solver: str,
    likely: float,
    clear: float,
    judges: tuple[Path, ...],
    vote: str,
    inject_rate: float | None,
    seed: int,
    strata: int | None,
    data: str | None,
    file_subset: str | None,
    lenient: bool,
    as_json: bool,
    force: bool,
    skipped: list[Any],
    backend: str,
    **backend_given: Any,
) -> None:
    """Flag the pairs whose label the PM doubts, each scored only by models that never saw it.

    K folds grouped by prompt (as hh pm cv) x --seeds draws; a pair's margin is the mean of
    its out-of-fold r(chosen) - r(rejected), p_mislabelled a calibrated probability that the
    label is reversed (docs/pm.md, "Which pairs to trust"). A flag is the model's
    disagreement, not the truth.

    \b
    Example:
      hh pm flag harmless-base --data sample --out flags.jsonl
      hh pm flag harmless-base --split test --out flags.jsonl --inject-flips 0.1 --strata 5
    """
    from ..reward.flag import Thresholds, write_flags
    from ..reward.flag_run import run_flag

    if not clear < likely:
        raise click.UsageError(f"--clear ({clear}) must be below --likely ({likely})")
    options = backend_kwargs(backend, **backend_given)
    check_outputs(force, out=(out, "file"))
    _, pairs = _load(subsets, file_subset, split, data, "train", lenient, skipped)
    rows, report = run_flag(
        pairs,
        backend=backend,
        options=options,
        solver=solver,
        folds=folds,
        seeds=seeds,
        thresholds=Thresholds(likely=likely, clear=clear),
        judges=judges,
        vote=vote,
        inject=None if inject_rate is None else (inject_rate, seed),
        strata=strata,
    )
    write_flags(rows, out)
    click.echo(f"wrote {len(rows):,} rows to {out}", err=True)
    if as_json:
        emit_json(report)
    else:
        print_report(report)
