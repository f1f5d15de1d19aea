"""The Bradley-Terry leaderboard on hand-checkable counts and simulated votes with known
strengths: ratings, intervals, ties, style control, agreement with the per-vote regression."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sim import centred, simulate

from hhrlhf.bootstrap import resample_counts
from hhrlhf.ranking import Vote, rank


def _votes(pairs: dict[tuple[str, str, str], int]) -> list[Vote]:
    return [Vote(a, b, w) for (a, b, w), k in pairs.items() for _ in range(k)]


def _ratings(board: dict) -> dict[str, float]:
    return {r["name"]: r["rating"] for r in board["models"]}


def test_two_models_rating_gap_is_the_log_odds():
    # 30 wins to 10: odds 3, gap 400*log10(3) (with prior 0 the MLE is exact)
    board = rank(
        _votes({("x", "y", "model_a"): 30, ("x", "y", "model_b"): 10}), prior=0, resamples=0
    )
    r = _ratings(board)
    assert r["x"] - r["y"] == pytest.approx(400 * math.log10(3), abs=0.1)
    assert (r["x"] + r["y"]) / 2 == pytest.approx(1000, abs=0.1)


def test_a_tie_is_half_a_win_each_way():
    # 10 wins and 10 ties against no loss: 15 to 5, odds 3; both tie kinds alike
    votes = _votes(
        {("x", "y", "model_a"): 10, ("y", "x", "tie"): 5, ("x", "y", "tie (bothbad)"): 5}
    )
    board = rank(votes, prior=0, resamples=0)
    r = _ratings(board)
    assert r["x"] - r["y"] == pytest.approx(400 * math.log10(3), abs=0.1)
    assert board["ties"] == 10 and board["votes"] == 20
    assert {m["name"]: m["win_rate"] for m in board["models"]} == {"x": 0.75, "y": 0.25}


def test_unbeaten_model_stays_finite_and_on_top():
    board = rank(_votes({("x", "y", "model_a"): 5}), resamples=50)
    r = _ratings(board)
    assert math.isfinite(r["x"]) and r["x"] > r["y"]


def test_known_strengths_recovered_and_covered():
    truth = {"strong": 1200.0, "good": 1100.0, "middle": 1000.0, "weak": 800.0}
    board = rank(simulate(truth, 4000, seed=5), resamples=300, seed=1)
    rows = board["models"]
    assert [r["name"] for r in rows] == ["strong", "good", "middle", "weak"]
    expected = centred(truth)
    for r in rows:
        assert r["ci_low"] <= expected[r["name"]] <= r["ci_high"], r
        assert r["ci_low"] <= r["rating"] <= r["ci_high"]
        assert r["ci_high"] - r["ci_low"] < 60  # 2,000 comparisons each: a tight interval
    assert board["intervals"] == {"method": "vote bootstrap", "resamples": 300, "level": 0.95}
    assert sum(r["comparisons"] for r in rows) == 2 * 4000


def test_intervals_cover_at_about_their_level():
    # 40 simulated leaderboards of 300 votes: the 95% intervals hold the truth almost always
    truth = {"p": 1100.0, "q": 1000.0, "r": 950.0}
    expected = centred(truth)
    hits = total = 0
    for seed in range(40):
        board = rank(simulate(truth, 300, seed=100 + seed), resamples=200, seed=seed)
        for r in board["models"]:
            hits += r["ci_low"] <= expected[r["name"]] <= r["ci_high"]
            total += 1
    assert 0.85 <= hits / total <= 1.0, hits / total


def test_agrees_with_the_per_vote_logistic_regression():
    sklearn = pytest.importorskip("sklearn.linear_model")
    truth = {"a": 1150.0, "b": 1080.0, "c": 1000.0, "d": 990.0, "e": 870.0}
    votes = simulate(truth, 3000, seed=9, ties=0.15)
    names = sorted(truth)
    rows, y = [], []
    for v in votes:  # each vote twice: a tie is one win each way
        for copy in (0, 1):
            x = np.zeros(len(names))
            x[names.index(v["model_a"])], x[names.index(v["model_b"])] = 1.0, -1.0
            rows.append(x)
            y.append(v["winner"] == "model_a" or (v["winner"] == "tie" and copy == 0))
    lr = sklearn.LogisticRegression(fit_intercept=False, C=1e8, tol=1e-10, max_iter=1000)
    lr.fit(np.array(rows), np.array(y))
    theirs = 400 / math.log(10) * lr.coef_[0]
    theirs = dict(zip(names, theirs - theirs.mean() + 1000, strict=True))
    ours = _ratings(rank(votes, resamples=0))
    for m in names:
        assert ours[m] == pytest.approx(theirs[m], abs=0.5)


def test_style_control_removes_a_length_bias():
    # "wordy" is as strong as "plain" but writes twice as long, and length sways votes
    truth = {"wordy": 1000.0, "plain": 1000.0, "terse": 1000.0, "weak": 850.0}
    length = {"wordy": 1000.0, "plain": 500.0, "terse": 500.0, "weak": 500.0}
    votes = simulate(truth, 6000, seed=3, length=length, length_pull=2.0)
    raw = rank(votes, resamples=100)
    styled = rank(votes, resamples=100, style_control=True)
    r, s = _ratings(raw), _ratings(styled)
    assert raw["models"][0]["name"] == "wordy" and r["wordy"] - r["plain"] > 50
    assert abs(s["wordy"] - s["plain"]) < 20 and abs(s["wordy"] - s["terse"]) < 20
    coef = styled["style"]["length"]
    assert coef["coef"] > 0 and coef["ci_low"] > 0
    assert raw["style"] is None


def test_style_control_needs_lengths():
    from hhrlhf.errors import DataFormatError

    with pytest.raises(DataFormatError, match="vote 2: style control needs both response lengths"):
        rank([Vote("x", "y", "model_a", 3, 4), Vote("x", "y", "model_b")], style_control=True)


def test_counts_ties_and_date_range():
    votes = simulate({"x": 1000.0, "y": 1000.0}, 50, ties=0.3, seed=2)
    board = rank(votes, resamples=0)
    assert board["votes"] == 50 and board["ties"] == sum(v["winner"] == "tie" for v in votes)
    assert board["dates"] == {
        "first": "2023-11-14T22:13:20+00:00",
        "last": "2023-11-14T23:02:20+00:00",
    }
    assert rank([Vote("x", "y", "tie")], resamples=0)["dates"] is None


def test_empty():
    board = rank([])
    assert board["models"] == [] and board["votes"] == 0


def test_vote_bootstrap_is_a_multinomial_over_cells():
    cell = np.repeat([0, 1, 2], [50, 30, 20])
    draws = np.concatenate(list(resample_counts(cell, 3, resamples=4000, seed=1)))
    assert (draws.sum(axis=1) == 100).all()
    assert draws.mean(axis=0) == pytest.approx([50, 30, 20], abs=0.5)
    # a cell holding 30% of the votes varies as Binomial(100, 0.3)
    assert draws[:, 1].var() == pytest.approx(100 * 0.3 * 0.7, rel=0.1)


def test_group_bootstrap_moves_whole_groups():
    # ten groups of two votes in one cell and one in another: cell 0 counts stay even
    cell = np.array([0, 0] * 10 + [1] * 5)
    groups = np.array([g for g in range(10) for _ in range(2)] + list(range(10, 15)))
    draws = np.concatenate(list(resample_counts(cell, 2, groups=groups, resamples=500, seed=2)))
    assert (draws[:, 0] % 2 == 0).all() and draws[:, 0].std() > 0
    assert draws.sum(axis=1).mean() == pytest.approx(25, abs=1)


def _keys(typed: type) -> tuple[frozenset[str], frozenset[str]]:
    return typed.__required_keys__, typed.__required_keys__ | typed.__optional_keys__


def _within(d: dict, typed: type) -> None:
    required, known = _keys(typed)
    assert required <= d.keys() <= known, (typed.__name__, sorted(d))


def test_rank_writes_the_keys_its_types_name():
    from hhrlhf.ranking.intervals import LengthCoefficient, StyleSummary
    from hhrlhf.ranking.leaderboard import Dates, FlipTop, IntervalMethod, Leaderboard, Robustness
    from hhrlhf.ranking.table import ModelRow

    pairs = {("x", "y", "model_a"): 12, ("x", "y", "model_b"): 11, ("y", "z", "tie"): 3}
    votes = [
        Vote(a, b, w, length_a=10 + k, length_b=20, tstamp=1.7e9 + k, group=k // 2)
        for (a, b, w), n in pairs.items()
        for k in range(n)
    ]
    board = rank(votes, resamples=20, style_control=True, robustness=True, robustness_limit=30)
    _within(board, Leaderboard)
    assert {"conversations", "robustness"} <= board.keys()
    for row in board["models"]:
        _within(row, ModelRow)
    _within(board["dates"], Dates)
    _within(board["intervals"], IntervalMethod)
    _within(board["style"], StyleSummary)
    _within(board["style"]["length"], LengthCoefficient)
    _within(board["robustness"], Robustness)
    assert board["robustness"]["flip_top"] is not None
    _within(board["robustness"]["flip_top"], FlipTop)
