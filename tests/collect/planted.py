"""A collection with a planted rule and planted flips, for the mislabel flags' tests: in every
conversation one response says "gladly" and the other "never", and the annotator picks the
"gladly" one, except in the conversations listed as flipped."""

from __future__ import annotations

import random

from test_review import PTS, make_turn

from hhrlhf.collect.services import annotators, choices, conversations

WORDS = (
    "garden water soil seed tomato basil fence rain morning shade compost rake spade "
    "harvest leaf root pot window sun evening"
).split()


def planted(storage, n=40, flipped=(3, 11, 25), *, weak=()):
    """``(author, comparison ids in order, flipped comparison ids)``; a conversation in
    ``weak`` is picked with strength 1 (the export leaves it out)."""
    who, _ = annotators.add_annotator(storage, "planter")
    rng = random.Random(5)
    ids, flips = [], []
    for i in range(n):
        cid = conversations.create_conversation(storage, who, "helpful", "Garden questions").id
        question = " ".join(rng.choices(WORDS, k=6)) + f" {i}?"
        good = " ".join(rng.choices(WORDS, k=7)) + " gladly."
        bad = " ".join(rng.choices(WORDS, k=7)) + " never."
        a, b = (good, bad) if i % 2 else (bad, good)
        tid = make_turn(storage, who, cid, question, a, b)
        good_slot = "a" if i % 2 else "b"
        pick = good_slot if i not in flipped else ("b" if good_slot == "a" else "a")
        choices.record_choice(
            storage, who, tid, pick=pick, strength=1 if i in weak else 3, strength_points=PTS
        )
        conversations.finish_conversation(storage, who, cid, None, None)
        comparison = _comparison_id(storage, tid)
        ids.append(comparison)
        if i in flipped:
            flips.append(comparison)
    return who, ids, flips


def _comparison_id(storage, turn_id):
    from sqlalchemy import select

    from hhrlhf.collect.db.models import Comparison

    with storage.read() as s:
        return s.scalar(select(Comparison.id).where(Comparison.turn_id == turn_id))
