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

Loading a directory written with another ``FORMAT_VERSION`` raises
:class:`hhrlhf.errors.ModelFormatError`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .. import __version__
from ..errors import ModelFormatError, require
from .features import FeatureConfig, Featurizer
from .loss import bt_objective

__all__ = [
    "FORMAT_VERSION",
    "HARM_SUBSETS",
    "PreferenceModel",
    "train_pm",
    "load_model",
    "pair_weights",
]

#: 2: the ``lex`` group and five more ``dense`` columns (a version-1 model's weights would not
#: line up with this featuriser's columns).
FORMAT_VERSION = 2
FORMAT_NAME = "hhrlhf-preference-model"
#: Subsets whose pairs form the "harm" part of the mixed loss.
HARM_SUBSETS = frozenset({"harmless-base"})


class PreferenceModel:
    """A fitted linear PM: ``score(prompt, response) = features(prompt, response) . weights``."""

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
        meta = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "package_version": __version__,
            "backend": self.backend,
            "features": self.featurizer.config.to_dict(),
            **{k: v for k, v in self.meta.items() if k not in _RESERVED},
        }
        (path / "model.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return path


_RESERVED = {"format", "format_version", "package_version", "backend", "features"}


def read_model_json(path: str | os.PathLike) -> dict:
    """``model.json`` of a model directory, checked for format and version."""
    path = Path(path)
    meta_path = path / "model.json"
    if not meta_path.is_file():
        raise ModelFormatError(path, "not a model directory (no model.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelFormatError(meta_path, f"unreadable model.json: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFormatError(
            meta_path, f"not an hhrlhf preference model (format != {FORMAT_NAME!r})"
        )
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelFormatError(
            meta_path,
            f"saved with model format version {version!r}; this hhrlhf ({__version__}) reads "
            f"version {FORMAT_VERSION}: retrain the model or use the hhrlhf version that wrote it "
            f"(package {meta.get('package_version', 'unknown')})",
        )
    return meta


def load_model(path: str | os.PathLike):
    """Load a saved model directory: a :class:`PreferenceModel`, or the transformers backend's."""
    path = Path(path)
    meta = read_model_json(path)
    backend = meta.get("backend")
    if backend == "transformers":
        from .hf import HFRewardModel

        return HFRewardModel(path / "hf", meta=meta)
    if backend != PreferenceModel.backend:
        raise ModelFormatError(path, f"unknown backend {backend!r}")
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
    return PreferenceModel(
        featurizer, weights, {k: v for k, v in meta.items() if k not in _RESERVED}
    )


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
) -> PreferenceModel:
    """Fit a linear PM on preference pairs with the Bradley-Terry loss.

    ``harm_weight`` is lambda in ``L = L_help + lambda L_harm``; ``l2`` the ridge penalty on
    the mean loss; ``n_jobs`` parallelises featurisation. ``training_data`` (subsets, splits,
    rows, checksums) is recorded in ``model.json``. ``progress`` is called with short strings.
    """
    np = require("numpy", "reward", "the preference model")
    optimize = require("scipy.optimize", "reward", "the preference model")

    pairs = list(pairs)
    if not pairs:
        raise ValueError("no pairs to train on")
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    featurizer = Featurizer(config)
    n = len(pairs)
    # Rows interleaved (chosen, rejected) so each pair's prompt is featurised once per chunk.
    prompts = [p.prompt for p in pairs for _ in (0, 1)]
    responses = [r for p in pairs for r in (p.chosen_response, p.rejected_response)]
    raw = featurizer._raw_parallel(prompts, responses, n_jobs)
    featurizer.fit(None, None, raw=raw)
    x = featurizer.transform(None, None, raw=raw)
    del raw
    diffs = (x[0::2] - x[1::2]).tocsr()
    del x
    t_feat = time.perf_counter() - t0
    say(f"featurised {n:,} pairs in {t_feat:.1f}s ({diffs.shape[1]:,} features)")
    weights = pair_weights([p.subset for p in pairs], harm_weight)
    from ..progress import progress as progress_bar

    with progress_bar(total=max_iter, desc="fitting", unit="iterations") as bar:
        result = optimize.minimize(
            bt_objective,
            np.zeros(diffs.shape[1]),
            args=(diffs, weights, l2),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter},
            callback=lambda _: bar.update(1),
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
        },
        "training_data": training_data or _describe_pairs(pairs),
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


def _describe_pairs(pairs) -> dict:
    rows: dict[str, int] = {}
    for p in pairs:
        key = f"{p.subset}/{p.split}"
        rows[key] = rows.get(key, 0) + 1
    return {
        "subsets": sorted({str(p.subset) for p in pairs}),
        "splits": sorted({str(p.split) for p in pairs}),
        "rows": rows,
    }
