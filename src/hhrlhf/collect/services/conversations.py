"""Conversations and their turns as an annotator drives them: start, list, read, add a
turn (drawing its two backends), retry, finish."""

from __future__ import annotations

import dataclasses
import logging
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import defer, selectinload

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.models import (
    Annotator,
    Candidate,
    Conversation,
    Turn,
    candidates_table,
)
from ..db.queries import conversations as q
from ..domain import (
    MODES,
    SLOTS,
    AnnotatorInfo,
    CandidateStatus,
    ConversationDetail,
    ConversationStatus,
    ConversationSummary,
    Mode,
    NewTurn,
    PendingCandidate,
    Prompt,
    Slot,
    TurnOwner,
    TurnStatus,
    iso,
    now,
    render_prefix,
)
from . import assign, guidelines
from .turnviews import stored_turn_answer
from .writers import check_writer

#: a retry that moves a response to another backend is logged with the backends' failures
log = logging.getLogger("hhrlhf.collect.backends")


def owned_conversation(
    conn: Connection,
    who: AnnotatorInfo,
    conversation_id: int,
    *,
    lock: bool = False,
) -> q.ConversationRow:
    """The conversation's row (404 if it is not one's own; admins see every one).
    ``lock``: held until the transaction ends (PostgreSQL; SQLite's writer holds the file)."""
    c = q.conversation(conn, conversation_id, who.id, lock=lock)
    if c is None or not who.sees(c.annotator_id):
        raise NotFound(f"conversation {conversation_id} not found")
    if lock:  # a write: the annotator must be enabled now, not a few seconds ago
        check_writer(c, who)
    return c


def create_conversation(
    storage: Storage,
    who: AnnotatorInfo,
    mode: str,
    task_description: str | None,
    *,
    backend: str | None = None,
    red_team_continue: str | None = None,
) -> ConversationSummary:
    """A new conversation: ``task_description`` None asks for the next task. The campaign's
    rules (quotas, tasks, free conversations: :func:`.assign.start_conversation`) apply once
    a campaign setting is stored; without one, its own text starts it in one statement."""
    if mode not in MODES:
        raise Invalid(f"mode {mode!r}; expected one of: {', '.join(MODES)}")
    if task_description is not None:
        task_description = task_description.strip()
        if not task_description:
            raise Invalid("task_description is empty: say what you want to do")
        assign.check_free_mode(who, mode)
    created = now()
    values: dict[str, Any] = dict(
        uid=uuid.uuid4().hex,
        annotator_id=who.id,
        mode=mode,
        task_description=task_description,
        status=ConversationStatus.OPEN,
        backend=backend,
        red_team_continue=red_team_continue,
        created_at=created,
        task_id=None,
    )
    with storage.write() as s:
        conn = s.connection()
        # inserted only while the annotator is enabled (the same statement reads it)
        # and, for an annotator, only when no guidelines are due (stamped with their version)
        gated = not who.is_admin
        cid = None
        if task_description is not None:
            cid = q.insert_conversation(
                conn, _by_mode(values), who.id, gated=gated, without_campaign=True
            )
        if cid is None:  # a campaign's (or a disabled annotator's, or guidelines due)
            start = assign.start_conversation(conn, who, mode, task_description, at=created)
            values.update(mode=start.mode, task_description=start.task_description)
            values["task_id"] = start.task_id
            cid = q.insert_conversation(conn, _by_mode(values), who.id, gated=gated)
        if cid is None:  # nothing claimed stays claimed: the error rolls the transaction back
            guidelines.refuse_start(conn, who)
    return ConversationSummary(
        cid,
        values["mode"],
        values["task_description"],
        ConversationStatus.OPEN,
        0,
        iso(created),
        None,
    )


def _by_mode(values: dict[str, Any]) -> dict[str, Any]:
    """A new conversation's row: the red-team backend and continuation only in red-team."""
    if values["mode"] == Mode.RED_TEAM:
        return values
    return {**values, "backend": None, "red_team_continue": None}


def conversation_summary(
    c: Conversation | q.ConversationRow, turns: int, *, annotator: str | None = None
) -> ConversationSummary:
    """``c`` with its number of ``turns`` (``annotator``: its annotator's name, for admins)."""
    return ConversationSummary(
        c.id,
        c.mode,
        c.task_description,
        c.status,
        turns,
        iso(c.created_at),
        iso(c.finished_at),
        annotator,
    )


def list_conversations(
    storage: Storage, who: AnnotatorInfo, *, all_: bool | None = None
) -> list[ConversationSummary]:
    """One's own conversations, newest first (admins: everyone's unless ``all_`` is False)."""
    turns = (
        select(Turn.conversation_id, func.count(Turn.id).label("n"))
        .group_by(Turn.conversation_id)
        .subquery()
    )
    stmt = (
        select(Conversation, func.coalesce(turns.c.n, 0), Annotator.name)
        .outerjoin(turns, turns.c.conversation_id == Conversation.id)
        .join(Annotator, Annotator.id == Conversation.annotator_id)
        .order_by(Conversation.id.desc())
    )
    show_all = who.is_admin if all_ is None else (all_ and who.is_admin)
    if not show_all:
        stmt = stmt.where(Conversation.annotator_id == who.id)
    with storage.read() as s:
        return [
            conversation_summary(c, n, annotator=name if who.is_admin else None)
            for c, n, name in s.execute(stmt)
        ]


