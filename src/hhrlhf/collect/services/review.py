"""Review: re-showing a sample of finished comparisons to other annotators, and the review
units that agreement is computed on (:mod:`.stats`).

Plain functions taking the :class:`~hhrlhf.collect.db.Storage`.

A reviewer's queue (:func:`next_task`, :func:`skip_review`, :func:`review_progress`): the next
task with its conversation's task description, skipping a task (it comes back once nothing
else is left), and how many are left and done today.

Skipping needs no new column: a skipped review keeps its row with status ``skipped`` (never an
answer: agreement and statistics read ``done`` only), so the comparison is not given to this
reviewer again until :func:`next_task` finds nothing new and opens the oldest skipped one.

Which comparisons are reviewed: a stable ``fraction`` of finished pick comparisons, chosen by a
hash of the conversation's uid and the turn index (the same ones whatever the order of requests).
Each is shown to annotators other than its author, the two responses in a random order; the
review's pick is stored in the ORIGINAL slot order. With ``review_order = "flagged"`` the
queue gives the comparisons ``hh collect flag`` doubts first (:func:`next_review`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DBSession

from ...errors import Conflict, Invalid, NotFound
from ..db import Storage
from ..db.models import Annotator, Comparison, ComparisonFlag, Conversation, Review, Turn
from ..domain import AnnotatorInfo, other_slot
from .writers import lock_writer

__all__ = [
    "ShownCandidate",
    "ReviewTask",
    "Rating",
    "ReviewUnit",
    "ReviewProgress",
    "selected_for_review",
    "next_review",
    "submit_review",
    "review_units",
    "next_task",
    "skip_review",
    "review_progress",
    "agreed_turns",
]


#: an identical pair (both responses the same text) is never a review item, an agreement
#: sample or a leaderboard game, as the export never makes it a line
DIFFERENT_TEXTS = Comparison.chosen_text != Comparison.rejected_text


def selected_for_review(uid: str, turn_index: int, fraction: float) -> bool:
    """Whether the comparison of turn ``turn_index`` of conversation ``uid`` is re-shown."""
    if fraction <= 0:
        return False
    h = hashlib.sha256(f"review:{uid}:{turn_index}".encode()).digest()[:8]
    return int.from_bytes(h, "big") / 2**64 < fraction


@dataclass(frozen=True, slots=True)
class ShownCandidate:
    """A response as the reviewer sees it: in slot ``a`` or ``b`` of the shown order."""

    slot: str
    text: str | None


@dataclass(frozen=True, slots=True)
class ReviewTask:
    """A review as its reviewer sees it: the two responses in the shown order, the pick (if
    answered) in that order too. ``task_description``: what the conversation's author set out
    to do (:func:`next_task` only; None otherwise)."""

    id: int
    mode: str
    prefix: str
    human: str
    candidates: tuple[ShownCandidate, ...]
    status: str
    pick: str | None
    strength: int | None
    task_description: str | None = None


@dataclass(frozen=True, slots=True)
class Rating:
    """One rating of a reviewed comparison: its author's pick or a reviewer's."""

    annotator: str
    pick: str
    strength: int


@dataclass(frozen=True, slots=True)
class ReviewUnit:
    """A reviewed comparison with all its ratings: the author's first, then the reviewers'."""

    comparison_id: int
    conversation_id: int
    turn_index: int
    ratings: tuple[Rating, ...]


@dataclass(frozen=True, slots=True)
class ReviewProgress:
    """A reviewer's queue: ``left`` to be given (skipped ones included), ``skipped``, and
    ``done_today`` (answered since midnight UTC)."""

    left: int
    skipped: int
    done_today: int


def _task(r: Review, comp: Comparison, turn: Turn, conv: Conversation) -> ReviewTask:
    cands = {c.slot: c.text for c in turn.candidates}
    order = ["b", "a"] if r.swapped else ["a", "b"]
    shown_pick = None
    if r.pick is not None:
        shown_pick = other_slot(r.pick) if r.swapped else r.pick
    return ReviewTask(
        id=r.id,
        mode=conv.mode,
        prefix=turn.prefix,
        human=turn.human,
        candidates=tuple(
            ShownCandidate(shown, cands[orig]) for shown, orig in zip("ab", order, strict=True)
        ),
        status=r.status,
        pick=shown_pick,
        strength=r.strength,
    )


def _load(s: DBSession, review_id: int) -> tuple[Review, Comparison, Turn, Conversation] | None:
    r = s.get(Review, review_id)
    if r is None:
        return None
    comp = s.get_one(Comparison, r.comparison_id)
    turn = s.get_one(Turn, comp.turn_id)
    conv = s.get_one(Conversation, turn.conversation_id)
    return r, comp, turn, conv


def _loaded(s: DBSession, review_id: int) -> tuple[Review, Comparison, Turn, Conversation]:
    loaded = _load(s, review_id)
    if loaded is None:
        raise NotFound(f"review {review_id} not found")
    return loaded


def next_review(
    storage: Storage,
    who: AnnotatorInfo,
    fraction: float,
    *,
    rng: random.Random | None = None,
    order: str = "fewest_reviews",
) -> ReviewTask | None:
    """The reviewer's open review task, else a new one (fewest reviews, assigned or done, first;
    then the oldest), else ``None``. ``order="flagged"``: the comparisons ``hh collect flag``
    flagged come first (likely_mislabelled, then ambiguous, each by p_mislabelled, highest
    first; :func:`flag_keys`), then the rest in that order.

    The scan of every finished comparison runs in a read transaction (SQLite: beside the
    writer, never holding the write lock); the write transaction only re-checks the
    reviewer's open task (their row locked, so one reviewer's two requests at once are served
    one after the other) and inserts the review. Counts a concurrent assignment changed meanwhile
    can make the pick a little less even, never wrong: a reviewer never gets a comparison twice
    (unique constraint) nor two open tasks.
    """
    rng = rng or random.Random()
    with storage.read() as s:
        open_id = _open_review(s, who.id)
        if open_id is not None:
            return _task(*_loaded(s, open_id))
        if fraction <= 0:
            return None
        eligible = _review_candidates(s, who.id, fraction)
        flagged = flag_keys(s) if order == "flagged" and eligible else {}
    if not eligible:
        return None
    _, _, comparison_id = min((flagged.get(cid, (2, 0.0)), n, cid) for n, cid in eligible)
    with storage.write() as s:
        lock_writer(s, who)  # one reviewer's requests in turn, while enabled
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(*_loaded(s, open_id))
        r = Review(
            comparison_id=comparison_id,
            reviewer_id=who.id,
            swapped=rng.random() < 0.5,
            status="assigned",
            assigned_at=_now(),
        )
        s.add(r)
        try:
            s.flush()
        except IntegrityError as exc:  # the same reviewer asked twice at once
            raise Conflict("a review task was just assigned; ask again") from exc
        return _task(*_loaded(s, r.id))


def _open_review(s: DBSession, reviewer_id: int) -> int | None:
    return s.scalar(
        select(Review.id)
        .where(Review.reviewer_id == reviewer_id, Review.status == "assigned")
        .order_by(Review.id)
    )


def _review_candidates(s: DBSession, reviewer_id: int, fraction: float) -> list[tuple[int, int]]:
    """``(reviews so far, comparison id)`` of every comparison this reviewer may review."""
    # (a gold review's comparison_id is NULL: NOT IN a list holding NULL is never true)
    reviewed = select(Review.comparison_id).where(
        Review.reviewer_id == reviewer_id, Review.comparison_id.is_not(None)
    )
    done = (
        select(Review.comparison_id, func.count().label("n"))
        .group_by(Review.comparison_id)
        .subquery()
    )
    rows = s.execute(
        select(Comparison.id, Conversation.uid, Turn.index, func.coalesce(done.c.n, 0))
        .join(Turn, Comparison.turn_id == Turn.id)
        .join(Conversation, Turn.conversation_id == Conversation.id)
        .outerjoin(done, done.c.comparison_id == Comparison.id)
        .where(
            Comparison.kind == "pick",
            Conversation.status == "finished",
            Comparison.annotator_id != reviewer_id,
            Comparison.id.not_in(reviewed),
            DIFFERENT_TEXTS,
        )
        .order_by(Comparison.id)
    ).all()
    selected = [row for row in rows if selected_for_review(row[1], row[2], fraction)]
    # a later turn's prefix shows the pick of every earlier turn: of each conversation, only
    # the earliest turn this reviewer has still to review can be given
    first: dict[str, int] = {}
    for _, uid, index, _ in selected:
        first[uid] = min(first.get(uid, index), index)
    return [(n, cid) for cid, uid, index, n in selected if index == first[uid]]


def _now() -> datetime:
    from ..domain import now

    return now()


def submit_review(
    storage: Storage, who: AnnotatorInfo, review_id: int, pick: str, strength: int, points: int
) -> ReviewTask:
    """Record the reviewer's pick (as shown) and strength; repeating the same answer is a no-op."""
    if pick not in ("a", "b"):
        raise Invalid(f"pick must be 'a' or 'b', not {pick!r}")
    if not 1 <= strength <= points:
        raise Invalid(f"strength must be between 1 and {points}, not {strength}")
    with storage.write() as s:
        lock_writer(s, who)  # enabled now, whatever a worker remembers of the login
        loaded = _load(s, review_id)
        if loaded is None or loaded[0].reviewer_id != who.id:
            raise NotFound(f"review {review_id} not found")
        r = loaded[0]
        original = other_slot(pick) if r.swapped else pick
        if r.status == "done":
            if (r.pick, r.strength) == (original, strength):
                return _task(*loaded)
            raise Conflict(f"review {review_id} already has a different answer")
        r.pick, r.strength, r.status, r.decided_at = original, strength, "done", _now()
        s.flush()
        return _task(*loaded)


