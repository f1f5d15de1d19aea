"""The Bradley-Terry fit: the sparse (conjugate-gradient) Newton steps reach the dense ones'
optimum, and a leaderboard of many models costs the pairs seen, not models squared."""

from __future__ import annotations

import numpy as np
import pytest
from sim import simulate

from hhrlhf.bootstrap import resample_counts
from hhrlhf.ranking.bradley_terry import DENSE_MAX, BradleyTerry, to_elo
from hhrlhf.ranking.leaderboard import vote_cells
from hhrlhf.ranking.votes import collect_votes


def _both(votes, *, style=False, rows=0):
    cells, cell, count = vote_cells(collect_votes(votes), style_control=style, buckets=8)
    counts = count.astype(float)
    if rows:
        counts = next(resample_counts(cell, len(count), resamples=rows, seed=3))
    dense = BradleyTerry(cells, dense=True).fit(counts)
    sparse = BradleyTerry(cells, dense=False).fit(counts)
    return dense, sparse


@pytest.mark.parametrize("style", [False, True])
@pytest.mark.parametrize("rows", [0, 7])
def test_sparse_steps_reach_the_dense_optimum(style, rows):
    truth = {f"m{k}": 60.0 * k for k in range(9)}
    votes = simulate(truth, 400, seed=5, ties=0.1, length_pull=0.5)
    (td, bd), (ts, bs) = _both(votes, style=style, rows=rows)
    np.testing.assert_allclose(to_elo(ts), to_elo(td), atol=1e-4)
    np.testing.assert_allclose(bs, bd, atol=1e-7)


def test_sparse_steps_with_unbeaten_models_and_separate_groups():
    """A model that never lost, and two groups of models never compared with each other."""
    votes = [{"model_a": "a", "model_b": "b", "winner": "model_a"}] * 5
    votes += [{"model_a": "b", "model_b": "c", "winner": "tie"}] * 3
    votes += [{"model_a": "x", "model_b": "y", "winner": "model_b"}] * 4
    votes += [{"model_a": "y", "model_b": "z", "winner": "model_a"}] * 2
    (td, _), (ts, _) = _both(votes)
    np.testing.assert_allclose(to_elo(ts), to_elo(td), atol=1e-4)


def test_many_models_take_the_sparse_path_and_rank():
    """Past DENSE_MAX parameters the fit is sparse: 400 models in 1,200 random pairs (the
    resamples leave models and groups unlinked), the same optimum as the dense fit."""
    from hhrlhf.ranking import rank

    rng = np.random.default_rng(1)
    m, n = 400, 1200
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    votes = [
        {"model_a": f"m{x}", "model_b": f"m{y}", "winner": "model_a" if k % 3 else "model_b"}
        for k, (x, y) in enumerate(zip(a, b, strict=True))
    ]
    cells, _, count = vote_cells(collect_votes(votes))
    model = BradleyTerry(cells)
    assert cells.n_models > DENSE_MAX and not model.dense
    dense, _ = BradleyTerry(cells, dense=True).fit(count.astype(float))
    np.testing.assert_allclose(to_elo(model.fit(count.astype(float))[0]), to_elo(dense), atol=1e-4)
    out = rank(votes, resamples=20)
    assert len(out["models"]) == cells.n_models
    assert all(r["ci_low"] is None or r["ci_low"] <= r["rating"] for r in out["models"])


def test_past_the_model_limit_one_error_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from hhrlhf.cli import cli

    path = tmp_path / "battles.jsonl"
    rows = [
        f'{{"model_a": "m{k}", "model_b": "m{k + 1}", "winner": "tie"}}' for k in range(0, 40, 2)
    ]
    path.write_text("\n".join(rows) + "\n")
    from hhrlhf.ranking import rank, read_battles

    with pytest.raises(Exception, match=r"40 models: the leaderboard ranks at most 39"):
        rank(read_battles(path), max_models=39)
    import hhrlhf.ranking.bradley_terry as bt

    monkeypatch.setattr(bt, "MAX_MODELS", 39)
    r = CliRunner().invoke(cli, ["leaderboard", "--battles", str(path)])
    assert r.exit_code == 1, r.output
    assert r.stderr == f"error: {path}: 40 models: the leaderboard ranks at most 39 " + (
        "(hhrlhf.ranking.bradley_terry.MAX_MODELS; its bootstrap keeps resamples x models ratings)\n"
    )


def test_robustness_past_its_model_limit_is_one_error(monkeypatch):
    import hhrlhf.ranking.leaderboard as lb
    from hhrlhf.errors import HHError
    from hhrlhf.ranking import rank

    votes = simulate({"a": 0.0, "b": 50.0, "c": 100.0}, 30, seed=2)
    assert "robustness" in rank(votes, resamples=0, robustness=True)
    monkeypatch.setattr(lb, "ROBUSTNESS_MAX_MODELS", 2)
    with pytest.raises(HHError, match="3 models: the robustness search handles at most 2 "):
        rank(votes, resamples=0, robustness=True)
    assert rank(votes, resamples=0)["models"]  # without the search: ranked
