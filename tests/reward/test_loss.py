import math

import numpy as np
import pytest
import scipy.sparse as sp

from hhrlhf.reward.loss import bt_loss, bt_objective, preference_probability, sigmoid


def test_bt_loss_hand_values():
    # log(1 + exp(r_rejected - r_chosen))
    assert bt_loss(0.0, 0.0) == pytest.approx(math.log(2))
    assert bt_loss(2.0, 1.0) == pytest.approx(math.log(1 + math.exp(-1)))
    assert bt_loss(1.0, 2.0) == pytest.approx(math.log(1 + math.e))
    # stable at extreme margins
    assert bt_loss(1000.0, 0.0) == pytest.approx(0.0)
    assert bt_loss(0.0, 1000.0) == pytest.approx(1000.0)


def test_preference_probability():
    assert preference_probability(1.0, 1.0) == pytest.approx(0.5)
    assert preference_probability(math.log(3), 0.0) == pytest.approx(0.75)
    p = preference_probability([2.0, -1.0], [0.5, 3.0])
    assert p + preference_probability([0.5, 3.0], [2.0, -1.0]) == pytest.approx([1.0, 1.0])
    assert sigmoid(np.array([-800.0, 800.0])) == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_matches_finite_differences(sparse, weighted):
    rng = np.random.default_rng(0)
    d = rng.normal(size=(20, 7))
    w = rng.normal(size=7)
    weights = rng.uniform(0.5, 3.0, size=20) if weighted else None
    diffs = sp.csr_matrix(d) if sparse else d
    loss, grad = bt_objective(w, diffs, weights, l2=0.3)
    eps = 1e-6
    numeric = np.array(
        [
            (
                bt_objective(w + eps * e, diffs, weights, 0.3)[0]
                - bt_objective(w - eps * e, diffs, weights, 0.3)[0]
            )
            / (2 * eps)
            for e in np.eye(7)
        ]
    )
    assert grad == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_objective_is_mean_weighted_bt_loss_plus_ridge():
    d = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    w = np.array([0.5, -0.25])
    weights = np.array([1.0, 2.0, 1.0])
    margins = d @ w  # 0.5, -0.5, 0.25
    expected = (bt_loss(margins, 0) * weights).sum() / 3 + 0.5 * 0.1 * (0.25 + 0.0625)
    assert bt_objective(w, d, weights, l2=0.1)[0] == pytest.approx(expected)
