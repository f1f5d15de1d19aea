"""The qualification round: a new annotator's first ``qualification_reviews`` review tasks
are gold comparisons (:mod:`.gold`); after the last of them they pass (their share right
at least ``qualification_threshold``) or fail. Their collected data counts (the export, the
leaderboard, agreement) only once they pass: :func:`counted_annotator_ids`.

The round's settings live in the config; the app writes them into the database when it
starts (:func:`set_round`, a ``campaign_settings`` row), so that everything reading the
database alone (``hh collect export``, the CLI) knows whether the round is on.

``annotators.qualification`` is NULL while waiting (or with no round), then "passed" or
"failed"; ``qualified_at`` is when it was judged. An admin's reset (:func:`reset`) of a
failed annotator sets it back to NULL and ``qualified_at`` to the reset's time: only gold
reviews answered after it count for the new round (the earlier ones stay, scored in the
gold accuracy, and are never shown again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DBSession

from ...errors import Conflict, NotFound
from ..db import Storage
from ..db.models import Annotator, CampaignSetting, GoldItem, Review
from ..domain import now

__all__ = [
    "ROUND_KEY",
    "Round",
    "QualificationRow",
    "Qualification",
    "current_round",
    "round_of",
    "set_round",
    "counted_annotator_ids",
    "counted_member_ids",
    "review_plan",
    "judge",
    "qualification",
    "qualification_of",
    "reset",
]

log = logging.getLogger("hhrlhf.collect.admin")

#: the ``campaign_settings`` key holding the round's settings (absent: no round ever)
ROUND_KEY = "qualification"

Plan = Literal["mix", "gold_only", "none"]


@dataclass(frozen=True, slots=True)
class Round:
    """The round's settings: ``reviews`` gold reviews, ``threshold`` share right to pass."""

    reviews: int
    threshold: float


@dataclass(frozen=True, slots=True)
class QualificationRow:
    """One annotator in the round: ``status`` waiting | passed | failed; ``answered`` and
    ``correct``: their gold reviews of this round (since a reset)."""

    name: str
    status: str
    answered: int
    correct: int
    required: int
    qualified_at: str | None

    @property
    def accuracy(self) -> float | None:
        return round(self.correct / self.answered, 4) if self.answered else None


@dataclass(frozen=True, slots=True)
class Qualification:
    """The round as the admin sees it; ``warning`` when it cannot work as set."""

    round: Round | None
    gold_items: int
    rows: tuple[QualificationRow, ...]
    warning: str | None


def current_round(s: DBSession) -> Round | None:
    """In the session ``s``: the round's settings, None when it is off."""
    row = s.get(CampaignSetting, ROUND_KEY)
    value = row.value if row is not None else None
    if not isinstance(value, dict) or int(value.get("reviews") or 0) <= 0:
        return None
    return Round(int(value["reviews"]), float(value.get("threshold", 0.8)))


def round_of(storage: Storage) -> Round | None:
    with storage.read() as s:
        return current_round(s)


def set_round(storage: Storage, reviews: int, threshold: float, *, by: str | None = None) -> bool:
    """Write the round's settings when they differ from the stored ones (a deployment that
    never had a round writes nothing for ``reviews == 0``); True when written."""
    wanted = {"reviews": reviews, "threshold": threshold}
    with storage.read() as s:
        row = s.get(CampaignSetting, ROUND_KEY)
        if (row is None and reviews <= 0) or (row is not None and row.value == wanted):
            return False
    try:
        with storage.write() as s:
            row = s.get(CampaignSetting, ROUND_KEY)
            if row is None:
                s.add(CampaignSetting(key=ROUND_KEY, value=wanted, updated_by=by, updated_at=now()))
            else:
                row.value, row.updated_by, row.updated_at = wanted, by, now()
    except IntegrityError:  # another worker starting at the same time wrote it first
        return False
    return True


def _source(source: Storage | DBSession, fn: Any) -> Any:
    if isinstance(source, DBSession):
        return fn(source)
    with source.read() as s:
        return fn(s)


def counted_annotator_ids(source: Storage | DBSession) -> set[int] | None:
    """The annotators whose collected data counts: None when there is no round (everyone),
    else those who passed it."""

    def read(s: DBSession) -> set[int] | None:
        if current_round(s) is None:
            return None
        return set(s.scalars(select(Annotator.id).where(Annotator.qualification == "passed")))

    found: set[int] | None = _source(source, read)
    return found


