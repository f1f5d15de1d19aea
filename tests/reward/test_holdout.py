"""The numbers hh pm train --holdout and hh pm cv print."""

import pytest

from hhrlhf.reward.holdout import cv_summary, margin_accuracy


def test_margin_accuracy_counts_a_tie_as_not_correct():
    got = margin_accuracy([2.0, 1.0, 0.5, 3.0], [1.0, 1.0, 0.7, -1.0])
    assert got == {"accuracy": 0.5, "ties": 1}


def test_cv_summary_is_the_mean_and_spread_over_folds():
    rows = [
        {"model": {"accuracy": 0.6, "ties": 1}, "length": {"accuracy": 0.5, "ties": 0}},
        {"model": {"accuracy": 0.8, "ties": 2}, "length": {"accuracy": 0.5, "ties": 3}},
    ]
    got = cv_summary(rows, ["model", "length"])
    assert got["model"]["mean_accuracy"] == pytest.approx(0.7)
    assert got["model"]["std"] == pytest.approx(0.1)
    assert got["model"]["ties"] == 3
    assert got["length"] == {"mean_accuracy": 0.5, "std": 0.0, "ties": 3}
