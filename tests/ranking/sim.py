"""Simulated votes with known strengths, for the ranking tests."""

from __future__ import annotations

import math
import random


def simulate(
    truth: dict[str, float],
    n: int,
    *,
    seed: int = 0,
    ties: float = 0.0,
    length: dict[str, float] | None = None,
    length_pull: float = 0.0,
) -> list[dict]:
    """``n`` battles between random pairs of ``truth`` (Elo ratings). ``length``: each model's
    mean response length; ``length_pull``: logits per unit of the normalised length
    difference, so longer answers win more often than their strength says."""
    rng = random.Random(seed)
    names = list(truth)
    out = []
    for k in range(n):
        a, b = rng.sample(names, 2)
        la = max(1.0, rng.gauss((length or {}).get(a, 500.0), 100.0))
        lb = max(1.0, rng.gauss((length or {}).get(b, 500.0), 100.0))
        logit = (truth[a] - truth[b]) * math.log(10) / 400 + length_pull * (la - lb) / (la + lb)
        if rng.random() < ties:
            winner = "tie"
        else:
            winner = "model_a" if rng.random() < 1 / (1 + math.exp(-logit)) else "model_b"
        out.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": winner,
                "length_a": round(la),
                "length_b": round(lb),
                "tstamp": 1_700_000_000 + 60 * k,
            }
        )
    return out


def centred(truth: dict[str, float]) -> dict[str, float]:
    mean = sum(truth.values()) / len(truth)
    return {m: 1000 + v - mean for m, v in truth.items()}