def counted_member_ids(source: Storage | DBSession) -> set[int] | None:
    """:func:`counted_annotator_ids` as the export names annotators (``member_id``)."""

    def read(s: DBSession) -> set[int] | None:
        ids = counted_annotator_ids(s)
        if ids is None:
            return None
        return set(s.scalars(select(Annotator.member_id).where(Annotator.id.in_(ids))))

    found: set[int] | None = _source(source, read)
    return found


def _round_reviews(s: DBSession, a: Annotator) -> list[str | None]:
    """The picks of ``a``'s answered gold reviews that count for their round."""
    q = select(Review.pick).where(
        Review.reviewer_id == a.id, Review.gold_id.is_not(None), Review.status == "done"
    )
    if a.qualification is None and a.qualified_at is not None:  # reset: this round's only
        q = q.where(Review.decided_at > a.qualified_at)
    return list(s.scalars(q.order_by(Review.decided_at, Review.id)))


def review_plan(s: DBSession, reviewer_id: int) -> tuple[Plan, Round | None]:
    """What a reviewer's next task may be: ``mix`` (collected comparisons with gold mixed in:
    no round, or passed), ``gold_only`` (waiting in the round), ``none`` (failed)."""
    rnd = current_round(s)
    if rnd is None:
        return "mix", None
    status = s.scalar(select(Annotator.qualification).where(Annotator.id == reviewer_id))
    if status == "passed":
        return "mix", rnd
    return ("none" if status == "failed" else "gold_only"), rnd


def round_answered(s: DBSession, reviewer_id: int) -> int:
    """Gold reviews of ``reviewer_id`` that count for their round so far."""
    return len(_round_reviews(s, s.get_one(Annotator, reviewer_id)))


def judge(s: DBSession, reviewer_id: int) -> str | None:
    """In the write session ``s``, after a gold review: pass or fail a waiting annotator who
    has answered the round's gold reviews; their status (None: still waiting, or no round)."""
    rnd = current_round(s)
    a = s.get_one(Annotator, reviewer_id)
    if rnd is None or a.qualification is not None:
        return a.qualification
    picks = _round_reviews(s, a)
    if len(picks) < rnd.reviews:
        return None
    share = sum(p == "a" for p in picks) / len(picks)
    a.qualification = "passed" if share >= rnd.threshold else "failed"
    a.qualified_at = now()
    return a.qualification


def _iso(value: datetime | None) -> str | None:
    from ..domain import iso

    return iso(value)


def qualification_of(s: DBSession, a: Annotator, rnd: Round) -> QualificationRow:
    picks = _round_reviews(s, a)
    judged = a.qualification is not None
    return QualificationRow(
        name=a.name,
        status=a.qualification or "waiting",
        answered=len(picks),
        correct=sum(p == "a" for p in picks),
        required=rnd.reviews,
        qualified_at=_iso(a.qualified_at) if judged else None,
    )


def qualification(storage: Storage) -> Qualification:
    """Every annotator's place in the round (none when it is off), with a warning when
    there are fewer gold items than a round needs."""
    with storage.read() as s:
        rnd = current_round(s)
        items = s.scalar(select(func.count()).select_from(GoldItem)) or 0
        if rnd is None:
            return Qualification(None, items, (), None)
        people = s.scalars(select(Annotator).order_by(Annotator.name)).all()
        rows = tuple(qualification_of(s, a, rnd) for a in people)
    warning = None
    if items < rnd.reviews:
        warning = (
            f"the round needs {rnd.reviews} gold reviews per annotator but there are only "
            f"{items} gold items: import more (hh collect gold import FILE); until then "
            "nobody can finish the round"
        )
    return Qualification(rnd, items, rows, warning)


def reset(storage: Storage, name: str, *, by: str | None = None) -> QualificationRow:
    """Give a failed annotator another round: waiting again, only gold reviews answered from
    now on count (never the same gold item twice: they need that many they have not seen)."""
    with storage.write() as s:
        rnd = current_round(s)
        if rnd is None:
            raise Conflict("there is no qualification round (qualification_reviews is 0)")
        a = s.scalar(select(Annotator).where(Annotator.name == name))
        if a is None:
            raise NotFound(f"annotator {name!r} not found")
        if a.qualification != "failed":
            raise Conflict(f"annotator {name!r} has not failed the round (nothing to reset)")
        a.qualification, a.qualified_at = None, now()
        s.flush()
        log.info("qualification of %r reset by %r", name, by)
        return qualification_of(s, a, rnd)
