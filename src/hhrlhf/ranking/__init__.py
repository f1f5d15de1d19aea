"""Ranking models from pairwise votes: Bradley-Terry fits, bootstrap intervals, style control
and robustness. :mod:`~hhrlhf.ranking.votes` needs nothing beyond the core; the statistics
need numpy (installed with the ``web`` extra)."""

from __future__ import annotations

from .leaderboard import rank
from .votes import Vote, VoteColumns, collect_votes, read_battles

__all__ = ["Vote", "VoteColumns", "collect_votes", "rank", "read_battles"]
