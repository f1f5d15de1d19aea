"""What a new conversation may be, by the campaign's rules (docs/collect.md, "Tasks and
assignment" and "Targets and quotas"), and each one's progress toward the targets.

When a conversation starts (:func:`start_conversation`, in its transaction):

1. Refused once the campaign reached its total, or the annotator a quota of theirs (per day,
   per week, total; UTC days, ISO weeks): counted by one aggregate query. Messages already
   in a running conversation are never checked.
2. With no text of its own, it is handed the next task: among the enabled tasks served
   fewer times than their ``repeat``, never one the annotator already had, red-team ones only
   to an annotator allowed red-team (``attributes["red_team"]`` is not false), the least
   served first, then the oldest. The claim is one conditional UPDATE (``served < repeat``):
   of two annotators claiming a task's last repeat at once, one gets it and the other the
   next task.
3. With a text of its own (a free conversation): allowed while ``free_conversations`` is on
   (the default), in red-team mode only to an annotator allowed red-team.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, func, select, update
from sqlalchemy.sql.elements import ColumnElement

from ...errors import Conflict, Forbidden, Invalid
from ..db import Storage
from ..db.models import Annotator, Comparison, Conversation, Task
from ..domain import AnnotatorInfo, Mode, now
from .campaign import Campaign, CampaignTotal, Targets, day_start, read_campaign, week_start
from .writers import lock_writer

__all__ = [
    "AnnotatorProgress",
    "CampaignProgress",
    "Counts",
    "NextTask",
    "Progress",
    "Start",
    "campaign_progress",
    "check_free_mode",
    "my_progress",
    "red_team_allowed",
    "start_conversation",
]

#: tasks tried per query when claims race (another annotator took the last repeat)
CLAIM_BATCH = 20


@dataclass(frozen=True)
class Start:
    """What a new conversation is: its mode and task description, and its task (None: free)."""

    mode: str
    task_description: str
    task_id: int | None = None


@dataclass(frozen=True)
class Counts:
    """Turns or conversations today, this ISO week and in all (UTC)."""

    today: int = 0
    week: int = 0
    total: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"today": self.today, "week": self.week, "total": self.total}


@dataclass(frozen=True)
class NextTask:
    id: int
    text: str
    mode: str
    tags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "mode": self.mode, "tags": list(self.tags)}


@dataclass(frozen=True)
class Progress:
    """An annotator's view: targets (None: no quota) and counts in the target's unit (turns
    without one), the task they would be handed next, whether they may start a conversation
    now (``refused``: why not), whether free conversations are allowed."""

    targets: Targets | None
    counts: Counts
    next_task: NextTask | None
    refused: str | None
    campaign_open: bool
    free_allowed: bool
    red_team_allowed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": self.targets.to_dict() if self.targets else None,
            "unit": self.targets.unit if self.targets else "turns",
            "counts": self.counts.to_dict(),
            "next_task": self.next_task.to_dict() if self.next_task else None,
            "can_start": self.refused is None,
            "refused": self.refused,
            "campaign_open": self.campaign_open,
            "free_allowed": self.free_allowed,
        }


@dataclass(frozen=True)
class AnnotatorProgress:
    name: str
    targets: Targets | None
    counts: Counts
    reached: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "targets": self.targets.to_dict() if self.targets else None,
            "unit": self.targets.unit if self.targets else "turns",
            "counts": self.counts.to_dict(),
            "reached": self.reached,
        }


@dataclass(frozen=True)
class CampaignProgress:
    """The admin's view: the total (None: none) and the count toward it (turns without
    one), open or closed, tasks served of all repeats, each annotator's progress."""

    total: CampaignTotal | None
    count: int
    closed: bool
    served: int
    repeats: int
    annotators: tuple[AnnotatorProgress, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "campaign_total": self.total.to_dict() if self.total else None,
            "count": self.count,
            "closed": self.closed,
            "tasks_served": self.served,
            "tasks_repeats": self.repeats,
            "annotators": [a.to_dict() for a in self.annotators],
        }


def red_team_allowed(attributes: dict[str, Any] | None) -> bool:
    """Red-team work is allowed unless ``attributes["red_team"]`` is false."""
    return (attributes or {}).get("red_team") is not False


