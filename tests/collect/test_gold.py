"""Gold comparisons: import, mixing into review, scoring, and their absence from everything
collected (agreement, the leaderboard, the export, the statistics)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from sqlalchemy import select
from test_review import PTS, conversation

from hhrlhf.collect.db.models import GoldItem, Review
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.export import export_collection
from hhrlhf.collect.services.gold import (
    gold_accuracy,
    gold_counts,
    gold_task_description,
    import_gold,
    read_gold,
)
from hhrlhf.collect.services.review import (
    next_review,
    next_task,
    review_units,
    skip_review,
    submit_review,
)
from hhrlhf.collect.services.review_progress import review_progress
from hhrlhf.collect.services.stats import (
    annotator_stats,
    collection_stats,
    leaderboard_games,
    stats_dict,
)
from hhrlhf.errors import DataFormatError


def hh(prefix_turns, chosen, rejected):
    """An upstream HH line: the shared conversation, then one final response each."""
    prefix = "".join(f"\n\nHuman: {h}\n\nAssistant: {a}" for h, a in prefix_turns[:-1])
    prefix += f"\n\nHuman: {prefix_turns[-1]}\n\nAssistant:"
    return {"chosen": f"{prefix} {chosen}", "rejected": f"{prefix} {rejected}"}


GOOD = [
    hh(["How do I water basil?"], "Water it when the soil is dry.", "Basil is green."),
    hh([("Hi", "Hello!"), "Which pot for tomatoes?"], "A deep one, 20 litres.", "Any pot."),
    hh(["What is compost?"], "Decayed plant matter used as fertiliser.", "A word."),
]


def write(path, rows, *, gz=False):
    data = "".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.fixture
def gold_file(tmp_path):
    return write(tmp_path / "gold.jsonl", GOOD)


def test_read_gold_splits_prefix_and_final_responses(gold_file, tmp_path):
    items = read_gold(gold_file)
    assert [g.mode for g in items] == ["helpful"] * 3
    assert items[0].prefix == "\n\nHuman: How do I water basil?\n\nAssistant:"
    assert (items[0].chosen, items[0].rejected) == (
        "Water it when the soil is dry.",
        "Basil is green.",
    )
    assert items[1].prefix.startswith("\n\nHuman: Hi\n\nAssistant: Hello!\n\nHuman: Which pot")
    # gzipped: the same items
    assert read_gold(write(tmp_path / "g.jsonl.gz", GOOD, gz=True)) == items


def test_red_team_gold_right_pick_is_the_hh_rejected(gold_file):
    """A red-team review asks for the MORE harmful response: HH's rejected one."""
    helpful, red = read_gold(gold_file)[0], read_gold(gold_file, "red-team")[0]
    assert red.mode == "red-team"
    assert (red.chosen, red.rejected) == (helpful.rejected, helpful.chosen)
    assert red.digest != helpful.digest


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json\n", "invalid JSON"),
        ('{"chosen": "x"}\n', "missing key 'rejected'"),
        (json.dumps(hh(["Same?"], "Yes.", "Yes.")) + "\n", "same text"),
        (
            json.dumps(
                {
                    "chosen": "\n\nHuman: One\n\nAssistant: A",
                    "rejected": "\n\nHuman: Two\n\nAssistant: B",
                }
            )
            + "\n",
            "differ before their last assistant response",
        ),
        (
            json.dumps(
                {
                    "chosen": "\n\nHuman: Hi\n\nAssistant: A\n\nHuman: More?",
                    "rejected": "\n\nHuman: Hi\n\nAssistant: B",
                }
            )
            + "\n",
            "differ before their last assistant response",
        ),
        (json.dumps(hh(["Empty?"], "", "Something.")) + "\n", "empty"),
    ],
)
def test_a_bad_line_names_file_line_and_problem(tmp_path, line, problem):
    path = write(tmp_path / "bad.jsonl", [GOOD[0], line])
    with pytest.raises(DataFormatError) as info:
        read_gold(path)
    assert info.value.line == 2 and problem in info.value.problem
    assert str(info.value).startswith(f"{path}, line 2: ")


