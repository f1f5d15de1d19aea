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
        ({"num_params": "175B"}, ["unknown_num_params"]),
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
