"""The red-team statistics on hand-made inputs; every expected value is worked out by hand."""

from __future__ import annotations

import math

import pytest

from hhrlhf.redteam import stats as st

pytest.importorskip("numpy")

NAN = float("nan")
INF = float("inf")


def test_finite_drops_and_counts_nan_and_infinities():
    assert st.finite([1, NAN, INF, 2, -INF]) == ([1.0, 2.0], 3)


def test_mean():
    assert st.mean([1.0, 2.0, 6.0]) == 3.0
    assert st.mean([]) is None


def test_bootstrap_of_nothing_is_none():
    assert st.bootstrap_mean([]) == {"n": 0, "mean": None, "low": None, "high": None}


@pytest.mark.parametrize("values", [[2.5], [3.0, 3.0, 3.0]])
def test_bootstrap_of_constant_values_collapses(values):
    # every resample of a constant list has the same mean
    r = st.bootstrap_mean(values, seed=1)
    assert r == {"n": len(values), "mean": values[0], "low": values[0], "high": values[0]}


def test_bootstrap_two_values_interval_is_zero_to_one():
    # resampling [0, 1] twice gives mean 0 (p = 1/4), 0.5 (1/2) or 1 (1/4); with 1,000
    # resamples about 250 are 0 and 250 are 1, so the 2.5% and 97.5% quantiles are 0 and 1
    r = st.bootstrap_mean([0.0, 1.0], seed=0)
    assert r == {"n": 2, "mean": 0.5, "low": 0.0, "high": 1.0}


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    a = st.bootstrap_mean(values, seed=7)
    b = st.bootstrap_mean(values, seed=7)
    assert a == b
    assert a["mean"] == 4.0
    assert 1.0 <= a["low"] < a["mean"] < a["high"] <= 10.0
    narrow = st.bootstrap_mean(values, seed=7, level=0.5)
    assert a["low"] <= narrow["low"] <= narrow["high"] <= a["high"]
    assert narrow["high"] - narrow["low"] < a["high"] - a["low"]


def test_success_share_uses_the_threshold_inclusively():
    ratings = [0, 1, 2, 3, 4]
    assert st.success_share(ratings) == {"n": 5, "successful": 2, "share": 0.4}
    assert st.success_share(ratings, 4) == {"n": 5, "successful": 1, "share": 0.2}
    assert st.success_share(ratings, 2.5) == {"n": 5, "successful": 2, "share": 0.4}
    assert st.success_share([]) == {"n": 0, "successful": 0, "share": None}


def test_rank_average_shares_ranks_between_ties():
    assert st.rank_average([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    assert st.rank_average([3, 1, 2]) == [3.0, 1.0, 2.0]
    assert st.rank_average([5, 5, 5]) == [2.0, 2.0, 2.0]


def test_spearman_perfect_orders():
    assert st.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert st.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # monotone but not linear: ranks are what counts
    assert st.spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)


def test_spearman_with_ties_on_one_side():
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4], both means 2.5
    # dx = [-1.5, 0, 0, 1.5], dy = [-1.5, -0.5, 0.5, 1.5]
    # sxy = 2.25 + 2.25 = 4.5; sxx = 4.5; syy = 5 -> 4.5 / sqrt(22.5)
    assert st.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_spearman_with_ties_on_both_sides():
    # ranks x = [1.5, 1.5, 3], y = [1, 2.5, 2.5]; both means 2
    # dx = [-.5, -.5, 1], dy = [-1, .5, .5]; sxy = .5 - .25 + .5 = .75; sxx = syy = 1.5
    assert st.spearman([1, 1, 2], [1, 2, 2]) == pytest.approx(0.5)


def test_spearman_undefined_cases():
    assert st.spearman([1], [2]) is None
    assert st.spearman([1, 1, 1], [1, 2, 3]) is None
    with pytest.raises(ValueError, match="differ in length"):
        st.spearman([1, 2], [1])


def test_lorenz_curve_points():
    # sorted [1, 1, 2], total 4
    assert st.lorenz_curve([2, 1, 1]) == [(0.0, 0.0), (1 / 3, 0.25), (2 / 3, 0.5), (1.0, 1.0)]
    assert st.lorenz_curve([]) == [(0.0, 0.0), (1.0, 1.0)]


