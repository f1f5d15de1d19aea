"""Shared builders for the reward tests: synthetic pairs with a planted signal."""

from __future__ import annotations

import random

import pytest

from hhrlhf import PreferencePair
from hhrlhf.reward import FeatureConfig

FILLER = [f"w{i}" for i in range(150)]


def make_pairs(n: int, *, seed: int, signal: bool = True, subset: str = "helpful-base"):
    """Pairs whose chosen response says "gladly" and rejected says "never" (plus filler).

    With ``signal=False`` the two sides are swapped on a random half, so the cue no longer
    tells which side was chosen (the shuffled-label control).
    """
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        prompt = f"\n\nHuman: {' '.join(rng.choices(FILLER, k=6))}?\n\nAssistant:"
        good = " " + " ".join(rng.choices(FILLER, k=8) + ["gladly"])
        bad = " " + " ".join(rng.choices(FILLER, k=8) + ["never"])
        if not signal and rng.random() < 0.5:
            good, bad = bad, good
        pairs.append(PreferencePair(prompt + good, prompt + bad, subset, "train", i))
    return pairs


#: Small hashing spaces so the tests train in well under a second.
SMALL = FeatureConfig(word_bits=12, char_bits=12, edge_bits=10, pair_bits=12)


@pytest.fixture
def small_config():
    return SMALL
