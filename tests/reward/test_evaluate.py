import math

import numpy as np
import pytest

from hhrlhf import PreferencePair
from hhrlhf.bootstrap import bootstrap_mean
from hhrlhf.errors import DataFormatError
from hhrlhf.reward.evaluate import (
    accuracy_summary,
    calibration,
    evaluate_model,
    evaluate_scores,
    pair_id,
    read_scores_file,
)


def _pair(chosen_resp, rejected_resp, *, turns=1, subset="harmless-base", index=0):
    prompt = "".join(f"\n\nHuman: q{i}\n\nAssistant: a{i}" for i in range(turns - 1))
    prompt += "\n\nHuman: q\n\nAssistant:"
    return PreferencePair(prompt + chosen_resp, prompt + rejected_resp, subset, "test", index)


def test_accuracy_counts_ties_separately():
    s = accuracy_summary([1.0, -1.0, 0.0, 2.0])
    assert (s["n"], s["correct"], s["ties"], s["wrong"]) == (4, 2, 1, 1)
    assert s["accuracy"] == 0.5  # the tie is not correct


def bootstrap_interval(x, seed=0):
    return accuracy_summary([1.0 if v else -1.0 for v in x], seed=seed)["ci95"]


def test_the_accuracy_interval_is_the_package_bootstrap():
    x = [1.0] * 60 + [-1.0] * 40
    out = bootstrap_mean([1.0] * 60 + [0.0] * 40, seed=3)
    assert accuracy_summary(x, seed=3)["ci95"] == [out["low"], out["high"]]


def test_bootstrap_properties():
    assert bootstrap_interval([1, 1, 1, 1]) == [1.0, 1.0]
    assert bootstrap_interval([0, 0, 0]) == [0.0, 0.0]
    x = [1] * 60 + [0] * 40
    lo, hi = bootstrap_interval(x, seed=3)
    assert lo < 0.6 < hi
    assert bootstrap_interval(x, seed=3) == [lo, hi]  # seeded
    # normal approximation: 0.6 +- 1.96 * sqrt(.24/100) = 0.504 .. 0.696
    assert lo == pytest.approx(0.504, abs=0.03) and hi == pytest.approx(0.696, abs=0.03)
    assert accuracy_summary([])["ci95"] == [None, None]


def test_ece_on_a_tiny_example():
    # p = sigmoid(margin): 0.5, 0.75, 0.25, 0.9 -> confidence 0.5, 0.75, 0.75, 0.9
    margins = [0.0, math.log(3), -math.log(3), math.log(9)]
    cal = calibration(margins, bins=2)
    # bin [0.5, 0.75): {0.5}, accuracy 0 (a tie is not correct): |0 - 0.5| * 1/4 = 0.125
    # bin [0.75, 1.0]: {0.75, 0.75, 0.9}, accuracy 2/3, confidence 0.8: |2/3 - 0.8| * 3/4 = 0.1
    assert cal["ece"] == pytest.approx(0.225)
    assert [b["n"] for b in cal["bins"]] == [1, 3]
    assert cal["bins"][1]["confidence"] == pytest.approx(0.8)
    assert cal["bins"][1]["accuracy"] == pytest.approx(2 / 3)


def test_calibrated_scores_have_small_ece_and_overconfident_large():
    rng = np.random.default_rng(0)
    m = rng.normal(0, 2, size=20000)  # the model's margin for side A over side B
    a_wins = rng.random(20000) < 1 / (1 + np.exp(-m))  # A wins with the predicted probability
    margins = np.where(a_wins, m, -m)  # chosen minus rejected
    assert calibration(margins)["ece"] < 0.02
    assert calibration(5 * margins)["ece"] > 0.1  # same ranking, overconfident


