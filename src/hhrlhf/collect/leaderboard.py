"""The model leaderboard of the collected picks: an adapter over :mod:`hhrlhf.ranking`.

A *game* is one comparison between responses of two different backends. The database gives
them as :class:`~hhrlhf.ranking.votes.Vote` records (see
:func:`hhrlhf.collect.services.stats.leaderboard_games`): the winner as model A, the response
lengths (characters), the decision time, the conversation as the group (turns of one
conversation are not independent, so the bootstrap resamples whole conversations: the
*conversation bootstrap*) and ``{"conversation", "turn"}`` as the reference a robustness
report lists. Plain ``(group, winner, loser)`` tuples are accepted too.

The fit, the intervals, style control and the robustness search are
:func:`hhrlhf.ranking.rank`'s; see there.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from ..ranking.leaderboard import Leaderboard, rank
from ..ranking.votes import Vote

__all__ = ["Game", "leaderboard"]

Game = tuple[Hashable, str, str]  # (group, winner, loser)


def _vote(game: Vote | Game) -> Vote:
    if isinstance(game, Vote):
        return game
    group, winner, loser = game
    return Vote(model_a=winner, model_b=loser, winner="model_a", group=group)


def leaderboard(games: Iterable[Vote | Game], **options: Any) -> Leaderboard:
    """:func:`hhrlhf.ranking.rank` of the games, grouped by conversation; a robustness report
    lists ``"turns"``: ``[{"conversation", "turn"}]`` (or the groups' references)."""
    out = rank([_vote(g) for g in games], **options)
    robustness = out.get("robustness")
    flip = robustness["flip_top"] if robustness else None
    if flip and "refs" in flip:
        flip["turns"] = flip.pop("refs")
    return out
