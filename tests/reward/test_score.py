import numpy as np
import pytest

from hhrlhf import RedTeamAttempt
from hhrlhf.reward.score import assistant_turns, correlation, score_attempts, score_dialogue


class LengthModel:
    """Scores a response by its length, and records what it was asked."""

    def __init__(self):
        self.calls = []

    def score(self, prompts, responses):
        self.calls.append((list(prompts), list(responses)))
        return np.array([float(len(r)) for r in responses])


DIALOGUE = "\n\nHuman: hi\n\nAssistant: hello there\n\nHuman: and?\n\nAssistant: ok"


def test_assistant_turns_in_context():
    assert assistant_turns(DIALOGUE) == [
        ("\n\nHuman: hi\n\nAssistant:", " hello there"),
        ("\n\nHuman: hi\n\nAssistant: hello there\n\nHuman: and?\n\nAssistant:", " ok"),
    ]
    assert assistant_turns("\n\nHuman: only a question") == []


def test_min_over_turns():
    out = score_dialogue(LengthModel(), DIALOGUE)
    assert out == {"turn_scores": [12.0, 3.0], "min_score": 3.0}
    assert score_dialogue(LengthModel(), "\n\nHuman: no answer") == {
        "turn_scores": [],
        "min_score": None,
    }


def test_correlation_matches_hand_values():
    c = correlation([1, 2, 3, 4], [2, 4, 6, 8.5])
    assert c["spearman"] == pytest.approx(1.0)
    assert c["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [2, 4, 6, 8.5])[0, 1])
    assert correlation([1, 1, 1], [1, 2, 3])["pearson"] is None
    assert correlation([1, float("nan"), 2, 3], [1, 5, 2, 3])["n"] == 3


def _attempt(transcript, file_score, index):
    return RedTeamAttempt(
        transcript, file_score, "52B", "rlhf", 0, "task", 0.0, 1, False, None, index
    )


def test_score_attempts_correlates_with_the_file():
    attempts = [
        _attempt("\n\nHuman: a\n\nAssistant: " + "x" * n, float(n), i)
        for i, n in enumerate([1, 5, 3, 9])
    ]
    result = score_attempts(LengthModel(), attempts)
    assert [r["min_score"] for r in result["rows"]] == [2.0, 6.0, 4.0, 10.0]
    assert result["rows"][2]["file_min_score"] == 3.0
    assert result["correlation"]["spearman"] == pytest.approx(1.0)
