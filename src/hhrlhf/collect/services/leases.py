"""The generation side of a turn: a worker leases a turn, saves its two candidates and
ends it; a lease that runs out lets another worker (or a restart) take the turn over. The
statements are :mod:`..db.queries.turns`'; what a status may become is decided here."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ...errors import NotFound
from ..db import Storage
from ..db.queries import turns as q
from ..domain import (
    SLOTS,
    STOPPED,
    AnnotatorInfo,
    CandidateState,
    CandidateStatus,
    PendingCandidate,
    Prompt,
    TurnState,
    TurnStatus,
    aware,
    now,
)
from ..finish import cut_reason

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


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
    with storage.write(durable=False) as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        until = t0 + timedelta(seconds=seconds)
        t = q.lease(conn, turn_id, owner, t0, until, take_from=take_from)
        if t is None:
            return None
        history = q.history_before(conn, t.conversation_id, t.turn_index)
        cands = q.pending(conn, turn_id)
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
) -> tuple[TurnState, tuple[Prompt, list[PendingCandidate]] | None]:
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
        q.lock(conn, turn_id)
        rows = q.opening(conn, turn_id)
        state = _state(rows, turn_id, who)
        holder, until = state.lease_owner, state.lease_until
        gone = dead is not None and holder is not None and dead(holder)
        expired = until is not None and until < t0
        if not (
            state.status == TurnStatus.PENDING
            or (state.status == TurnStatus.GENERATING and (expired or gone))
        ):
            return state, None
        if state.status == TurnStatus.GENERATING and rows[0].stop_requested:
            # asked to stop, and its writer died before it read that: what it wrote is gone
            # with it, so the unfinished responses fail as stopped (Retry works at once)
            assert holder is not None  # a generating turn is leased
            q.release_stopped(conn, turn_id, owner)
            q.fail_unfinished(conn, turn_id, STOPPED)
            return _state(q.opening(conn, turn_id), turn_id, who), None
        take_from = holder if gone else None
        leased = q.lease(
            conn, turn_id, owner, t0, t0 + timedelta(seconds=seconds), take_from=take_from
        )
        if leased is None:
            return state, None  # (not so while the row is locked: a guard, not a path)
        t = rows[0]
        history = q.history_before(conn, t.conversation_id, t.turn_index)
        prompt = Prompt(history, t.human, t.prefix, t.mode)
        pending = [
            PendingCandidate(c.slot, c.backend)
            for c in rows
            if c.slot is not None and c.candidate_status != CandidateStatus.READY
        ]
        return state, (prompt, pending)


def renew_lease(storage: Storage, turn_id: int, owner: str, seconds: float) -> bool:
    """Extend a lease this owner still holds (a live run's heartbeat); False if it was lost."""
    with storage.write(durable=False) as s:
        return q.renew(s.connection(), turn_id, owner, now() + timedelta(seconds=seconds))


def finish_generation(
    storage: Storage, turn_id: int, owner: str, results: dict[str, dict[str, Any]]
) -> str | None:
    """Store every generated (or failed) candidate and release the lease, in one transaction.

    ``results`` maps a slot to the candidate's fields: ``text``, ``raw_text``, ``cut``,
    ``model``, ``model_type``, ``num_params``, ``params``, ``finish_reason``, ``latency_ms``,
    ``error`` (set: failed). Returns the turn's new status (ready or failed), or None if the
    lease was lost meanwhile (nothing stored). Plain statements (no ORM objects: this runs
    once per turn): the candidates' statuses (read only when ``results`` leaves one out), the
    turn's release guarded by the lease (nothing is written if another owner took it), and
    one UPDATE per candidate.
    """
    with storage.write(durable=False) as s:
        conn = s.connection()
        statuses: dict[str, str]
        if set(results) >= set(SLOTS):  # both generated now: no earlier status counts
            statuses = dict.fromkeys(SLOTS, CandidateStatus.PENDING)
        else:  # a retry of one: the other's stored status counts
            statuses = q.candidate_statuses(conn, turn_id)
        for slot, fields in results.items():
            if slot in statuses:
                failed = bool(fields.get("error"))
                statuses[slot] = CandidateStatus.FAILED if failed else CandidateStatus.READY
        ready = all(x == CandidateStatus.READY for x in statuses.values())
        status = TurnStatus.READY if ready else TurnStatus.FAILED
        if not q.release(conn, turn_id, owner, status, now()):
            return None
        q.store_candidates(conn, turn_id, {k: v for k, v in results.items() if k in statuses})
        return status


def stop_elsewhere(storage: Storage, turn_id: int, owner: str) -> bool:
    """Ask the process writing a turn (another worker or host: ``owner`` is this one's) to
    stop it, through the database: it reads the request within a second
    (:func:`stops_requested`) and stops as at its own Stop, each response keeping what it
    wrote (a writer that died first: the next to open the turn fails its unfinished responses
    as stopped). False when the turn is not being written by another process (pending,
    finished, or leased by ``owner``)."""
    with storage.write(durable=False) as s:
        conn = s.connection()
        q.lock(conn, turn_id)
        return q.request_stop(conn, turn_id, owner)


def stops_requested(storage: Storage, owner: str) -> list[int]:
    """The turns ``owner`` is writing that were asked to stop through another worker."""
    with storage.read() as s:
        return q.stops_requested(s.connection(), owner)


def turn_state(storage: Storage, turn_id: int, who: AnnotatorInfo | None = None) -> TurnState:
    """Status and candidates of a turn. ``who``: only if it is theirs (or they are an admin),
    else :class:`NotFound` as for a turn that does not exist (the stream route's check and
    read in one statement); None: no authorisation (the generator's own reads)."""
    with storage.read() as s:
        rows = q.state(s.connection(), turn_id)
    return _state(rows, turn_id, who)


def _state(rows: Sequence[q.StateRow], turn_id: int, who: AnnotatorInfo | None) -> TurnState:
    """:func:`turn_state` from its rows."""
    if not rows or (who is not None and not who.sees(rows[0].annotator_id)):
        raise NotFound(f"turn {turn_id} not found")
    t = rows[0]
    return TurnState(
        t.id,
        t.turn_index,
        t.status,
        t.lease_owner,
        aware(t.lease_until),
        tuple(
            CandidateState(
                c.slot,
                c.candidate_status,
                c.text,
                c.cut,
                cut_reason(c.cut, c.finish_reason),
                c.error,
            )
            for c in rows
            if c.slot is not None
        ),
    )
