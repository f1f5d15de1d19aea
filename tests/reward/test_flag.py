import json
import os
from pathlib import Path

import numpy as np
import pytest

from hhrlhf.errors import DataFormatError
from hhrlhf.reward import train_pm
from hhrlhf.reward.flag import (
    Thresholds,
    calibrate,
    class_counts,
    fit_temperature,
    flag_pairs,
    read_flags,
    write_flags,
)
from hhrlhf.reward.flag_eval import auroc, flip_report, inject_flips, strata_report
from hhrlhf.reward.flag_fit import BackendFitter, LinearFitter, dual_fit
from hhrlhf.reward.holdout import prompt_key
from hhrlhf.reward.loss import sigmoid

from .conftest import SMALL, make_pairs


def _noisy(n, seed, rate=0.2):
    """Planted-rule pairs with a share of labels reversed (a fit that is not separable)."""
    # the primal L-BFGS stops at its tolerance (relative 2e-9 on the loss); margins within 0.5%
    return inject_flips(make_pairs(n, seed=seed), rate, seed)


def _diffs(featurizer, pairs):
    x = featurizer.transform(
        [p.prompt for p in pairs for _ in (0, 1)],
        [r for p in pairs for r in (p.chosen_response, p.rejected_response)],
    )
    return (x[0::2] - x[1::2]).tocsr()


def test_dual_fit_gives_the_primal_fit_margins():
    pairs, _ = _noisy(160, seed=11)
    held = make_pairs(60, seed=12)
    model = train_pm(pairs, config=SMALL, max_iter=2000)
    d, d_held = _diffs(model.featurizer, pairs), _diffs(model.featurizer, held)
    weights = np.ones(len(pairs))
    a = dual_fit((d @ d.T).toarray(), weights, 5e-4)
    primal = np.asarray(d @ model.weights).ravel()
    dual = (d @ d.T).toarray() @ a
    assert np.corrcoef(primal, dual)[0, 1] > 0.99999
    assert np.max(np.abs(primal - dual)) < 5e-3 * np.max(np.abs(primal))
    held_dual = (d_held @ d.T).toarray() @ a
    held_primal = np.subtract(*model.score_pairs(held))
    assert np.max(np.abs(held_primal - held_dual)) < 5e-3 * np.max(np.abs(held_primal))


def test_dual_and_primal_solvers_agree_through_the_fitter():
    pairs, _ = _noisy(150, seed=13)
    train, predict = np.arange(0, 100), np.arange(100, 150)
    dual = LinearFitter(pairs, config=SMALL, solver="dual", max_iter=2000)
    primal = LinearFitter(pairs, config=SMALL, solver="primal", max_iter=2000)
    md, mp = dual.margins(train, predict), primal.margins(train, predict)
    assert dual.used == ["dual"] and primal.used == ["primal"]
    assert np.max(np.abs(md - mp)) < 5e-3 * np.max(np.abs(mp))


def test_any_backend_serves_through_the_backend_fitter():
    pairs, _ = _noisy(120, seed=14)
    train, predict = np.arange(0, 80), np.arange(80, 120)
    generic = BackendFitter(pairs, "linear", config=SMALL, max_iter=2000)
    direct = LinearFitter(pairs, config=SMALL, solver="dual")
    mg, md = generic.margins(train, predict), direct.margins(train, predict)
    assert generic.used == ["linear"]
    assert np.max(np.abs(mg - md)) < 5e-3 * np.max(np.abs(md))


class Spy:
    """A fitter that records what each fit trained on and predicted; margins from a rule."""

    def __init__(self, margins):
        self.fixed = np.asarray(margins, dtype=float)
        self.calls = []
        self.used = []

    def margins(self, train, predict, *, desc=""):
        self.calls.append((set(train.tolist()), predict.tolist()))
        self.used.append("spy")
        return self.fixed[predict]


def test_every_pair_is_scored_once_per_seed_by_a_model_that_never_saw_it():
    pairs = make_pairs(60, seed=3)
    pairs += [
        type(p)(p.chosen, p.rejected, p.subset, p.split, 100 + i) for i, p in enumerate(pairs[:10])
    ]
    spy = Spy(np.linspace(-1, 1, len(pairs)))
    result = flag_pairs(pairs, spy, folds=4, seeds=3)
    assert len(spy.calls) == 12 and result.solvers == {"spy": 12}
    for seed in range(3):
        predicted = []
        for train, predict in spy.calls[4 * seed : 4 * seed + 4]:
            assert not train & set(predict)
            # grouped by prompt: no prompt on both sides
            assert not {prompt_key(pairs[i]) for i in train} & {
                prompt_key(pairs[i]) for i in predict
            }
            predicted += predict
        assert sorted(predicted) == list(range(len(pairs)))
    assert not np.array_equal(result.folds[0], result.folds[1])  # other seeds, other folds


