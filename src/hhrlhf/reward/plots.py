"""The evaluation report as a picture: a reliability diagram beside accuracy with baselines.

:func:`plot_evaluation` takes the report :func:`hhrlhf.reward.evaluate_model` returns and
returns a :class:`matplotlib.figure.Figure`; :func:`write_evaluation_plot` saves it as a PNG
(``hh pm eval --plot``). Like the other plots, figures are built on ``Figure`` objects with the
Agg canvas, never through ``pyplot``, so no interactive backend or global state is touched.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import require

__all__ = ["plot_evaluation", "write_evaluation_plot"]

_FEATURE = "evaluation plots"


def plot_evaluation(report: dict, name: str):
    """Reliability (confidence vs accuracy per bin, with the ECE) and accuracy with bootstrap
    95% intervals for ``name`` and the report's baselines, side by side."""
    mfig = require("matplotlib.figure", "plots", _FEATURE)
    agg = require("matplotlib.backends.backend_agg", "plots", _FEATURE)
    fig = mfig.Figure(figsize=(10, 4), dpi=100)
    agg.FigureCanvasAgg(fig)  # tight_layout measures text with the canvas's renderer
    ax1, ax2 = fig.subplots(1, 2)
    bins = [b for b in report["calibration"]["bins"] if b["n"]]
    ax1.plot([0.5, 1], [0.5, 1], "--", color="grey", label="perfect calibration")
    ax1.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], "o-", label=name)
    ax1.set_xlabel("predicted P(pick is preferred)")
    ax1.set_ylabel("observed accuracy")
    ax1.set_title(f"Reliability (ECE {report['calibration']['ece']:.3f})")
    ax1.legend()
    names = [name, *report.get("baselines", {})]
    reps = [report, *report.get("baselines", {}).values()]
    acc = [r["overall"]["accuracy"] for r in reps]
    err = [
        [a - r["overall"]["ci95"][0] for a, r in zip(acc, reps, strict=True)],
        [r["overall"]["ci95"][1] - a for a, r in zip(acc, reps, strict=True)],
    ]
    ax2.bar(names, acc, yerr=err, capsize=4)
    ax2.axhline(0.5, color="grey", lw=0.8)
    ax2.set_ylabel("accuracy (ties not correct)")
    ax2.set_title("Accuracy with bootstrap 95% CI")
    fig.tight_layout()
    return fig


def write_evaluation_plot(report: dict, path: str | os.PathLike, name: str) -> Path:
    """Write :func:`plot_evaluation` as a PNG at ``path`` (parents created); return the path."""
    fig = plot_evaluation(report, name)
    from ..outputs import atomic_file

    path = Path(path)
    with atomic_file(path) as part:  # parents created; the PNG appears whole or not at all
        fig.savefig(part, dpi=100)  # the ending (.png) kept
    return path
