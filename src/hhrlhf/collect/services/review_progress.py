"""How many reviews a reviewer has left, skipped and done today (the review page's line)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from ..db import Storage
from ..db.models import Comparison, Conversation, Review, Turn
from ..domain import AnnotatorInfo, now
from .gold import unseen_gold
from .qualification import review_plan, round_answered
from .review import DIFFERENT_TEXTS, selected_for_review

__all__ = ["ReviewProgress", "review_progress"]


@dataclass(frozen=True, slots=True)
class ReviewProgress:
    """A reviewer's queue: ``left`` to be given (skipped ones included), ``skipped``, and
    ``done_today`` (answered since midnight UTC)."""

    left: int
    skipped: int
    done_today: int


#: a reviewer's open gold reviews (review_progress leaves them out of "left")
open_gold = select(func.count()).where(
    Review.status.in_(("assigned", "skipped")), Review.gold_id.is_not(None)
)


def review_progress(storage: Storage, who: AnnotatorInfo, fraction: float) -> ReviewProgress:
    """``left``: the reviews this reviewer can still be given (open, skipped, and every
    finished comparison of someone else selected for review and not yet given to them; in a
    qualification round, a waiting reviewer's gold reviews still due, a failed one's none);
    ``skipped``: how many of those they skipped; ``done_today``: the ones they answered since
    midnight UTC."""
    start = now().replace(hour=0, minute=0, second=0, microsecond=0)
    mine = select(func.count()).select_from(Review).where(Review.reviewer_id == who.id)
    with storage.read() as s:
        waiting = s.scalar(mine.where(Review.status.in_(("assigned", "skipped")))) or 0
        skipped = s.scalar(mine.where(Review.status == "skipped")) or 0
        today = s.scalar(mine.where(Review.status == "done", Review.decided_at >= start)) or 0
        plan, rnd = review_plan(s, who.id)
        new = 0
        if plan == "none":  # failed the round: nothing until a reset
            waiting = 0
        elif plan == "gold_only" and rnd is not None:  # the round's gold still to come
            due = rnd.reviews - round_answered(s, who.id) - waiting
            new = max(0, min(len(unseen_gold(s, who.id)), due))
        elif fraction > 0:
            # open gold takes no comparison's place: "left" would rise by one while it is shown
            waiting -= s.scalar(open_gold.where(Review.reviewer_id == who.id)) or 0
            given = select(Review.comparison_id).where(
                Review.reviewer_id == who.id, Review.comparison_id.is_not(None)
            )
            rows = s.execute(
                select(Conversation.uid, Turn.index)
                .select_from(Comparison)
                .join(Turn, Comparison.turn_id == Turn.id)
                .join(Conversation, Turn.conversation_id == Conversation.id)
                .where(
                    Comparison.kind == "pick",
                    Conversation.status == "finished",
                    Comparison.annotator_id != who.id,
                    Comparison.id.not_in(given),
                    DIFFERENT_TEXTS,
                )
            ).all()
            new = sum(selected_for_review(uid, index, fraction) for uid, index in rows)
    return ReviewProgress(left=waiting + new, skipped=skipped, done_today=today)