def review_units(storage: Storage) -> list[ReviewUnit]:
    """Every reviewed comparison with all its ratings: the author's first, then the reviewers'."""
    with storage.read() as s:
        rows = s.execute(
            select(Review.comparison_id, Annotator.name, Review.pick, Review.strength)
            .join(Annotator, Review.reviewer_id == Annotator.id)
            .join(Comparison, Review.comparison_id == Comparison.id)
            .where(Review.status == "done", DIFFERENT_TEXTS)
            .order_by(Review.comparison_id, Review.id)
        ).all()
        by_comp: dict[int, list[Rating]] = defaultdict(list)
        for cid, name, pick, strength in rows:
            # a done review has both: submit_review sets them with the status
            if cid is not None and pick is not None and strength is not None:
                by_comp[cid].append(Rating(name, pick, strength))
        authors: dict[int, tuple[Rating, int, int]] = {}
        if by_comp:
            for cid, name, pick, strength, conv_id, index in s.execute(
                select(
                    Comparison.id,
                    Annotator.name,
                    Comparison.pick,
                    Comparison.strength,
                    Turn.conversation_id,
                    Turn.index,
                )
                .join(Annotator, Comparison.annotator_id == Annotator.id)
                .join(Turn, Comparison.turn_id == Turn.id)
                .where(
                    Comparison.id.in_(
                        select(Review.comparison_id).where(
                            Review.status == "done", Review.comparison_id.is_not(None)
                        )
                    )
                )
            ).all():
                authors[cid] = (Rating(name, pick, strength), conv_id, index)
        units = []
        for cid, reviews in sorted(by_comp.items()):
            author, conv_id, index = authors[cid]
            units.append(ReviewUnit(cid, conv_id, index, (author, *reviews)))
        return units


