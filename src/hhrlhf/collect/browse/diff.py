"""The word diff of a pair's two responses: Myers' shortest edit script with a step budget,
so a looping reply costs a bounded time (over the budget: two whole changed blocks)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
MAX_DIFF_TOKENS = 20_000
#: the most steps (diagonals tried plus matching tokens followed) one word diff may take; a
#: pair needing more is shown with a coarse diff (the common start and end kept, the middle
#: marked), and the page says so. 600,000 steps are about 0.3 s of CPU.
MAX_DIFF_STEPS = 600_000


@dataclass(frozen=True, slots=True)
class WordDiff:
    """A word diff: each side as ``(changed, text)`` segments that join back to its text;
    ``exact`` is False for the coarse diff of a pair too costly to compare word by word."""

    chosen: list[tuple[bool, str]]
    rejected: list[tuple[bool, str]]
    exact: bool
    steps: int


def _segments(tokens: list[str], changed: list[bool]) -> list[tuple[bool, str]]:
    out: list[tuple[bool, str]] = []
    start = 0
    for i in range(1, len(tokens) + 1):
        if i == len(tokens) or changed[i] != changed[start]:
            out.append((changed[start], "".join(tokens[start:i])))
            start = i
    return out


def _myers(
    a: list[str], b: list[str], budget: int
) -> tuple[list[bool] | None, list[bool] | None, int]:
    """Which tokens of ``a`` and ``b`` are outside a shortest edit script (Myers' O((N+M)D)
    greedy algorithm), and the steps taken; ``(None, None, steps)`` once over ``budget``."""
    n, m = len(a), len(b)
    off = n + m + 1
    v = [0] * (2 * off + 2)
    trace: list[list[int]] = []
    steps = 0
    for d in range(n + m + 1):
        trace.append(v[off - d - 1 : off + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            steps += 1 + x - start  # the diagonal tried and the matching tokens followed
            v[off + k] = x
            if x >= n and y >= m:
                return (*_backtrack(trace, d, n, m), steps)
            if steps > budget:
                return None, None, steps
    raise AssertionError("unreachable: d = n + m always reaches the end")  # pragma: no cover


def _backtrack(trace: list[list[int]], final: int, n: int, m: int) -> tuple[list[bool], list[bool]]:
    a_changed, b_changed = [False] * n, [False] * m
    x, y = n, m
    for d in range(final, 0, -1):
        saved = trace[d]  # the furthest x per diagonal after d - 1 edits, from k = -d - 1

        def get(k: int, saved: list[int] = saved, d: int = d) -> int:
            return saved[k + d + 1]

        k = x - y
        down = k == -d or (k != d and get(k - 1) < get(k + 1))
        prev_k = k + 1 if down else k - 1
        prev_x = get(prev_k)
        prev_y = prev_x - prev_k
        if down:
            b_changed[prev_y] = True
        else:
            a_changed[prev_x] = True
        x, y = prev_x, prev_y
    return a_changed, b_changed


def word_diff(chosen: str, rejected: str, *, max_steps: int = MAX_DIFF_STEPS) -> WordDiff:
    """The word-level differences of two responses, at a bounded cost.

    A shortest edit script over words, spaces and punctuation (Myers), after the common start
    and end are set aside; when that needs more than ``max_steps`` steps (long, repetitive or
    very different texts) or the texts exceed :data:`MAX_DIFF_TOKENS`, the coarse diff: the
    common start and end unchanged, everything between marked (``exact=False``).
    """
    a, b = _TOKEN.findall(chosen), _TOKEN.findall(rejected)
    if "".join(a) != chosen or "".join(b) != rejected:  # pragma: no cover - the regex covers all
        return WordDiff([(True, chosen)], [(True, rejected)], False, 0)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    a_mid: list[bool] | None = None
    b_mid: list[bool] | None = None
    steps = head + tail
    if len(a) + len(b) <= MAX_DIFF_TOKENS:
        a_mid, b_mid, taken = _myers(mid_a, mid_b, max_steps)
        steps += taken
    exact = a_mid is not None and b_mid is not None
    if a_mid is None or b_mid is None:
        a_mid, b_mid = [True] * len(mid_a), [True] * len(mid_b)
    a_changed = [False] * head + a_mid + [False] * tail
    b_changed = [False] * head + b_mid + [False] * tail
    return WordDiff(_segments(a, a_changed), _segments(b, b_changed), exact, steps)


def diff_segments(
    chosen: str, rejected: str
) -> tuple[list[tuple[bool, str]], list[tuple[bool, str]]]:
    """Word-level differences: ``(chosen_segments, rejected_segments)``, each a list of
    ``(changed: bool, text)``; the texts of each list join back to the input exactly."""
    d = word_diff(chosen, rejected)
    return d.chosen, d.rejected
