"""The Bradley-Terry leaderboard: hand-checkable fits and the known-answer test."""

import math
import random
from collections import Counter

import pytest

from hhrlhf.collect.leaderboard import fit_bradley_terry, leaderboard


def test_two_models_rating_gap_is_the_log_odds():
    # 30 wins to 10: odds 3, gap 400*log10(3) (with prior 0 the MLE is exact)
    ratings = fit_bradley_terry(Counter({("x", "y"): 30, ("y", "x"): 10}), prior=0)
    assert ratings["x"] - ratings["y"] == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert (ratings["x"] + ratings["y"]) / 2 == pytest.approx(1000)


def test_unbeaten_model_stays_finite_and_on_top():
    ratings = fit_bradley_terry(Counter({("x", "y"): 5}))
    assert math.isfinite(ratings["x"]) and ratings["x"] > ratings["y"]


def test_known_answer_recovered_with_covering_intervals():
    truth = {"strong": 1200.0, "middle": 1000.0, "weak": 800.0}
    rng = random.Random(12)
    names = list(truth)
    games = []
    for conversation in range(120):
        for _ in range(3):  # 360 comparisons, three turns per conversation
            x, y = rng.sample(names, 2)
            p_x = 1 / (1 + 10 ** ((truth[y] - truth[x]) / 400))
            games.append((conversation, x, y) if rng.random() < p_x else (conversation, y, x))
    board = leaderboard(games, resamples=300, seed=3)
    rows = board["models"]
    assert [r["name"] for r in rows] == ["strong", "middle", "weak"]
    for r in rows:
        assert r["ci_low"] <= truth[r["name"]] <= r["ci_high"], r
        assert r["ci_low"] <= r["rating"] <= r["ci_high"]
    assert sum(r["comparisons"] for r in rows) == 2 * len(games)
    assert board["conversations"] == 120
    wins = Counter(w for _, w, _ in games)
    strong = rows[0]
    assert strong["win_rate"] == pytest.approx(wins["strong"] / strong["comparisons"], abs=1e-4)


def test_bootstrap_resamples_conversations_not_turns():
    # one conversation of many identical turns: resampling conversations cannot vary it,
    # so the interval collapses onto the estimate (resampling turns would not)
    games = [(1, "x", "y")] * 20 + [(1, "y", "x")] * 10
    row = {r["name"]: r for r in leaderboard(games, resamples=50)["models"]}["x"]
    assert row["ci_low"] == row["ci_high"] == row["rating"]


def test_empty():
    assert leaderboard([])["models"] == []