def agreed_turns(units: list[ReviewUnit]) -> set[tuple[int, int]]:
    """``(conversation_id, turn_index)`` of reviewed comparisons whose every review picks as the author."""
    return {
        (u.conversation_id, u.turn_index) for u in units if len({r.pick for r in u.ratings}) == 1
    }


# -- the reviewer's queue ------------------------------------------------------------------


def next_task(
    storage: Storage,
    who: AnnotatorInfo,
    fraction: float,
    *,
    rng: random.Random | None = None,
    order: str = "fewest_reviews",
) -> ReviewTask | None:
    """:func:`~.review.next_review` (in ``order``), else the task this reviewer skipped
    longest ago, opened again; with ``task_description`` (what the conversation's author set
    out to do)."""
    task = next_review(storage, who, fraction, rng=rng, order=order) or _reopen_skipped(
        storage, who
    )
    if task is None:
        return None
    with storage.read() as s:
        description = s.scalar(
            select(Conversation.task_description)
            .join(Turn, Turn.conversation_id == Conversation.id)
            .join(Comparison, Comparison.turn_id == Turn.id)
            .join(Review, Review.comparison_id == Comparison.id)
            .where(Review.id == task.id)
        )
    return dataclasses.replace(task, task_description=description)


def _reopen_skipped(storage: Storage, who: AnnotatorInfo) -> ReviewTask | None:
    with storage.write() as s:
        lock_writer(s, who)  # one reviewer's requests in turn, while enabled
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(*_loaded(s, open_id))
        r = s.scalars(
            select(Review)
            .where(Review.reviewer_id == who.id, Review.status == "skipped")
            .order_by(Review.assigned_at, Review.id)
        ).first()
        if r is None:
            return None
        r.status, r.assigned_at = "assigned", _now()
        s.flush()
        return _task(*_loaded(s, r.id))


