"""``bin_counts``: the one histogram counter behind the length plots and the red-team report."""

from __future__ import annotations

import random

import pytest

from hhrlhf.stats import bin_counts


def test_bin_counts_edges_and_clipping():
    edges = [0, 5, 10]
    assert bin_counts([0, 4.9, 5, 9.99, 10], edges) == [2, 3]  # the top edge is in the last bin
    assert bin_counts([-1, 11], edges) == [0, 0]  # outside: not counted
    assert bin_counts([-1, 11, 50], edges, clip_top=True) == [0, 2]  # above the top: last bin
    assert bin_counts([], [0, 1]) == [0]


def test_bin_counts_matches_numpy_histogram():
    np = pytest.importorskip("numpy")
    rng = random.Random(0)
    for _ in range(300):
        values = [
            round(rng.gauss(0, 2), rng.choice([0, 1, 2, 6])) for _ in range(rng.randrange(60))
        ]
        lo, hi = -3.0, rng.uniform(0.5, 4)
        edges = np.linspace(lo, hi, rng.randrange(1, 30) + 1)
        counts, _ = np.histogram(values, bins=edges)
        assert bin_counts(values, edges.tolist()) == counts.tolist()
