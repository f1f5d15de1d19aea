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
from ..db.models import (
    Annotator,
    Comparison,
    ComparisonFlag,
    Conversation,
    GoldItem,
    Review,
    Turn,
)
from ..domain import AnnotatorInfo, other_slot
from .gold import gold_task_description, last_human, unseen_gold
from .qualification import counted_annotator_ids, judge, review_plan, round_answered
from .writers import lock_writer

__all__ = [
    "ShownCandidate",
    "ReviewTask",
    "Rating",
    "ReviewUnit",
    "selected_for_review",
    "next_review",
    "submit_review",
    "review_units",
    "next_task",
    "skip_review",
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


def _shown(
    r: Review, mode: str, prefix: str, human: str, cands: dict[str, str | None]
) -> ReviewTask:
    """The review as its reviewer sees it: ``cands`` by original slot, shown in its order."""
    order = ["b", "a"] if r.swapped else ["a", "b"]
    shown_pick = None
    if r.pick is not None:
        shown_pick = other_slot(r.pick) if r.swapped else r.pick
    return ReviewTask(
        id=r.id,
        mode=mode,
        prefix=prefix,
        human=human,
        candidates=tuple(
            ShownCandidate(shown, cands[orig]) for shown, orig in zip("ab", order, strict=True)
        ),
        status=r.status,
        pick=shown_pick,
        strength=r.strength,
    )


def _task(s: DBSession, r: Review) -> ReviewTask:
    """A collected comparison's review, or a gold item's (slot a: its chosen), alike."""
    if r.gold_id is not None:
        g = s.get_one(GoldItem, r.gold_id)
        return _shown(r, g.mode, g.prefix, last_human(g.prefix), {"a": g.chosen, "b": g.rejected})
    comp = s.get_one(Comparison, r.comparison_id)
    turn = s.get_one(Turn, comp.turn_id)
    conv = s.get_one(Conversation, turn.conversation_id)
    cands = {c.slot: c.text for c in turn.candidates}
    return _shown(r, conv.mode, turn.prefix, turn.human, cands)


def _mine(s: DBSession, who: AnnotatorInfo, review_id: int) -> Review:
    """The reviewer's review ``review_id`` (anyone else's is not found)."""
    r = s.get(Review, review_id)
    if r is None or r.reviewer_id != who.id:
        raise NotFound(f"review {review_id} not found")
    return r


def next_review(
    storage: Storage,
    who: AnnotatorInfo,
    fraction: float,
    *,
    rng: random.Random | None = None,
    order: str = "fewest_reviews",
    gold_fraction: float = 0.0,
) -> ReviewTask | None:
    """The reviewer's open review task, else a new one (fewest reviews, assigned or done, first;
    then the oldest), else ``None``. ``order="flagged"``: the comparisons ``hh collect flag``
    flagged come first (likely_mislabelled, then ambiguous, each by p_mislabelled, highest
    first; :func:`flag_keys`), then the rest in that order.

    Gold (:mod:`.gold`): while a comparison is left, a gold item this reviewer never had
    comes instead with probability ``gold_fraction`` (none left: the queue ends, no gold
    alone). In a qualification round (:mod:`.qualification`) a waiting reviewer gets gold
    only, a failed one nothing. A gold task is a review row like any other, built the same
    way after the same reads (the scan of comparisons runs for it too).

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
            return _task(s, s.get_one(Review, open_id))
        plan, rnd = review_plan(s, who.id)
        eligible = _review_candidates(s, who.id, fraction) if fraction > 0 else []
        flagged = flag_keys(s) if order == "flagged" and eligible else {}
        golds = unseen_gold(s, who.id) if plan != "none" else []
        # the round's gold all answered, never judged (the round turned on after): judge now
        due = plan == "gold_only" and rnd is not None and round_answered(s, who.id) >= rnd.reviews
    if due:
        with storage.write() as s:
            judge(s, who.id)
        return next_review(
            storage, who, fraction, rng=rng, order=order, gold_fraction=gold_fraction
        )
    gold_id = comparison_id = None
    if plan == "gold_only":
        gold_id = rng.choice(golds) if golds else None
    elif plan == "mix" and eligible:
        if golds and rng.random() < gold_fraction:
            gold_id = rng.choice(golds)
        else:
            _, _, comparison_id = min((flagged.get(cid, (2, 0.0)), n, cid) for n, cid in eligible)
    if gold_id is None and comparison_id is None:
        return None
    with storage.write() as s:
        lock_writer(s, who)  # one reviewer's requests in turn, while enabled
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(s, s.get_one(Review, open_id))
        r = Review(
            comparison_id=comparison_id,
            gold_id=gold_id,
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
        return _task(s, r)


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
    """Record the reviewer's pick (as shown) and strength; repeating the same answer is a no-op.
    A gold review's answer may end the reviewer's qualification round (:func:`.judge`)."""
    if pick not in ("a", "b"):
        raise Invalid(f"pick must be 'a' or 'b', not {pick!r}")
    if not 1 <= strength <= points:
        raise Invalid(f"strength must be between 1 and {points}, not {strength}")
    with storage.write() as s:
        lock_writer(s, who)  # enabled now, whatever a worker remembers of the login
        r = _mine(s, who, review_id)
        original = other_slot(pick) if r.swapped else pick
        if r.status == "done":
            if (r.pick, r.strength) == (original, strength):
                return _task(s, r)
            raise Conflict(f"review {review_id} already has a different answer")
        r.pick, r.strength, r.status, r.decided_at = original, strength, "done", _now()
        s.flush()
        if r.gold_id is not None:
            judge(s, who.id)
        return _task(s, r)


def review_units(storage: Storage) -> list[ReviewUnit]:
    """Every reviewed comparison with all its ratings: the author's first, then the reviewers'.
    In a qualification round only those who passed count: a comparison of anyone else is no
    unit, and their reviews no rating. Gold reviews are none (no comparison)."""
    with storage.read() as s:
        counted = counted_annotator_ids(s)
        rows = s.execute(
            select(Review.comparison_id, Annotator.name, Review.pick, Review.strength, Annotator.id)
            .join(Annotator, Review.reviewer_id == Annotator.id)
            .join(Comparison, Review.comparison_id == Comparison.id)
            .where(Review.status == "done", DIFFERENT_TEXTS)
            .order_by(Review.comparison_id, Review.id)
        ).all()
        by_comp: dict[int, list[Rating]] = defaultdict(list)
        for cid, name, pick, strength, rid in rows:
            if counted is not None and rid not in counted:
                continue
            # a done review has both: submit_review sets them with the status
            if cid is not None and pick is not None and strength is not None:
                by_comp[cid].append(Rating(name, pick, strength))
        authors: dict[int, tuple[Rating, int, int]] = {}
        if by_comp:
            for cid, name, pick, strength, conv_id, index, aid in s.execute(
                select(
                    Comparison.id,
                    Annotator.name,
                    Comparison.pick,
                    Comparison.strength,
                    Turn.conversation_id,
                    Turn.index,
                    Annotator.id,
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
                if counted is None or aid in counted:
                    authors[cid] = (Rating(name, pick, strength), conv_id, index)
        units = []
        for cid, reviews in sorted(by_comp.items()):
            if cid not in authors:
                continue
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
    gold_fraction: float = 0.0,
) -> ReviewTask | None:
    """:func:`~.review.next_review` (in ``order``), else the task this reviewer skipped
    longest ago, opened again; with ``task_description`` (what the conversation's author set
    out to do; a gold item's: :func:`.gold.gold_task_description`)."""
    task = next_review(
        storage, who, fraction, rng=rng, order=order, gold_fraction=gold_fraction
    ) or _reopen_skipped(storage, who)
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
    if description is None:  # a gold item's: no conversation of ours
        description = gold_task_description(task.prefix)
    return dataclasses.replace(task, task_description=description)


def _reopen_skipped(storage: Storage, who: AnnotatorInfo) -> ReviewTask | None:
    with storage.write() as s:
        lock_writer(s, who)  # one reviewer's requests in turn, while enabled
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(s, s.get_one(Review, open_id))
        query = select(Review).where(Review.reviewer_id == who.id, Review.status == "skipped")
        if review_plan(s, who.id)[0] == "none":  # failed the round: no review until a reset
            return None
        r = s.scalars(query.order_by(Review.assigned_at, Review.id)).first()
        if r is None:
            return None
        r.status, r.assigned_at = "assigned", _now()
        s.flush()
        return _task(s, r)


def skip_review(storage: Storage, who: AnnotatorInfo, review_id: int) -> None:
    """Put the reviewer's open task aside; answering it later is still possible."""
    with storage.write() as s:
        lock_writer(s, who)
        r = _mine(s, who, review_id)
        if r.status == "done":
            raise Conflict(f"review {review_id} is already answered")
        r.status = "skipped"


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