def get_conversation(
    storage: Storage, who: AnnotatorInfo, conversation_id: int
) -> ConversationDetail:
    """The whole conversation; backend names only for admins. Each turn's transcript prefix
    is not read: it holds every earlier turn, so reading them all would cost the square of
    the conversation's length (36 M characters for 60 turns of 20,000)."""
    with storage.read() as s:
        c = owned_conversation(s.connection(), who, conversation_id)
        turns = s.scalars(
            select(Turn)
            .where(Turn.conversation_id == c.id)
            .order_by(Turn.index)
            .options(
                defer(Turn.prefix, raiseload=True),
                selectinload(Turn.candidates),
                selectinload(Turn.comparisons),
            )
        ).all()
        return ConversationDetail(
            c.id,
            c.mode,
            c.task_description,
            c.status,
            c.comment,
            c.rating,
            iso(c.created_at),
            iso(c.finished_at),
            tuple(stored_turn_answer(t, admin=who.is_admin) for t in turns),
            yours=c.annotator_id == who.id,
            for_admin=who.is_admin,
            backend=c.backend if who.is_admin else None,
            red_team_continue=c.red_team_continue if who.is_admin else None,
        )


def finish_conversation(
    storage: Storage,
    who: AnnotatorInfo,
    conversation_id: int,
    comment: str | None = None,
    rating: int | None = None,
) -> ConversationSummary:
    with storage.write() as s:
        conn = s.connection()
        c = owned_conversation(conn, who, conversation_id, lock=True)
        if c.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can finish it")
        if c.mode == Mode.RED_TEAM:
            if rating is None:
                raise Invalid("a red-team conversation needs a rating, 0 to 4")
            if not 0 <= rating <= 4:
                raise Invalid("rating must be 0 to 4")
        elif rating is not None:
            raise Invalid("only red-team conversations take a rating")
        comment = (comment or "").strip() or None
        turns = q.turn_count(conn, c.id)
        if c.status == ConversationStatus.FINISHED:
            if (c.comment, c.rating) == (comment, rating):
                return conversation_summary(c, turns)
            raise Conflict(f"conversation {c.id} is already finished")
        finished = now()
        q.finish(conn, c.id, comment, rating, finished)
        return dataclasses.replace(
            conversation_summary(c, turns),
            status=ConversationStatus.FINISHED,
            finished_at=iso(finished),
        )


def create_turn(
    storage: Storage,
    who: AnnotatorInfo,
    conversation_id: int,
    text: str,
    backends: tuple[str, str] | Callable[[str, str | None], tuple[str, str]],
    *,
    lease: tuple[str, float] | None = None,
) -> NewTurn:
    """A new human message: a pending turn with two pending candidates (slot a shown as A).

    ``backends``: the two backends' names, or a function of the conversation's mode and
    backend that returns them. ``lease``: (owner, seconds): the turn is created already
    leased to ``owner`` for generating (one transaction where :meth:`acquire_lease` would be
    a second); the answer then holds the ``prompt`` and the ``pending`` candidates too.
    """
    text = text.strip()
    if not text:
        raise Invalid("the message is empty")
    with storage.write() as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        # one statement: the conversation, locked, with a row per earlier turn (its texts)
        rows = q.history(conn, conversation_id, who.id)
        if not rows or not who.sees(rows[0].annotator_id):
            raise NotFound(f"conversation {conversation_id} not found")
        c = rows[0]
        check_writer(c, who)
        if c.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can write in it")
        if c.status != ConversationStatus.OPEN:
            raise Conflict(f"conversation {c.id} is finished")
        # (a turn's human is NOT NULL: None only on the row of a conversation without turns)
        turns = [(r.human or "", r.continued) for r in rows if r.turn_index is not None]
        if turns and turns[-1][1] is None:
            raise Conflict(
                "the last turn has no choice yet: pick a response before writing again",
            )
        # every earlier turn has its choice (checked above), so its continuation
        history = [(human, continued or "") for human, continued in turns]
        if callable(backends):
            backends = backends(c.mode, c.backend)
        created = now()
        t = _NewTurn(
            index=len(turns),
            human=text,
            prefix=render_prefix(history, text),
            status=TurnStatus.PENDING if lease is None else TurnStatus.GENERATING,
        )
        try:
            t.id = q.insert_turn(
                conn,
                dict(
                    conversation_id=c.id,
                    index=t.index,
                    human=t.human,
                    prefix=t.prefix,
                    status=t.status,
                    lease_owner=None if lease is None else lease[0],
                    lease_until=None if lease is None else created + timedelta(seconds=lease[1]),
                    created_at=created,
                ),
                [
                    (slot, backend, CandidateStatus.PENDING)
                    for slot, backend in zip(SLOTS, backends, strict=True)
                ],
            )
        except IntegrityError as exc:  # a concurrent message took this index
            raise Conflict("another message was sent at the same time") from exc
        if lease is None:
            return NewTurn(t.id, t.index, c.id, t.status)
        prompt = Prompt(tuple(history), t.human, t.prefix, c.mode)
        pending = tuple(
            PendingCandidate(slot, backend) for slot, backend in zip(SLOTS, backends, strict=True)
        )
        return NewTurn(t.id, t.index, c.id, t.status, prompt, pending)


