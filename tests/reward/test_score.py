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


def test_read_dialogues_strict_names_the_line_lenient_records_it(tmp_path):
    from hhrlhf.errors import DataFormatError
    from hhrlhf.reward.score import read_dialogues

    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": "a", "transcript": "\\n\\nHuman: hi\\n\\nAssistant: hello"}\n'
        '{"text": "no transcript"}\n'
        '{"transcript": "\\n\\nHuman: again"}\n'
        '{"transcript": "\\n\\nHuman: third"}\n'
    )
    with pytest.raises(DataFormatError, match=r"line 2: expected an object with a \"transcript\""):
        read_dialogues(path)
    skipped = []
    ids, dialogues = read_dialogues(path, lenient=True, skipped=skipped)
    assert ids == ["a", 1, 2] and dialogues[1] == "\n\nHuman: again"
    assert [(s.line, s.unit) for s in skipped] == [(2, "line")]
    ids, _ = read_dialogues(path, lenient=True, skipped=[], limit=2)
    assert ids == ["a", 1]


def test_score_summary_and_rows_file(tmp_path):
    import json

    from hhrlhf.reward.score import score_summary, write_score_rows

    rows = [{"id": 0, "min_score": 1.0}, {"id": 1, "min_score": None}, {"id": 2, "min_score": 3.0}]
    assert score_summary(rows, None, 4) == {
        "dialogues": 3,
        "correlation": None,
        "scored": 2,
        "no_score": 1,
        "skipped_rows": 4,
        "mean_min_score": 2.0,
    }
    assert score_summary([], None)["mean_min_score"] is None
    path = write_score_rows(rows, tmp_path / "scores.jsonl")
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows
