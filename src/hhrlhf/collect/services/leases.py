"""The generation side of a turn: a worker leases a turn, saves its two candidates and
ends it; a lease that runs out lets another worker (or a restart) take the turn over."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import or_, select, update

from ..db import Storage
from ..db.models import Candidate, Turn
from ..domain import (
    PendingCandidate,
    Prompt,
    aware,
    now,
)
from ..finish import cut_reason

if TYPE_CHECKING:
    from sqlalchemy.engine import CursorResult


def acquire_lease(
    storage: Storage, turn_id: int, owner: str, seconds: float
) -> tuple[Prompt, list[PendingCandidate]] | None:
    """Take the right to generate a turn (one generator per turn across workers), or None."""
    t0 = now()
    with storage.write(durable=False) as s:
        res = s.execute(  # an UPDATE: a CursorResult, with a rowcount
            update(Turn)
            .where(Turn.id == turn_id)
            .where(
                or_(
                    Turn.status == "pending",
                    (Turn.status == "generating") & (Turn.lease_until < t0),
                )
            )
            .values(
                status="generating",
                lease_owner=owner,
                lease_until=t0 + timedelta(seconds=seconds),
            )
        )
        if cast("CursorResult[Any]", res).rowcount != 1:
            return None
        t = s.get_one(Turn, turn_id)
        history = s.execute(
            select(Turn.human, Turn.continued)
            .where(Turn.conversation_id == t.conversation_id, Turn.index < t.index)
            .order_by(Turn.index)
        ).all()
        prompt = Prompt(
            tuple((h, a or "") for h, a in history), t.human, t.prefix, t.conversation.mode
        )
        pending = [
            PendingCandidate(c.slot, c.backend)
            for c in s.scalars(
                select(Candidate).where(Candidate.turn_id == turn_id).order_by(Candidate.slot)
            )
            if c.status != "ready"
        ]
        return prompt, pending


def renew_lease(storage: Storage, turn_id: int, owner: str, seconds: float) -> bool:
    """Extend a lease this owner still holds (a live run's heartbeat); False if it was lost."""
    with storage.write(durable=False) as s:
        res = s.execute(  # an UPDATE: a CursorResult, with a rowcount
            update(Turn)
            .where(Turn.id == turn_id, Turn.lease_owner == owner, Turn.status == "generating")
            .values(lease_until=now() + timedelta(seconds=seconds))
        )
        return cast("CursorResult[Any]", res).rowcount == 1


def save_candidate(storage: Storage, turn_id: int, slot: str, *, owner: str, **fields: Any) -> bool:
    """Store one generated (or failed) candidate; False if the lease was lost meanwhile.

    ``fields``: ``text``, ``raw_text``, ``cut``, ``model``, ``model_type``, ``num_params``,
    ``params``, ``finish_reason``, ``latency_ms``, ``error``.
    """
    with storage.write(durable=False) as s:
        t = s.get(Turn, turn_id)
        if t is None or t.lease_owner != owner or t.status != "generating":
            return False
        c = s.scalars(
            select(Candidate).where(Candidate.turn_id == turn_id, Candidate.slot == slot)
        ).one()
        _apply_candidate(c, **fields)
        return True


def finish_generation(
    storage: Storage, turn_id: int, owner: str, results: dict[str, dict[str, Any]]
) -> str | None:
    """Store every generated (or failed) candidate and release the lease, in one transaction.

    ``results`` maps a slot to :meth:`save_candidate`'s keyword arguments. Returns the turn's
    new status (ready or failed), or None if the lease was lost meanwhile (nothing stored).
    """
    with storage.write(durable=False) as s:
        t = s.get_one(Turn, turn_id)
        if t is None or t.lease_owner != owner or t.status != "generating":
            return None
        cands = s.scalars(select(Candidate).where(Candidate.turn_id == turn_id)).all()
        for c in cands:
            if c.slot in results:
                _apply_candidate(c, **results[c.slot])
        t.status = "ready" if all(c.status == "ready" for c in cands) else "failed"
        if t.status == "ready":
            t.ready_at = now()
        t.lease_owner = None
        t.lease_until = None
        return t.status


def end_generation(storage: Storage, turn_id: int, owner: str) -> str:
    """Release the lease: the turn becomes ready (both candidates) or failed."""
    with storage.write(durable=False) as s:
        t = s.get_one(Turn, turn_id)
        if t.lease_owner != owner or t.status != "generating":
            return t.status
        statuses = s.scalars(select(Candidate.status).where(Candidate.turn_id == turn_id)).all()
        t.status = "ready" if all(x == "ready" for x in statuses) else "failed"
        if t.status == "ready":
            t.ready_at = now()
        t.lease_owner = None
        t.lease_until = None
        return t.status


def turn_state(storage: Storage, turn_id: int) -> dict[str, Any]:
    """Status and candidates of a turn (no authorisation: call :meth:`turn_owner` first)."""
    with storage.read() as s:
        t = s.get_one(Turn, turn_id)
        cands = s.scalars(
            select(Candidate).where(Candidate.turn_id == turn_id).order_by(Candidate.slot)
        ).all()
        return {
            "id": t.id,
            "index": t.index,
            "status": t.status,
            "lease_until": aware(t.lease_until),
            "candidates": [
                {
                    "slot": c.slot,
                    "status": c.status,
                    "text": c.text,
                    "cut": c.cut,
                    "cut_reason": cut_reason(c.cut, c.finish_reason),
                    "error": c.error,
                }
                for c in cands
            ],
        }


def _apply_candidate(
    c: Candidate,
    *,
    text: str | None,
    raw_text: str | None,
    cut: bool = False,
    model: str | None = None,
    model_type: str | None = None,
    num_params: str | None = None,
    params: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    latency_ms: int | None = None,
    error: str | None = None,
) -> None:
    c.status = "failed" if error else "ready"
    c.text = text
    c.raw_text = raw_text
    c.cut = cut
    c.model = model
    c.model_type = model_type
    c.num_params = num_params
    c.params = params or {}
    c.finish_reason = finish_reason
    c.latency_ms = latency_ms
    c.error = error
    c.attempts = (c.attempts or 0) + 1
