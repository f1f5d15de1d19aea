"""Review by the reviewers: a reviewer (or an admin) judges collected comparisons, not blind.

A verdict on a finished conversation's pick comparison is one of

- ``accept``: the annotator's pick and strength stand;
- ``reject``: the comparison is wrong or unusable; a reason is required (1-500 characters);
- ``fix``: a new pick and strength (on the conversation page's scale, so in red-team mode the
  pick names the MORE harmful response). The comparison row is never changed: the fix is kept
  beside it (``verdicts.fixed_pick``/``fixed_strength``), and ``--accepted-only`` exports it as
  fixed.

One verdict per comparison, with who gave it and when. A reviewer's verdict stands for other
reviewers (a second verdict is refused, 409); an admin may replace any verdict (theirs is then
the one recorded). Nobody judges their own comparison, admins included.

The queue (:func:`judge_queue`): finished conversations' pick comparisons (the two responses
different, neither cut short: the export never makes those a line) without a verdict, not the
reviewer's own, in this order: those ``hh collect flag`` found ``likely_mislabelled`` (highest
p_mislabelled first), then those a blind review picked the other way, then those flagged
``ambiguous`` (highest p first), then the rest; the oldest first within each. Nothing is assigned: two reviewers may open the same comparison, and the
second verdict sent is refused (409) unless it says the same.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DBSession

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.models import (
    Annotator,
    Candidate,
    Comparison,
    ComparisonFlag,
    Conversation,
    Review,
    Turn,
    Verdict,
)
from ..domain import AnnotatorInfo, iso, now
from .review import DIFFERENT_TEXTS
from .writers import lock_writer

__all__ = [
    "VERDICTS",
    "MAX_REASON",
    "Judged",
    "JudgeItem",
    "VerdictInfo",
    "VerdictCounts",
    "judge_queue",
    "next_to_judge",
    "judge_item",
    "record_verdict",
    "verdict_counts",
    "judged_comparisons",
]

#: the verdicts a reviewer may give
VERDICTS = ("accept", "reject", "fix")
#: the longest reason (characters) a verdict may carry
MAX_REASON = 500
#: the queue's groups, first served first (:func:`judge_queue`)
_LIKELY, _DISAGREED, _AMBIGUOUS, _REST = range(4)
_DOUBTS = {_LIKELY: "likely_mislabelled", _DISAGREED: "disagreed", _AMBIGUOUS: "ambiguous"}


@dataclass(frozen=True, slots=True)
class Judged:
    """A comparison's verdict as the export reads it."""

    verdict: str
    fixed_pick: str | None
    fixed_strength: int | None


@dataclass(frozen=True, slots=True)
class VerdictInfo:
    """A recorded verdict: what, why, the fix, who and when (ISO 8601, UTC)."""

    comparison_id: int
    verdict: str
    reason: str | None
    fixed_pick: str | None
    fixed_strength: int | None
    reviewer: str
    decided_at: str | None


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """A comparison as its judge sees it: the conversation up to the turn, both responses in
    their original slots, the annotator's pick and strength, why it is early in the queue
    (``doubt``: likely_mislabelled, disagreed, ambiguous or None) and its verdict if any."""

    comparison_id: int
    mode: str
    task_description: str
    prefix: str
    human: str
    responses: dict[str, str | None]
    pick: str
    strength: int
    annotator: str
    doubt: str | None
    verdict: VerdictInfo | None


@dataclass(frozen=True, slots=True)
class VerdictCounts:
    """The verdicts so far: accepted, rejected (and by reason, most frequent first), fixed,
    and the comparisons waiting for one."""

    accepted: int
    rejected: int
    fixed: int
    waiting: int
    rejected_by_reason: dict[str, int]


def _check_judge(who: AnnotatorInfo) -> None:
    if not who.can_judge:
        raise Forbidden("reviewers and admins only")


def _judgeable(reviewer_id: int | None) -> Any:
    """``(comparison id, annotator's pick)`` of every comparison waiting for a verdict (not
    ``reviewer_id``'s own), oldest first."""
    judged = select(Verdict.comparison_id)
    cut = select(Candidate.turn_id).where(Candidate.cut.is_(True))
    query = (
        select(Comparison.id, Comparison.pick)
        .join(Turn, Comparison.turn_id == Turn.id)
        .join(Conversation, Turn.conversation_id == Conversation.id)
        .where(
            Comparison.kind == "pick",
            Conversation.status == "finished",
            Comparison.id.not_in(judged),
            DIFFERENT_TEXTS,
            ~Comparison.turn_id.in_(cut),
        )
        .order_by(Comparison.id)
    )
    if reviewer_id is not None:
        query = query.where(Comparison.annotator_id != reviewer_id)
    return query


