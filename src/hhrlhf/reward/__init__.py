"""Preference models: featurise, train (Bradley-Terry), evaluate, score and rerank.

The default backend is a linear model over text features (numpy/scipy/scikit-learn, the
``[reward]`` extra); :mod:`hhrlhf.reward.hf` fine-tunes Hugging Face models through TRL's
``RewardTrainer`` (the ``[train]`` extra). Heavy imports happen inside functions, so importing
this package costs nothing.

>>> from hhrlhf.reward import train_pm, evaluate_model
>>> model = train_pm(hhrlhf.load_dataset(data="sample", split="train"))  # doctest: +SKIP
>>> evaluate_model(model, hhrlhf.load_dataset(data="sample", split="test"))  # doctest: +SKIP
"""

from .evaluate import BASELINES, evaluate_model, evaluate_scores, read_scores_file
from .features import FeatureConfig, Featurizer
from .loss import bt_loss, bt_objective, preference_probability
from .model import FORMAT_VERSION, PreferenceModel, load_model, train_pm
from .rerank import rerank, rerank_file
from .score import score_attempts, score_dialogue

__all__ = [
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
