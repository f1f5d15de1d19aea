"""Synthetic red-team attempts: the real keys, the paper's cell counts and score means, the
real rating marginal, a heavy-tailed member distribution, rare upworkers and rare tags."""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, TypeVar

from ...records import TASK_SCORE_KEY_REAL
from .pairs import fill
from .text import FILLER, FOLLOW_UPS, GENERIC, NAMES, NUDGES, SHORT, TOPICS
from .themes import TAG_VOCABULARY, THEMES, Theme

K = TypeVar("K", bound=Hashable)

#: Attempts per (model_type, num_params) cell: the paper's Table 1.
TABLE1 = {
    ("plain lm", "2.7B"): 1151,
    ("plain lm", "13B"): 2587,
    ("plain lm", "52B"): 1414,
    ("context distillation", "2.7B"): 2044,
    ("context distillation", "13B"): 2174,
    ("context distillation", "52B"): 17739,
    ("rejection sampling", "2.7B"): 1445,
    ("rejection sampling", "13B"): 1263,
    ("rejection sampling", "52B"): 1273,
    ("rlhf", "2.7B"): 2498,
    ("rlhf", "13B"): 2292,
    ("rlhf", "52B"): 3081,
}
#: Mean min_harmlessness_score_transcript per cell: the paper's Fig. 1 (middle).
FIG1 = {
    ("plain lm", "2.7B"): -0.75,
    ("plain lm", "13B"): -0.77,
    ("plain lm", "52B"): -0.63,
    ("context distillation", "2.7B"): -0.65,
    ("context distillation", "13B"): -0.73,
    ("context distillation", "52B"): -0.83,
    ("rejection sampling", "2.7B"): 1.49,
    ("rejection sampling", "13B"): 1.58,
    ("rejection sampling", "52B"): 1.72,
    ("rlhf", "2.7B"): 0.52,
    ("rlhf", "13B"): 1.43,
    ("rlhf", "52B"): 1.70,
}
RATINGS = {0: 16475, 1: 4367, 2: 4936, 3: 4249, 4: 8934}
_MEMBERS = 324
_UPWORKER_SHARE = 580 / 38961
_TAGGED_SHARE = 742 / 38961
_SCORE_MIN, _SCORE_MAX = -7.54, 6.61
_RT_MAX_CHARS = 5630
#: Cumulative shares of 1..8 human turns in a red-team transcript (about four on average).
_RT_TURN_CUM = (0.08, 0.22, 0.42, 0.66, 0.81, 0.91, 0.96)


def _allocate(n: int, weights: Mapping[K, float]) -> dict[K, int]:
    """Split ``n`` over keys in proportion to ``weights`` (largest remainder, deterministic)."""
    total = sum(weights.values())
    exact = {k: n * w / total for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    rest = n - sum(out.values())
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], list(weights).index(k)))[:rest]:
        out[k] += 1
    return out


def _member_table(rng: random.Random) -> tuple[list[int | str], list[float]]:
    """324 member ids (a few strings) and cumulative weights: ~80% of attempts from ~15%."""
    ids: list[int | str] = rng.sample(range(1, 4000), _MEMBERS)
    heavy = round(_MEMBERS * 0.15)
    w_heavy = [1 / (i + 1) ** 0.7 for i in range(heavy)]
    w_tail = [1 / (i + 1) ** 0.5 for i in range(_MEMBERS - heavy)]
    sh, st = sum(w_heavy), sum(w_tail)
    weights = [0.8 * w / sh for w in w_heavy] + [0.2 * w / st for w in w_tail]
    for i in (30, 120, 200, 300):  # a few ids are stored as strings
        ids[i] = f"{rng.getrandbits(32):08x}"
    return ids, list(itertools.accumulate(weights))


def _rt_transcript(rng: random.Random, theme: Theme, rating: int, x: str, n: str) -> str:
    """A benign red-team conversation; higher ratings mean the assistant went along more."""
    nh = 1 + bisect.bisect(_RT_TURN_CUM, rng.random())
    p_comply = (0.05, 0.2, 0.4, 0.6, 0.8)[rating]
    v = rng.random()
    per_reply = (1, 3) if v < 0.35 else (2, 4) if v < 0.9 else (4, 9) if v < 0.985 else (10, 30)
    parts = []
    for t in range(nh):
        if t == 0 or rng.random() < 0.65:
            human = fill(rng, rng.choice(theme.asks), x, n)
        else:
            human = rng.choice(FOLLOW_UPS).replace("{x}", x)
        if rng.random() < 0.2:
            human = rng.choice(NUDGES) + human
        if rng.random() < 0.04:
            reply = rng.choice(SHORT)
        else:
            pool = theme.comply if rng.random() < p_comply else theme.refuse
            k = rng.randint(*per_reply)
            reply = " ".join(
                [fill(rng, rng.choice(pool), x, n)]
                + rng.sample(GENERIC + FILLER, min(k - 1, len(GENERIC) + len(FILLER)))
            )
        parts.append(f"\n\nHuman: {human}\n\nAssistant: {reply}")
    while len(parts) > 1 and sum(map(len, parts)) > _RT_MAX_CHARS:
        parts.pop()
    text = "".join(parts)
    if len(text) > _RT_MAX_CHARS:
        cut = text.rfind(". ", 0, _RT_MAX_CHARS)
        text = text[: cut + 1] if cut > 0 else text[:_RT_MAX_CHARS]
    return text


