"""The reward-model contract and the backends that implement it.

A backend is a kind of model that can be trained on preference pairs, saved as a model directory
(:mod:`.saved`) and loaded back. Every model a backend makes implements :class:`RewardModel`;
the CLI (``hh pm train/eval/score/rerank``) and the library reach backends only through
:data:`BACKENDS`:

>>> sorted(BACKENDS)
['linear', 'transformers']
>>> get_backend("transformers").options
('base_model', 'epochs', 'max_steps', 'max_length')

Adding a backend is one module with a model class (``score``, ``score_pairs``, ``save``,
``load``) and a trainer, and one :class:`Backend` entry below.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import ModelFormatError, UnknownNameError
from .features import FeatureConfig
from .hf import HFRewardModel, train_hf
from .model import PreferenceModel, train_pm
from .saved import read_model_json

__all__ = [
    "RewardModel",
    "Backend",
    "BACKENDS",
    "get_backend",
    "load_model",
    "train_model",
]


@runtime_checkable
class RewardModel(Protocol):
    """What every preference (reward) model offers, whatever its backend."""

    #: The name of its backend in :data:`BACKENDS`, recorded in ``model.json``.
    backend: str
    #: Its record: hyperparameters, training data, metrics (saved in ``model.json``).
    meta: dict

    def score(self, prompts: Sequence[str], responses: Sequence[str], *, n_jobs: int = 1):
        """One score (logit) per response in the context of its prompt, as a numpy array."""
        ...

    def score_pairs(self, pairs: Sequence, *, n_jobs: int = 1) -> tuple:
        """(chosen scores, rejected scores) of :class:`~hhrlhf.PreferencePair` s."""
        ...

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model directory ``path`` (``model.json`` and the backend's files)."""
        ...

    @classmethod
    def load(cls, path: str | os.PathLike, meta: dict) -> RewardModel:
        """The model saved in ``path``, given its checked ``model.json`` (``meta``)."""
        ...


@dataclass(frozen=True)
class Backend:
    """One backend: its model class, its trainer and the training options the trainer takes."""

    name: str
    #: The ``pip install 'hhrlhf[extra]'`` it needs.
    extra: str
    description: str
    model: type[RewardModel]
    #: ``train(pairs, out, *, training_data, progress, **options) -> RewardModel``: fit a model
    #: and write its directory ``out``.
    train: Callable[..., RewardModel]
    #: The keyword options ``train`` takes (``hh pm train`` passes those of these it has).
    options: tuple[str, ...]
    #: Options without which it cannot train.
    required: tuple[str, ...] = ()


def _train_linear(
    pairs,
    out,
    *,
    training_data: dict | None = None,
    progress: Callable[[str], None] | None = None,
    harm_weight: float = 1.0,
    l2: float = 5e-4,
    max_iter: int = 300,
    n_jobs: int = 1,
    config: FeatureConfig | None = None,
) -> PreferenceModel:
    model = train_pm(
        pairs,
        config=config,
        l2=l2,
        harm_weight=harm_weight,
        max_iter=max_iter,
        n_jobs=n_jobs,
        training_data=training_data,
        progress=progress,
    )
    model.save(out)
    return model


def _train_transformers(
    pairs,
    out,
    *,
    training_data: dict | None = None,
    progress: Callable[[str], None] | None = None,
    base_model: str,
    epochs: float = 1.0,
    max_steps: int = -1,
    max_length: int = 512,
) -> HFRewardModel:
    # the trainer reports its steps through transformers' own progress bars; ``progress`` hears
    # how many pairs were cut or dropped to fit max_length
    return train_hf(
        base_model,
        pairs,
        out,
        epochs=epochs,
        max_steps=max_steps,
        max_length=max_length,
        training_data=training_data,
        progress=progress,
    )


#: Backend name -> :class:`Backend`; the first is the default.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "linear",
            extra="reward",
            description="linear model over text features, CPU",
            model=PreferenceModel,
            train=_train_linear,
            options=("harm_weight", "l2", "max_iter", "n_jobs", "config"),
        ),
        Backend(
            "transformers",
            extra="train",
            description="a Hugging Face model fine-tuned with TRL's RewardTrainer",
            model=HFRewardModel,
            train=_train_transformers,
            options=("base_model", "epochs", "max_steps", "max_length"),
            required=("base_model",),
        ),
    )
}


def get_backend(name: str) -> Backend:
    """The backend called ``name``; :class:`~hhrlhf.errors.UnknownNameError` if there is none."""
    try:
        return BACKENDS[name]
    except (KeyError, TypeError):
        raise UnknownNameError("backend", str(name), list(BACKENDS)) from None


def load_model(path: str | os.PathLike) -> RewardModel:
    """Load a saved model directory, whatever its backend."""
    path = Path(path)
    meta = read_model_json(path)
    name = meta.get("backend")
    if name not in BACKENDS:
        raise ModelFormatError(
            path, f"unknown backend {name!r}; this hhrlhf knows: {', '.join(BACKENDS)}"
        )
    return BACKENDS[name].model.load(path, meta)


def train_model(
    backend: str,
    pairs,
    out: str | os.PathLike,
    *,
    training_data: dict | None = None,
    progress: Callable[[str], None] | None = None,
    **options,
) -> RewardModel:
    """Train a ``backend`` model on ``pairs``, write its directory ``out`` and return it.

    ``options`` are the backend's training options (:attr:`Backend.options`); one it does not
    take is a :class:`TypeError`, and a missing required one a :class:`ValueError`. The
    directory also keeps the fingerprints of the training pairs
    (:data:`~hhrlhf.reward.holdout.FINGERPRINTS_FILE`).
    """
    spec = get_backend(backend)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise TypeError(
            f"the {spec.name} backend takes {', '.join(spec.options)}; not {', '.join(unknown)}"
        )
    missing = [o for o in spec.required if options.get(o) is None]
    if missing:
        raise ValueError(f"the {spec.name} backend needs {', '.join(missing)}")
    from .holdout import write_fingerprints

    pairs = list(pairs)
    model = spec.train(pairs, Path(out), training_data=training_data, progress=progress, **options)
    write_fingerprints(pairs, out)  # lets an evaluation notice the pairs it was trained on
    return model