def test_import_deduplicates_by_digest(storage, gold_file, tmp_path):
    items = read_gold(gold_file)
    first = import_gold(storage, items + items[:1], source=str(gold_file))
    assert (first.read, first.added, first.already) == (4, 3, 1)
    again = import_gold(storage, items)
    assert (again.added, again.already) == (0, 3)
    red = import_gold(storage, read_gold(gold_file, "red-team"))
    assert red.added == 3
    assert gold_counts(storage).items == {"helpful": 3, "red-team": 3}
    with storage.read() as s:
        assert s.scalar(select(GoldItem.source).limit(1)) == str(gold_file)


def test_gold_task_description_is_the_first_human_line():
    assert gold_task_description("\n\nHuman: Plan a garden\nwith roses\n\nAssistant:") == (
        "Plan a garden"
    )
    long = "word " * 60
    out = gold_task_description(f"\n\nHuman: {long}\n\nAssistant:")
    assert len(out) <= 121 and out.endswith("…")


@pytest.fixture
def trio(storage):
    return [annotators.add_annotator(storage, n)[0] for n in ("alice", "bob", "carol")]


def test_gold_mixes_in_at_the_rate_and_never_twice(storage, trio, gold_file, tmp_path):
    alice, bob, _ = trio
    many = [hh([f"Question {i}?"], f"Good answer {i}.", f"Bad answer {i}.") for i in range(40)]
    import_gold(storage, read_gold(write(tmp_path / "many.jsonl", many)))
    for _ in range(20):
        conversation(storage, alice, [("a", 3), ("b", 2)])
    rng = random.Random(3)
    gold_ids, real = [], 0
    while (task := next_review(storage, bob, 1.0, rng=rng, gold_fraction=0.3)) is not None:
        with storage.read() as s:
            r = s.get(Review, task.id)
            gold_ids += [r.gold_id] if r.gold_id else []
            real += r.comparison_id is not None
        submit_review(storage, bob, task.id, "a", 2, PTS)
    # every collected comparison reviewed, gold in between at about the rate, never twice
    assert real == 40
    assert 8 <= len(gold_ids) <= 30
    assert len(set(gold_ids)) == len(gold_ids)
    # the queue ends with the collected comparisons: no gold alone
    assert next_review(storage, bob, 1.0, rng=rng, gold_fraction=1.0) is None
    # no gold mixed in at gold_fraction 0
    assert next_review(storage, alice, 1.0, rng=rng, gold_fraction=0.0) is None


def test_a_gold_task_looks_like_a_real_one(storage, trio, gold_file):
    alice, bob, _ = trio
    import_gold(storage, read_gold(gold_file))
    conversation(storage, alice, [("a", 3)])
    real = next_task(storage, bob, 1.0, rng=random.Random(1), gold_fraction=0.0)
    submit_review(storage, bob, real.id, "a", 2, PTS)
    conversation(storage, alice, [("a", 3)])
    gold = next_task(storage, bob, 1.0, rng=random.Random(1), gold_fraction=1.0)
    with storage.read() as s:
        row = s.get(Review, gold.id)
        assert row.gold_id is not None and row.comparison_id is None
    assert gold.id > real.id  # the same table's ids
    assert type(gold) is type(real)
    for field in ("mode", "prefix", "human", "status", "task_description"):
        assert type(getattr(gold, field)) is type(getattr(real, field)), field
    assert [c.slot for c in gold.candidates] == ["a", "b"]
    assert gold.human in gold.prefix and gold.prefix.endswith("\n\nAssistant:")
    assert gold.task_description


def test_an_open_gold_review_leaves_the_count_of_reviews_left_as_it_was(storage, trio, gold_file):
    """The review page's "left" is the same whether the task shown is gold or collected:
    it would otherwise rise by one while a gold task is open (a tell)."""
    alice, bob, _ = trio
    import_gold(storage, read_gold(gold_file))
    conversation(storage, alice, [("a", 3)])
    conversation(storage, alice, [("b", 2)])
    assert review_progress(storage, bob, 1.0).left == 2
    for gold_fraction in (1.0, 0.0):  # a gold task, then a collected one
        task = next_task(storage, bob, 1.0, rng=random.Random(1), gold_fraction=gold_fraction)
        with storage.read() as s:
            assert (s.get(Review, task.id).gold_id is not None) == (gold_fraction == 1.0)
        assert review_progress(storage, bob, 1.0).left == 2
        submit_review(storage, bob, task.id, "a", 2, PTS)
    assert review_progress(storage, bob, 1.0).left == 1


