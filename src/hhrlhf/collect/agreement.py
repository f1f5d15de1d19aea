"""Agreement between annotators: kappa for the pick, Krippendorff's alpha for the signed strength.

Pure Python (the data is small: one unit per reviewed comparison). A *unit* is one comparison
with every rating it got: the original annotator's and the reviewers'.

- Picks are nominal labels ("a"/"b", in the ORIGINAL slot order: a review that was shown the
  two responses swapped is mapped back before it gets here).
- The signed strength is ordinal: ``-strength`` for a pick of A, ``+strength`` for B, so
  "A much better" < ... < "A slightly better" < "B slightly better" < ... < "B much better".

Percent agreement is the share of agreeing rater pairs within units. Fleiss' kappa is the
version for a varying number of raters per unit (each unit's observed agreement weighs the
same; the expected agreement comes from the pooled label shares). Cohen's kappa is used per
annotator: their label against each other rater's on the units they share. Intervals are
percentile bootstrap intervals that resample whole units.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from ..bootstrap import bootstrap_interval

__all__ = [
    "percent_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha_ordinal",
    "bootstrap_interval",
    "signed_strength",
]

NAN = float("nan")


def signed_strength(pick: str, strength: int) -> int:
    """The ordinal value of a pick: ``-strength`` for A, ``+strength`` for B."""
    return -strength if pick == "a" else strength


_U = TypeVar("_U", bound=Sequence[Hashable])


def _usable(units: Sequence[_U]) -> list[_U]:
    return [u for u in units if len(u) >= 2]


@lru_cache(maxsize=4096)
def _unit_parts(unit: tuple[Any, ...]) -> tuple[float, tuple[Any, ...], tuple[Any, ...]]:
    """(agreeing pairs share, label counts, weighted ordered pairs) of one unit; units repeat a
    lot (a few labels, a few raters), so bootstrap resamples reuse these."""
    m = len(unit)
    counts = Counter(unit)
    p_i = sum(n * (n - 1) for n in counts.values()) / (m * (m - 1))
    w = 1 / (m - 1)
    pairs: defaultdict[tuple[Any, Any], float] = defaultdict(float)
    for i, x in enumerate(unit):
        for j, y in enumerate(unit):
            if i != j:
                pairs[(x, y)] += w
    return p_i, tuple(counts.items()), tuple(pairs.items())


def percent_agreement(units: Sequence[Sequence[Hashable]]) -> float:
    """Share of agreeing pairs of ratings within units (units with one rating are ignored)."""
    agree = pairs = 0
    for u in _usable(units):
        counts = Counter(u)
        agree += sum(n * (n - 1) // 2 for n in counts.values())
        pairs += len(u) * (len(u) - 1) // 2
    return agree / pairs if pairs else NAN


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float:
    """Cohen's kappa of two raters: ``(p_o - p_e) / (1 - p_e)``; NaN when undefined."""
    n = len(pairs)
    if n == 0:
        return NAN
    p_o = sum(1 for x, y in pairs if x == y) / n
    first, second = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    p_e = sum(first[k] * second[k] for k in first) / (n * n)
    if p_e == 1:
        return NAN
    return (p_o - p_e) / (1 - p_e)


def fleiss_kappa(units: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa over units of two or more ratings each; NaN when undefined."""
    units = _usable(units)
    if not units:
        return NAN
    p_bar = 0.0
    pooled: Counter[Any] = Counter()
    for u in units:
        p_i, counts, _ = _unit_parts(tuple(u))
        p_bar += p_i
        for label, n in counts:
            pooled[label] += n
    p_bar /= len(units)
    total = sum(pooled.values())
    p_e = sum((n / total) ** 2 for n in pooled.values())
    if p_e == 1:
        return NAN
    return (p_bar - p_e) / (1 - p_e)


def krippendorff_alpha_ordinal(units: Sequence[Sequence[float]]) -> float:
    """Krippendorff's alpha with the ordinal metric; NaN when undefined (no disagreement possible).

    Coincidences: each unit of ``m`` values adds ``1/(m-1)`` for every ordered pair of its
    values. Ordinal distance between values ``c < k``:
    ``(sum of n_g for c <= g <= k  -  (n_c + n_k) / 2) ** 2``.
    ``alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck)``.
    """
    units = _usable(units)
    coincidence: defaultdict[tuple[Any, Any], float] = defaultdict(float)
    for u in units:
        for pair, w in _unit_parts(tuple(u))[2]:
            coincidence[pair] += w
    marginal: defaultdict[Any, float] = defaultdict(float)
    for (x, _), v in coincidence.items():
        marginal[x] += v
    values = sorted(marginal)
    n = sum(marginal.values())
    if len(values) < 2 or n <= 1:
        return NAN
    position = {v: i for i, v in enumerate(values)}
    cumulative = [0.0]
    for v in values:
        cumulative.append(cumulative[-1] + marginal[v])

    def delta(x: Any, y: Any) -> float:
        i, j = sorted((position[x], position[y]))
        between = cumulative[j + 1] - cumulative[i]
        return (between - (marginal[values[i]] + marginal[values[j]]) / 2) ** 2

    observed = sum(v * delta(x, y) for (x, y), v in coincidence.items() if x != y)
    expected = sum(
        marginal[x] * marginal[y] * delta(x, y) for x in values for y in values if x != y
    )
    if expected == 0:
        return NAN
    return 1 - (n - 1) * observed / expected