def _doubts(s: DBSession, ids: set[int]) -> dict[int, tuple[int, float]]:
    """``(group, -p_mislabelled)`` of the doubted comparisons among ``ids``."""
    out: dict[int, tuple[int, float]] = {}
    disagreed = s.scalars(
        select(Review.comparison_id)
        .join(Comparison, Review.comparison_id == Comparison.id)
        .where(Review.status == "done", Review.pick != Comparison.pick)
        .distinct()
    )
    for cid in disagreed:
        if cid in ids:
            out[cid] = (_DISAGREED, 0.0)
    flags = s.execute(
        select(ComparisonFlag.comparison_id, ComparisonFlag.cls, ComparisonFlag.p_mislabelled)
    )
    for cid, cls, p in flags:
        group = {"likely_mislabelled": _LIKELY, "ambiguous": _AMBIGUOUS}.get(cls)
        if cid in ids and group is not None and (cid not in out or group < out[cid][0]):
            out[cid] = (group, -float(p))
    return out


def judge_queue(storage: Storage, who: AnnotatorInfo) -> list[int]:
    """The comparisons waiting for ``who``'s verdict, in the queue's order (module doc)."""
    _check_judge(who)
    with storage.read() as s:
        ids = [cid for cid, _ in s.execute(_judgeable(who.id))]
        doubts = _doubts(s, set(ids))
    rest = (_REST, 0.0)
    return sorted(ids, key=lambda cid: (doubts.get(cid, rest), cid))


def next_to_judge(
    storage: Storage, who: AnnotatorInfo, skip: frozenset[int] = frozenset()
) -> JudgeItem | None:
    """The first comparison of ``who``'s queue not in ``skip`` (put aside on the page), else
    the first skipped one, else None."""
    queue = judge_queue(storage, who)
    left = [cid for cid in queue if cid not in skip] or queue
    return judge_item(storage, who, left[0]) if left else None


def _verdict_info(v: Verdict, reviewer: str) -> VerdictInfo:
    return VerdictInfo(
        v.comparison_id,
        v.verdict,
        v.reason,
        v.fixed_pick,
        v.fixed_strength,
        reviewer,
        iso(v.decided_at),
    )


def _verdict_of(s: DBSession, comparison_id: int) -> VerdictInfo | None:
    row = s.execute(
        select(Verdict, Annotator.name)
        .join(Annotator, Verdict.reviewer_id == Annotator.id)
        .where(Verdict.comparison_id == comparison_id)
    ).first()
    return None if row is None else _verdict_info(row[0], row[1])


def judge_item(storage: Storage, who: AnnotatorInfo, comparison_id: int) -> JudgeItem:
    """One finished pick comparison as its judge sees it (404 for another kind or an
    unfinished conversation's; 403 for one the judge made)."""
    _check_judge(who)
    with storage.read() as s:
        row = s.execute(
            select(Comparison, Turn, Conversation, Annotator.name)
            .join(Turn, Comparison.turn_id == Turn.id)
            .join(Conversation, Turn.conversation_id == Conversation.id)
            .join(Annotator, Comparison.annotator_id == Annotator.id)
            .where(Comparison.id == comparison_id)
        ).first()
        if row is None or row[0].kind != "pick" or row[2].status != "finished":
            raise NotFound(f"no finished pick comparison {comparison_id}")
        comp, turn, conv, author = row
        if comp.annotator_id == who.id:
            raise Forbidden(f"comparison {comparison_id} is your own: someone else judges it")
        found = s.execute(
            select(Candidate.slot, Candidate.text).where(Candidate.turn_id == turn.id)
        )
        texts = {slot: text for slot, text in found}
        doubt = _doubts(s, {comp.id}).get(comp.id)
        return JudgeItem(
            comparison_id=comp.id,
            mode=conv.mode,
            task_description=conv.task_description,
            prefix=turn.prefix,
            human=turn.human,
            responses={slot: texts.get(slot) for slot in ("a", "b")},
            pick=comp.pick,
            strength=comp.strength,
            annotator=author,
            doubt=None if doubt is None else _DOUBTS[doubt[0]],
            verdict=_verdict_of(s, comp.id),
        )