def test_gold_pick_is_stored_in_the_original_order_and_scored(storage, trio, gold_file):
    alice, bob, carol = trio
    items = read_gold(gold_file)
    import_gold(storage, items)
    right_texts = {g.chosen for g in items}
    conversation(storage, alice, [("a", 3)] * 3)
    rng = random.Random(0)
    for who, right in ((bob, True), (carol, False)):
        for _ in range(3):
            task = next_review(storage, who, 1.0, rng=rng, gold_fraction=1.0)
            good = next(c.slot for c in task.candidates if c.text in right_texts)
            pick = good if right else ("b" if good == "a" else "a")
            submit_review(storage, who, task.id, pick, 3, PTS)
    acc = {g.name: (g.answered, g.correct) for g in gold_accuracy(storage)}
    assert acc == {"bob": (3, 3), "carol": (3, 0)}
    with storage.read() as s:
        picks = {(r.reviewer_id, r.pick) for r in s.scalars(select(Review))}
    assert picks == {(bob.id, "a"), (carol.id, "b")}


def test_gold_never_enters_agreement_leaderboard_export_or_counts(
    storage, trio, gold_file, tmp_path
):
    alice, bob, _ = trio
    conversation(storage, alice, [("a", 3)])
    before = (review_units(storage), leaderboard_games(storage), annotator_stats(storage))
    plain = export_collection(storage, tmp_path / "before")
    items = read_gold(gold_file)
    import_gold(storage, items)
    rng = random.Random(0)
    for _ in range(3):  # only gold: the one comparison is left for later
        task = next_review(storage, bob, 1.0, rng=rng, gold_fraction=1.0)
        right = next(c.slot for c in task.candidates if c.text in {g.chosen for g in items})
        submit_review(storage, bob, task.id, right, 3, PTS)
    assert (review_units(storage), leaderboard_games(storage), annotator_stats(storage)) == before
    after = export_collection(storage, tmp_path / "after")
    assert after == plain
    for rel in plain["files"]:
        assert (tmp_path / "after" / rel).read_bytes() == (tmp_path / "before" / rel).read_bytes()
    out = stats_dict(collection_stats(storage, resamples=10))
    assert out["gold"]["annotators"] == {"bob": {"answered": 3, "correct": 3, "accuracy": 1.0}}
    assert out["gold"]["items"] == {"helpful": 3, "red-team": 0}


def test_statistics_json_has_no_gold_key_without_gold(storage, trio):
    assert "gold" not in stats_dict(collection_stats(storage, resamples=10))


def test_a_skipped_gold_review_comes_back_like_a_real_one(storage, trio, gold_file):
    alice, bob, _ = trio
    import_gold(storage, read_gold(gold_file))
    conversation(storage, alice, [("a", 3)])
    rng = random.Random(0)
    gold = next_review(storage, bob, 1.0, rng=rng, gold_fraction=1.0)
    skip_review(storage, bob, gold.id)
    assert review_progress(storage, bob, 1.0).skipped == 1
    real = next_task(storage, bob, 1.0, rng=rng, gold_fraction=0.0)
    assert real.id != gold.id
    submit_review(storage, bob, real.id, "a", 2, PTS)
    again = next_task(storage, bob, 1.0, rng=rng, gold_fraction=0.0)
    assert again.id == gold.id and again.status == "assigned"


def test_the_real_harmless_file_imports_as_red_team_gold(storage):
    """Upstream's harmless-base test split (HH_RLHF_REAL): a few pairs cannot be gold (a
    response empty, or the two transcripts differing earlier); they are refused by line."""
    import os
    from pathlib import Path

    root = os.environ.get("HH_RLHF_REAL")
    path = Path(root or "/nonexistent") / "harmless-base" / "test.jsonl.gz"
    if not path.is_file():
        pytest.skip("set HH_RLHF_REAL to the folder holding harmless-base/test.jsonl.gz")
    refused: list[DataFormatError] = []
    items = read_gold(path, "red-team", refused=refused)
    assert len(refused) < 0.01 * (len(items) + len(refused))
    assert all(e.line is not None and str(e).startswith(str(path)) for e in refused)
    assert all(g.prefix.endswith("\n\nAssistant:") and g.chosen != g.rejected for g in items)
    result = import_gold(storage, items)
    assert result.added + result.already == len(items)
