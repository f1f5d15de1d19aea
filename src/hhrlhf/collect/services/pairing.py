"""Which two backends answer a turn (docs/collect.md, "How pairs are drawn")."""

from __future__ import annotations

import random

from ...errors import HHError


def choose_backends(
    names: list[str],
    pairing: str,
    rng: random.Random,
    *,
    weights: list[float] | None = None,
    rerank: frozenset[str] | set[str] = frozenset(),
) -> tuple[str, str]:
    """Which backends answer as A and B (docs/collect.md, "How pairs are drawn").

    ``random``: the first backend is drawn by ``weights`` (default equal) among ``names``; a
    ``rerank`` one answers both slots (its best two); otherwise the second is drawn by weight
    among the other plain backends (the same one again when it is the only one), and the two
    are put in A and B in random order. So each backend is drawn first with a probability of
    its weight over the total, whatever its kind. ``fixed``: the first answers A, the second B.
    """
    if not names:
        raise HHError("no backend is configured")
    if weights is None:
        weights = [1.0] * len(names)
    if pairing == "fixed" or len(names) == 1:
        a, b = names[0], names[1] if len(names) > 1 else names[0]
        if a in rerank or b in rerank:
            a = b = a if a in rerank else b
        return a, b
    first = rng.choices(names, weights)[0]
    if first in rerank:
        return first, first
    others = [(n, w) for n, w in zip(names, weights, strict=True) if n != first and n not in rerank]
    if not others:
        return first, first
    second = rng.choices([n for n, _ in others], [w for _, w in others])[0]
    return (first, second) if rng.random() < 0.5 else (second, first)
