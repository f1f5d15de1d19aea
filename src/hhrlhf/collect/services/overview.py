"""What the admin pages read: one page of the conversation list (filtered, counted) and the
backends' timings and failures. Read-only queries over :class:`~hhrlhf.collect.db.Storage`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from ..db import Storage
from ..db.models import Annotator, Candidate, Conversation, Turn
from ..domain import ConversationSummary
from .conversations import conversation_summary

__all__ = [
    "ConversationFilter",
    "BackendFailure",
    "BackendActivity",
    "conversation_page",
    "backend_activity",
]

#: the conversation statuses an admin can filter by
STATUSES = ("open", "finished")


class ConversationFilter:
    """Which conversations: a mode, an annotator's name, a status (None: any)."""

    def __init__(
        self, mode: str | None = None, annotator: str | None = None, status: str | None = None
    ) -> None:
        self.mode = mode or None
        self.annotator = annotator or None
        self.status = status or None


def conversation_page(
    storage: Storage, where: ConversationFilter, *, limit: int, offset: int
) -> tuple[list[ConversationSummary], int]:
    """(the conversations of one page, newest first, with their annotator and turn count; how
    many match in all)."""
    conditions = []
    if where.mode:
        conditions.append(Conversation.mode == where.mode)
    if where.status:
        conditions.append(Conversation.status == where.status)
    if where.annotator:
        conditions.append(Annotator.name == where.annotator)
    base = select(Conversation.id).join(Annotator, Annotator.id == Conversation.annotator_id)
    for c in conditions:
        base = base.where(c)
    with storage.read() as s:
        total = s.scalar(select(func.count()).select_from(base.subquery())) or 0
        ids = [
            i
            for (i,) in s.execute(base.order_by(Conversation.id.desc()).limit(limit).offset(offset))
        ]
        if not ids:
            return [], total
        counts = dict(
            s.execute(
                select(Turn.conversation_id, func.count(Turn.id))
                .where(Turn.conversation_id.in_(ids))
                .group_by(Turn.conversation_id)
            ).all()
        )
        rows = s.execute(
            select(Conversation, Annotator.name)
            .join(Annotator, Annotator.id == Conversation.annotator_id)
            .where(Conversation.id.in_(ids))
            .order_by(Conversation.id.desc())
        ).all()
        out = [
            conversation_summary(conv, counts.get(conv.id, 0), annotator=name)
            for conv, name in rows
        ]
        return out, total


def _percentile(values: list[int], q: float) -> int | None:
    """The nearest-rank percentile ``q`` (0-100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


@dataclass(frozen=True, slots=True)
class BackendFailure:
    """A failed candidate: its turn, when the turn was made (``YYYY-MM-DD HH:MM:SS``), the
    error."""

    turn_id: int
    at: str | None
    error: str | None


@dataclass(frozen=True, slots=True)
class BackendActivity:
    """A backend's candidates of recent turns (``ready``, ``failed``, latency ``p50_ms``/
    ``p95_ms`` of the ready ones) and its latest ``failures`` (newest first, any age)."""

    ready: int = 0
    failed: int = 0
    p50_ms: int | None = None
    p95_ms: int | None = None
    failures: tuple[BackendFailure, ...] = ()


@dataclass
class _Tally:
    ready: int = 0
    failed: int = 0
    ms: list[int] = field(default_factory=list)
    failures: list[BackendFailure] = field(default_factory=list)


def backend_activity(
    storage: Storage, *, hours: float = 1.0, failures: int = 20, now: datetime | None = None
) -> dict[str, BackendActivity]:
    """Per backend name: the candidates of turns made in the last ``hours`` and its latest
    ``failures`` (:class:`BackendActivity`)."""
    now = now or datetime.now(timezone.utc)
    since = now - timedelta(hours=hours)
    out: dict[str, _Tally] = {}

    def entry(name: str) -> _Tally:
        return out.setdefault(name, _Tally())

    with storage.read() as s:
        recent = s.execute(
            select(Candidate.backend, Candidate.status, Candidate.latency_ms)
            .join(Turn, Turn.id == Candidate.turn_id)
            .where(Turn.created_at >= since)
        ).all()
        for name, status, ms in recent:
            e = entry(name)
            if status == "ready":
                e.ready += 1
                if ms is not None:
                    e.ms.append(ms)
            elif status == "failed":
                e.failed += 1
        failed = s.execute(
            select(Candidate.backend, Candidate.turn_id, Candidate.error, Turn.created_at)
            .join(Turn, Turn.id == Candidate.turn_id)
            .where(Candidate.status == "failed")
            .order_by(Candidate.id.desc())
            .limit(failures * 10)
        ).all()
        for name, turn_id, error, at in failed:
            e = entry(name)
            if len(e.failures) < failures:
                at_text = f"{at:%Y-%m-%d %H:%M:%S}" if at else None
                e.failures.append(BackendFailure(turn_id, at_text, error))
    return {
        name: BackendActivity(
            ready=e.ready,
            failed=e.failed,
            p50_ms=_percentile(e.ms, 50),
            p95_ms=_percentile(e.ms, 95),
            failures=tuple(e.failures),
        )
        for name, e in out.items()
    }
