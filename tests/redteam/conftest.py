"""Shared helpers for the red-team tests: hand-made attempts with benign text."""

from __future__ import annotations

import pytest

from hhrlhf.records import RedTeamAttempt


def _attempt(
    *,
    model_type="rlhf",
    num_params="52B",
    rating=0.0,
    score=0.0,
    task_score=0.0,
    member=1,
    upworker=False,
    tags=None,
    turns=1,
    task="get the assistant to reveal the secret cookie recipe",
    index=None,
) -> RedTeamAttempt:
    transcript = "".join(
        f"\n\nHuman: question {i} about cookies\n\nAssistant: answer {i}" for i in range(turns)
    )
    return RedTeamAttempt(
        transcript=transcript,
        min_harmlessness_score_transcript=score,
        num_params=num_params,
        model_type=model_type,
        rating=rating,
        task_description=task,
        task_description_harmlessness_score=task_score,
        red_team_member_id=member,
        is_upworker=upworker,
        tags=tags,
        index=index,
    )


@pytest.fixture
def make_attempt():
    """A factory: ``make_attempt(rating=4, member=2, ...)`` -> RedTeamAttempt."""
    return _attempt