def skip_review(storage: Storage, who: AnnotatorInfo, review_id: int) -> None:
    """Put the reviewer's open task aside; answering it later is still possible."""
    with storage.write() as s:
        lock_writer(s, who)
        loaded = _load(s, review_id)
        if loaded is None or loaded[0].reviewer_id != who.id:
            raise NotFound(f"review {review_id} not found")
        if loaded[0].status == "done":
            raise Conflict(f"review {review_id} is already answered")
        loaded[0].status = "skipped"


def review_progress(storage: Storage, who: AnnotatorInfo, fraction: float) -> ReviewProgress:
    """``left``: the reviews this reviewer can still be given (open, skipped, and every
    finished comparison of someone else selected for review and not yet given to them);
    ``skipped``: how many of those they skipped; ``done_today``: the ones they answered since
    midnight UTC."""
    start = _now().replace(hour=0, minute=0, second=0, microsecond=0)
    mine = select(func.count()).select_from(Review).where(Review.reviewer_id == who.id)
    with storage.read() as s:
        waiting = s.scalar(mine.where(Review.status.in_(("assigned", "skipped")))) or 0
        skipped = s.scalar(mine.where(Review.status == "skipped")) or 0
        today = s.scalar(mine.where(Review.status == "done", Review.decided_at >= start)) or 0
        new = 0
        if fraction > 0:
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


#: the flag classes served first under ``review_order = "flagged"``, in that order
_FLAGGED = {"likely_mislabelled": 0, "ambiguous": 1}


def flag_keys(s: DBSession) -> dict[int, tuple[int, float]]:
    """In the session ``s``: the flagged comparisons' review keys by id,
    ``(0 likely_mislabelled | 1 ambiguous, -p_mislabelled)`` (smaller: reviewed first)."""
    rows = s.execute(
        select(
            ComparisonFlag.comparison_id, ComparisonFlag.cls, ComparisonFlag.p_mislabelled
        ).where(ComparisonFlag.cls.in_(list(_FLAGGED)))
    ).all()
    return {cid: (_FLAGGED[cls], -float(p)) for cid, cls, p in rows}
