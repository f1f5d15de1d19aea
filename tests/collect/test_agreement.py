"""Agreement statistics on small cases worked out by hand."""

import math

import pytest

from hhrlhf.collect.agreement import (
    bootstrap_interval,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    percent_agreement,
    signed_strength,
)


def test_cohen_kappa_hand_computed():
    # 10 items: both a 4, both b 3, (a, b) 2, (b, a) 1
    pairs = [("a", "a")] * 4 + [("b", "b")] * 3 + [("a", "b")] * 2 + [("b", "a")]
    # p_o = 7/10; rater 1 says a 6/10, rater 2 says a 5/10
    # p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_cohen_kappa_perfect_and_undefined():
    assert cohen_kappa([("a", "a"), ("b", "b")]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([("a", "a"), ("a", "a")]))  # p_e = 1
    assert math.isnan(cohen_kappa([]))


def test_fleiss_kappa_hand_computed():
    units = [["a", "a", "a"], ["a", "a", "b"], ["b", "b", "b"]]
    # P_i = 1, (2*1)/(3*2) = 1/3, 1 -> P = 7/9; p_a = 5/9, p_b = 4/9 -> P_e = 41/81
    # kappa = (63/81 - 41/81) / (40/81) = 22/40
    assert fleiss_kappa(units) == pytest.approx(22 / 40)


def test_fleiss_kappa_equals_cohen_style_for_two_raters_with_equal_margins():
    # two raters, same marginals: Fleiss' and Cohen's kappa coincide
    pairs = [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b"), ("b", "b"), ("a", "a")]
    assert fleiss_kappa([list(p) for p in pairs]) == pytest.approx(cohen_kappa(pairs))


def test_percent_agreement_counts_pairs():
    # unit 1: 3 pairs all agree; unit 2: 1 of 3 pairs agrees; single rating ignored
    assert percent_agreement([["a", "a", "a"], ["a", "a", "b"], ["b"]]) == pytest.approx(4 / 6)
    assert math.isnan(percent_agreement([["a"]]))


def test_alpha_two_values_hand_computed():
    # o11 = 2, o22 = 2, o12 = o21 = 1; n1 = n2 = 3, n = 6; ordinal d12 = (6 - 3)^2 = 9
    # alpha = 1 - 5 * (2*9) / (2*3*3*9) = 1 - 90/162
    assert krippendorff_alpha_ordinal([[1, 1], [2, 2], [1, 2]]) == pytest.approx(1 - 90 / 162)


def test_alpha_ordinal_metric_hand_computed():
    units = [[1, 1], [1, 2], [3, 3]]
    # o11 = 2, o12 = o21 = 1, o33 = 2; n1 = 3, n2 = 1, n3 = 2, n = 6
    # d12 = (3+1 - 2)^2 = 4; d13 = (3+1+2 - 2.5)^2 = 12.25; d23 = (1+2 - 1.5)^2 = 2.25
    # observed 2*4 = 8; expected 2*(3*1*4 + 3*2*12.25 + 1*2*2.25) = 180
    expected = 1 - 5 * 8 / 180
    assert krippendorff_alpha_ordinal(units) == pytest.approx(expected)
    # an interval metric would give 1 - 5*2/58: the ordinal metric is not the interval one
    assert expected != pytest.approx(1 - 5 * 2 / 58)


def test_alpha_signed_strength_perfect_and_opposed():
    agree = [[signed_strength("a", 3)] * 2, [signed_strength("b", 1)] * 2]
    assert krippendorff_alpha_ordinal(agree) == pytest.approx(1.0)
    opposed = [[-3, 3], [3, -3], [-1, 1]]
    assert krippendorff_alpha_ordinal(opposed) < 0
    assert math.isnan(krippendorff_alpha_ordinal([[2, 2], [2, 2]]))


def test_bootstrap_interval_brackets_the_estimate_and_is_seeded():
    units = [["a", "a"]] * 30 + [["a", "b"]] * 10 + [["b", "b"]] * 20
    point = fleiss_kappa(units)
    lo, hi = bootstrap_interval(units, fleiss_kappa, resamples=300, seed=1)
    assert lo < point < hi
    assert 0 < hi - lo < 0.6
    assert bootstrap_interval(units, fleiss_kappa, resamples=300, seed=1) == (lo, hi)
    assert all(math.isnan(x) for x in bootstrap_interval([], fleiss_kappa))