@dataclass
class _NewTurn:
    index: int
    human: str
    prefix: str
    status: str
    id: int = 0


def turn_owner(storage: Storage, who: AnnotatorInfo, turn_id: int) -> TurnOwner:
    """Authorise access to a turn (404 if not one's own); returns its status."""
    with storage.read() as s:
        t = q.turn_owner(s.connection(), turn_id, who.id)
        if t is None or not who.sees(t.annotator_id):
            raise NotFound(f"turn {turn_id} not found")
        check_writer(t, who)  # it authorises a write (Retry, Stop): enabled now
        return TurnOwner(t.id, t.status, t.conversation_id)


def retry_turn(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    *,
    switch_after: int = 0,
    replace: Callable[[str, str], str | None] | None = None,
    swap_sides: Callable[[], bool] | None = None,
) -> str:
    """Failed candidates back to pending; nothing else is touched.

    A failed candidate of a ``helpful`` conversation whose backend has failed it
    ``switch_after`` times (its ``attempts``; 0: never) is given the backend
    ``replace(failed backend, the other slot's backend)`` names, when it names another one
    (None: keep it); its attempts count again from 0. Red-team conversations keep their
    backends (an attempt is rated against the models it ran on). When a backend was switched,
    the sides are drawn again (``swap_sides()``, a fair coin by default): which side failed
    and came back from another model tells nothing of the models."""
    turn_owner(storage, who, turn_id)
    with storage.write(durable=False) as s:
        t = s.get_one(Turn, turn_id)
        if t.status != TurnStatus.FAILED:
            return t.status
        cands = {c.slot: c for c in s.scalars(select(Candidate).where(Candidate.turn_id == t.id))}
        switch = (
            replace is not None
            and switch_after > 0
            and s.get_one(Conversation, t.conversation_id).mode == Mode.HELPFUL
        )
        switched = False
        for c in cands.values():
            if c.status != CandidateStatus.FAILED:
                continue
            if switch and replace is not None and (c.attempts or 0) >= switch_after:
                other = next((o.backend for o in cands.values() if o.slot != c.slot), c.backend)
                new = replace(c.backend, other)
                if new is not None and new != c.backend:
                    log.warning(
                        "turn %s response %s: backend %s failed %s times; retried with %s",
                        t.id,
                        c.slot.upper(),
                        c.backend,
                        c.attempts,
                        new,
                    )
                    c.backend, c.attempts = new, 0
                    switched = True
            c.status, c.error = CandidateStatus.PENDING, None
        if switched and len(cands) == 2 and (swap_sides or _coin)():
            _swap(cands[Slot.A], cands[Slot.B])
        t.status = TurnStatus.PENDING
        return TurnStatus.PENDING


def withdraw_turn(storage: Storage, who: AnnotatorInfo, turn_id: int) -> str:
    """Withdraw a message whose every response failed (a prompt too long for the model, one
    its server filters): the turn and its failed candidates are deleted, so nothing of it is
    compared or exported, and its text is returned for the message box to edit and send again.
    Forbidden to anyone but the conversation's annotator; Conflict unless the turn is failed
    with no response written, the conversation's last, and the conversation open."""
    turn_owner(storage, who, turn_id)
    with storage.write() as s:
        t = s.get_one(Turn, turn_id)
        conv = s.get_one(Conversation, t.conversation_id)
        if conv.annotator_id != who.id:  # an admin's support is Retry and Stop, not this
            raise Forbidden("only the conversation's annotator can withdraw its message")
        if conv.status != ConversationStatus.OPEN:
            raise Conflict(f"conversation {conv.id} is finished")
        statuses = list(s.scalars(select(Candidate.status).where(Candidate.turn_id == t.id)))
        if t.status != TurnStatus.FAILED or any(st != CandidateStatus.FAILED for st in statuses):
            raise Conflict(
                f"turn {t.id} cannot be withdrawn: only a message whose every response failed can"
            )
        later = s.scalar(
            select(func.count())
            .select_from(Turn)
            .where(Turn.conversation_id == conv.id, Turn.index > t.index)
        )
        if later:
            raise Conflict(f"turn {t.id} is not the conversation's last")
        text = t.human
        s.delete(t)
        return text


#: what a candidate holds, apart from which turn and side it is
_CONTENT = [c.key for c in candidates_table.columns if c.key not in ("id", "turn_id", "slot")]


def _coin() -> bool:
    return secrets.randbelow(2) == 1


def _swap(a: Candidate, b: Candidate) -> None:
    """A's response becomes B's and B's A's (a ready one shows on the other side)."""
    for key in _CONTENT:
        va, vb = getattr(a, key), getattr(b, key)
        setattr(a, key, vb)
        setattr(b, key, va)
