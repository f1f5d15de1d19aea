"""The qualification round: gold first, pass or fail at the threshold, reset, and whose
collected data counts (export, leaderboard, agreement)."""

from __future__ import annotations

import json
import random

import pytest
from test_gold import hh, write
from test_review import PTS, conversation

from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.export import export_collection
from hhrlhf.collect.services.gold import import_gold, read_gold
from hhrlhf.collect.services.qualification import (
    counted_annotator_ids,
    qualification,
    reset,
    round_of,
    set_round,
)
from hhrlhf.collect.services.review import (
    next_review,
    next_task,
    review_units,
    submit_review,
)
from hhrlhf.collect.services.review_progress import review_progress
from hhrlhf.collect.services.stats import leaderboard_games
from hhrlhf.errors import Conflict

GOLD = [hh([f"Gold question {i}?"], f"Right answer {i}.", f"Wrong answer {i}.") for i in range(8)]


@pytest.fixture
def gold(storage, tmp_path):
    items = read_gold(write(tmp_path / "gold.jsonl", GOLD))
    import_gold(storage, items)
    return {g.chosen for g in items}


@pytest.fixture
def people(storage):
    return [annotators.add_annotator(storage, n)[0] for n in ("alice", "bob", "carol")]


def answer_gold(storage, who, right_texts, rights, rng):
    """Answer one gold task per entry of ``rights`` (True: the right response)."""
    for right in rights:
        task = next_review(storage, who, 1.0, rng=rng, gold_fraction=0.0)
        assert task is not None
        good = next((c.slot for c in task.candidates if c.text in right_texts), None)
        assert good is not None, "a waiting annotator gets gold only"
        submit_review(storage, who, task.id, good if right else "ab"[good == "a"], 2, PTS)


def status(storage, name):
    return next(r for r in qualification(storage).rows if r.name == name)


def test_no_round_everyone_counts_and_nothing_is_stored(storage, people):
    assert counted_annotator_ids(storage) is None
    assert not set_round(storage, 0, 0.8)  # a deployment without a round writes nothing
    assert round_of(storage) is None and qualification(storage).rows == ()


@pytest.mark.parametrize(
    ("rights", "outcome"), [((1, 1, 1, 0), "passed"), ((1, 1, 0, 0), "failed")]
)
def test_pass_or_fail_at_the_threshold(storage, people, gold, rights, outcome):
    """4 gold reviews, threshold 0.75: 3 right is exactly enough, 2 is not."""
    alice, bob, _ = people
    set_round(storage, 4, 0.75)
    conversation(storage, alice, [("a", 3)])  # a collected comparison to review, held back
    rng = random.Random(5)
    answer_gold(storage, bob, gold, [bool(x) for x in rights[:3]], rng)
    row = status(storage, "bob")
    assert (row.status, row.answered, row.required) == ("waiting", 3, 4)
    assert review_progress(storage, bob, 1.0).left == 1  # the last gold review
    answer_gold(storage, bob, gold, [bool(rights[3])], rng)
    row = status(storage, "bob")
    assert row.status == outcome and row.qualified_at is not None
    assert row.accuracy == sum(rights) / 4
    task = next_review(storage, bob, 1.0, rng=rng, gold_fraction=0.0)
    if outcome == "passed":  # then the collected comparison
        assert task is not None and task.candidates[0].text.startswith("Answer")
        assert counted_annotator_ids(storage) == {bob.id}
    else:  # nothing to review until a reset
        assert task is None and review_progress(storage, bob, 1.0).left == 0
        assert counted_annotator_ids(storage) == set()


def test_reset_starts_a_new_round_on_unseen_gold(storage, people, gold):
    _, bob, carol = people
    set_round(storage, 3, 1.0)
    rng = random.Random(2)
    answer_gold(storage, bob, gold, [True, False, True], rng)
    assert status(storage, "bob").status == "failed"
    with pytest.raises(Conflict):
        reset(storage, "carol")  # never failed: nothing to reset
    row = reset(storage, "bob", by="root")
    assert (row.status, row.answered) == ("waiting", 0)  # the earlier gold no longer counts
    answer_gold(storage, bob, gold, [True, True, True], rng)
    assert status(storage, "bob").status == "passed"
    # six different gold items: never the same one twice
    with storage.read() as s:
        from sqlalchemy import select

        from hhrlhf.collect.db.models import Review

        ids = list(s.scalars(select(Review.gold_id).where(Review.reviewer_id == bob.id)))
    assert len(ids) == len(set(ids)) == 6


def test_too_few_gold_items_is_said(storage, people, gold):
    set_round(storage, 20, 0.8)
    q = qualification(storage)
    assert q.warning is not None and "only 8 gold items" in q.warning
    assert {r.status for r in q.rows} == {"waiting"}


def test_only_qualified_data_counts_in_agreement_leaderboard_and_export(
    storage, people, gold, tmp_path
):
    alice, bob, carol = people
    for who in (alice, bob):
        conversation(storage, who, [("a", 3), ("b", 4)])
    export_collection(storage, tmp_path / "plain")
    plain = json.loads((tmp_path / "plain" / "manifest.json").read_text())
    assert "not_qualified" not in plain["left_out"]
    set_round(storage, 2, 0.5)
    # nobody passed: nothing counts (everyone collected before, which is allowed)
    assert leaderboard_games(storage) == []
    manifest = export_collection(storage, tmp_path / "none")
    assert manifest["rows"] == 0 and manifest["left_out"]["not_qualified"] == 4
    assert "not_qualified" in manifest["left_out_reasons"]
    rng = random.Random(9)
    answer_gold(storage, carol, gold, [True, True], rng)
    answer_gold(storage, alice, gold, [True, False], rng)
    assert counted_annotator_ids(storage) == {alice.id, carol.id}
    # alice passed: all her data counts, bob's none
    assert {g[0] for g in leaderboard_games(storage)} == {1}
    manifest = export_collection(storage, tmp_path / "alice")
    assert manifest["rows"] == 2 and manifest["left_out"]["not_qualified"] == 2
    # carol reviews both: only alice's comparisons are units, with carol's ratings
    for _ in range(2):
        task = next_task(storage, carol, 1.0, rng=rng, gold_fraction=0.0)
        submit_review(storage, carol, task.id, "a", 2, PTS)
    units = review_units(storage)
    assert {u.ratings[0].annotator for u in units} <= {"alice"}
    assert all(r.annotator in {"alice", "carol"} for u in units for r in u.ratings)
    # the round off again: everyone counts, the manifest as before
    set_round(storage, 0, 0.5)
    assert counted_annotator_ids(storage) is None
    manifest = export_collection(storage, tmp_path / "off")
    assert "not_qualified" not in manifest["left_out"] and manifest["rows"] == plain["rows"]


def test_gold_answered_before_the_round_is_judged_when_it_starts(storage, people, gold):
    alice, bob, _ = people
    conversation(storage, alice, [("a", 3)])
    rng = random.Random(8)
    for _ in range(2):  # no round: gold mixed in, bob right both times
        task = next_review(storage, bob, 1.0, rng=rng, gold_fraction=1.0)
        good = next(c.slot for c in task.candidates if c.text in gold)
        submit_review(storage, bob, task.id, good, 2, PTS)
    set_round(storage, 2, 0.8)
    assert status(storage, "bob").status == "waiting"
    task = next_review(storage, bob, 1.0, rng=rng, gold_fraction=0.0)
    assert status(storage, "bob").status == "passed"
    assert task is not None and task.candidates[0].text.startswith("Answer")
