"""Preference models: featurise, train (Bradley-Terry), evaluate, score and rerank.

Every model implements :class:`RewardModel` (``score``, ``score_pairs``, ``save``, ``load``);
the backends are in :data:`BACKENDS`. The default backend is a linear model over text features
(numpy/scipy/scikit-learn, the ``[reward]`` extra); :mod:`hhrlhf.reward.hf` fine-tunes Hugging
Face models through TRL's ``RewardTrainer`` (the ``[train]`` extra). Heavy imports happen
inside functions, so importing this package imports none of them (a test checks).

>>> from hhrlhf.reward import train_pm, evaluate_model
>>> model = train_pm(hhrlhf.load_dataset(data="sample", split="train"))  # doctest: +SKIP
>>> evaluate_model(model, hhrlhf.load_dataset(data="sample", split="test"))  # doctest: +SKIP
"""

from .backends import BACKENDS, Backend, RewardModel, get_backend, load_model, train_model
from .evaluate import BASELINES, evaluate_model, evaluate_scores, read_scores_file
from .features import FeatureConfig, Featurizer
from .hf import HFRewardModel
from .loss import bt_loss, bt_objective, preference_probability
from .model import PreferenceModel, train_pm
from .rerank import rerank, rerank_file
from .saved import FORMAT_VERSION
from .score import score_attempts, score_dialogue

__all__ = [
    "RewardModel",
    "Backend",
    "BACKENDS",
    "get_backend",
    "train_model",
    "HFRewardModel",
    "FeatureConfig",
    "Featurizer",
    "bt_loss",
    "bt_objective",
    "preference_probability",
    "PreferenceModel",
    "train_pm",
    "load_model",
    "FORMAT_VERSION",
    "evaluate_scores",
    "evaluate_model",
    "read_scores_file",
    "BASELINES",
    "score_dialogue",
    "score_attempts",
    "rerank",
    "rerank_file",
]
