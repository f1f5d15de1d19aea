"""The default preference model: linear in :mod:`.features`, fitted with the Bradley-Terry loss.

Training is pairwise: the model sees ``x(prompt, chosen) - x(prompt, rejected)`` for each pair
and minimises ``L = (sum_help l + lambda * sum_harm l) / n + l2/2 |w|^2`` with L-BFGS from a
zero start, where ``l`` is :func:`.loss.bt_loss` and harmless-base pairs are the "harm" part
(the paper's ``L = L_help + lambda L_harm``). There is no randomness anywhere, so the same data
and settings give the same weights, bit for bit, on the same machine.

A saved model is a directory::

    model.json    format and package version, backend, feature settings, hyperparameters,
                  training data (subsets, splits, rows, file checksums), training metrics
    weights.npz   the weight vector and the featuriser's fitted statistics

The format (``model.json``, ``FORMAT_VERSION``) is the one of :mod:`.saved`, shared with
the other backends; :func:`hhrlhf.reward.load_model` reads any of them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import ModelFormatError, require
from .features import FeatureConfig, Featurizer
from .loss import bt_objective
from .saved import FORMAT_VERSION, describe_training_data, user_meta, write_model_json

__all__ = [
    "FORMAT_VERSION",
    "HARM_SUBSETS",
    "PreferenceModel",
    "train_pm",
    "pair_weights",
    "fit_weights",
]

#: Subsets whose pairs form the "harm" part of the mixed loss.
HARM_SUBSETS = frozenset({"harmless-base"})


class PreferenceModel:
    """A fitted linear PM: ``score(prompt, response) = features(prompt, response) . weights``.

    Implements :class:`hhrlhf.reward.backends.RewardModel`.
    """

    backend = "linear"

    def __init__(self, featurizer: Featurizer, weights, meta: dict | None = None):
        self.featurizer = featurizer
        self.weights = weights
        self.meta = meta or {}

    def score(self, prompts, responses, *, n_jobs: int = 1):
        """Scores (logits) of each response in the context of its prompt, as a numpy array."""
        import numpy as np

        prompts, responses = list(prompts), list(responses)
        if not responses:
            return np.zeros(0)
        x = self.featurizer.transform(prompts, responses, n_jobs=n_jobs)
        return np.asarray(x @ self.weights).ravel()

    def score_pairs(self, pairs, *, n_jobs: int = 1):
        """(chosen scores, rejected scores) for a list of :class:`~hhrlhf.PreferencePair`."""
        prompts = [p.prompt for p in pairs for _ in (0, 1)]
        responses = [r for p in pairs for r in (p.chosen_response, p.rejected_response)]
        s = self.score(prompts, responses, n_jobs=n_jobs)
        return s[0::2], s[1::2]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the versioned model directory (created if needed) and return its path."""
        import numpy as np

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path / "weights.npz", weights=self.weights, **self.featurizer.state())
        write_model_json(path, self.backend, self.meta, features=self.featurizer.config.to_dict())
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, meta: dict) -> PreferenceModel:
        """The model in directory ``path``, whose checked ``model.json`` is ``meta``
        (:func:`hhrlhf.reward.saved.read_model_json`)."""
        path = Path(path)
        require("numpy", "reward", "the preference model")
        try:
            config = FeatureConfig.from_dict(meta["features"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFormatError(path / "model.json", f"bad feature settings: {exc}") from exc
        try:
            arrays = _load_arrays(path / "weights.npz", Featurizer(config).n_features_max)
        except (OSError, KeyError, ValueError) as exc:
            raise ModelFormatError(path, f"corrupt model: {exc}") from exc
        featurizer = Featurizer.from_state(config, arrays)
        weights = arrays.get("weights")
        if weights is None or weights.shape != (featurizer.n_features,):
            raise ModelFormatError(path, "corrupt model: weights do not match the feature settings")
        return cls(featurizer, weights, user_meta(meta))


def _load_arrays(npz: Path, max_size: int) -> dict:
    """The arrays of ``weights.npz``, each checked against ``max_size`` elements from its header
    before it is read, so a hostile file cannot make the loader allocate gigabytes."""
    import zipfile

    import numpy as np

    fmt = np.lib.format
    with zipfile.ZipFile(npz) as zf:
        for info in zf.infolist():
            with zf.open(info) as fh:
                version = fmt.read_magic(fh)
                read_header = (
                    fmt.read_array_header_1_0 if version == (1, 0) else (fmt.read_array_header_2_0)
                )
                shape, _, dtype = read_header(fh)
            size = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if dtype.hasobject or size > max_size:
                raise ValueError(
                    f"array {info.filename} of shape {shape} and type {dtype} does not fit the "
                    f"feature settings (at most {max_size:,} numbers)"
                )
    with np.load(npz, allow_pickle=False) as arrays:
        return dict(arrays)


def pair_weights(subsets, harm_weight: float):
    """Per-pair loss weights: ``harm_weight`` (lambda) for harmless pairs, 1 for the rest."""
    import numpy as np

    return np.array([harm_weight if s in HARM_SUBSETS else 1.0 for s in subsets], dtype=float)


def fit_weights(
    diffs,
    weights,
    *,
    l2: float,
    max_iter: int,
    desc: str = "fitting",
    smoothing: float = 0.0,
    offsets=None,
):
    """The weights minimising :func:`.loss.bt_objective` over the pair feature differences
    ``diffs`` (L-BFGS from zeros, a progress bar named ``desc``): scipy's ``OptimizeResult``.
    ``smoothing`` and ``offsets``: label smoothing and adaptive margins (:mod:`.loss`)."""
    np = require("numpy", "reward", "the preference model")
    optimize = require("scipy.optimize", "reward", "the preference model")
    from ..progress import progress as progress_bar

    with progress_bar(total=max_iter, desc=desc, unit="iterations") as bar:
        result = optimize.minimize(
            bt_objective,
            np.zeros(diffs.shape[1]),
            args=(diffs, weights, l2, smoothing, offsets),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter},
            callback=lambda _: bar.update(1),
        )
        if result.success:  # converged before max_iter: the bar ends at 100%
            bar.finish()
    return result


def _fitted_diffs(featurizer: Featurizer, pairs: list, n_jobs: int):
    """Fit ``featurizer`` on ``pairs`` and return phi(chosen) - phi(rejected), one CSR row a
    pair."""
    # Rows interleaved (chosen, rejected) so each pair's prompt is featurised once per chunk.
    prompts = [p.prompt for p in pairs for _ in (0, 1)]
    responses = [r for p in pairs for r in (p.chosen_response, p.rejected_response)]
    raw = featurizer.raw_features(prompts, responses, n_jobs=n_jobs)
    featurizer.fit(None, None, raw=raw)
    x = featurizer.transform(None, None, raw=raw)
    del raw
    return (x[0::2] - x[1::2]).tocsr()


def train_pm(
    pairs,
    *,
    config: FeatureConfig | None = None,
    l2: float = 5e-4,
    harm_weight: float = 1.0,
    max_iter: int = 300,
    n_jobs: int = 1,
    training_data: dict | None = None,
    progress=None,
    desc: str = "fitting",
    label_smoothing: float = 0.0,
    margins=None,
) -> PreferenceModel:
    """Fit a linear PM on preference pairs with the Bradley-Terry loss.

    ``harm_weight`` is lambda in ``L = L_help + lambda L_harm``; ``l2`` the ridge penalty on
    the mean loss; ``n_jobs`` parallelises featurisation. ``training_data`` (subsets, splits,
    rows, checksums) is recorded in ``model.json``. ``progress`` is called with short strings;
    ``desc`` names the fit's progress bar. ``label_smoothing`` (epsilon) and ``margins`` (one
    adaptive margin per pair, e.g. the ``margin`` of ``hh pm flag``) change the loss
    (:func:`.loss.bt_objective`).
    """
    np = require("numpy", "reward", "the preference model")

    pairs = list(pairs)
    if not pairs:
        raise ValueError("no pairs to train on")
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    featurizer = Featurizer(config)
    n = len(pairs)
    diffs = _fitted_diffs(featurizer, pairs, n_jobs)
    t_feat = time.perf_counter() - t0
    say(f"featurised {n:,} pairs in {t_feat:.1f}s ({diffs.shape[1]:,} features)")
    weights = pair_weights([p.subset for p in pairs], harm_weight)
    if not 0 <= label_smoothing < 0.5:
        raise ValueError(f"label smoothing must be in [0, 0.5), not {label_smoothing}")
    if margins is not None and len(margins) != n:
        raise ValueError(f"{len(margins)} margins for {n} pairs")
    result = fit_weights(
        diffs,
        weights,
        l2=l2,
        max_iter=max_iter,
        desc=desc,
        smoothing=label_smoothing,
        offsets=margins,
    )
    w = result.x
    margin = np.asarray(diffs @ w).ravel()
    t_total = time.perf_counter() - t0
    say(f"fitted in {t_total - t_feat:.1f}s ({result.nit} iterations)")
    meta = {
        "hyperparameters": {
            "l2": l2,
            "harm_weight": harm_weight,
            "max_iter": max_iter,
            "optimizer": "scipy L-BFGS-B from zeros (deterministic)",
            **({"label_smoothing": label_smoothing} if label_smoothing else {}),
            **({"adaptive_margin": "per pair (hh pm flag margins)"} if margins is not None else {}),
        },
        "training_data": training_data or describe_training_data(pairs),
        "metrics": {
            "pairs": n,
            "train_loss": float(result.fun),
            "train_accuracy": float(np.mean(margin > 0)),
            "train_ties": int(np.sum(margin == 0)),
            "iterations": int(result.nit),
            "converged": bool(result.success),
            "featurise_seconds": round(t_feat, 3),
            "train_seconds": round(t_total, 3),
        },
    }
    return PreferenceModel(featurizer, w, meta)
