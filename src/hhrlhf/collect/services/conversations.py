"""Conversations and their turns as an annotator drives them: start, list, read, add a
turn (drawing its two backends), retry, finish."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DBSession
from sqlalchemy.orm import selectinload

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.engine import is_sqlite
from ..db.models import Annotator, Candidate, Conversation, Turn
from ..domain import (
    MODES,
    SLOTS,
    AnnotatorInfo,
    PendingCandidate,
    Prompt,
    iso,
    now,
    render_prefix,
)
from ..finish import cut_reason

#: a retry that moves a response to another backend is logged with the backends' failures
log = logging.getLogger("hhrlhf.collect.backends")


def owned_conversation(
    storage: Storage, s: DBSession, who: AnnotatorInfo, conversation_id: int, *, lock: bool = False
) -> Conversation:
    q = select(Conversation).where(Conversation.id == conversation_id)
    if lock and not is_sqlite(storage.url):
        q = q.with_for_update()
    c = s.scalar(q)
    if c is None or (c.annotator_id != who.id and not who.is_admin):
        raise NotFound(f"conversation {conversation_id} not found")
    return c


def create_conversation(
    storage: Storage,
    who: AnnotatorInfo,
    mode: str,
    task_description: str,
    *,
    backend: str | None = None,
    red_team_continue: str | None = None,
) -> dict[str, Any]:
    if mode not in MODES:
        raise Invalid(f"mode {mode!r}; expected one of: {', '.join(MODES)}")
    task_description = task_description.strip()
    if not task_description:
        raise Invalid("task_description is empty: say what you want to do")
    with storage.write() as s:
        c = Conversation(
            uid=uuid.uuid4().hex,
            annotator_id=who.id,
            mode=mode,
            task_description=task_description,
            status="open",
            backend=backend if mode == "red-team" else None,
            red_team_continue=red_team_continue if mode == "red-team" else None,
            created_at=now(),
        )
        s.add(c)
        s.flush()
        return conversation_summary(c, 0)


def conversation_summary(c: Conversation, turns: int) -> dict[str, Any]:
    return {
        "id": c.id,
        "mode": c.mode,
        "task_description": c.task_description,
        "status": c.status,
        "turns": turns,
        "created_at": iso(c.created_at),
        "finished_at": iso(c.finished_at),
    }


def list_conversations(
    storage: Storage, who: AnnotatorInfo, *, all_: bool | None = None
) -> list[dict[str, Any]]:
    """One's own conversations, newest first (admins: everyone's unless ``all_`` is False)."""
    turns = (
        select(Turn.conversation_id, func.count(Turn.id).label("n"))
        .group_by(Turn.conversation_id)
        .subquery()
    )
    q = (
        select(Conversation, func.coalesce(turns.c.n, 0), Annotator.name)
        .outerjoin(turns, turns.c.conversation_id == Conversation.id)
        .join(Annotator, Annotator.id == Conversation.annotator_id)
        .order_by(Conversation.id.desc())
    )
    show_all = who.is_admin if all_ is None else (all_ and who.is_admin)
    if not show_all:
        q = q.where(Conversation.annotator_id == who.id)
    with storage.read() as s:
        out = []
        for c, n, name in s.execute(q):
            d = conversation_summary(c, n)
            if who.is_admin:
                d["annotator"] = name
            out.append(d)
        return out


def get_conversation(storage: Storage, who: AnnotatorInfo, conversation_id: int) -> dict[str, Any]:
    """The whole conversation; backend names only for admins."""
    with storage.read() as s:
        c = owned_conversation(storage, s, who, conversation_id)
        turns = s.scalars(
            select(Turn)
            .where(Turn.conversation_id == c.id)
            .order_by(Turn.index)
            .options(selectinload(Turn.candidates), selectinload(Turn.comparisons))
        ).all()
        out = {
            "id": c.id,
            "mode": c.mode,
            "task_description": c.task_description,
            "status": c.status,
            "comment": c.comment,
            "rating": c.rating,
            "created_at": iso(c.created_at),
            "finished_at": iso(c.finished_at),
            "turns": [turn_dict(t, admin=who.is_admin) for t in turns],
        }
        if who.is_admin:
            out["backend"] = c.backend
            out["red_team_continue"] = c.red_team_continue
        return out


def turn_dict(t: Turn, *, admin: bool) -> dict[str, Any]:
    pick = next((x for x in t.comparisons if x.kind == "pick"), None)
    edit = next((x for x in t.comparisons if x.kind == "edit"), None)
    cands = []
    for cand in t.candidates:
        d: dict[str, Any] = {
            "slot": cand.slot,
            "text": cand.text,
            "cut": cand.cut,
            "cut_reason": cut_reason(cand.cut, cand.finish_reason),
            "status": cand.status,
        }
        if cand.status == "failed":
            d["error"] = "the response could not be generated; retry"
        if admin:
            d.update(
                backend=cand.backend,
                model=cand.model,
                params=cand.params,
                finish_reason=cand.finish_reason,
                latency_ms=cand.latency_ms,
                error=cand.error,
            )
        cands.append(d)
    return {
        "id": t.id,
        "index": t.index,
        "human": t.human,
        "status": t.status,
        "candidates": cands,
        "pick": pick.pick if pick else None,
        "strength": pick.strength if pick else None,
        "edit": edit.chosen_text if edit else None,
        "continued": t.continued,
        "decided_at": iso(pick.decided_at) if pick else None,
    }


def finish_conversation(
    storage: Storage,
    who: AnnotatorInfo,
    conversation_id: int,
    comment: str | None = None,
    rating: int | None = None,
) -> dict[str, Any]:
    with storage.write() as s:
        c = owned_conversation(storage, s, who, conversation_id, lock=True)
        if c.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can finish it")
        if c.mode == "red-team":
            if rating is None:
                raise Invalid("a red-team conversation needs a rating, 0 to 4")
            if not 0 <= rating <= 4:
                raise Invalid("rating must be 0 to 4")
        elif rating is not None:
            raise Invalid("only red-team conversations take a rating")
        comment = (comment or "").strip() or None
        if c.status == "finished":
            if (c.comment, c.rating) == (comment, rating):
                return conversation_summary(c, len(c.turns))
            raise Conflict(f"conversation {c.id} is already finished")
        c.status = "finished"
        c.comment = comment
        c.rating = rating
        c.finished_at = now()
        return conversation_summary(c, len(c.turns))


def create_turn(
    storage: Storage,
    who: AnnotatorInfo,
    conversation_id: int,
    text: str,
    backends: tuple[str, str] | Callable[[str, str | None], tuple[str, str]],
    *,
    lease: tuple[str, float] | None = None,
) -> dict[str, Any]:
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
        c = owned_conversation(storage, s, who, conversation_id, lock=True)
        if c.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can write in it")
        if c.status != "open":
            raise Conflict(f"conversation {c.id} is finished")
        # the earlier turns' texts only (plain rows, no ORM objects: a long conversation
        # costs a message its rows, not their bookkeeping)
        turns = s.execute(
            select(Turn.human, Turn.continued)
            .where(Turn.conversation_id == c.id)
            .order_by(Turn.index)
        ).all()
        if turns and turns[-1].continued is None:
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
            status="pending" if lease is None else "generating",
        )
        try:
            t.id = s.execute(
                insert(Turn)
                .values(
                    conversation_id=c.id,
                    index=t.index,
                    human=t.human,
                    prefix=t.prefix,
                    status=t.status,
                    lease_owner=None if lease is None else lease[0],
                    lease_until=None if lease is None else created + timedelta(seconds=lease[1]),
                    created_at=created,
                )
                .returning(Turn.id)
            ).scalar_one()
            s.execute(
                insert(Candidate),
                [
                    {"turn_id": t.id, "slot": slot, "backend": backend, "status": "pending"}
                    for slot, backend in zip(SLOTS, backends, strict=True)
                ],
            )
        except IntegrityError as exc:  # a concurrent message took this index
            raise Conflict("another message was sent at the same time") from exc
        out = {"id": t.id, "index": t.index, "conversation_id": c.id, "status": t.status}
        if lease is not None:
            out["prompt"] = Prompt(tuple(history), t.human, t.prefix, c.mode)
            out["pending"] = [
                PendingCandidate(slot, backend)
                for slot, backend in zip(SLOTS, backends, strict=True)
            ]
        return out


@dataclass
class _NewTurn:
    index: int
    human: str
    prefix: str
    status: str
    id: int = 0


def turn_owner(storage: Storage, who: AnnotatorInfo, turn_id: int) -> dict[str, Any]:
    """Authorise access to a turn (404 if not one's own); returns its status."""
    with storage.read() as s:
        t = s.get(Turn, turn_id)
        if t is None:
            raise NotFound(f"turn {turn_id} not found")
        c = s.get_one(Conversation, t.conversation_id)
        if c.annotator_id != who.id and not who.is_admin:
            raise NotFound(f"turn {turn_id} not found")
        return {"id": t.id, "status": t.status, "conversation_id": c.id}


def retry_turn(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    *,
    switch_after: int = 0,
    replace: Callable[[str, str], str | None] | None = None,
) -> str:
    """Failed candidates back to pending; nothing else is touched.

    A failed candidate of a ``helpful`` conversation whose backend has failed it
    ``switch_after`` times (its ``attempts``; 0: never) is given the backend
    ``replace(failed backend, the other slot's backend)`` names, when it names another one
    (None: keep it); its attempts count again from 0. Red-team conversations keep their
    backends (an attempt is rated against the models it ran on)."""
    turn_owner(storage, who, turn_id)
    with storage.write(durable=False) as s:
        t = s.get_one(Turn, turn_id)
        if t.status in ("pending", "generating", "ready"):
            return t.status
        cands = {c.slot: c for c in s.scalars(select(Candidate).where(Candidate.turn_id == t.id))}
        switch = (
            replace is not None
            and switch_after > 0
            and s.get_one(Conversation, t.conversation_id).mode == "helpful"
        )
        for c in cands.values():
            if c.status != "failed":
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
            c.status, c.error = "pending", None
        t.status = "pending"
        return "pending"