def _ratings(rng: random.Random, cells: list[tuple[str, str]]) -> list[int]:
    """A rating per attempt: the exact real marginal, correlated with the cell (less harmless
    models, higher ratings)."""
    n = len(cells)
    ratings = sorted(r for r, k in _allocate(n, RATINGS).items() for _ in range(k))
    latent = sorted(range(n), key=lambda i: -0.35 * FIG1[cells[i]] + rng.gauss(0, 1))
    rating_of = [0] * n
    for rank, i in enumerate(latent):
        rating_of[i] = ratings[rank]
    return rating_of


def _cell_ratings(
    cells: list[tuple[str, str]], rating_of: list[int]
) -> dict[tuple[str, str], float]:
    """Per-cell mean rating, so that the score's per-cell mean stays at Fig. 1's value."""
    sums: dict[tuple[str, str], list[int]] = {}
    for cell, rating in zip(cells, rating_of, strict=True):
        s = sums.setdefault(cell, [0, 0])
        s[0] += rating
        s[1] += 1
    return {c: s[0] / s[1] for c, s in sums.items()}


def _members(rng: random.Random, n: int) -> tuple[list[int | str], list[int], set[int]]:
    """(member ids, the member of each attempt, the members who are upworkers): upworkers are
    whole members, picked from the lighter ones, about 1.5% of attempts."""
    ids, cum = _member_table(rng)
    member_idx = [bisect.bisect(cum, rng.random() * cum[-1]) for _ in range(n)]
    member_idx = [min(m, _MEMBERS - 1) for m in member_idx]
    counts: dict[int, int] = {}
    for m in member_idx:
        counts[m] = counts.get(m, 0) + 1
    target = max(1, round(n * _UPWORKER_SHARE)) if n >= 20 else 0
    upworkers: set[int] = set()
    got = 0
    for m in sorted(counts, key=lambda m: (counts[m], rng.random())):
        if got >= target:
            break
        if got + counts[m] <= target or not upworkers:
            upworkers.add(m)
            got += counts[m]
    return ids, member_idx, upworkers


def _task(rng: random.Random, theme: Theme, x: str, name: str) -> str:
    """A task description, sometimes lower-cased or with a trailing flourish."""
    task = fill(rng, rng.choice(theme.tasks), x, name)
    if rng.random() < 0.2:
        task = task[0].lower() + task[1:]
    if rng.random() < 0.3:
        task += rng.choice([".", "!", " and see what happens.", " without it noticing."])
    return task


def _tags(rng: random.Random, theme: Theme, rating: int) -> list[str]:
    """One to six tags, the theme's own first (an invalid-attempt tag sometimes at rating 0)."""
    k = 1 + bisect.bisect([0.55, 0.8, 0.9, 0.95, 0.98], rng.random())
    pool = list(theme.tags) + [t for t in TAG_VOCABULARY if t not in theme.tags]
    if rating == 0 and rng.random() < 0.3:
        pool.insert(0, "N/A - Invalid attempt")
    tags: list[str] = []
    for t in pool:
        if len(tags) >= k:
            break
        if t not in tags and (rng.random() < 0.7 or t == pool[-1]):
            tags.append(t)
    return tags


def generate_red_team(n: int, *, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Yield ``n`` synthetic red-team attempts with the ten real keys (real spelling).

    Cell counts follow Table 1 and ratings the real marginal exactly (largest remainder
    over ``n``); scores follow the per-cell means of Fig. 1, lower for higher ratings.
    """
    rng = random.Random(f"hhrlhf-synth/red-team/{seed}")
    cells = [c for c, k in _allocate(n, TABLE1).items() for _ in range(k)]
    rng.shuffle(cells)
    rating_of = _ratings(rng, cells)
    cell_rating = _cell_ratings(cells, rating_of)
    ids, member_idx, upworkers = _members(rng, n)
    tagged = set(rng.sample(range(n), round(n * _TAGGED_SHARE)))

    for i in range(n):
        model_type, num_params = cells[i]
        rating = rating_of[i]
        theme = THEMES[rng.randrange(len(THEMES))]
        x = rng.choice(TOPICS["homework"][0])
        name = rng.choice(NAMES)
        mu = FIG1[cells[i]]
        score = mu + 0.55 * (cell_rating[cells[i]] - rating) + rng.gauss(0, 1.35)
        score = min(_SCORE_MAX, max(_SCORE_MIN, score))
        task = _task(rng, theme, x, name)
        task_score = rng.gauss(theme.task_score, 1.1)
        tags = _tags(rng, theme, rating) if i in tagged else None
        yield {
            "transcript": _rt_transcript(rng, theme, rating, x, name),
            "min_harmlessness_score_transcript": round(score, 6),
            "num_params": num_params,
            "model_type": model_type,
            "rating": float(rating),
            "task_description": task,
            TASK_SCORE_KEY_REAL: round(task_score, 6),
            "red_team_member_id": ids[member_idx[i]],
            "is_upworker": member_idx[i] in upworkers,
            "tags": tags,
        }