def _checked(
    verdict: str, reason: str | None, pick: str | None, strength: int | None, points: int
) -> tuple[str | None, str | None, int | None]:
    """``(reason, fixed pick, fixed strength)`` as stored, or :class:`Invalid`."""
    if verdict not in VERDICTS:
        raise Invalid(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    reason = (reason or "").strip() or None
    if reason is not None and len(reason) > MAX_REASON:
        raise Invalid(f"the reason is {len(reason)} characters: at most {MAX_REASON}")
    if verdict == "reject" and reason is None:
        raise Invalid("a rejection needs a reason")
    if verdict != "fix":
        if pick is not None or strength is not None:
            raise Invalid(f"only a fix takes a pick and a strength, not {verdict!r}")
        return reason, None, None
    if pick not in ("a", "b"):
        raise Invalid(f"a fix's pick must be 'a' or 'b', not {pick!r}")
    if strength is None or not 1 <= strength <= points:
        raise Invalid(f"a fix's strength must be between 1 and {points}, not {strength}")
    return reason, pick, strength


def record_verdict(
    storage: Storage,
    who: AnnotatorInfo,
    comparison_id: int,
    verdict: str,
    *,
    reason: str | None = None,
    pick: str | None = None,
    strength: int | None = None,
    points: int = 4,
) -> VerdictInfo:
    """Record ``who``'s verdict on the comparison (module doc); the same verdict again is a
    no-op, a different one is refused (409) unless ``who`` is an admin, whose verdict
    replaces it."""
    _check_judge(who)
    reason, fixed_pick, fixed_strength = _checked(verdict, reason, pick, strength, points)
    item = judge_item(storage, who, comparison_id)  # 404: not one to judge, or their own
    if fixed_pick is not None and (fixed_pick, fixed_strength) == (item.pick, item.strength):
        raise Invalid("the fix is the annotator's own rating: accept it instead")
    with storage.write() as s:
        lock_writer(s, who)  # enabled now, whatever a worker remembers of the login
        role = s.scalar(select(Annotator.role).where(Annotator.id == who.id))
        if role not in ("reviewer", "admin"):  # and still a judge (not demoted meanwhile)
            raise Forbidden("reviewers and admins only")
        admin_now = role == "admin"
        v = s.get(Verdict, comparison_id, with_for_update=True)
        given = (verdict, reason, fixed_pick, fixed_strength)
        if v is not None:
            if (v.verdict, v.reason, v.fixed_pick, v.fixed_strength) == given:
                return _verdict_of(s, comparison_id) or _verdict_info(v, who.name)
            if not admin_now:
                raise Conflict(
                    f"comparison {comparison_id} already has a verdict ({v.verdict}): "
                    "only an admin may change it"
                )
        else:
            v = Verdict(comparison_id=comparison_id)
            s.add(v)
        v.reviewer_id, v.decided_at = who.id, now()
        v.verdict, v.reason, v.fixed_pick, v.fixed_strength = given
        try:
            s.flush()
        except IntegrityError as exc:  # another verdict on it was recorded meanwhile
            raise Conflict(f"comparison {comparison_id} was just judged; reload it") from exc
        return _verdict_info(v, who.name)


def verdict_counts(storage: Storage) -> VerdictCounts:
    """Accepted, rejected (by reason), fixed, and waiting (nobody's verdict yet)."""
    with storage.read() as s:
        kinds = Counter(
            {
                v: n
                for v, n in s.execute(
                    select(Verdict.verdict, func.count()).group_by(Verdict.verdict)
                )
            }
        )
        reasons = s.execute(
            select(Verdict.reason, func.count())
            .where(Verdict.verdict == "reject")
            .group_by(Verdict.reason)
        ).all()
        waiting = s.scalar(select(func.count()).select_from(_judgeable(None).subquery())) or 0
    by_reason = {str(r): int(n) for r, n in sorted(reasons, key=lambda x: (-x[1], str(x[0])))}
    return VerdictCounts(kinds["accept"], kinds["reject"], kinds["fix"], waiting, by_reason)


def judged_comparisons(storage: Storage) -> dict[int, Judged]:
    """Every verdict by comparison id (the export's ``accepted_only``)."""
    with storage.read() as s:
        rows = s.execute(
            select(
                Verdict.comparison_id, Verdict.verdict, Verdict.fixed_pick, Verdict.fixed_strength
            )
        ).all()
    return {cid: Judged(v, p, st) for cid, v, p, st in rows}