def test_groups_and_length_control():
    pairs = [
        _pair(" short", " a much longer answer", turns=1, index=0),
        _pair(" a much longer answer", " short", turns=2, index=1),
        _pair(" same", " same", turns=2, index=2),
        _pair(" x", " yy", turns=6, subset="helpful-base", index=3),
    ]
    report = evaluate_scores(pairs, [1.0, 0.0, 5.0, 2.0], [0.0, 1.0, 5.0, 1.0], n_boot=50)
    assert report["overall"]["correct"] == 2 and report["overall"]["ties"] == 1
    assert report["subsets"]["harmless-base"]["n"] == 3
    assert report["subsets"]["helpful-base"]["accuracy"] == 1.0
    assert report["by_turns"]["1"]["accuracy"] == 1.0
    assert report["by_turns"]["2"]["correct"] == 0 and report["by_turns"]["2"]["ties"] == 1
    assert report["by_turns"]["5+"]["n"] == 1
    lc = report["length_controlled"]
    assert lc["chosen shorter"]["n"] == 2 and lc["chosen shorter"]["accuracy"] == 1.0
    assert lc["chosen longer"]["accuracy"] == 0.0
    assert lc["same length"]["ties"] == 1


def test_baselines_in_the_same_run():
    pairs = [
        _pair(" short", " longer one", index=0),
        _pair(" short", " longer one", index=1),
        _pair(" the longest of all", " mid", index=2),
        _pair(" abc", " xyz", index=3),
    ]
    report = evaluate_model(([1, 1, 1, 1], [0, 0, 0, 0]), pairs, n_boot=20)
    b = report["baselines"]
    assert b["shorter wins"]["overall"]["correct"] == 2
    assert b["longer wins"]["overall"]["correct"] == 1
    assert b["longer wins"]["overall"]["ties"] == b["shorter wins"]["overall"]["ties"] == 1
    assert b["random"]["overall"]["n"] == 4
    again = evaluate_model(([1, 1, 1, 1], [0, 0, 0, 0]), pairs, n_boot=20)
    assert again["baselines"]["random"] == b["random"]  # seeded
    assert report["overall"]["accuracy"] == 1.0


def test_nan_scores_are_rejected():
    with pytest.raises(Exception, match="NaN"):
        evaluate_scores([_pair(" a", " b")], [float("nan")], [0.0])


def _write(tmp_path, lines):
    p = tmp_path / "scores.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_scores_file(tmp_path):
    pairs = [_pair(" a", " b", index=0), _pair(" c", " d", index=1)]
    assert pair_id(pairs[1]) == "harmless-base/test/1"
    path = _write(
        tmp_path,
        [
            '{"id": "harmless-base/test/1", "chosen": 0.5, "rejected": 1.5}',
            '{"id": "harmless-base/test/0", "chosen_score": 2, "rejected_score": -1}',
            '{"id": "helpful-base/test/9", "chosen": 0, "rejected": 0}',
        ],
    )
    c, r = read_scores_file(path, pairs)
    assert c.tolist() == [2.0, 0.5] and r.tolist() == [-1.0, 1.5]


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ['{"id": "harmless-base/test/0", "chosen": 1, "rejected": 0}', "{oops"],
            "line 2: invalid JSON",
        ),
        (['{"chosen": 1, "rejected": 0}'], 'line 1: expected an object with "id"'),
        (['{"id": "harmless-base/test/0", "chosen": "x", "rejected": 0}'], "finite number"),
        (
            [
                '{"id": "harmless-base/test/0", "chosen": 1, "rejected": 0}',
                '{"id": "harmless-base/test/0", "chosen": 1, "rejected": 0}',
            ],
            "duplicate id",
        ),
        (['{"id": "other/test/0", "chosen": 1, "rejected": 0}'], "no scores for 1 of 1 pairs"),
    ],
)
def test_scores_file_errors(tmp_path, lines, message):
    with pytest.raises(DataFormatError, match=message):
        read_scores_file(_write(tmp_path, lines), [_pair(" a", " b", index=0)])