def test_top_share_of_the_most_active_members():
    # 10 members, ceil(0.15 * 10) = 2 top members: 11 + 1 of 20 attempts
    counts = [1] * 9 + [11]
    assert st.top_share(counts) == {"members": 10, "top_members": 2, "share": 0.6}
    # 4 members: ceil(0.6) = 1 member, 5 of 20
    assert st.top_share([5, 5, 5, 5])["share"] == 0.25
    # 15% of 20 is exactly 3 (0.15 * 20 is 3.0000000000000004 in floating point)
    assert st.top_share([1] * 20)["top_members"] == 3
    assert st.top_share([])["share"] is None


def test_smallest_share_covering_80_percent():
    # [11, 1 x 9]: 11 + 5 = 16 = 80% of 20 -> 6 of 10 members
    counts = [1] * 9 + [11]
    assert st.smallest_share_covering(counts, 0.8) == {
        "members": 10,
        "needed": 6,
        "share_of_members": 0.6,
    }


def test_gini():
    assert st.gini([3, 3, 3, 3]) == pytest.approx(0.0)
    # sorted [0, 0, 0, 1]: 2 * (4 * 1) / (4 * 1) - 5 / 4 = 0.75
    assert st.gini([1, 0, 0, 0]) == pytest.approx(0.75)
    assert st.gini([]) is None


def test_histogram_bins_and_inclusive_right_edge():
    assert st.histogram([0, 1, 2, 3], bins=2) == {
        "n": 4,
        "edges": [0.0, 1.5, 3.0],
        "counts": [2, 2],
    }
    # a constant widens to +-0.5 so there is something to draw
    assert st.histogram([2, 2], bins=2) == {"n": 2, "edges": [1.5, 2.0, 2.5], "counts": [0, 2]}
    assert st.histogram([], bins=2)["counts"] == [0, 0]


def test_value_counts_orders_numerically_and_writes_integers_plainly():
    assert list(st.value_counts([4.0, 0.0, 4.0, 2.5, 10.0]).items()) == [
        ("0", 1),
        ("2.5", 1),
        ("4", 2),
        ("10", 1),
    ]


def test_model_types_and_sizes_order(make_attempt):
    attempts = [
        make_attempt(model_type="rlhf", num_params="52B"),
        make_attempt(model_type="zz new", num_params="13B"),
        make_attempt(model_type="plain lm", num_params="2.7B"),
    ]
    assert st.model_types(attempts) == ["plain lm", "rlhf", "zz new"]
    assert st.sizes(attempts) == ["2.7B", "13B", "52B"]


def test_cell_counts_fill_every_cell(make_attempt):
    attempts = [
        make_attempt(model_type="rlhf", num_params="52B", member=1),
        make_attempt(model_type="rlhf", num_params="52B", member=1),
        make_attempt(model_type="rlhf", num_params="52B", member=2),
        make_attempt(model_type="plain lm", num_params="2.7B", member=3),
    ]
    assert st.cell_counts(attempts) == {
        "plain lm": {"2.7B": {"attempts": 1, "members": 1}, "52B": {"attempts": 0, "members": 0}},
        "rlhf": {"2.7B": {"attempts": 0, "members": 0}, "52B": {"attempts": 3, "members": 2}},
    }


def test_cell_means_drop_non_finite_values(make_attempt):
    attempts = [
        make_attempt(score=1.0),
        make_attempt(score=2.0),
        make_attempt(score=NAN),
        make_attempt(score=INF),
    ]
    cell = st.cell_means(attempts, lambda a: a.min_harmlessness_score_transcript)["rlhf"]["52B"]
    assert cell["n"] == 2
    assert cell["mean"] == 1.5
    assert cell["dropped"] == 2
    assert 1.0 <= cell["low"] <= cell["high"] <= 2.0


def test_cell_success(make_attempt):
    attempts = [make_attempt(rating=r) for r in (0, 3, 4, 1)]
    assert st.cell_success(attempts)["rlhf"]["52B"] == {"n": 4, "successful": 2, "share": 0.5}
    assert st.cell_success(attempts, 4)["rlhf"]["52B"]["successful"] == 1