def test_fit_temperature_recovers_a_planted_temperature():
    rng = np.random.default_rng(0)
    m = rng.normal(0, 3, 20000)
    given = rng.random(20000) < sigmoid(m / 2.5)  # the label as given agrees with m's sign
    assert fit_temperature(np.where(given, m, -m)) == pytest.approx(2.5, rel=0.05)


def test_calibration_is_cross_fitted_per_fold():
    m = np.array([3.0, 2.0, 1.0, -1.0, 4.0, 5.0, 6.0, -0.5])
    folds = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    p, temps = calibrate(m, folds)
    assert temps == [pytest.approx(fit_temperature(m[4:])), pytest.approx(fit_temperature(m[:4]))]
    assert p[0] == pytest.approx(sigmoid(np.array([-3.0 / temps[0]]))[0])
    assert p[3] > 0.5 > p[2]


def test_thresholds_classify_and_refuse_a_bad_order():
    t = Thresholds(likely=0.6, clear=0.4)
    assert [t.classify(x) for x in (0.7, 0.6, 0.5, 0.4, 0.1)] == [
        "likely_mislabelled",
        "likely_mislabelled",
        "ambiguous",
        "clear",
        "clear",
    ]
    with pytest.raises(ValueError, match="clear < likely"):
        Thresholds(likely=0.3, clear=0.4)


def test_planted_flips_are_found():
    pairs, flipped = inject_flips(make_pairs(300, seed=21), 0.1, seed=5)
    result = flag_pairs(pairs, LinearFitter(pairs, config=SMALL), folds=5, seeds=2)
    p = np.array([r["p_mislabelled"] for r in result.rows])
    classes = [r["class"] for r in result.rows]
    assert auroc(p, flipped) > 0.9
    report = flip_report(p, flipped, classes, resamples=200)
    assert report["precision@likely"]["value"] > 0.6
    assert report["recall@likely"]["value"] > 0.6
    lo, hi = report["auroc"]["low"], report["auroc"]["high"]
    assert lo <= report["auroc"]["value"] <= hi
    assert [r["index"] for r in result.rows] == [p.index for p in pairs]
    assert all(r["margin_sd"] >= 0 for r in result.rows)


def test_shuffled_labels_give_flags_no_better_than_chance():
    pairs, flipped = inject_flips(make_pairs(300, seed=22, signal=False), 0.1, seed=6)
    result = flag_pairs(pairs, LinearFitter(pairs, config=SMALL), folds=5, seeds=1)
    p = np.array([r["p_mislabelled"] for r in result.rows])
    assert 0.35 < auroc(p, flipped) < 0.65
    assert all(r["margin_sd"] == 0 for r in result.rows)  # one seed


def test_auroc_counts_ties_half():
    assert auroc([1, 1, 1, 1], [True, False, True, False]) == 0.5
    assert auroc([0.9, 0.1, 0.8, 0.2], [True, False, True, False]) == 1.0
    assert auroc([0.1, 0.2], [False, False]) is None


def test_inject_flips_swaps_the_drawn_share():
    pairs = make_pairs(50, seed=1)
    out, flipped = inject_flips(pairs, 0.2, seed=3)
    assert flipped.sum() == 10
    for p, q, f in zip(pairs, out, flipped, strict=True):
        assert (q.chosen, q.rejected) == ((p.rejected, p.chosen) if f else (p.chosen, p.rejected))
        assert q.prompt == p.prompt and q.index == p.index
    assert np.array_equal(inject_flips(pairs, 0.2, seed=3)[1], flipped)


