"""An annotator's choice on a turn: the pick, its strength and an optional edit, stored
once (a repeat answers what was stored; a different choice is a conflict)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, cast

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.queries import choices as q
from ..domain import (
    SLOTS,
    AnnotatorInfo,
    ConversationStatus,
    Mode,
    Slot,
    TurnAnswer,
    TurnStatus,
    now,
    other_slot,
)
from . import turnviews
from .writers import check_writer


def record_choice(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    *,
    pick: str,
    strength: int | None,
    strength_points: int,
    edit: str | None = None,
    request_id: str | None = None,
) -> TurnAnswer:
    """Store the annotator's choice; returns the turn once the transaction has committed.

    A repeat (same ``request_id``, or the same pick, strength and edit) returns the stored
    answer; a different choice for a decided turn is a 409. ``strength`` None: allowed only
    when both responses are the same text (an identical pair: nothing to compare), stored
    as 1, the point the instructions give for "about the same"; an identical pair is never
    exported, reviewed, or a leaderboard game.
    """
    if pick not in SLOTS:
        raise Invalid("pick must be 'a' or 'b'")
    if strength is not None and not 1 <= strength <= strength_points:
        raise Invalid(f"strength must be 1 to {strength_points}")
    if edit is not None:
        edit = edit.strip()
        if not edit:
            raise Invalid("the edit is empty")
    for attempt in range(2):
        try:
            return _record_choice(storage, who, turn_id, pick, strength, edit, request_id)
        except IntegrityError:
            # another request stored a choice first: answer as a repeat, or 409
            if attempt:
                raise
    raise AssertionError("unreachable")


def _record_choice(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    pick: str,
    strength: int | None,
    edit: str | None,
    request_id: str | None,
) -> TurnAnswer:
    # a return inside the block runs after the commit: only then is the choice acknowledged
    with storage.write() as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        rows = _choice_state(conn, who, turn_id)
        t = rows[0]
        # ("index" is a row's tuple method: the column is read by its label)
        view = turnviews.TurnView(t.id, t.turn_index, t.human, t.status)
        cands = turnviews.candidate_views(rows)
        texts = {x.slot: x.text for x in cands}
        strength = _settled_strength(t, texts, strength)
        if t.pick is not None:
            _check_repeat(t, turn_id, pick, strength, edit, request_id)
            stored = cast("turnviews.PickView", t)  # its pick is stored: so are the rest
            return turnviews.turn_answer(
                view, cands, stored, t.edit, t.continued, admin=who.is_admin
            )
        _check_choosable(t, who, turn_id, edit)
        edited = edit is not None and edit != texts[pick]
        choice = _Choice(pick, strength, edit if edited else None, request_id, now())
        continued = _continuation(t, pick, edit, texts)
        q.store_choice(conn, t.id, _comparisons(t, who, choice, texts), continued)
        # the answer is what was just written (committed when this block ends)
        return turnviews.turn_answer(
            view, cands, choice, choice.edit, continued, admin=who.is_admin
        )


def _choice_state(conn: Connection, who: AnnotatorInfo, turn_id: int) -> Sequence[q.ChoiceRow]:
    """The turn's rows for a choice by ``who``, once it may choose there at all: a 404 for a
    turn it cannot see, a 403 for an annotator who may not write."""
    # one statement (each round trip is a wait on a busy server): a row per candidate,
    # each with the turn, its conversation and its stored pick and edit if any
    rows = q.choice_state(conn, turn_id, who.id)
    if not rows or not who.sees(rows[0].annotator_id):
        raise NotFound(f"turn {turn_id} not found")
    check_writer(rows[0], who)  # enabled now, whatever a worker remembers of the login
    return rows


def _settled_strength(t: q.ChoiceRow, texts: dict[str, str | None], strength: int | None) -> int:
    """``strength``; None only for an identical pair of a ready turn, stored as 1."""
    if strength is not None:
        return strength
    if t.status != TurnStatus.READY or texts.get(Slot.A) != texts.get(Slot.B):
        raise Invalid("strength is required: the two responses differ")
    return 1


def _check_repeat(
    t: q.ChoiceRow,
    turn_id: int,
    pick: str,
    strength: int,
    edit: str | None,
    request_id: str | None,
) -> None:
    """A 409 unless the choice repeats the stored one (its request, or the same choice)."""
    same = (t.pick, t.strength, t.edit) == (pick, strength, edit)
    if (request_id and t.request_id == request_id) or same:
        return
    raise Conflict(
        f"turn {turn_id} already has a different choice ({t.pick}, strength {t.strength})",
    )


def _check_choosable(t: q.ChoiceRow, who: AnnotatorInfo, turn_id: int, edit: str | None) -> None:
    """Refuse a first choice on a turn that does not take one (now, or from ``who``)."""
    if t.annotator_id != who.id:
        raise Forbidden("only the conversation's annotator can choose")
    if t.conversation_status != ConversationStatus.OPEN:
        raise Conflict(f"conversation {t.conversation_id} is finished")
    if t.status != TurnStatus.READY:
        raise Conflict(
            f"turn {turn_id} is not ready for a choice (status {t.status})",
        )
    if edit is not None and t.mode != Mode.HELPFUL:
        raise Invalid("edits are for helpful conversations only")


class _Choice(NamedTuple):
    """A choice about to be stored (and, as :func:`.turnviews.turn_answer` reads a stored
    pick, the answer); ``edit`` only when it changes the picked text."""

    pick: str
    strength: int
    edit: str | None
    request_id: str | None
    decided_at: datetime


def _comparisons(
    t: q.ChoiceRow, who: AnnotatorInfo, c: _Choice, texts: dict[str, str | None]
) -> list[q.NewComparison]:
    """The choice's comparison rows: the pick's, then the edit's (the edit chosen over the
    picked text) when there is one."""
    other = other_slot(c.pick)
    picked: q.NewComparison = {
        "kind": "pick",
        "chosen_slot": c.pick,
        "rejected_slot": other,
        "chosen_text": texts[c.pick],
        "rejected_text": texts[other],
        "turn_id": t.id,
        "annotator_id": who.id,
        "pick": c.pick,
        "strength": c.strength,
        "request_id": c.request_id,
        "shown_at": t.ready_at,
        "decided_at": c.decided_at,
    }
    if c.edit is None:
        return [picked]
    edited: q.NewComparison = {
        **picked,
        "kind": "edit",
        "chosen_slot": None,
        "rejected_slot": c.pick,
        "chosen_text": c.edit,
        "rejected_text": texts[c.pick],
    }
    return [picked, edited]


def _continuation(
    t: q.ChoiceRow, pick: str, edit: str | None, texts: dict[str, str | None]
) -> str | None:
    """The text the conversation goes on from: the edit (even one that changes nothing),
    the other response where a red-team conversation says so, else the picked one."""
    if edit is not None:
        return edit
    if t.mode == Mode.RED_TEAM and t.red_team_continue == "other":
        return texts[other_slot(pick)]
    return texts[pick]