def test_member_counts_and_success(make_attempt):
    attempts = [
        make_attempt(member=1, rating=4),
        make_attempt(member=1, rating=0, upworker=True),
        make_attempt(member="b", rating=3),
        make_attempt(member=1, rating=3),
    ]
    assert st.member_counts(attempts) == {1: 3, "b": 1}
    rows = st.member_success(attempts)
    assert rows == [
        {"member": 1, "upworker": None, "attempts": 3, "successful": 2, "share": 2 / 3},
        {"member": "b", "upworker": False, "attempts": 1, "successful": 1, "share": 1.0},
    ]


def test_worker_pools(make_attempt):
    attempts = [
        make_attempt(member=1, upworker=True, rating=4, score=-1.0),
        make_attempt(member=1, upworker=True, rating=0, score=NAN),
        make_attempt(member=2, rating=2, score=1.0),
        make_attempt(member=3, rating=3, score=3.0),
        make_attempt(member=3, rating=0, score=2.0),
    ]
    pools = st.worker_pools(attempts)
    assert pools["upwork"] == {
        "attempts": 2,
        "members": 1,
        "successful": 1,
        "share": 0.5,
        "mean_rating": 2.0,
        "mean_min_harmlessness": -1.0,
        "dropped_scores": 1,
    }
    assert pools["mturk"] == {
        "attempts": 3,
        "members": 2,
        "successful": 1,
        "share": 1 / 3,
        "mean_rating": 5 / 3,
        "mean_min_harmlessness": 2.0,
        "dropped_scores": 0,
    }


def test_rating_vs_harmlessness(make_attempt):
    attempts = [
        make_attempt(rating=0, score=2.0),
        make_attempt(rating=0, score=1.0),
        make_attempt(rating=4, score=-3.0),
        make_attempt(rating=4, score=NAN),
    ]
    r = st.rating_vs_harmlessness(attempts)
    assert r["n"] == 3 and r["dropped"] == 1
    assert r["by_rating"] == {
        "0": {"n": 2, "mean": 1.5, "median": 1.5},
        "4": {"n": 1, "mean": -3.0, "median": -3.0},
    }
    # ranks x = [1.5, 1.5, 3], y = [3, 2, 1]; dx = [-.5, -.5, 1], dy = [1, 0, -1]
    # sxy = -.5 - 1 = -1.5; sxx = 1.5; syy = 2 -> -1.5 / sqrt(3)
    assert r["spearman"] == pytest.approx(-1.5 / math.sqrt(3))


def test_tag_counts_total_vs_successful(make_attempt):
    attempts = [
        make_attempt(model_type="rlhf", tags=["A", "B"], rating=4),
        make_attempt(model_type="rlhf", tags=["A"], rating=0),
        make_attempt(model_type="plain lm", tags=["A", "A"], rating=3),  # repeat counts once
        make_attempt(tags=None, rating=4),
        make_attempt(tags=[], rating=4),
    ]
    t = st.tag_counts(attempts)
    assert (t["tagged"], t["untagged"], t["empty"]) == (3, 1, 1)
    assert t["overall"] == {"A": {"total": 3, "successful": 2}, "B": {"total": 1, "successful": 1}}
    assert list(t["by_model_type"]) == ["plain lm", "rlhf"]
    assert t["by_model_type"]["rlhf"] == {
        "tagged": 2,
        "tags": {"A": {"total": 2, "successful": 1}, "B": {"total": 1, "successful": 1}},
    }
    assert t["by_model_type"]["plain lm"]["tags"] == {"A": {"total": 1, "successful": 1}}


def test_turns_vs_success(make_attempt):
    attempts = [
        make_attempt(turns=1, rating=4),
        make_attempt(turns=1, rating=0),
        make_attempt(turns=3, rating=3),
    ]
    r = st.turns_vs_success(attempts)
    assert r["n"] == 3
    assert r["by_turns"] == {
        "1": {"attempts": 2, "successful": 1, "share": 0.5},
        "3": {"attempts": 1, "successful": 1, "share": 1.0},
    }
    # ranks turns [1.5, 1.5, 3], ratings [3, 1, 2]: dx = [-.5, -.5, 1], dy = [1, -1, 0] -> 0
    assert r["spearman_turns_rating"] == pytest.approx(0.0)
