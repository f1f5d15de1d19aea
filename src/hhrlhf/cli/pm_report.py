"""How the ``hh pm`` commands print their results for a person: the trained model's line, the
evaluation tables and their warnings, the cross-validation table, the scoring summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..reward.eval_run import TrainingCheck
from .options import print_table

__all__ = [
    "print_trained",
    "print_report",
    "print_evaluation",
    "warn_training_data",
    "warn_truncation",
    "print_cv",
    "print_scored",
]


def print_trained(
    meta: dict[str, Any],
    out: Path,
    backend: str,
    held_out: dict[str, Any] | None,
    holdout: float | None,
) -> None:
    """``hh pm train``'s lines: where the model went, its training metrics, its held-out
    accuracy."""
    m = meta["metrics"]
    acc = m.get("train_accuracy")
    click.echo(
        f"saved {out} ({backend}); train loss {m['train_loss']:.4f}"
        + (f", train accuracy {acc:.3f}" if acc is not None else "")
        + f", {m['train_seconds']:.1f}s"
    )
    if held_out:
        click.echo(
            f"held-out accuracy {held_out['accuracy']:.3f} on {held_out['pairs']:,} pairs "
            f"({held_out['ties']} ties); evaluate them again with: hh pm eval --model {out} "
            f"--holdout {holdout} (and the same data)"
        )


def _fmt_acc(s: dict[str, Any]) -> dict[str, Any]:
    lo, hi = s["ci95"]
    return {
        "n": s["n"],
        "accuracy": "-" if s["accuracy"] is None else f"{100 * s['accuracy']:.1f}%",
        "95% CI": "-" if lo is None else f"{100 * lo:.1f}-{100 * hi:.1f}",
        "ties": s["ties"],
    }


def print_report(report: dict[str, Any], name: str) -> None:
    """The evaluation report as plain tables (stdout)."""
    rows = [{"model": name, "group": "overall", **_fmt_acc(report["overall"])}]
    for section in ("subsets", "by_turns", "length_controlled"):
        prefix = {"by_turns": "turns ", "subsets": "", "length_controlled": ""}[section]
        for key, s in report[section].items():
            rows.append({"model": name, "group": f"{prefix}{key}", **_fmt_acc(s)})
    for base, rep in report.get("baselines", {}).items():
        rows.append({"model": base, "group": "overall", **_fmt_acc(rep["overall"])})
        for key, s in rep["length_controlled"].items():
            rows.append({"model": base, "group": key, **_fmt_acc(s)})
    print_table(rows)
    cal = report.get("calibration")
    if cal and cal["ece"] is not None:
        click.echo(f"\ncalibration of {name}: ECE {cal['ece']:.3f}")
        print_table(
            [
                {
                    "confidence bin": f"{b['low']:.2f}-{b['high']:.2f}",
                    "n": b["n"],
                    "mean confidence": "-" if b["confidence"] is None else f"{b['confidence']:.3f}",
                    "accuracy": "-" if b["accuracy"] is None else f"{b['accuracy']:.3f}",
                }
                for b in cal["bins"]
            ]
        )


def print_evaluation(report: dict[str, Any], trained: int | None, pairs: int) -> None:
    """``hh pm eval``'s tables, under a warning when ``trained`` of the ``pairs`` were
    trained on."""
    if trained:
        click.echo(
            f"WARNING: {trained:,} of {pairs:,} pairs below were trained on: "
            "not a held-out estimate"
        )
    print_report(report, f"model (TRAINED ON {trained:,})" if trained else "model")


def warn_training_data(check: TrainingCheck, pairs: int, holdout: float | None) -> None:
    """A warning on stderr when the evaluation reads training data: the pairs a saved model
    was trained on when it keeps their fingerprints, else the files it was trained on."""
    if check.trained is None:
        if check.overlap:
            click.echo(
                "warning: evaluating on training data: "
                + ", ".join(check.overlap)
                + " has the checksum of a file this model was trained on, so the accuracy is "
                "not a held-out estimate",
                err=True,
            )
        return
    if check.trained:
        fraction = check.holdout
        hint = (
            f"; it was trained with --holdout {fraction}: pass --holdout {fraction} to evaluate "
            "the pairs it held out"
            if fraction and holdout is None
            else ""
        )
        click.echo(
            f"warning: evaluating on training data: {check.trained:,} of {pairs:,} pairs were "
            f"in this model's training set, so the accuracy is not a held-out estimate{hint}",
            err=True,
        )


def warn_truncation(report: dict[str, Any]) -> None:
    """A note on stderr when a transformers model cut pairs to its ``--max-length``."""
    cut = report.get("truncation")
    if cut:
        click.echo(
            f"truncated {cut['truncated']:,} of {cut['pairs']:,} pairs to {cut['max_length']} "
            f"tokens (the prompt's beginning cut; {cut['response_cut']:,} with a response "
            "too long to keep whole: --max-length)",
            err=True,
        )


def print_cv(result: dict[str, Any]) -> None:
    """``hh pm cv``'s table: each model's mean accuracy, spread and per-fold accuracies."""
    folds, rows = result["folds"], result["per_fold"]
    click.echo(
        f"{folds}-fold CV on {result['pairs']:,} pairs (grouped by prompt, seed {result['seed']})"
    )
    print_table(
        [
            {
                "model": name,
                "mean accuracy": f"{100 * v['mean_accuracy']:.1f}%",
                "std": f"{100 * v['std']:.1f}",
                "per fold": " ".join(f"{100 * r[name]['accuracy']:.1f}" for r in rows),
                "ties": v["ties"],
            }
            for name, v in result["summary"].items()
        ]
    )


def print_scored(summary: dict[str, Any], skipped: int) -> None:
    """``hh pm score``'s summary: dialogues scored, the mean min score, the correlation with
    the file's."""
    c = summary["correlation"]
    click.echo(
        f"scored {summary['scored']:,} of {summary['dialogues']:,} dialogues"
        + (
            f" ({summary['no_score']:,} without an assistant turn got no score)"
            if summary["no_score"]
            else ""
        )
        + (f", {skipped:,} bad row(s) skipped" if skipped else "")
        + "; mean min score "
        + ("-" if summary["mean_min_score"] is None else f"{summary['mean_min_score']:.3f}")
    )
    if c:
        pr = "-" if c["pearson"] is None else f"{c['pearson']:.3f}"
        sr = "-" if c["spearman"] is None else f"{c['spearman']:.3f}"
        click.echo(
            f"correlation with the file's min score (n={c['n']:,}): Pearson {pr}, Spearman {sr}"
        )