def test_the_lowest_stratum_of_planted_flips_is_reversed():
    pairs, flipped = inject_flips(make_pairs(300, seed=23), 0.15, seed=7)
    fitter = LinearFitter(pairs, config=SMALL)
    result = flag_pairs(pairs, fitter, folds=5, seeds=1)
    rows = strata_report(fitter, result.margins[0], result.folds[0], strata=5, flipped=flipped)
    assert [r["stratum"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0]["held_out_accuracy"] < 0.5 < rows[-1]["held_out_accuracy"]
    assert rows[0]["injected_flips"] > 0.5 > rows[-1]["injected_flips"]
    assert rows[0]["margin_high"] <= rows[1]["margin_low"]


def _judged(margins_cv, judge, vote):
    pairs = make_pairs(len(margins_cv), seed=4)
    return flag_pairs(
        pairs, Spy(margins_cv), folds=2, seeds=1, judges={"other": np.asarray(judge)}, vote=vote
    ).rows


def test_judges_vote_by_majority_or_all():
    agree = [5.0] * 6  # most pairs: both judges agree with the label
    cv = np.array([-5.0, -5.0, 5.0, 5.0, *agree] * 10)
    other = np.array([-5.0, 5.0, 5.0, np.nan, *agree] * 10)
    rows = _judged(cv, other, "majority")
    # two judges: a majority is both; a judge that abstains leaves one voter
    assert [r["class"] for r in rows[:4]] == ["likely_mislabelled", "ambiguous", "clear", "clear"]
    assert rows[1]["votes"] == 1 and rows[1]["voters"] == 2
    assert rows[3]["judges"] == {"cv": 5.0, "other": None} and rows[3]["voters"] == 1
    rows = _judged(cv, np.array([-5.0, np.nan, 5.0, 5.0, *agree] * 10), "all")
    assert [r["class"] for r in rows[:2]] == ["likely_mislabelled", "likely_mislabelled"]
    rows = _judged(cv, other, "all")
    assert rows[0]["class"] == "likely_mislabelled" and rows[1]["class"] == "ambiguous"


def test_class_counts_per_subset_and_split():
    rows = [
        {"subset": "a", "split": "test", "class": "clear"},
        {"subset": "a", "split": "test", "class": "ambiguous"},
        {"subset": "b", "split": "train", "class": "likely_mislabelled"},
    ]
    counts = class_counts(rows)
    assert counts[0] == {
        "subset": "a",
        "split": "test",
        "pairs": 2,
        "likely_mislabelled": 0,
        "ambiguous": 1,
        "clear": 1,
    }
    assert counts[-1]["pairs"] == 3 and counts[-1]["likely_mislabelled"] == 1


def test_flags_file_round_trip_and_errors(tmp_path):
    row = {
        "subset": "harmless-base",
        "split": "test",
        "index": 3,
        "margin": -1.5,
        "margin_sd": 0.1,
        "p_mislabelled": 0.7,
        "class": "likely_mislabelled",
    }
    path = tmp_path / "flags.jsonl"
    write_flags([row, {**row, "index": 4, "class": "clear"}], path)
    got = read_flags(path, keep=lambda r: r["class"] == "likely_mislabelled")
    assert got == {("harmless-base", "test", 3): row}
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "class": "odd"}) + "\n")
    with pytest.raises(DataFormatError, match=r"flags.jsonl.*line 2.*unknown class 'odd'"):
        read_flags(path)
    path.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataFormatError, match="line 2.*again \\(first on line 1\\)"):
        read_flags(path)
    path.write_text(json.dumps({**row, "margin": "x"}) + "\n")
    with pytest.raises(DataFormatError, match='"margin" must be a finite number'):
        read_flags(path)


def test_flags_on_the_sample():
    import hhrlhf

    pairs = list(hhrlhf.load_dataset("harmless-base", data="sample")["train"])
    result = flag_pairs(pairs, LinearFitter(pairs, config=SMALL), folds=3, seeds=1)
    assert len(result.rows) == len(pairs)
    assert {r["class"] for r in result.rows} <= {"likely_mislabelled", "ambiguous", "clear"}
    assert all(0 <= r["p_mislabelled"] <= 1 for r in result.rows)


REAL = os.environ.get("HH_RLHF_REAL")


@pytest.mark.skipif(
    not REAL or not Path(REAL, "harmless-base", "test.jsonl.gz").is_file(),
    reason="set HH_RLHF_REAL to a folder holding the real harmless-base/test.jsonl.gz",
)
def test_real_file_flags_find_injected_flips():
    from hhrlhf import read_pairs

    pairs = list(read_pairs(Path(REAL, "harmless-base", "test.jsonl.gz")))
    pairs, flipped = inject_flips(pairs, 0.1, seed=0)
    result = flag_pairs(pairs, LinearFitter(pairs), folds=5, seeds=1)
    p = np.array([r["p_mislabelled"] for r in result.rows])
    assert auroc(p, flipped) > 0.62
