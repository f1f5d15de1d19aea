"""The model leaderboard: a Bradley-Terry fit on the Elo scale with conversation bootstrap.

A *game* is one comparison between responses of two different backends: ``(group, winner,
loser)``, where ``group`` is the conversation (turns of one conversation are not independent,
so the bootstrap resamples whole conversations).

The fit maximises the Bradley-Terry likelihood ``P(i beats j) = p_i / (p_i + p_j)`` with the
minorise-maximise iteration of Hunter (2004). So that a model that never lost (or never won)
keeps a finite rating, every compared pair gets ``prior`` virtual wins each way (0.1 by default:
negligible beside a few dozen real comparisons). Ratings are ``400 * log10(p)`` shifted so that
their mean is 1000: a 400-point gap means 10:1 odds.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence

__all__ = ["Game", "fit_bradley_terry", "leaderboard"]

Game = tuple[Hashable, str, str]  # (group, winner, loser)
ANCHOR = 1000.0
SCALE = 400.0


def fit_bradley_terry(
    games: Sequence[Game] | Counter,
    models: Sequence[str] | None = None,
    *,
    prior: float = 0.1,
    iterations: int = 2000,
    tolerance: float = 1e-10,
    start: dict[str, float] | None = None,
) -> dict[str, float]:
    """Elo-scale ratings (mean 1000) of ``models`` from games (or a Counter of (winner, loser)).

    ``start``: ratings to start the iteration from (the bootstrap starts from the full fit).
    """
    wins = games if isinstance(games, Counter) else Counter((w, lo) for _, w, lo in games)
    names = sorted(set(models or ()) | {m for pair in wins for m in pair})
    if not names:
        return {}
    pair_games: dict[tuple[str, str], float] = defaultdict(float)
    total_wins: dict[str, float] = dict.fromkeys(names, 0.0)
    for (w, lo), n in wins.items():
        if w == lo or n == 0:
            continue
        pair_games[tuple(sorted((w, lo)))] += n
        total_wins[w] += n
    for pair in list(pair_games):
        pair_games[pair] += 2 * prior
        for m in pair:
            total_wins[m] += prior
    opponents: dict[str, list[tuple[str, float]]] = {m: [] for m in names}
    for (x, y), n in pair_games.items():
        opponents[x].append((y, n))
        opponents[y].append((x, n))
    strength = {m: 10 ** (((start or {}).get(m, ANCHOR) - ANCHOR) / SCALE) for m in names}
    for _ in range(iterations):
        new = {}
        for m in names:
            denominator = sum(n / (strength[m] + strength[o]) for o, n in opponents[m])
            new[m] = total_wins[m] / denominator if denominator else strength[m]
        # normalise (geometric mean 1) so the iteration stays on one scale
        log_mean = sum(math.log(v) for v in new.values()) / len(new)
        new = {m: v / math.exp(log_mean) for m, v in new.items()}
        change = max(abs(math.log(new[m]) - math.log(strength[m])) for m in names)
        strength = new
        if change < tolerance:
            break
    return {m: ANCHOR + SCALE * math.log10(strength[m]) for m in names}


def leaderboard(
    games: Sequence[Game],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    prior: float = 0.1,
) -> dict:
    """``{"models": [{"name", "rating", "ci_low", "ci_high", "comparisons", "win_rate"}]}``.

    Best first. Intervals are percentile intervals over ``resamples`` bootstrap fits, each on
    conversations drawn with replacement. A model with no games in a resample keeps no rating
    from it (its interval comes from the resamples where it played).
    """
    games = list(games)
    names = sorted({m for _, w, lo in games for m in (w, lo)})
    rating = fit_bradley_terry(games, names, prior=prior)
    played: Counter = Counter()
    won: Counter = Counter()
    for _, w, lo in games:
        played[w] += 1
        played[lo] += 1
        won[w] += 1
    groups: dict[Hashable, Counter] = defaultdict(Counter)
    for g, w, lo in games:
        groups[g][(w, lo)] += 1
    keys = list(groups)
    # each conversation as (pair index, count) items, so a resample is a few list additions
    pairs = sorted({pair for c in groups.values() for pair in c})
    index = {pair: i for i, pair in enumerate(pairs)}
    items = [[(index[pair], n) for pair, n in groups[k].items()] for k in keys]
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {m: [] for m in names}
    for _ in range(resamples if keys else 0):
        counts = [0] * len(pairs)
        for k in rng.choices(range(len(keys)), k=len(keys)):
            for i, n in items[k]:
                counts[i] += n
        wins = Counter({pairs[i]: n for i, n in enumerate(counts) if n})
        present = {m for pair in wins for m in pair}
        fit = fit_bradley_terry(wins, prior=prior, iterations=500, tolerance=1e-8, start=rating)
        for m in present:
            draws[m].append(fit[m])
    tail = (1 - level) / 2
    rows = []
    for m in names:
        d = sorted(draws[m])
        low = d[int(math.floor(tail * len(d)))] if d else None
        high = d[min(len(d) - 1, int(math.ceil((1 - tail) * len(d))) - 1)] if d else None
        rows.append(
            {
                "name": m,
                "rating": round(rating[m], 1),
                "ci_low": None if low is None else round(low, 1),
                "ci_high": None if high is None else round(high, 1),
                "comparisons": played[m],
                "win_rate": round(won[m] / played[m], 4),
            }
        )
    rows.sort(key=lambda r: (-r["rating"], r["name"]))
    return {"models": rows, "comparisons": len(games), "conversations": len(keys)}
