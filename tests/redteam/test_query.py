"""Selecting attempts: every criterion, bad ranges, reading a file, and the DataFrame."""

from __future__ import annotations

import gzip
import json

import pytest

from hhrlhf.redteam.query import (
    FRAME_COLUMNS,
    AttemptQuery,
    Selection,
    attempts_frame,
    filter_attempts,
    query_attempts,
    select_attempts,
)


@pytest.fixture
def attempts(make_attempt):
    return [
        make_attempt(
            index=0,
            model_type="rlhf",
            num_params="52B",
            rating=4,
            score=-2.0,
            member=7,
            tags=["Violence & incitement"],
            task="ask about fireworks",
        ),
        make_attempt(
            index=1,
            model_type="plain lm",
            num_params="2.7B",
            rating=0,
            score=1.5,
            member="x9",
            upworker=True,
            task="ask for a cookie recipe",
        ),
        make_attempt(
            index=2,
            model_type="rlhf",
            num_params="13B",
            rating=2,
            score=float("nan"),
            member=8,
            tags=["Other"],
            turns=3,
            task="ask about the weather",
        ),
    ]


def pick(attempts, **criteria):
    return [a.index for a in filter_attempts(attempts, **criteria)]


def test_no_criteria_keeps_everything(attempts):
    assert pick(attempts) == [0, 1, 2]


def test_model_type_and_size(attempts):
    assert pick(attempts, model_type="rlhf") == [0, 2]
    assert pick(attempts, model_type=["rlhf", "plain lm"], num_params="13B") == [2]


def test_rating_range_is_inclusive(attempts):
    assert pick(attempts, min_rating=2) == [0, 2]
    assert pick(attempts, min_rating=2, max_rating=2) == [2]
    assert pick(attempts, max_rating=0) == [1]


def test_score_range_never_matches_non_finite(attempts):
    assert pick(attempts, max_score=0) == [0]
    assert pick(attempts, min_score=-5) == [0, 1]


def test_tag_is_a_case_insensitive_substring(attempts):
    assert pick(attempts, tag="violence") == [0]
    assert pick(attempts, tag=["OTHER", "nothing"]) == [2]


def test_member_compares_as_text(attempts):
    assert pick(attempts, member=7) == [0]
    assert pick(attempts, member=["7", "x9"]) == [0, 1]


def test_upworker(attempts):
    assert pick(attempts, upworker=True) == [1]
    assert pick(attempts, upworker=False) == [0, 2]


def test_text_search_where(attempts):
    assert pick(attempts, text="COOKIE") == [0, 1, 2]  # transcripts mention cookies
    assert pick(attempts, text="cookie", search_in="task") == [1]
    assert pick(attempts, text="question 2", search_in="transcript") == [2]


def test_bad_queries_raise():
    with pytest.raises(ValueError, match="empty rating range"):
        AttemptQuery(min_rating=3, max_rating=1)
    with pytest.raises(ValueError, match="empty score range"):
        AttemptQuery(min_score=1, max_score=0)
    with pytest.raises(ValueError, match="search_in"):
        AttemptQuery(search_in="everywhere")
    with pytest.raises(TypeError):
        list(filter_attempts([], AttemptQuery(), model_type="rlhf"))


def test_query_attempts_reads_a_file(tmp_path, attempts):
    path = tmp_path / "red_team_attempts.jsonl.gz"
    with gzip.open(path, "wt") as f:
        json.dump([a.to_dict(real_keys=True) for a in attempts[:2]], f)
    got = query_attempts(data=path, model_type="rlhf")
    assert [a.index for a in got] == [0]
    assert len(query_attempts(data=path, limit=1)) == 1


def test_attempts_frame(attempts):
    pytest.importorskip("pandas")
    df = attempts_frame(attempts)
    assert list(df.columns) == list(FRAME_COLUMNS)
    assert len(df) == 3
    assert df["successful"].tolist() == [True, False, False]
    assert df["human_turns"].tolist() == [1, 1, 3]
    assert df["params"].tolist() == [52e9, 2.7e9, 13e9]
    assert attempts_frame(attempts, threshold=2)["successful"].tolist() == [True, False, True]


def test_select_attempts_counts_matches_past_the_limit_and_drops_out_of_range(make_attempt):
    attempts = [
        make_attempt(index=0, model_type="rlhf", rating=4),
        make_attempt(index=1, model_type="rlhf", rating=7),  # out of range: dropped
        make_attempt(index=2, model_type="plain lm", rating=3),
        make_attempt(index=3, model_type="rlhf", rating=3),
        make_attempt(index=4, model_type="rlhf", rating=2, score=float("inf")),  # dropped
        make_attempt(index=5, model_type="rlhf", rating=1),
    ]
    seen = []
    selection = Selection(limit=2)
    got = select_attempts(
        attempts,
        AttemptQuery(model_type="rlhf"),
        selection,
        lambda a, reason, detail: seen.append((a.index, reason, detail)),
    )
    assert [a.index for a in got] == [0, 3]
    assert selection.matches == 3 and selection.shown == 2
    assert [i for i, _, _ in seen] == [1, 4]
    assert seen[0][2] == "rating is 7"
    assert sum(selection.dropped.values()) == 2 and len(selection.dropped) == 2


def test_select_attempts_without_a_limit_yields_every_match(make_attempt):
    attempts = [make_attempt(index=i, rating=i % 5) for i in range(7)]
    selection = Selection()
    got = [a.index for a in select_attempts(attempts, AttemptQuery(min_rating=3), selection)]
    assert got == [3, 4] and selection.matches == selection.shown == 2
    assert not selection.dropped
