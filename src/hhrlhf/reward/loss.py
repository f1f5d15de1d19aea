"""The Bradley-Terry preference loss, its gradient, and the preference probability.

The paper's preference model loss is ``L = log(1 + exp(r_rejected - r_chosen))``: the
negative log-likelihood that the chosen response wins under ``P(A > B) = sigmoid(r_A - r_B)``.
For a linear model ``r = x . w`` it depends only on the feature *difference*
``d = x_chosen - x_rejected``, through the margin ``m = d . w``: ``L = softplus(-m)``.
Everything here is numerically stable for large margins of either sign.
"""

from __future__ import annotations

from typing import Any

from ..errors import require

__all__ = ["bt_loss", "bt_objective", "preference_probability", "sigmoid"]


def _numpy():
    """numpy, imported on first use; missing, a MissingExtraError naming the ``[reward]`` extra."""
    return require("numpy", "reward", "preference models")


def sigmoid(x: Any) -> Any:
    """Numerically stable logistic function."""
    np = _numpy()
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def preference_probability(score_a, score_b):
    """P(A preferred over B) = sigmoid(r_A - r_B)."""
    np = _numpy()
    return sigmoid(np.asarray(score_a, dtype=float) - np.asarray(score_b, dtype=float))


def bt_loss(score_chosen, score_rejected):
    """Per-pair loss ``log(1 + exp(r_rejected - r_chosen))``, stable (``logaddexp``)."""
    np = _numpy()
    diff = np.asarray(score_rejected, dtype=float) - np.asarray(score_chosen, dtype=float)
    return np.logaddexp(0.0, diff)


def bt_objective(w, diffs, weights=None, l2: float = 0.0, smoothing: float = 0.0, offsets=None):
    """Weighted mean BT loss of a linear model plus ``l2/2 * |w|^2``, and its gradient.

    ``diffs`` is the (n_pairs, n_features) matrix of ``x_chosen - x_rejected`` (dense or
    scipy sparse); ``weights`` the per-pair weights (the helpful/harmless mixing: 1 for
    helpful pairs, lambda for harmless ones), averaged over the number of pairs so that
    ``L = (sum_help l + lambda * sum_harm l) / n``. Returns ``(loss, grad)`` for L-BFGS.

    ``offsets`` (one per pair) is an adaptive margin: the loss of a pair is
    ``-log sigmoid(m - offset)`` (Secrets of RLHF II), so a pair whose offset is negative asks
    less of the model and one whose offset is positive asks more. ``smoothing`` (epsilon) is
    label smoothing, ``(1 - epsilon) softplus(-z) + epsilon softplus(z)`` with ``z`` the margin
    less its offset: the label is trusted with probability ``1 - epsilon``.
    """
    np = _numpy()
    w = np.asarray(w, dtype=float)
    n = diffs.shape[0]
    margin = np.asarray(diffs @ w).ravel()
    if offsets is not None:
        margin = margin - np.asarray(offsets, dtype=float)
    per_pair = np.logaddexp(0.0, -margin)
    # d/dm softplus(-m) = -sigmoid(-m)
    dm = -sigmoid(-margin)
    if smoothing:
        per_pair = (1.0 - smoothing) * per_pair + smoothing * np.logaddexp(0.0, margin)
        dm = (1.0 - smoothing) * dm + smoothing * sigmoid(margin)
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        per_pair = per_pair * weights
        dm = dm * weights
    loss = per_pair.sum() / n + 0.5 * l2 * float(w @ w)
    grad = np.asarray(diffs.T @ dm).ravel() / n + l2 * w
    return loss, grad