def check_free_mode(who: AnnotatorInfo, mode: str) -> None:
    """A conversation of one's own in red-team mode needs red-team allowed (Forbidden)."""
    if mode == Mode.RED_TEAM and not red_team_allowed(who.attributes):
        raise Forbidden(f"annotator {who.name!r} is not allowed red-team conversations")


def _amount(n: int, unit: str) -> str:
    return f"{n:,} {unit if n != 1 else unit.rstrip('s')}"


def _counted(unit: str) -> tuple[Any, Any, Any, list[ColumnElement[bool]]]:
    """(table, annotator column, time column, filters) of what ``unit`` counts."""
    if unit == "turns":
        c = Comparison
        return c, c.annotator_id, c.decided_at, [c.kind == "pick"]
    return Conversation, Conversation.annotator_id, Conversation.created_at, []


def _count(unit: str, annotator_id: int | None, since: datetime | None = None) -> Any:
    table, who, at, where = _counted(unit)
    if annotator_id is not None:
        where = [*where, who == annotator_id]
    if since is not None:
        where = [*where, at >= since]
    return select(func.count()).select_from(table).where(*where).scalar_subquery()


def _my_counts(
    conn: Connection, c: Campaign, annotator_id: int, at: datetime
) -> tuple[Counts, int | None]:
    """The annotator's counts in their target's unit, and the campaign's toward its total
    (None: no total): one query."""
    unit = c.targets_for(annotator_id).unit
    cols = [
        _count(unit, annotator_id, day_start(at)),
        _count(unit, annotator_id, week_start(at)),
        _count(unit, annotator_id),
    ]
    if c.total is not None:
        cols.append(_count(c.total.unit, None))
    row = conn.execute(select(*cols)).one()
    return Counts(row[0], row[1], row[2]), (row[3] if c.total is not None else None)


def _campaign_closed(c: Campaign, count: int | None) -> str | None:
    if c.total is not None and count is not None and count >= c.total.count:
        return (
            f"The campaign has reached its target of {_amount(c.total.count, c.total.unit)} "
            "and is closed to new conversations."
        )
    return None


def _quota_reached(t: Targets, n: Counts) -> str | None:
    if t.total is not None and n.total >= t.total:
        return (
            f"You have reached your target of {_amount(t.total, t.unit)}: thank you! "
            "No new conversations are open to you."
        )
    if t.per_week is not None and n.week >= t.per_week:
        return (
            f"You have reached this week's target of {_amount(t.per_week, t.unit)}; "
            "new conversations open again on Monday (UTC)."
        )
    if t.per_day is not None and n.today >= t.per_day:
        return (
            f"You have reached today's target of {_amount(t.per_day, t.unit)}; "
            "new conversations open again tomorrow (UTC)."
        )
    return None


def _refusal(conn: Connection, c: Campaign, annotator_id: int, at: datetime) -> str | None:
    targets = c.targets_for(annotator_id)
    if not targets.limited and c.total is None:
        return None  # nothing to count
    counts, count = _my_counts(conn, c, annotator_id, at)
    return _campaign_closed(c, count) or _quota_reached(targets, counts)


def _open_tasks(annotator_id: int, red_team: bool) -> Any:
    """The tasks the annotator may be handed, in the policy's order."""
    had = select(Conversation.task_id).where(
        Conversation.annotator_id == annotator_id, Conversation.task_id.is_not(None)
    )
    stmt = select(Task.id, Task.text, Task.mode, Task.tags).where(
        Task.disabled.is_(False), Task.served < Task.repeat, Task.id.not_in(had)
    )
    if not red_team:
        stmt = stmt.where(Task.mode != Mode.RED_TEAM)
    return stmt.order_by(Task.served, Task.id)


_claim = (
    update(Task)
    .where(Task.served < Task.repeat, Task.disabled.is_(False))
    .values(served=Task.served + 1)
)


def _claim_first(conn: Connection, rows: Any) -> NextTask | None:
    """The first of these tasks (id, text, mode, tags) still open, claimed: a task whose
    last repeat another transaction took since it was read is passed over."""
    for tid, text, mode, tags in rows:
        if conn.execute(_claim.where(Task.id == tid)).rowcount == 1:
            return NextTask(tid, text, mode, tuple(tags or ()))
    return None


def _claim_task(conn: Connection, annotator_id: int, red_team: bool) -> NextTask | None:
    """The next task, claimed (its ``served`` counted), or None when none is left."""
    stmt = _open_tasks(annotator_id, red_team).limit(CLAIM_BATCH)
    while True:
        rows = conn.execute(stmt).all()
        task = _claim_first(conn, rows)
        if task is not None or len(rows) < CLAIM_BATCH:
            return task  # None: each was taken meanwhile, none is left


def _allowed_red_team(conn: Connection, annotator_id: int) -> bool:
    attributes = conn.execute(
        select(Annotator.attributes).where(Annotator.id == annotator_id)
    ).scalar()
    return red_team_allowed(attributes)


def start_conversation(
    conn: Connection,
    who: AnnotatorInfo,
    mode: str,
    task_description: str | None,
    *,
    at: datetime | None = None,
) -> Start:
    """What ``who``'s new conversation is (module docstring), in the caller's write
    transaction: a claimed task is given back if the conversation is not inserted.

    The annotator's row is locked first (and a disabled annotator refused): one annotator's
    two starts at once (two tabs) are served one after the other, so they are never handed
    the same task twice nor pass a quota together."""
    lock_writer(conn, who)
    c = read_campaign(conn)
    refused = _refusal(conn, c, who.id, at or now())
    if refused:
        raise Conflict(refused)
    if task_description is not None:
        if not c.free_conversations:
            raise Forbidden(
                "Conversations of your own are off in this campaign: start your next task."
            )
        check_free_mode(who, mode)
        return Start(mode, task_description)
    task = _claim_task(conn, who.id, _allowed_red_team(conn, who.id))
    if task is not None:
        return Start(task.mode, task.text, task.id)
    if c.free_conversations:
        raise Invalid("task_description is empty: say what you want to do (no task is left)")
    raise Conflict(
        "No task is left for you, and conversations of your own are off in this campaign."
    )


def _next_task(conn: Connection, annotator_id: int, red_team: bool) -> NextTask | None:
    row = conn.execute(_open_tasks(annotator_id, red_team).limit(1)).first()
    return None if row is None else NextTask(row[0], row[1], row[2], tuple(row[3] or ()))


def my_progress(storage: Storage, who: AnnotatorInfo, *, at: datetime | None = None) -> Progress:
    """``who``'s progress, the task they would be handed next, and whether they may start."""
    at = at or now()
    with storage.read() as s:
        conn = s.connection()
        c = read_campaign(conn)
        targets = c.targets_for(who.id)
        counts, count = _my_counts(conn, c, who.id, at)
        closed = _campaign_closed(c, count)
        red_team = _allowed_red_team(conn, who.id)
        task = _next_task(conn, who.id, red_team)
    refused = closed or _quota_reached(targets, counts)
    if refused is None and task is None and not c.free_conversations:
        refused = "No task is left for you, and conversations of your own are off."
    return Progress(
        targets if targets.limited else None,
        counts,
        task,
        refused,
        closed is None,
        c.free_conversations,
        red_team,
    )


def _grouped(conn: Connection, unit: str, at: datetime) -> dict[int, Counts]:
    _, who, when, where = _counted(unit)

    def since(t: datetime) -> Any:
        return func.sum(case((when >= t, 1), else_=0))

    rows = conn.execute(
        select(who, since(day_start(at)), since(week_start(at)), func.count())
        .where(*where)
        .group_by(who)
    )
    return {aid: Counts(int(d or 0), int(w or 0), int(n)) for aid, d, w, n in rows}


def campaign_progress(storage: Storage, *, at: datetime | None = None) -> CampaignProgress:
    """The campaign's total and every annotator's progress toward their targets."""
    at = at or now()
    with storage.read() as s:
        conn = s.connection()
        c = read_campaign(conn)
        counts = {u: _grouped(conn, u, at) for u in ("turns", "conversations")}
        people = conn.execute(select(Annotator.id, Annotator.name).order_by(Annotator.name)).all()
        served, repeats = conn.execute(
            select(func.coalesce(func.sum(Task.served), 0), func.coalesce(func.sum(Task.repeat), 0))
        ).one()
    unit = c.total.unit if c.total else "turns"
    count = sum(n.total for n in counts[unit].values())
    rows = []
    for aid, name in people:
        t = c.targets_for(aid)
        n = counts[t.unit].get(aid, Counts())
        rows.append(AnnotatorProgress(name, t if t.limited else None, n, _quota_reached(t, n)))
    return CampaignProgress(
        c.total,
        count,
        _campaign_closed(c, count) is not None,
        int(served),
        int(repeats),
        tuple(rows),
    )
