"""A reviewer's queue: the next task with its conversation's task description, skipping a task
(it comes back once nothing else is left), and how many are left and done today.

Skipping needs no new column: a skipped review keeps its row with status ``skipped`` (never an
answer: agreement and statistics read ``done`` only), so the comparison is not given to this
reviewer again until :func:`next_task` finds nothing new and opens the oldest skipped one.
"""

from __future__ import annotations

import random

from sqlalchemy import func, select

from ...errors import Conflict, NotFound
from ..db.models import Annotator, Comparison, Conversation, Review, Turn
from .review import (
    DIFFERENT_TEXTS,
    _load,
    _now,
    _open_review,
    _task,
    next_review,
    selected_for_review,
)

__all__ = ["next_task", "skip_review", "review_progress"]


def next_task(storage, who, fraction: float, *, rng: random.Random | None = None) -> dict | None:
    """:func:`~.review.next_review`, else the task this reviewer skipped longest ago, opened
    again; with ``task_description`` (what the conversation's author set out to do)."""
    task = next_review(storage, who, fraction, rng=rng) or _reopen_skipped(storage, who)
    if task is None:
        return None
    with storage.read() as s:
        task["task_description"] = s.scalar(
            select(Conversation.task_description)
            .join(Turn, Turn.conversation_id == Conversation.id)
            .join(Comparison, Comparison.turn_id == Turn.id)
            .join(Review, Review.comparison_id == Comparison.id)
            .where(Review.id == task["id"])
        )
    return task


def _reopen_skipped(storage, who) -> dict | None:
    with storage.write() as s:
        s.execute(select(Annotator.id).where(Annotator.id == who.id).with_for_update())
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(*_load(s, open_id))
        r = s.scalars(
            select(Review)
            .where(Review.reviewer_id == who.id, Review.status == "skipped")
            .order_by(Review.assigned_at, Review.id)
        ).first()
        if r is None:
            return None
        r.status, r.assigned_at = "assigned", _now()
        s.flush()
        return _task(*_load(s, r.id))


def skip_review(storage, who, review_id: int) -> None:
    """Put the reviewer's open task aside; answering it later is still possible."""
    with storage.write() as s:
        loaded = _load(s, review_id)
        if loaded is None or loaded[0].reviewer_id != who.id:
            raise NotFound(f"review {review_id} not found")
        if loaded[0].status == "done":
            raise Conflict(f"review {review_id} is already answered")
        loaded[0].status = "skipped"


def review_progress(storage, who, fraction: float) -> dict:
    """``left``: the reviews this reviewer can still be given (open, skipped, and every
    finished comparison of someone else selected for review and not yet given to them);
    ``done_today``: the ones they answered since midnight UTC."""
    start = _now().replace(hour=0, minute=0, second=0, microsecond=0)
    mine = select(func.count()).select_from(Review).where(Review.reviewer_id == who.id)
    with storage.read() as s:
        waiting = s.scalar(mine.where(Review.status.in_(("assigned", "skipped")))) or 0
        today = s.scalar(mine.where(Review.status == "done", Review.decided_at >= start)) or 0
        new = 0
        if fraction > 0:
            given = select(Review.comparison_id).where(Review.reviewer_id == who.id)
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
    return {"left": waiting + new, "done_today": today}
