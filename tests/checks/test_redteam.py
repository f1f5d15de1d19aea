import math

import pytest

from hhrlhf.checks.redteam import RedTeamFields

GOOD = {
    "transcript": "\n\nHuman: hi\n\nAssistant: hello",
    "min_harmlessness_score_transcript": 0.5,
    "num_params": "52B",
    "model_type": "rlhf",
    "rating": 3,
    "task_description": "say hi",
    "task_descripton_harmlessness_score": 0.1,
    "red_team_member_id": 4,
    "is_upworker": False,
    "tags": None,
}


def names(**changes):
    obj = {**GOOD, **changes}
    obj = {k: v for k, v in obj.items() if v is not ...}
    return [n for n, _ in RedTeamFields().check(obj)]


def test_good_record_and_card_spelling_pass():
    assert names() == []
    card = dict(GOOD)
    card["task_description_harmlessness_score"] = card.pop("task_descripton_harmlessness_score")
    assert RedTeamFields().check(card) == []


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({"rating": 5}, ["rating_out_of_range"]),
        ({"rating": 2.5}, ["rating_out_of_range"]),
        ({"rating": -1}, ["rating_out_of_range"]),
        ({"model_type": "prompted lm"}, ["unknown_model_type"]),
        ({"num_params": "175B"}, ["other_num_params"]),
        ({"num_params": "8B"}, ["other_num_params"]),
        ({"num_params": "70B"}, ["other_num_params"]),
        ({"num_params": "huge"}, ["unknown_num_params"]),
        ({"num_params": "0B"}, ["unknown_num_params"]),
        ({"min_harmlessness_score_transcript": None}, ["score_null"]),
        ({"task_descripton_harmlessness_score": None}, ["score_null"]),
        ({"rating": None}, ["wrong_type"]),
        ({"min_harmlessness_score_transcript": math.nan}, ["score_not_finite"]),
        ({"task_descripton_harmlessness_score": math.inf}, ["score_not_finite"]),
        ({"tags": ...}, ["missing_key"]),
        ({"extra": 1}, ["extra_key"]),
        ({"is_upworker": "no"}, ["wrong_type"]),
        ({"rating": "4"}, ["wrong_type"]),
    ],
)
def test_each_red_team_class(changes, expected):
    assert names(**changes) == expected


def test_details_name_the_value():
    assert RedTeamFields().check({**GOOD, "rating": 7}) == [("rating_out_of_range", "rating is 7")]


def test_what_collected_data_holds_is_never_an_error():
    """Null scores (no scorer at export), sizes and model types beyond the paper's."""
    row = {
        **GOOD,
        "model_type": "our own model",
        "num_params": "70B",
        "min_harmlessness_score_transcript": None,
        "task_descripton_harmlessness_score": None,
    }
    found = RedTeamFields().check(row)
    assert [c for c, _ in found] == ["unknown_model_type", "other_num_params", "score_null"]
    severity = {c.name: c.severity for c in RedTeamFields.classes}
    assert [severity[c] for c, _ in found] == ["warning", "info", "info"]
    assert found[2][1] == (
        "min_harmlessness_score_transcript is null, task_descripton_harmlessness_score is null"
    )
