"""A reviewer's queue: skip a task (it comes back once nothing else is left), the task
description with each task, and how many are left and done today."""

from __future__ import annotations

import pytest
from test_review import PTS, conversation

from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.review import (
    next_task,
    review_units,
    skip_review,
    submit_review,
)
from hhrlhf.collect.services.review_progress import ReviewProgress, review_progress
from hhrlhf.errors import Conflict, NotFound


@pytest.fixture
def two_comparisons(storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    conversation(storage, alice, [("a", 3)])
    conversation(storage, alice, [("b", 2)])
    return alice, bob


def test_a_skipped_task_gives_the_next_and_comes_back_last(storage, two_comparisons):
    alice, bob = two_comparisons
    assert review_progress(storage, bob, 1.0) == ReviewProgress(left=2, skipped=0, done_today=0)
    first = next_task(storage, bob, 1.0)
    assert first.task_description == "Garden questions"
    skip_review(storage, bob, first.id)
    second = next_task(storage, bob, 1.0)
    assert second.id != first.id
    assert review_progress(storage, bob, 1.0) == ReviewProgress(left=2, skipped=1, done_today=0)
    submit_review(storage, bob, second.id, "a", 2, PTS)
    assert review_progress(storage, bob, 1.0) == ReviewProgress(left=1, skipped=1, done_today=1)
    again = next_task(storage, bob, 1.0)  # nothing new: the skipped one, open again
    assert again.id == first.id and again.status == "assigned"
    assert next_task(storage, bob, 1.0).id == first.id  # still the open one
    submit_review(storage, bob, first.id, "b", 1, PTS)
    assert next_task(storage, bob, 1.0) is None
    assert review_progress(storage, bob, 1.0) == ReviewProgress(left=0, skipped=0, done_today=2)


def test_a_skip_is_never_an_answer(storage, two_comparisons):
    alice, bob = two_comparisons
    task = next_task(storage, bob, 1.0)
    skip_review(storage, bob, task.id)
    assert review_units(storage) == []  # no reviewed comparison: a skip is no rating
    with pytest.raises(NotFound):
        skip_review(storage, alice, task.id)  # not hers
    task = next_task(storage, bob, 1.0)
    submit_review(storage, bob, task.id, "a", 1, PTS)
    with pytest.raises(Conflict):
        skip_review(storage, bob, task.id)  # answered already
