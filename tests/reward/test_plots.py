"""The evaluation plot: a Figure built without pyplot, saved as a PNG."""

import sys

import pytest

pytest.importorskip("matplotlib")

from hhrlhf.reward import evaluate_model  # noqa: E402
from hhrlhf.reward.plots import plot_evaluation, write_evaluation_plot  # noqa: E402

from .conftest import make_pairs  # noqa: E402


class _Cue:
    """Scores 1 for responses with the planted cue, else 0."""

    def score_pairs(self, pairs, n_jobs=1):
        c = [float("gladly" in p.chosen_response) for p in pairs]
        r = [float("gladly" in p.rejected_response) for p in pairs]
        return c, r


def test_figure_has_the_reliability_and_accuracy_panels(tmp_path):
    had_pyplot = "matplotlib.pyplot" in sys.modules
    pairs = make_pairs(60, seed=3)
    report = evaluate_model(_Cue(), pairs, n_boot=20)
    fig = plot_evaluation(report, "cue")
    left, right = fig.axes
    assert left.get_title().startswith("Reliability (ECE")
    assert [t.get_text() for t in right.get_xticklabels()] == [
        "cue",
        "random",
        "longer wins",
        "shorter wins",
    ]
    assert [round(b.get_height(), 6) for b in right.patches] == [
        round(report["overall"]["accuracy"], 6),
        *(round(r["overall"]["accuracy"], 6) for r in report["baselines"].values()),
    ]
    path = write_evaluation_plot(report, tmp_path / "sub" / "eval.png", "cue")
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert had_pyplot or "matplotlib.pyplot" not in sys.modules  # no pyplot state
