"""An annotator's feedback (the ``/feedback`` page): the gold reviews they got wrong and
their collected comparisons that a review disagreed with, newest first, capped.

Everything is told in the order the annotator saw it: a gold miss shows the two responses
as the review showed them, the annotator's pick and the right one; a disagreement shows the
two responses as the annotator had them (A and B of their own turn), their pick and
strength and the reviewer's, the reviewer never named.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session as DBSession

from ..db import Storage
from ..db.models import Annotator, Comparison, Conversation, GoldItem, Review, Turn
from ..domain import AnnotatorInfo, iso, other_slot
from .qualification import QualificationRow, current_round, qualification_of

__all__ = ["FEEDBACK_LIMIT", "GoldMiss", "Disagreement", "Feedback", "feedback"]

#: the most of each kind a feedback page shows (the newest)
FEEDBACK_LIMIT = 50


@dataclass(frozen=True, slots=True)
class GoldMiss:
    """A gold review answered wrong: ``a`` and ``b`` as shown, the pick and the right one
    (for a red-team item: the MORE harmful response)."""

    mode: str
    prefix: str
    a: str
    b: str
    pick: str
    strength: int
    right: str
    decided_at: str | None


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A comparison of the annotator's own that a reviewer picked the other way:
    ``a`` and ``b`` as the annotator had them, both picks and strengths."""

    conversation_id: int
    turn_index: int
    mode: str
    prefix: str
    a: str | None
    b: str | None
    pick: str
    strength: int
    review_pick: str
    review_strength: int
    decided_at: str | None


@dataclass(frozen=True, slots=True)
class Feedback:
    """The page's content; ``qualification``: the annotator's place in the round (None: no
    round)."""

    gold_misses: tuple[GoldMiss, ...]
    disagreements: tuple[Disagreement, ...]
    qualification: QualificationRow | None


def _gold_misses(s: DBSession, who: AnnotatorInfo, limit: int) -> list[GoldMiss]:
    rows = s.execute(
        select(Review, GoldItem)
        .join(GoldItem, Review.gold_id == GoldItem.id)
        .where(Review.reviewer_id == who.id, Review.status == "done", Review.pick == "b")
        .order_by(Review.decided_at.desc(), Review.id.desc())
        .limit(limit)
    ).all()
    out = []
    for r, g in rows:
        shown = (g.rejected, g.chosen) if r.swapped else (g.chosen, g.rejected)
        right = "b" if r.swapped else "a"
        out.append(
            GoldMiss(
                mode=g.mode,
                prefix=g.prefix,
                a=shown[0],
                b=shown[1],
                pick=other_slot(right),
                strength=r.strength or 0,
                right=right,
                decided_at=iso(r.decided_at),
            )
        )
    return out


def _disagreements(s: DBSession, who: AnnotatorInfo, limit: int) -> list[Disagreement]:
    rows = s.execute(
        select(Review, Comparison, Turn, Conversation.mode)
        .join(Comparison, Review.comparison_id == Comparison.id)
        .join(Turn, Comparison.turn_id == Turn.id)
        .join(Conversation, Turn.conversation_id == Conversation.id)
        .where(
            Comparison.annotator_id == who.id,
            Review.status == "done",
            Review.pick != Comparison.pick,
        )
        .order_by(Review.decided_at.desc(), Review.id.desc())
        .limit(limit)
    ).all()
    out = []
    for r, comp, turn, mode in rows:
        texts = {c.slot: c.text for c in turn.candidates}
        out.append(
            Disagreement(
                conversation_id=turn.conversation_id,
                turn_index=turn.index,
                mode=mode,
                prefix=turn.prefix,
                a=texts.get("a"),
                b=texts.get("b"),
                pick=comp.pick,
                strength=comp.strength,
                review_pick=r.pick or "",
                review_strength=r.strength or 0,
                decided_at=iso(r.decided_at),
            )
        )
    return out


def feedback(storage: Storage, who: AnnotatorInfo, *, limit: int = FEEDBACK_LIMIT) -> Feedback:
    """``who``'s gold misses and the reviews that disagreed with them, newest first (at most
    ``limit`` of each), and their qualification status while a round is on."""
    with storage.read() as s:
        rnd = current_round(s)
        status = None
        if rnd is not None:
            status = qualification_of(s, s.get_one(Annotator, who.id), rnd)
        return Feedback(
            tuple(_gold_misses(s, who, limit)), tuple(_disagreements(s, who, limit)), status
        )
