"""A turn's statements on the generation side: lease it (or take it over), read its state
and what its prompt needs, store its candidates and release it, stop it from another
process. The lease guards each write: nothing is written for an owner that lost it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy import bindparam, func, or_, select, update

from ...domain import CandidateStatus, TurnStatus
from ..models import candidates_table, conversations_table, turns_table
from . import on_sqlite

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection, Select
    from sqlalchemy.engine import CursorResult
    from sqlalchemy.sql.dml import ReturningUpdate

__all__ = [
    "CANDIDATE_COLUMNS",
    "CandidateRow",
    "LeasedRow",
    "OpeningRow",
    "StateRow",
    "candidate_statuses",
    "fail_unfinished",
    "history_before",
    "lease",
    "lock",
    "opening",
    "release",
    "release_stopped",
    "renew",
    "state",
    "store_candidates",
]

_turns, _candidates = turns_table.c, candidates_table.c
_conversations = conversations_table.c

#: :class:`CandidateRow`'s columns, for a statement that joins candidates to other rows (the
#: status labelled, as a turn and a conversation have one too)
CANDIDATE_COLUMNS = (
    _candidates.slot,
    _candidates.text,
    _candidates.cut,
    _candidates.finish_reason,
    _candidates.status.label("candidate_status"),
    _candidates.backend,
    _candidates.model,
    _candidates.params,
    _candidates.latency_ms,
    _candidates.error,
)


class CandidateRow(Protocol):
    """A candidate's :data:`CANDIDATE_COLUMNS` (all None on an outer join's row without one)."""

    @property
    def slot(self) -> str | None: ...
    @property
    def text(self) -> str | None: ...
    @property
    def cut(self) -> bool: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def candidate_status(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def latency_ms(self) -> int | None: ...
    @property
    def error(self) -> str | None: ...


class StateRow(Protocol):
    """A turn's own fields and its annotator, with one of its candidates (slot None: none)."""

    @property
    def id(self) -> int: ...
    @property
    def turn_index(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def lease_owner(self) -> str | None: ...
    @property
    def lease_until(self) -> datetime | None: ...
    @property
    def annotator_id(self) -> int: ...
    @property
    def slot(self) -> str | None: ...
    @property
    def candidate_status(self) -> str: ...
    @property
    def text(self) -> str | None: ...
    @property
    def cut(self) -> bool: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


class OpeningRow(StateRow, Protocol):
    """:class:`StateRow` with what a prompt needs."""

    @property
    def conversation_id(self) -> int: ...
    @property
    def human(self) -> str: ...
    @property
    def prefix(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def stop_requested(self) -> bool: ...


class LeasedRow(Protocol):
    """A turn just leased: what its prompt needs."""

    @property
    def conversation_id(self) -> int: ...
    @property
    def turn_index(self) -> int: ...
    @property
    def human(self) -> str: ...
    @property
    def prefix(self) -> str: ...


class PendingRow(Protocol):
    @property
    def slot(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def mode(self) -> str: ...


def lock(conn: Connection, turn_id: int) -> None:
    """Lock the turn's row until the transaction ends (PostgreSQL: a statement; SQLite's
    writer is alone: none)."""
    if not on_sqlite(conn):
        conn.execute(_lock_turn, {"tid": turn_id})


def lease(
    conn: Connection,
    turn_id: int,
    owner: str,
    at: datetime,
    until: datetime,
    *,
    take_from: str | None = None,
) -> LeasedRow | None:
    """Lease the turn to ``owner`` until ``until`` if it is free at ``at`` (pending, or its
    lease ran out) or, ``take_from``, still leased by that owner; None: not leased."""
    args = {"tid": turn_id, "now": at, "owner": owner, "until": until, "take_from": take_from}
    row = conn.execute(_lease if take_from is None else _lease_or_take, args).one_or_none()
    return cast("LeasedRow | None", row)


def renew(conn: Connection, turn_id: int, owner: str, until: datetime) -> bool:
    """Extend the lease ``owner`` still holds; False if it was lost."""
    res = conn.execute(_renew, {"tid": turn_id, "owner": owner, "until": until})
    return cast("CursorResult[Any]", res).rowcount == 1


def history_before(
    conn: Connection, conversation_id: int, index: int
) -> tuple[tuple[str, str], ...]:
    """The (human, continuation) of a conversation's turns before ``index`` (none before the
    first: no statement)."""
    if index == 0:
        return ()
    rows = conn.execute(_history, {"cid": conversation_id, "before": index}).all()
    return tuple((h, a or "") for h, a in rows)


def pending(conn: Connection, turn_id: int) -> Sequence[PendingRow]:
    """A turn's candidates (slot order), each with its conversation's mode."""
    return cast("Sequence[PendingRow]", conn.execute(_pending, {"tid": turn_id}).all())


def state(conn: Connection, turn_id: int) -> Sequence[StateRow]:
    """A row per candidate (slot order) of the turn (none: no such turn)."""
    return cast("Sequence[StateRow]", conn.execute(_turn_state, {"tid": turn_id}).all())


def opening(conn: Connection, turn_id: int) -> Sequence[OpeningRow]:
    """:func:`state`'s rows with what a prompt needs."""
    return cast("Sequence[OpeningRow]", conn.execute(_opening, {"tid": turn_id}).all())


def candidate_statuses(conn: Connection, turn_id: int) -> dict[str, str]:
    """Each candidate's status, by slot."""
    return {slot: status for slot, status in conn.execute(_statuses, {"tid": turn_id}).all()}


def release(conn: Connection, turn_id: int, owner: str, status: TurnStatus, at: datetime) -> bool:
    """End ``owner``'s lease, the turn becoming ``status`` (ready at ``at``, or failed);
    False (nothing written) if the lease was lost."""
    q = _release_ready if status == TurnStatus.READY else _release_failed
    args = {"tid": turn_id, "owner": owner, "new_status": status, "ready": at}
    return cast("CursorResult[Any]", conn.execute(q, args)).rowcount == 1


def store_candidates(
    conn: Connection, turn_id: int, results: Mapping[str, Mapping[str, Any]]
) -> None:
    """Store each slot's generated (or failed) candidate, one UPDATE per candidate (an
    ``error``: failed, else ready); its attempts count one more."""
    rows = [
        {"tid": turn_id, "b_slot": slot, **_candidate_values(**fields)}
        for slot, fields in results.items()
    ]
    if rows:
        conn.execute(_store_candidate, rows)


def request_stop(conn: Connection, turn_id: int, owner: str) -> bool:
    """Mark a turn being generated by an owner other than ``owner`` as asked to stop (its
    writer reads it: :func:`stops_requested`); False when it is not (pending, finished, or
    leased by ``owner``)."""
    res = conn.execute(_request_stop, {"tid": turn_id, "owner": owner})
    return cast("CursorResult[Any]", res).rowcount == 1


def stops_requested(conn: Connection, owner: str) -> list[int]:
    """The turns ``owner`` generates that were asked to stop through another worker."""
    return list(conn.execute(_stops_requested, {"owner": owner}).scalars())


def release_stopped(conn: Connection, turn_id: int, owner: str) -> bool:
    """Release a turn being generated by an owner other than ``owner``, the turn failed;
    False when it is not (pending, finished, or leased by ``owner``)."""
    args = {"tid": turn_id, "owner": owner, "new_status": TurnStatus.FAILED}
    return cast("CursorResult[Any]", conn.execute(_release_stopped, args)).rowcount == 1


def fail_unfinished(conn: Connection, turn_id: int, error: str) -> None:
    """The turn's pending candidates failed with ``error``."""
    conn.execute(_fail_unfinished, {"tid": turn_id, "error": error})


def _candidate_values(
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
) -> dict[str, Any]:
    """A generated candidate's fields as the parameters of ``_store_candidate``."""
    return {
        "v_status": CandidateStatus.FAILED if error else CandidateStatus.READY,
        "v_text": text,
        "v_raw_text": raw_text,
        "v_cut": cut,
        "v_model": model,
        "v_model_type": model_type,
        "v_num_params": num_params,
        "v_params": params or {},
        "v_finish_reason": finish_reason,
        "v_latency_ms": latency_ms,
        "v_error": error,
    }


_generating = _turns.status == TurnStatus.GENERATING
_free = or_(
    _turns.status == TurnStatus.PENDING,
    _generating & (_turns.lease_until < bindparam("now", type_=_turns.lease_until.type)),
)


def _leasing(free: ColumnElement[bool]) -> ReturningUpdate[Any, Any, Any, Any]:
    """The turn leased if ``free``: its fields for the prompt."""
    return (
        update(turns_table)
        .where(_turns.id == bindparam("tid"), free)
        .values(
            status=TurnStatus.GENERATING,
            lease_owner=bindparam("owner"),
            lease_until=bindparam("until", type_=_turns.lease_until.type),
            stop_requested=False,
        )
        .returning(
            _turns.conversation_id, _turns.index.label("turn_index"), _turns.human, _turns.prefix
        )
    )


#: a free turn: pending, or its lease ran out
_lease = _leasing(_free)
#: the same, or a turn still leased by a dead owner (``take_from``)
_lease_or_take = _leasing(or_(_free, _generating & (_turns.lease_owner == bindparam("take_from"))))
_renew = (
    update(turns_table)
    .where(_turns.id == bindparam("tid"), _turns.lease_owner == bindparam("owner"), _generating)
    .values(lease_until=bindparam("until", type_=_turns.lease_until.type))
)
_history = (
    select(_turns.human, _turns.continued)
    .where(_turns.conversation_id == bindparam("cid"), _turns.index < bindparam("before"))
    .order_by(_turns.index)
)
_pending = (
    select(_candidates.slot, _candidates.backend, _candidates.status, _conversations.mode)
    .join_from(candidates_table, turns_table, _turns.id == _candidates.turn_id)
    .join(conversations_table, _conversations.id == _turns.conversation_id)
    .where(_candidates.turn_id == bindparam("tid"))
    .order_by(_candidates.slot)
)


def _state_rows(*more: ColumnElement[Any]) -> Select[Any]:
    """A row per candidate (slot order), each with the turn's own fields and its annotator
    (and ``more``)."""
    return (
        select(
            _turns.id,
            _turns.index.label("turn_index"),
            _turns.status,
            _turns.lease_owner,
            _turns.lease_until,
            _conversations.annotator_id,
            _candidates.slot,
            _candidates.status.label("candidate_status"),
            _candidates.text,
            _candidates.cut,
            _candidates.finish_reason,
            _candidates.error,
            *more,
        )
        .join_from(turns_table, conversations_table, _conversations.id == _turns.conversation_id)
        .outerjoin(candidates_table, _candidates.turn_id == _turns.id)
        .where(_turns.id == bindparam("tid"))
        .order_by(_candidates.slot)
    )


_turn_state = _state_rows()
_opening = _state_rows(
    _turns.conversation_id,
    _turns.human,
    _turns.prefix,
    _conversations.mode,
    _candidates.backend,
    _turns.stop_requested,
)
_lock_turn = select(_turns.id).where(_turns.id == bindparam("tid")).with_for_update()
_statuses = select(_candidates.slot, _candidates.status).where(
    _candidates.turn_id == bindparam("tid")
)
_releasing = (
    update(turns_table)
    .where(
        _turns.id == bindparam("tid"),
        _turns.lease_owner == bindparam("owner"),
        _generating,
    )
    .values(
        status=bindparam("new_status"), lease_owner=None, lease_until=None, stop_requested=False
    )
)
_release_ready = _releasing.values(ready_at=bindparam("ready", type_=_turns.ready_at.type))
_release_failed = _releasing
#: the generated fields of a candidate (``_candidate_values``' keys, each bound as ``v_KEY``)
_CANDIDATE_FIELDS = (
    "status",
    "text",
    "raw_text",
    "cut",
    "model",
    "model_type",
    "num_params",
    "params",
    "finish_reason",
    "latency_ms",
    "error",
)
_store_candidate = (
    update(candidates_table)
    .where(_candidates.turn_id == bindparam("tid"), _candidates.slot == bindparam("b_slot"))
    .values(
        attempts=func.coalesce(_candidates.attempts, 0) + 1,
        **{k: bindparam(f"v_{k}", type_=_candidates[k].type) for k in _CANDIDATE_FIELDS},
    )
)
#: a turn being generated by another owner than ``owner``
_elsewhere = (
    (_turns.id == bindparam("tid"))
    & _generating
    & _turns.lease_owner.is_not(None)
    & (_turns.lease_owner != bindparam("owner"))
)
_release_stopped = (
    update(turns_table)
    .where(_elsewhere)
    .values(
        status=bindparam("new_status"), lease_owner=None, lease_until=None, stop_requested=False
    )
)
_request_stop = update(turns_table).where(_elsewhere).values(stop_requested=True)
_stops_requested = select(_turns.id).where(
    _turns.lease_owner == bindparam("owner"), _generating, _turns.stop_requested
)
_fail_unfinished = (
    update(candidates_table)
    .where(_candidates.turn_id == bindparam("tid"), _candidates.status == CandidateStatus.PENDING)
    .values(
        status=CandidateStatus.FAILED,
        error=bindparam("error"),
        attempts=func.coalesce(_candidates.attempts, 0) + 1,
    )
)
