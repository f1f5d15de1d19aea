"""The generation side of a turn: a worker leases a turn, saves its two candidates and
ends it; a lease that runs out lets another worker (or a restart) take the turn over."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import bindparam, func, or_, select, update

from ...errors import NotFound
from ..db import Storage
from ..db.engine import is_sqlite
from ..db.models import Candidate, Turn, candidates_table, conversations_table, turns_table
from ..domain import (
    SLOTS,
    STOPPED,
    AnnotatorInfo,
    CandidateStatus,
    PendingCandidate,
    Prompt,
    TurnStatus,
    aware,
    now,
)
from ..finish import cut_reason

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlalchemy import ColumnElement, Connection, Row, Select
    from sqlalchemy.engine import CursorResult
    from sqlalchemy.sql.dml import ReturningUpdate


def acquire_lease(
    storage: Storage,
    turn_id: int,
    owner: str,
    seconds: float,
    *,
    take_from: str | None = None,
) -> tuple[Prompt, list[PendingCandidate]] | None:
    """Take the right to generate a turn (one generator per turn across workers), or None.

    Free: a pending turn, or one whose lease ran out; ``take_from``: also a turn still leased
    by that owner (the caller knows it is dead)."""
    t0 = now()
    args = {
        "tid": turn_id,
        "now": t0,
        "owner": owner,
        "until": t0 + timedelta(seconds=seconds),
        "take_from": take_from,
    }
    with storage.write(durable=False) as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        t = conn.execute(_lease if take_from is None else _lease_or_take, args).one_or_none()
        if t is None:
            return None
        # (a row's "index" is its tuple method: the column is read through the mapping)
        history = _history_before(conn, t.conversation_id, t._mapping["index"])
        cands = conn.execute(_pending, {"tid": turn_id}).all()
        prompt = Prompt(history, t.human, t.prefix, cands[0].mode)
        pending = [
            PendingCandidate(c.slot, c.backend) for c in cands if c.status != CandidateStatus.READY
        ]
        return prompt, pending


def open_turn(
    storage: Storage,
    turn_id: int,
    who: AnnotatorInfo | None,
    owner: str,
    seconds: float,
    *,
    dead: Callable[[str], bool] | None = None,
) -> tuple[dict[str, Any], tuple[Prompt, list[PendingCandidate]] | None]:
    """The event stream's one transaction: the turn's :func:`turn_state` as read (NotFound
    unless it is ``who``'s or they are an admin), and, where the turn is free to generate,
    its lease taken for ``owner`` with the prompt and the candidates to generate (else None).
    ``who`` None: no authorisation (the generator's own opening of a turn).

    Free: pending, its lease run out, or held by an owner that ``dead`` says is gone (a
    crashed process of this host). What :func:`turn_state` then :func:`acquire_lease` did in
    two transactions. The turn's row is locked before the read (PostgreSQL: its own
    ``SELECT ... FOR UPDATE``; SQLite's writer is alone), so what is read is as the lease
    finds it: one statement locking while it joins would, after waiting for another
    listener's transaction, give that turn's new row with its candidates as they were before.
    """
    t0 = now()
    with storage.write(durable=False) as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        if not is_sqlite(storage.url):
            conn.execute(_lock_turn, {"tid": turn_id})
        rows = conn.execute(_opening, {"tid": turn_id}).all()
        state = _state(rows, turn_id, who)
        holder, until = state["lease_owner"], state["lease_until"]
        gone = dead is not None and holder is not None and dead(holder)
        expired = until is not None and until < t0
        if not (
            state["status"] == TurnStatus.PENDING
            or (state["status"] == TurnStatus.GENERATING and (expired or gone))
        ):
            return state, None
        args = {
            "tid": turn_id,
            "now": t0,
            "owner": owner,
            "until": t0 + timedelta(seconds=seconds),
            "take_from": holder if gone else None,
        }
        if conn.execute(_lease_or_take if gone else _lease, args).one_or_none() is None:
            return state, None  # (not so while the row is locked: a guard, not a path)
        t = rows[0]
        history = _history_before(conn, t.conversation_id, t.turn_index)
        prompt = Prompt(history, t.human, t.prefix, t.mode)
        pending = [
            PendingCandidate(c.slot, c.backend)
            for c in rows
            if c.candidate_status != CandidateStatus.READY
        ]
        return state, (prompt, pending)


def _history_before(
    conn: Connection, conversation_id: int, index: int
) -> tuple[tuple[str, str], ...]:
    """The (human, continuation) of a conversation's turns before ``index`` (none before the
    first: no statement)."""
    if index == 0:
        return ()
    rows = conn.execute(_history, {"cid": conversation_id, "before": index}).all()
    return tuple((h, a or "") for h, a in rows)


def renew_lease(storage: Storage, turn_id: int, owner: str, seconds: float) -> bool:
    """Extend a lease this owner still holds (a live run's heartbeat); False if it was lost."""
    with storage.write(durable=False) as s:
        res = s.execute(  # an UPDATE: a CursorResult, with a rowcount
            update(turns_table)
            .where(
                _turns.id == turn_id,
                _turns.lease_owner == owner,
                _turns.status == TurnStatus.GENERATING,
            )
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
    Plain statements (no ORM objects: this runs once per turn): the candidates' statuses (read
    only when ``results`` leaves one out), the turn's release guarded by the lease (nothing is
    written if another owner took it), and one UPDATE per candidate.
    """
    with storage.write(durable=False) as s:
        conn = s.connection()  # plain statements, not the ORM's (no objects to synchronise)
        if set(results) >= set(SLOTS):  # both generated now: no earlier status counts
            statuses: dict[str, str] = dict.fromkeys(SLOTS, CandidateStatus.PENDING)
        else:  # a retry of one: the other's stored status counts
            statuses = dict(conn.execute(_candidate_statuses, {"tid": turn_id}).all())
        for slot, fields in results.items():
            if slot in statuses:
                statuses[slot] = (
                    CandidateStatus.FAILED if fields.get("error") else CandidateStatus.READY
                )
        ready = all(x == CandidateStatus.READY for x in statuses.values())
        status = TurnStatus.READY if ready else TurnStatus.FAILED
        release = _release_ready if ready else _release_failed
        args = {"tid": turn_id, "owner": owner, "new_status": status, "ready": now()}
        if cast("CursorResult[Any]", conn.execute(release, args)).rowcount != 1:
            return None
        rows = [
            {"tid": turn_id, "b_slot": slot, **_candidate_values(**fields)}
            for slot, fields in results.items()
            if slot in statuses
        ]
        if rows:
            conn.execute(_store_candidate, rows)
        return status


_turns, _candidates = turns_table.c, candidates_table.c
_conversations = conversations_table.c
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
        )
        .returning(_turns.conversation_id, _turns.index, _turns.human, _turns.prefix)
    )


#: a free turn: pending, or its lease ran out
_lease = _leasing(_free)
#: the same, or a turn still leased by a dead owner (``take_from``)
_lease_or_take = _leasing(or_(_free, _generating & (_turns.lease_owner == bindparam("take_from"))))
_history = (
    select(_turns.human, _turns.continued)
    .where(_turns.conversation_id == bindparam("cid"), _turns.index < bindparam("before"))
    .order_by(_turns.index)
)
#: a turn's candidates, each with its conversation's mode
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
#: the same with what a prompt needs
_opening = _state_rows(
    _turns.conversation_id, _turns.human, _turns.prefix, _conversations.mode, _candidates.backend
)
#: the turn's row, locked until the transaction ends (PostgreSQL)
_lock_turn = select(_turns.id).where(_turns.id == bindparam("tid")).with_for_update()
_candidate_statuses = select(_candidates.slot, _candidates.status).where(
    _candidates.turn_id == bindparam("tid")
)
_releasing = (
    update(turns_table)
    .where(
        _turns.id == bindparam("tid"),
        _turns.lease_owner == bindparam("owner"),
        _turns.status == TurnStatus.GENERATING,
    )
    .values(status=bindparam("new_status"), lease_owner=None, lease_until=None)
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


def stop_elsewhere(storage: Storage, turn_id: int, owner: str) -> bool:
    """Stop a turn being written by another process (another worker or host: ``owner`` is
    this one's), through the database, in one transaction: its unfinished responses are
    stored as failed (:data:`STOPPED`) and its lease released, so it can be retried at once.
    The run that held the lease finds it gone at its next heartbeat and stops writing; what
    it wrote is not stored (its release is guarded by the lease). False when the turn is not
    being written by another process (pending, finished, or leased by ``owner``)."""
    with storage.write(durable=False) as s:
        conn = s.connection()
        if not is_sqlite(storage.url):
            conn.execute(_lock_turn, {"tid": turn_id})
        args = {"tid": turn_id, "owner": owner, "new_status": TurnStatus.FAILED}
        if cast("CursorResult[Any]", conn.execute(_release_stopped, args)).rowcount != 1:
            return False
        conn.execute(_fail_unfinished, {"tid": turn_id, "error": STOPPED})
        return True


_release_stopped = (
    update(turns_table)
    .where(
        _turns.id == bindparam("tid"),
        _turns.status == TurnStatus.GENERATING,
        _turns.lease_owner.is_not(None),
        _turns.lease_owner != bindparam("owner"),
    )
    .values(status=bindparam("new_status"), lease_owner=None, lease_until=None)
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


def turn_state(storage: Storage, turn_id: int, who: AnnotatorInfo | None = None) -> dict[str, Any]:
    """Status and candidates of a turn. ``who``: only if it is theirs (or they are an admin),
    else :class:`NotFound` as for a turn that does not exist (the stream route's check and
    read in one statement); None: no authorisation (the generator's own reads)."""
    with storage.read() as s:
        rows = s.connection().execute(_turn_state, {"tid": turn_id}).all()
    return _state(rows, turn_id, who)


def _state(rows: Sequence[Row[Any]], turn_id: int, who: AnnotatorInfo | None) -> dict[str, Any]:
    """:func:`turn_state` from its rows."""
    if not rows or (who is not None and not who.sees(rows[0].annotator_id)):
        raise NotFound(f"turn {turn_id} not found")
    t = rows[0]
    return {
        "id": t.id,
        "index": t.turn_index,
        "status": t.status,
        "lease_owner": t.lease_owner,
        "lease_until": aware(t.lease_until),
        "candidates": [
            {
                "slot": c.slot,
                "status": c.candidate_status,
                "text": c.text,
                "cut": c.cut,
                "cut_reason": cut_reason(c.cut, c.finish_reason),
                "error": c.error,
            }
            for c in rows
            if c.slot is not None
        ],
    }


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
    """:func:`_apply_candidate` as the parameters of ``_store_candidate``."""
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
